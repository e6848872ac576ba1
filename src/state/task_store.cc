#include "state/task_store.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/utilities/write_batch_with_index.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/binary_value.h"
#include "core/names.h"
#include "state/key_encoding.h"

namespace weir::state {
namespace {

constexpr std::string_view kMetaFamily = "__meta";
// Cache lines of a value's bytes or elements that the prefetch's last stage touches: 1 KiB, more
// than a window step's packed state of a key (a hopping key's about 250 bytes). Measured when that
// state was an array of Values: 16 lines 1.07x of 8 for tumbling, 1.05-1.1x for hopping; 32 the
// same as 16.
constexpr size_t kPrefetchValueLines = 16;
// How far ahead a pass over the cache's nodes in a given order (a checkpoint's sort and write)
// prefetches the node it will read.
constexpr size_t kNodesAhead = 8;

// Prefetches the first lines of a string's bytes or an array's or object's elements (a window
// step's state is a packed string of some hundred bytes, read from its header on). Inlined, so
// that PrefetchHash's hints stay in it (tests/codegen/prefetch_hints.sh counts them there).
[[gnu::always_inline]] inline void PrefetchValue(const Value& value) {
  const void* elements;
  size_t bytes;
  if (value.is_string()) {
    elements = value.as_string().data();
    bytes = value.as_string().size();
  } else if (value.is_array()) {
    elements = value.as_array().data();
    bytes = value.as_array().size() * sizeof(Value);
  } else if (value.is_object()) {
    elements = value.as_object().data();
    bytes = value.as_object().size() * sizeof(Value::Member);
  } else {
    return;
  }
  // Every line the first kMaxBytes touch, from the one the first byte is in.
  constexpr uintptr_t kLine = 64, kMaxBytes = kPrefetchValueLines * kLine;
  const uintptr_t first = reinterpret_cast<uintptr_t>(elements);
  const uintptr_t last = first + std::min<uintptr_t>(bytes, kMaxBytes);
  for (uintptr_t line = first & ~(kLine - 1); line < last; line += kLine) {
    PrefetchForRead(reinterpret_cast<const void*>(line));
  }
}

rocksdb::Slice ToSlice(std::string_view s) { return {s.data(), s.size()}; }
std::string_view ToView(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

// Keys are binary; error messages show a bounded hex rendering.
std::string HexKey(std::string_view key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  constexpr size_t kMaxBytes = 48;
  std::string out;
  for (size_t i = 0; i < std::min(key.size(), kMaxBytes); ++i) {
    auto b = static_cast<unsigned char>(key[i]);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  if (key.size() > kMaxBytes) out += "...";
  return out;
}

// Turns a RocksDB status into a Weir one whose code says what the caller can do; `what` names the
// operation, `dir` the store.
Status FromRocks(const rocksdb::Status& s, std::string_view what,
                 const std::filesystem::path& dir) {
  std::string message = std::string(what) + " (state store " + dir.string() + "): " + s.ToString();
  using Code = rocksdb::Status::Code;
  switch (s.code()) {
    case Code::kOk:
      return Status::OK();
    case Code::kNotFound:
      return Status::NotFound(std::move(message));
    case Code::kCorruption:
      return Status::Corruption(std::move(message));
    case Code::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case Code::kIOError:
      if (s.IsNoSpace()) return Status::ResourceExhausted(std::move(message));
      return Status::IOError(std::move(message));
    case Code::kBusy:
    case Code::kTimedOut:
    case Code::kTryAgain:
    case Code::kShutdownInProgress:
      return Status::Unavailable(std::move(message));
    case Code::kAborted:
      return Status::Aborted(std::move(message));
    case Code::kNotSupported:
      return Status::FailedPrecondition(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

rocksdb::DBOptions MakeDbOptions(const TaskStoreOptions& options) {
  rocksdb::DBOptions db;
  db.create_if_missing = true;
  db.create_missing_column_families = true;
  // Prepared transactions are written to the WAL and recovered as prepared after a crash.
  db.allow_2pc = true;
  // Many task stores share a process: keep file handles, WAL and info logs bounded.
  db.max_open_files = 256;
  db.max_total_wal_size = 64 << 20;
  db.keep_log_file_num = 2;
  db.max_log_file_size = 4 << 20;
  // RocksDB grows the shared Env's flush and compaction pools to this limit.
  db.max_background_jobs = std::max(1, options.background_threads);
  return db;
}

rocksdb::ColumnFamilyOptions MakeFamilyOptions() {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = 16 << 20;
  cf.level_compaction_dynamic_level_bytes = true;
  // A checkpoint writes each store's dirty keys in key order: one insert hint for the whole
  // memtable (an empty prefix) turns most skiplist inserts into appends (-28% CPU per checkpoint
  // in task_store_benchmark).
  cf.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));
  // Debian's librocksdb is built with LZ4; fall back to none rather than fail on another build.
  const auto supported = rocksdb::GetSupportedCompressions();
  cf.compression =
      std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) != supported.end()
          ? rocksdb::kLZ4Compression
          : rocksdb::kNoCompression;
  rocksdb::BlockBasedTableOptions table;
  // Hot state lives in the KeyValueStore cache; the block cache only serves its misses.
  table.block_cache = rocksdb::NewLRUCache(8 << 20);
  // A cache miss is a point lookup that usually finds nothing (a new key): bloom filters answer
  // it without reading data blocks.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return cf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// KeyValueStore

KeyValueStore::KeyValueStore(TaskStore* owner, std::string name, rocksdb::ColumnFamilyHandle* cf)
    : owner_(owner), name_(std::move(name)), cf_(cf) {
  std::unique_ptr<rocksdb::Iterator> any(owner_->db_->NewIterator(rocksdb::ReadOptions(), cf_));
  any->SeekToFirst();
  cache_holds_every_key_ = !any->Valid() && any->status().ok();
}

Result<const Value*> KeyValueStore::Get(std::string_view key) {
  CacheNode* node = cache_.find(key);
  if (node == nullptr) [[unlikely]] {
    WEIR_ASSIGN_OR_RETURN(node, Load(key));
  }
  return node->second.present ? &node->second.value : nullptr;
}

Result<KeyValueStore::CacheNode*> KeyValueStore::Load(std::string_view key) {
  if (cache_holds_every_key_) {
    Entry absent;
    absent.maybe_committed = false;
    return cache_.emplace(key, std::move(absent));
  }
  ++rocksdb_reads_;
  rocksdb::PinnableSlice bytes;
  rocksdb::Status s = owner_->db_->Get(rocksdb::ReadOptions(), cf_, ToSlice(key), &bytes);
  Entry entry;
  if (s.ok()) {
    WEIR_ASSIGN_OR_RETURN(entry.value, Decode(key, ToView(bytes)));
    entry.present = true;
  } else if (s.IsNotFound()) {
    entry.maybe_committed = false;
  } else {
    return FromRocks(s, "reading store " + name_ + " key " + HexKey(key), owner_->dir_);
  }
  return cache_.emplace(key, std::move(entry));
}

Result<Value> KeyValueStore::Decode(std::string_view key, std::string_view bytes) const {
  Value value;
  Status decoded = AssignWholeBinary(bytes, value);
  if (decoded.ok() && load_check_) decoded = load_check_(key, value);
  if (!decoded.ok()) {
    return decoded.WithContext("store " + name_ + " key " + HexKey(key) + " in state store " +
                               owner_->dir_.string());
  }
  return value;
}

void KeyValueStore::MarkWritten(CacheNode& node) {
  Entry& entry = node.second;
  if (!entry.dirty) {
    entry.dirty = true;
    unindexed_.push_back(&node);
  }
  if (owner_->prepared_ != nullptr) entry.rewritten = true;
}

KeyValueStore::Entry& KeyValueStore::Touch(std::string_view key) {
  CacheNode* node = cache_.find(key);
  if (node == nullptr) node = cache_.emplace(key, Entry{});
  MarkWritten(*node);
  return node->second;
}

void KeyValueStore::PrefetchHash(uint64_t hash, int stage) const {
  if (stage == 0) return cache_.PrefetchSlot(hash);
  if (stage == 1) return cache_.PrefetchNode(hash);
  cache_.PrefetchContents(hash, [](const CacheNode& node) { PrefetchValue(node.second.value); });
}

template <typename StateKey>
uint64_t KeyValueStore::AnnouncedHashOf(const void* tag, int stage, StateKey state_key) {
  // Fibonacci hashing of the address: a batch's records, a fixed stride apart, spread.
  AnnouncedHash& announced =
      announced_[(reinterpret_cast<uintptr_t>(tag) * 0x9e3779b97f4a7c15ULL) >>
                 (64 - kAnnouncedSlotBits)];
  if (stage == 0 || announced.tag != tag) announced = {tag, Cache::Hash(state_key())};
  return announced.hash;
}

void KeyValueStore::PrefetchMessageKey(std::string_view message_key, const void* tag, int stage) {
  PrefetchHash(AnnouncedHashOf(tag, stage,
                               [&]() -> std::string_view {
                                 prefetch_key_.clear();
                                 AppendMessageKey(prefetch_key_, message_key);
                                 return prefetch_key_;
                               }),
               stage);
}

void KeyValueStore::PrefetchKey(std::string_view key, const void* tag, int stage) {
  PrefetchHash(AnnouncedHashOf(tag, stage, [key] { return key; }), stage);
}

Result<Value*> KeyValueStore::Mutate(std::string_view key) {
  CacheNode* node = cache_.find(key);
  if (node == nullptr) {
    WEIR_ASSIGN_OR_RETURN(node, Load(key));
  }
  MarkWritten(*node);
  Entry& entry = node->second;
  if (!entry.present) {
    entry.value = Value();
    entry.present = true;
  }
  return &entry.value;
}

void KeyValueStore::Put(std::string_view key, Value value) {
  Entry& entry = Touch(key);
  entry.value = std::move(value);
  entry.present = true;
}

void KeyValueStore::Delete(std::string_view key) {
  Entry& entry = Touch(key);
  entry.value = Value();
  entry.present = false;
}

Status KeyValueStore::Scan(
    std::string_view from, std::string_view to, bool backwards,
    const std::function<bool(std::string_view key, const Value& value)>& visit) {
  if (!to.empty() && to <= from) return Status::OK();
  IndexDirty();

  rocksdb::ReadOptions read_options;
  const rocksdb::Slice lower = ToSlice(from);
  const rocksdb::Slice upper = ToSlice(to);
  read_options.iterate_lower_bound = &lower;
  if (!to.empty()) read_options.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> committed(owner_->db_->NewIterator(read_options, cf_));

  // The dirty cursor is a map iterator rather than a reverse_iterator, and range ends are checked
  // by key: a Scan started from `visit` indexes pending writes into dirty_index_, and an insertion
  // leaves element iterators valid, whereas a reverse_iterator would start pointing at the new key.
  auto in_range = [&](std::string_view key) { return key >= from && (to.empty() || key < to); };
  auto dirty = dirty_index_.end();
  if (backwards) {
    committed->SeekToLast();  // honours iterate_upper_bound
    auto after = to.empty() ? dirty_index_.end() : dirty_index_.lower_bound(to);
    if (after != dirty_index_.begin()) dirty = std::prev(after);
  } else {
    committed->Seek(lower);
    dirty = dirty_index_.lower_bound(from);
  }
  auto advance_dirty = [&] {
    if (!backwards) {
      ++dirty;
    } else if (dirty == dirty_index_.begin()) {
      dirty = dirty_index_.end();
    } else {
      --dirty;
    }
  };
  auto advance_committed = [&] { backwards ? committed->Prev() : committed->Next(); };

  while (true) {
    const bool has_committed = committed->Valid();
    if (!has_committed && !committed->status().ok()) {
      return FromRocks(committed->status(), "scanning store " + name_, owner_->dir_);
    }
    const bool has_dirty = dirty != dirty_index_.end() && in_range(dirty->first);
    if (!has_committed && !has_dirty) break;

    // order < 0: the committed key comes next in visiting order; > 0: the dirty key; 0: both.
    int order;
    if (!has_dirty) {
      order = -1;
    } else if (!has_committed) {
      order = 1;
    } else {
      int c = committed->key().compare(ToSlice(dirty->first));
      order = backwards ? -c : c;
    }
    if (order < 0) {
      std::string_view key = ToView(committed->key());
      WEIR_ASSIGN_OR_RETURN(Value value, Decode(key, ToView(committed->value())));
      if (!visit(key, value)) return Status::OK();
      advance_committed();
      continue;
    }
    // The uncommitted write replaces the committed value (or hides the key).
    if (order == 0) advance_committed();
    const Entry& entry = *dirty->second;
    if (entry.present && !visit(dirty->first, entry.value)) return Status::OK();
    advance_dirty();
  }
  return Status::OK();
}

Status KeyValueStore::MutateEach(
    const std::function<Status(std::string_view key, Value& value)>& visit) {
  if (!cache_holds_every_key_) {
    std::vector<std::string> keys;
    WEIR_RETURN_IF_ERROR(Scan("", "", false, [&](std::string_view key, const Value&) {
      keys.emplace_back(key);
      return true;
    }));
    for (const std::string& key : keys) {
      WEIR_ASSIGN_OR_RETURN(Value * value, Mutate(key));
      WEIR_RETURN_IF_ERROR(visit(key, *value));
    }
    return Status::OK();
  }
  // Every live key is a present entry of the cache. The nodes are collected first: `visit` may
  // delete its key (the node stays until the next commit) but adds none.
  std::vector<HeadAndNode> nodes;
  nodes.reserve(cache_.size());
  cache_.for_each([&](CacheNode& node) {
    if (node.second.present) nodes.push_back({KeyHead(node.first), &node});
  });
  SortByKey(nodes);
  for (const HeadAndNode& each : nodes) {
    if (!each.node->second.present) continue;  // deleted by a visit that broke the contract
    MarkWritten(*each.node);
    WEIR_RETURN_IF_ERROR(visit(each.node->first, each.node->second.value));
  }
  return Status::OK();
}

void KeyValueStore::SortByKey(std::vector<HeadAndNode>& nodes) {
  std::sort(nodes.begin(), nodes.end(), [](const HeadAndNode& a, const HeadAndNode& b) {
    if (a.head != b.head) return a.head < b.head;
    return a.node->first < b.node->first;
  });
}

void KeyValueStore::SortUnindexed() {
  sort_scratch_.clear();
  // The nodes lie all over the cache's memory: each is fetched a few nodes ahead of its read.
  for (size_t i = 0; i < unindexed_.size(); ++i) {
    if (i + kNodesAhead < unindexed_.size()) PrefetchForRead(unindexed_[i + kNodesAhead]);
    sort_scratch_.push_back({KeyHead(unindexed_[i]->first), unindexed_[i]});
  }
  SortByKey(sort_scratch_);
  for (size_t i = 0; i < sort_scratch_.size(); ++i) unindexed_[i] = sort_scratch_[i].node;
}

void KeyValueStore::IndexDirty() {
  // Sorted first, each goes in just before the index's next key after the one before it: no
  // search down the tree unless an indexed key lies between them. (Inserted unsorted, each was a
  // search with a cache miss per level: 7% of the hopping bench's task thread, in the Scan that
  // closes every key at the end of input.)
  SortUnindexed();
  auto next = dirty_index_.begin();
  for (CacheNode* node : unindexed_) {
    next = std::next(dirty_index_.emplace_hint(next, node->first, &node->second));
  }
  unindexed_.clear();
}

Status KeyValueStore::WriteDirty(rocksdb::Transaction& txn, std::string& buffer) {
  // Straight into the transaction's write batch, past its index: nothing reads through the
  // transaction (the cache answers reads), and indexing every dirty key cost as much as the
  // memtable inserts. Prepare and Commit write and apply this batch as they would the indexed
  // writes.
  rocksdb::WriteBatch& batch = *txn.GetWriteBatch()->GetWriteBatch();
  auto write = [&](std::string_view key, const Entry& entry) {
    if (entry.present) {
      buffer.clear();
      entry.value.AppendBinary(buffer);
      return batch.Put(cf_, ToSlice(key), buffer);
    }
    return entry.maybe_committed ? batch.Delete(cf_, ToSlice(key)) : rocksdb::Status::OK();
  };
  // In key order: the memtable is a skiplist, and sorted inserts are several times cheaper than
  // random ones (the memtable's insert hint turns them into appends). The unindexed entries are
  // sorted, then merged with the index.
  SortUnindexed();
  auto indexed = dirty_index_.begin();
  auto pending = unindexed_.begin();
  rocksdb::Status s;
  while (s.ok() && (indexed != dirty_index_.end() || pending != unindexed_.end())) {
    if (pending == unindexed_.end() ||
        (indexed != dirty_index_.end() && indexed->first < (*pending)->first)) {
      s = write(indexed->first, *indexed->second);
      ++indexed;
    } else {
      // A node some way ahead, and the key and value bytes of one nearer, by then in cache.
      const std::ptrdiff_t left = unindexed_.end() - pending;
      if (left > static_cast<std::ptrdiff_t>(2 * kNodesAhead)) {
        PrefetchForRead(pending[2 * kNodesAhead]);
      }
      if (left > static_cast<std::ptrdiff_t>(kNodesAhead)) {
        const CacheNode& ahead = *pending[kNodesAhead];
        PrefetchForRead(ahead.first.data());
        PrefetchValue(ahead.second.value);
      }
      s = write((*pending)->first, (*pending)->second);
      ++pending;
    }
  }
  if (!s.ok()) return FromRocks(s, "checkpointing store " + name_, owner_->dir_);
  return Status::OK();
}

KeyValueStore::Settled KeyValueStore::Settle(Entry& entry) {
  if (entry.rewritten) {
    // Still dirty: the committed checkpoint holds an older value of it (or none).
    entry.rewritten = false;
    entry.maybe_committed = true;
    return Settled::kStillDirty;
  }
  entry.dirty = false;
  // A committed delete leaves the cache: such keys (expired windows, fired timers) are rarely
  // read again, and would otherwise linger as known-absent entries.
  if (!entry.present) return Settled::kDropped;
  entry.maybe_committed = true;
  return Settled::kClean;
}

void KeyValueStore::MarkCommitted(size_t cache_max_entries) {
  for (auto it = dirty_index_.begin(); it != dirty_index_.end();) {
    const Settled settled = Settle(*it->second);
    if (settled == Settled::kStillDirty) {
      ++it;
      continue;
    }
    const std::string_view key = it->first;
    it = dirty_index_.erase(it);
    if (settled == Settled::kDropped) cache_.erase(cache_.find(key));
  }
  size_t kept = 0;
  for (CacheNode* node : unindexed_) {
    const Settled settled = Settle(node->second);
    if (settled == Settled::kStillDirty) {
      unindexed_[kept++] = node;
    } else if (settled == Settled::kDropped) {
      cache_.erase(node);
    }
  }
  unindexed_.resize(kept);
  // Without per-hit recency bookkeeping (which would cost the hot path) the clean entries evicted
  // are those first in hash order: effectively random.
  if (cache_.size() > cache_max_entries) {
    size_t excess = cache_.size() - cache_max_entries;
    cache_.erase_if([this, &excess](const CacheNode& node) {
      if (excess == 0 || node.second.dirty) return false;
      --excess;
      cache_holds_every_key_ = false;  // a clean entry leaves: it has a value in RocksDB
      return true;
    });
  }
}

void KeyValueStore::MarkRolledBack() {
  for (auto& [key, entry] : dirty_index_) entry->rewritten = false;
  for (CacheNode* node : unindexed_) node->second.rewritten = false;
}

void KeyValueStore::DropClean() {
  cache_holds_every_key_ = false;
  cache_.erase_if([](const CacheNode& node) { return !node.second.dirty; });
}

// ---------------------------------------------------------------------------------------------
// TaskStore

Result<std::unique_ptr<TaskStore>> TaskStore::Open(const std::filesystem::path& dir,
                                                   const std::vector<std::string>& store_names,
                                                   const TaskStoreOptions& options) {
  for (size_t i = 0; i < store_names.size(); ++i) {
    const std::string& name = store_names[i];
    Status valid = name == kMetaFamily
                       ? Status::InvalidArgument("store name '" + name + "' is reserved")
                       : CheckName(name, "store name");
    WEIR_RETURN_IF_ERROR(valid.WithContext("state store " + dir.string()));
    if (std::find(store_names.begin(), store_names.begin() + i, name) != store_names.begin() + i) {
      return Status::InvalidArgument("state store " + dir.string() + ": store '" + name +
                                     "' is listed twice");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::IOError("creating state store directory " + dir.string() + ": " + ec.message());
  }

  const rocksdb::DBOptions db_options = MakeDbOptions(options);
  // RocksDB refuses to open a DB without all of its column families, so every existing one is
  // opened, listed or not.
  std::vector<std::string> families;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, dir.string(), &families);
  if (!s.ok()) {
    if (std::filesystem::exists(dir / "CURRENT")) {
      return FromRocks(s, "listing column families", dir);
    }
    families.clear();  // a new store
  }
  auto add_family = [&](std::string_view name) {
    if (std::find(families.begin(), families.end(), name) == families.end()) {
      families.emplace_back(name);
    }
  };
  add_family(rocksdb::kDefaultColumnFamilyName);
  add_family(kMetaFamily);
  for (const std::string& name : store_names) add_family(name);

  const rocksdb::ColumnFamilyOptions family_options = MakeFamilyOptions();
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.reserve(families.size());
  for (const std::string& name : families) descriptors.emplace_back(name, family_options);

  std::unique_ptr<TaskStore> store(new TaskStore());
  store->dir_ = dir;
  store->options_ = options;
  rocksdb::TransactionDB* db = nullptr;
  s = rocksdb::TransactionDB::Open(db_options, rocksdb::TransactionDBOptions(), dir.string(),
                                   descriptors, &store->handles_, &db);
  if (!s.ok()) {
    // RocksDB's LOCK file: another TaskStore (in this process or another) has the directory.
    if (s.IsIOError() && s.ToString().find("LOCK") != std::string::npos) {
      return Status::Unavailable("state store " + dir.string() +
                                 " is already open in another TaskStore (" + s.ToString() +
                                 "): close it first, or use another directory");
    }
    return FromRocks(s, "opening", dir);
  }
  store->db_.reset(db);

  auto handle_of = [&](std::string_view name) {
    auto at = std::find(families.begin(), families.end(), name) - families.begin();
    return store->handles_[at];
  };
  store->meta_cf_ = handle_of(kMetaFamily);
  for (const std::string& name : store_names) {
    store->stores_.push_back(
        std::unique_ptr<KeyValueStore>(new KeyValueStore(store.get(), name, handle_of(name))));
  }
  return store;
}

TaskStore::~TaskStore() {
  stores_.clear();
  // A pending prepared transaction is deleted without commit or rollback: it stays prepared in
  // the WAL, and the next Open recovers it as such.
  prepared_.reset();
  if (db_ == nullptr) return;
  for (rocksdb::ColumnFamilyHandle* handle : handles_) db_->DestroyColumnFamilyHandle(handle);
  db_.reset();
}

KeyValueStore& TaskStore::store(std::string_view name) {
  auto it = std::find_if(stores_.begin(), stores_.end(),
                         [&](const auto& store) { return store->name() == name; });
  WEIR_CHECK(it != stores_.end(), "unknown state store '" + std::string(name) + "' in " +
                                      dir_.string() + ": stores are named when it is opened");
  return **it;
}

Result<std::optional<std::string>> TaskStore::GetMeta(std::string_view key) {
  if (auto it = dirty_meta_.find(key); it != dirty_meta_.end()) return {it->second};
  if (auto it = prepared_meta_.find(key); it != prepared_meta_.end()) return {it->second};
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf_, ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "reading meta " + std::string(key), dir_);
  return {std::move(value)};
}

void TaskStore::PutMeta(std::string_view key, std::string value) {
  dirty_meta_.insert_or_assign(std::string(key), std::move(value));
}

Status TaskStore::Prepare(std::string_view checkpoint_name) {
  if (prepared_ != nullptr) {
    return Status::FailedPrecondition("state store " + dir_.string() + ": checkpoint " +
                                      prepared_->GetName() +
                                      " is still prepared; Commit or Rollback it first");
  }
  // A recovered transaction's writes are not in the committed state this cache was read from.
  if (std::vector<std::string> pending = PreparedCheckpoints(); !pending.empty()) {
    return Status::FailedPrecondition("state store " + dir_.string() + ": recovered checkpoint " +
                                      pending.front() +
                                      " must be committed or rolled back (CommitPrepared / "
                                      "RollbackPrepared) before a new checkpoint");
  }
  rocksdb::WriteOptions write_options;
  write_options.sync = true;  // Prepare is the durable step
  rocksdb::TransactionOptions txn_options;
  txn_options.skip_concurrency_control = true;  // the task thread is the only writer
  std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(write_options, txn_options));
  const std::string what = "preparing checkpoint " + std::string(checkpoint_name);
  rocksdb::Status s = txn->SetName(std::string(checkpoint_name));
  if (!s.ok()) return FromRocks(s, what, dir_);

  std::string buffer;
  for (const auto& store : stores_) {
    WEIR_RETURN_IF_ERROR(store->WriteDirty(*txn, buffer));
  }
  for (const auto& [key, value] : dirty_meta_) {
    s = txn->Put(meta_cf_, ToSlice(key), value);
    if (!s.ok()) return FromRocks(s, what, dir_);
  }
  s = txn->Prepare();
  if (!s.ok()) return FromRocks(s, what, dir_);

  prepared_ = std::move(txn);
  prepared_meta_ = std::move(dirty_meta_);
  dirty_meta_.clear();
  return Status::OK();
}

Status TaskStore::Commit() {
  if (prepared_ == nullptr) {
    return Status::FailedPrecondition("state store " + dir_.string() +
                                      ": Commit without a prepared checkpoint");
  }
  // The WAL was synced by Prepare; a commit marker lost in a crash leaves the checkpoint
  // prepared, and recovery commits it.
  rocksdb::WriteOptions write_options;
  write_options.sync = false;
  prepared_->SetWriteOptions(write_options);
  rocksdb::Status s = prepared_->Commit();
  if (!s.ok()) return FromRocks(s, "committing checkpoint " + prepared_->GetName(), dir_);
  prepared_.reset();
  for (const auto& store : stores_) store->MarkCommitted(options_.cache_max_entries);
  prepared_meta_.clear();
  return Status::OK();
}

Status TaskStore::Rollback() {
  if (prepared_ == nullptr) return Status::OK();  // a failed Prepare left nothing behind
  rocksdb::Status s = prepared_->Rollback();
  if (!s.ok()) return FromRocks(s, "rolling back checkpoint " + prepared_->GetName(), dir_);
  prepared_.reset();
  for (const auto& store : stores_) store->MarkRolledBack();
  // Meta set after the Prepare is newer than the rolled-back value.
  for (auto& [key, value] : prepared_meta_) dirty_meta_.try_emplace(key, std::move(value));
  prepared_meta_.clear();
  return Status::OK();
}

std::vector<std::string> TaskStore::PreparedCheckpoints() const {
  std::vector<rocksdb::Transaction*> txns;
  db_->GetAllPreparedTransactions(&txns);
  std::vector<std::string> names;
  for (rocksdb::Transaction* txn : txns) {
    if (txn != prepared_.get()) names.push_back(txn->GetName());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status TaskStore::CommitPrepared(std::string_view checkpoint_name) {
  const std::string name(checkpoint_name);
  if (prepared_ != nullptr && prepared_->GetName() == name) {
    return Status::FailedPrecondition("state store " + dir_.string() + ": checkpoint " + name +
                                      " was prepared by this TaskStore; use Commit()");
  }
  rocksdb::Transaction* txn = db_->GetTransactionByName(name);
  if (txn == nullptr) {
    return Status::NotFound("state store " + dir_.string() + ": no prepared checkpoint " + name);
  }
  rocksdb::Status s = txn->Commit();
  if (!s.ok()) return FromRocks(s, "committing recovered checkpoint " + name, dir_);
  // Once resolved, a recovered transaction is no longer registered with the DB: it is ours.
  delete txn;
  // Clean cache entries were read from the state before this commit.
  for (const auto& store : stores_) store->DropClean();
  return Status::OK();
}

Status TaskStore::RollbackPrepared(std::string_view checkpoint_name) {
  const std::string name(checkpoint_name);
  if (prepared_ != nullptr && prepared_->GetName() == name) {
    return Status::FailedPrecondition("state store " + dir_.string() + ": checkpoint " + name +
                                      " was prepared by this TaskStore; use Rollback()");
  }
  rocksdb::Transaction* txn = db_->GetTransactionByName(name);
  if (txn == nullptr) {
    return Status::NotFound("state store " + dir_.string() + ": no prepared checkpoint " + name);
  }
  rocksdb::Status s = txn->Rollback();
  if (!s.ok()) return FromRocks(s, "rolling back recovered checkpoint " + name, dir_);
  delete txn;
  return Status::OK();
}

}  // namespace weir::state
