// TaskStore: the durable state of one task partition (DESIGN.md §4, §5).
//
// One RocksDB TransactionDB per task, in its own directory, with one column family per named
// store plus "__meta" (input positions, watermark, checkpoint id). Hot state lives in memory:
// every named store is a KeyValueStore whose cache holds the values read and written since the
// last checkpoint, so the per-record path never touches RocksDB for a cached key. Uncommitted
// writes live only in that cache; RocksDB holds exactly the last committed checkpoint.
//
// Checkpoint protocol (two-phase, so that many task stores and the log commit together):
//   Prepare(name)  writes every dirty entry of every store and every meta entry into one RocksDB
//                  transaction named `name`, and prepares it (the WAL is fsynced). After a
//                  crash, RocksDB recovers it as prepared, neither committed nor rolled back.
//   Commit()       commits the prepared transaction (no fsync needed: a lost commit marker
//                  leaves the transaction prepared, and recovery commits it again).
//   On Open, PreparedCheckpoints() lists what a crashed run had prepared; the caller, which
//   knows from its manifest whether that checkpoint was committed, calls CommitPrepared or
//   RollbackPrepared for each. Nothing else may happen until none is left.
//
// Threads: a TaskStore and its stores belong to the task's thread; no internal locking.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "weir/status.h"
#include "weir/value.h"

namespace rocksdb {
class ColumnFamilyHandle;
class Transaction;
class TransactionDB;
}  // namespace rocksdb

namespace weir::state {

class TaskStore;

// A named store: keys are byte strings (see key_encoding.h), values are Values.
class KeyValueStore {
 public:
  const std::string& name() const { return name_; }

  // The value at `key`, or nullptr if there is none. The pointer stays valid until the next
  // Put/Delete/Get of this store. kIOError/kCorruption from RocksDB on a cache miss.
  Result<const Value*> Get(std::string_view key);
  // Sets the value at `key` (visible to Get and Scan at once, durable at the next checkpoint).
  void Put(std::string_view key, Value value);
  void Delete(std::string_view key);

  // Visits, in byte order, every live key in [from, to) (to empty: unbounded above), merging
  // the committed state with the uncommitted writes (a Put hides the committed value; a Delete
  // hides the key). Stops early when `visit` returns false. `backwards` visits in reverse.
  Status Scan(std::string_view from, std::string_view to, bool backwards,
              const std::function<bool(std::string_view key, const Value& value)>& visit);

  // Entries changed since the last checkpoint.
  size_t dirty_count() const { return dirty_count_; }
  size_t cached_count() const { return cache_.size(); }

 private:
  friend class TaskStore;
  struct Entry {
    Value value;
    bool present = false;  // false: the key has no value (deleted or known absent)
    bool dirty = false;    // changed since the last checkpoint
  };
  KeyValueStore(TaskStore* owner, std::string name, rocksdb::ColumnFamilyHandle* cf);
  Entry& Touch(std::string_view key);

  TaskStore* owner_;
  std::string name_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::unordered_map<std::string, Entry> cache_;
  size_t dirty_count_ = 0;
};

struct TaskStoreOptions {
  // Clean cache entries beyond this many (per store) are dropped after a checkpoint.
  size_t cache_max_entries = 1 << 21;
  // Background RocksDB threads (flush/compaction) for this store.
  int background_threads = 1;
};

class TaskStore {
 public:
  // Opens (creating if needed) the store at `dir` with these named stores. Names are
  // [A-Za-z0-9_.-]+ and not "__meta". Existing column families not listed stay on disk untouched.
  static Result<std::unique_ptr<TaskStore>> Open(const std::filesystem::path& dir,
                                                 const std::vector<std::string>& store_names,
                                                 const TaskStoreOptions& options = {});
  ~TaskStore();

  // REQUIRES: `name` was given to Open (checked).
  KeyValueStore& store(std::string_view name);

  // Task metadata, committed with the state: input positions, watermark, checkpoint id.
  // GetMeta reads the uncommitted value if one was set since the last checkpoint.
  Result<std::optional<std::string>> GetMeta(std::string_view key);
  void PutMeta(std::string_view key, std::string value);

  // Two-phase checkpoint; see the file comment. REQUIRES: no prepared transaction pending.
  Status Prepare(std::string_view checkpoint_name);
  // REQUIRES: Prepare succeeded.
  Status Commit();
  // Abandons a prepared (or failed) checkpoint; the cache's dirty entries stay dirty, so the
  // next Prepare writes them again.
  Status Rollback();

  // Recovery: prepared transactions left by a crashed run, by name.
  std::vector<std::string> PreparedCheckpoints() const;
  Status CommitPrepared(std::string_view checkpoint_name);
  Status RollbackPrepared(std::string_view checkpoint_name);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  TaskStore() = default;
  friend class KeyValueStore;

  std::filesystem::path dir_;
  TaskStoreOptions options_;
  std::unique_ptr<rocksdb::TransactionDB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // owned; closed in the destructor
  rocksdb::ColumnFamilyHandle* meta_cf_ = nullptr;
  std::vector<std::unique_ptr<KeyValueStore>> stores_;
  std::unordered_map<std::string, std::string> dirty_meta_;
  std::unique_ptr<rocksdb::Transaction> prepared_;
};

}  // namespace weir::state
