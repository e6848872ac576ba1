// TaskStore: the durable state of one task partition (docs/architecture.md §4, §5).
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

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "state/key_encoding.h"
#include "state/node_map.h"
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
  // The value at `key` to change in place: what Get would return, or a null Value if the key
  // has none. The key counts as written: at the next checkpoint it holds whatever the Value
  // then holds. One lookup where Get then Put takes two (the per-record path of aggregations).
  // The pointer's lifetime is Get's.
  Result<Value*> Mutate(std::string_view key);
  // A hint that the state key that is `message_key` alone (key_encoding.h: keyed steps store one
  // value per message key) will be read soon (stage 0, some records ahead: its cache slot), then
  // sooner (stage 1: its node), then next (stage 2: the key's bytes and the first cache lines of
  // its value's string bytes or array or object elements): a batch that announces its keys this way
  // overlaps their cache misses. `tag` names the announcement (the record's address): the key's
  // hash, computed at stage 0, is found again by tag at the later stages. A tag reused for another
  // key before its stage 0 (the next batch's record in the same place) only points a hint at the
  // wrong key.
  void PrefetchMessageKey(std::string_view message_key, const void* tag, int stage);
  // The same for a state key as it is (a window step's sweep, which holds its due keys' state
  // keys).
  void PrefetchKey(std::string_view key, const void* tag, int stage);

  // Visits, in byte order, every live key in [from, to) (to empty: unbounded above), merging
  // the committed state with the uncommitted writes (a Put hides the committed value; a Delete
  // hides the key). Stops early when `visit` returns false. `backwards` visits in reverse.
  Status Scan(std::string_view from, std::string_view to, bool backwards,
              const std::function<bool(std::string_view key, const Value& value)>& visit);

  // Visits every live key in byte order with its value to change in place, as Mutate: each
  // visited key counts as written. `visit` may Delete the key it visits, and must write no other
  // key of this store. Stops at the first error `visit` returns, and returns it; else
  // kIOError/kCorruption from RocksDB, or OK. While the cache holds every key
  // (cache_holds_every_key_: a store opened empty that has evicted nothing and committed no
  // recovered checkpoint), the cache is visited in place: one sort of its keys, no RocksDB read and
  // no second lookup per key (Scan, then Mutate per key, had cost 13% of the hopping bench's task
  // thread in its close of every key at the end of input).
  Status MutateEach(const std::function<Status(std::string_view key, Value& value)>& visit);

  // A check of every value read from RocksDB (a cache miss of Get or Mutate, a committed value
  // Scan or MutateEach visits) before anything sees it, so that a step whose values have a
  // layout checks it once, when a value enters memory, not at each use. A refusal is the read's
  // error, with this store and the key as its context. Values written through the cache (Put,
  // Mutate) are not checked: their writer made them. An empty check (the default) accepts all.
  using LoadCheck = std::function<Status(std::string_view key, Value& value)>;
  void CheckLoadedWith(LoadCheck check) { load_check_ = std::move(check); }

  // Entries changed since the last checkpoint.
  size_t dirty_count() const { return dirty_index_.size() + unindexed_.size(); }
  size_t cached_count() const { return cache_.size(); }
  // Cache misses that read RocksDB. None while the cache holds every key the store has (see
  // cache_holds_every_key_): a miss is then a new key, known absent without a lookup.
  int64_t rocksdb_reads() const { return rocksdb_reads_; }

 private:
  friend class TaskStore;
  struct Entry {
    Value value;
    bool present = false;  // false: the key has no value (deleted or known absent)
    bool dirty = false;    // changed since the last checkpoint
    // Whether the last committed checkpoint may hold the key (false only when known absent), so
    // a Delete of a key that was never committed writes no tombstone.
    bool maybe_committed = true;
    // Written while a checkpoint was prepared: the prepared transaction holds an older value, so
    // the entry stays dirty when that checkpoint commits.
    bool rewritten = false;
  };
  // Heterogeneous lookup for the meta map: a string_view finds a key without building a string.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  using Cache = NodeMap<Entry>;
  using CacheNode = Cache::Node;
  // A node with its key's head, read once: compared through the nodes, each compare of a sort
  // was two cache misses.
  struct HeadAndNode {
    KeyHead head;
    CacheNode* node;
  };

  KeyValueStore(TaskStore* owner, std::string name, rocksdb::ColumnFamilyHandle* cf);
  // The entry at `key`, created if needed, marked dirty.
  Entry& Touch(std::string_view key);
  // Marks a cached entry written since the last checkpoint.
  void MarkWritten(CacheNode& node);
  // A cache miss: reads the committed value (unless cache_holds_every_key_) and caches it (or
  // its absence) as clean.
  Result<CacheNode*> Load(std::string_view key);
  // A stored value read back, checked by load_check_; kCorruption (or the check's refusal) naming
  // the store and key.
  Result<Value> Decode(std::string_view key, std::string_view bytes) const;
  // Sorts unindexed_ by key.
  void SortUnindexed();
  static void SortByKey(std::vector<HeadAndNode>& nodes);
  // Moves unindexed_ into dirty_index_.
  void IndexDirty();
  // Checkpoint steps, driven by TaskStore.
  Status WriteDirty(rocksdb::Transaction& txn, std::string& buffer);
  enum class Settled { kStillDirty, kClean, kDropped };
  // What a commit does to one dirty entry; kDropped: the caller erases it from cache_.
  static Settled Settle(Entry& entry);
  void MarkCommitted(size_t cache_max_entries);
  void MarkRolledBack();
  void DropClean();
  void PrefetchHash(uint64_t hash, int stage) const;  // PrefetchMessageKey's stages
  // The hash announced under `tag`: the one kept from its stage 0, else state_key() hashed.
  template <typename StateKey>
  uint64_t AnnouncedHashOf(const void* tag, int stage, StateKey state_key);

  TaskStore* owner_;
  std::string name_;
  rocksdb::ColumnFamilyHandle* cf_;
  Cache cache_;
  // Whether every key with a value in RocksDB is in cache_: true from an open that found the
  // store empty until an entry with a value leaves the cache (eviction at a commit) or RocksDB
  // gets writes the cache did not make (a recovered checkpoint committed: DropClean). Entries
  // that leave as committed deletes keep it true: RocksDB has no value for them. A store that
  // starts empty and fits its cache (a benchmark, a new pipeline's first hours) never reads
  // RocksDB for its new keys.
  bool cache_holds_every_key_ = false;
  int64_t rocksdb_reads_ = 0;
  LoadCheck load_check_;
  // Every dirty entry is in exactly one of these two. dirty_index_ holds them in key order (views
  // of cache_'s keys: its nodes never move), so that a Scan merges them with the
  // committed state without sorting the cache. A first write only appends to unindexed_, and the
  // next Scan indexes what is there: an ordered insert costs a cache miss per tree level, which a
  // store that is only read and written by key (a counter) never needs to pay.
  std::map<std::string_view, Entry*> dirty_index_;
  std::vector<CacheNode*> unindexed_;
  // SortUnindexed's, kept: a Scan sorts what was written since the one before, often a few keys.
  std::vector<HeadAndNode> sort_scratch_;
  std::string prefetch_key_;  // scratch for PrefetchMessageKey
  // PrefetchMessageKey's hashes by tag, a slot per tag (a tag's slot taken by another costs a
  // second hash of its key, nothing else). 64: four times the announcements in flight.
  struct AnnouncedHash {
    const void* tag = nullptr;
    uint64_t hash = 0;
  };
  static constexpr int kAnnouncedSlotBits = 6;
  std::array<AnnouncedHash, size_t{1} << kAnnouncedSlotBits> announced_{};
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
  using MetaMap =
      std::unordered_map<std::string, std::string, KeyValueStore::KeyHash, std::equal_to<>>;
  MetaMap dirty_meta_;     // set since the last Prepare
  MetaMap prepared_meta_;  // in the prepared transaction, until it commits or rolls back
  std::unique_ptr<rocksdb::Transaction> prepared_;
};

}  // namespace weir::state
