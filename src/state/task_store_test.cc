#include "state/task_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "state/key_encoding.h"
#include "state/test_util.h"

namespace weir::state {
namespace {

using Items = std::vector<std::pair<std::string, int64_t>>;

class TaskStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<TaskStore> Open(const TaskStoreOptions& options = {}) {
    auto opened = TaskStore::Open(dir_.path(), {"counts", "windows"}, options);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(opened).value() : nullptr;
  }

  TestTempDir dir_;
};

std::optional<int64_t> GetInt(KeyValueStore& store, std::string_view key) {
  auto got = store.Get(key);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!got.ok() || *got == nullptr) return std::nullopt;
  return (*got)->as_int();
}

// Every visited (key, int) in visiting order; stops after `limit` items when limit > 0.
Items ScanInts(KeyValueStore& store, std::string_view from, std::string_view to,
               bool backwards = false, size_t limit = 0) {
  Items items;
  Status s = store.Scan(from, to, backwards, [&](std::string_view key, const Value& value) {
    items.emplace_back(key, value.as_int());
    return limit == 0 || items.size() < limit;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return items;
}

Items Reversed(Items items) {
  std::reverse(items.begin(), items.end());
  return items;
}

void Checkpoint(TaskStore& store, std::string_view name) {
  Status prepared = store.Prepare(name);
  ASSERT_TRUE(prepared.ok()) << prepared.ToString();
  Status committed = store.Commit();
  ASSERT_TRUE(committed.ok()) << committed.ToString();
}

TEST_F(TaskStoreTest, GetSeesUncommittedPut) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  EXPECT_EQ(GetInt(counts, "k"), std::nullopt);
  counts.Put("k", 1);
  EXPECT_EQ(GetInt(counts, "k"), 1);
  counts.Put("k", 2);
  EXPECT_EQ(GetInt(counts, "k"), 2);
  EXPECT_EQ(counts.dirty_count(), 1u);
}

TEST_F(TaskStoreTest, ScanSeesUncommittedWrites) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  counts.Put("b", 2);
  counts.Put("a", 1);
  EXPECT_EQ(ScanInts(counts, "", ""), (Items{{"a", 1}, {"b", 2}}));
}

TEST_F(TaskStoreTest, DeleteHidesCommittedValue) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  store->store("counts").Put("k", 1);
  Checkpoint(*store, "c1");
  store->store("counts").Delete("k");
  EXPECT_EQ(GetInt(store->store("counts"), "k"), std::nullopt);
  EXPECT_EQ(ScanInts(store->store("counts"), "", ""), Items{});
  Checkpoint(*store, "c2");

  store.reset();  // closes it: a directory has one open TaskStore at a time
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(GetInt(store->store("counts"), "k"), std::nullopt);
  EXPECT_EQ(ScanInts(store->store("counts"), "", ""), Items{});
}

TEST_F(TaskStoreTest, ScanMergesCommittedAndUncommittedInKeyOrderBothWays) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  for (auto [key, value] : Items{{"a", 1}, {"c", 3}, {"e", 5}, {"g", 7}}) counts.Put(key, value);
  Checkpoint(*store, "c1");
  counts.Put("b", 20);  // new
  counts.Put("c", 30);  // replaces a committed value
  counts.Delete("e");   // hides a committed key
  counts.Put("h", 80);  // new, after every committed key
  counts.Delete("zz");  // deletes nothing
  const Items expected = {{"a", 1}, {"b", 20}, {"c", 30}, {"g", 7}, {"h", 80}};
  EXPECT_EQ(ScanInts(counts, "", ""), expected);
  EXPECT_EQ(ScanInts(counts, "", "", /*backwards=*/true), Reversed(expected));
}

TEST_F(TaskStoreTest, ScanHonoursBoundsAndUnboundedAbove) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  for (auto [key, value] : Items{{"a", 1}, {"c", 3}, {"e", 5}}) counts.Put(key, value);
  Checkpoint(*store, "c1");
  for (auto [key, value] : Items{{"b", 2}, {"d", 4}, {"f", 6}}) counts.Put(key, value);

  const Items b_to_e = {{"b", 2}, {"c", 3}, {"d", 4}};  // "e" is excluded: [from, to)
  EXPECT_EQ(ScanInts(counts, "b", "e"), b_to_e);
  EXPECT_EQ(ScanInts(counts, "b", "e", true), Reversed(b_to_e));
  const Items c_up = {{"c", 3}, {"d", 4}, {"e", 5}, {"f", 6}};
  EXPECT_EQ(ScanInts(counts, "c", ""), c_up);
  EXPECT_EQ(ScanInts(counts, "c", "", true), Reversed(c_up));
  // Bounds between keys, and an empty range.
  EXPECT_EQ(ScanInts(counts, "bb", "dd"), (Items{{"c", 3}, {"d", 4}}));
  EXPECT_EQ(ScanInts(counts, "bb", "dd", true), (Items{{"d", 4}, {"c", 3}}));
  EXPECT_EQ(ScanInts(counts, "d", "d"), Items{});
}

TEST_F(TaskStoreTest, ScanStopsWhenVisitReturnsFalse) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  for (auto [key, value] : Items{{"a", 1}, {"b", 2}, {"c", 3}}) counts.Put(key, value);
  EXPECT_EQ(ScanInts(counts, "", "", false, 2), (Items{{"a", 1}, {"b", 2}}));
  EXPECT_EQ(ScanInts(counts, "", "", true, 1), (Items{{"c", 3}}));
}

// The expiry sweep pattern: delete each window as it is visited.
TEST_F(TaskStoreTest, ScanVisitMayDeleteTheKeyItVisits) {
  for (bool backwards : {false, true}) {
    SCOPED_TRACE(backwards ? "backwards" : "forwards");
    auto store = Open();
    ASSERT_NE(store, nullptr);
    KeyValueStore& windows = store->store("windows");
    for (auto [key, value] : Items{{"a", 1}, {"c", 3}, {"e", 5}}) windows.Put(key, value);
    Checkpoint(*store, backwards ? "b1" : "f1");
    for (auto [key, value] : Items{{"b", 2}, {"d", 4}}) windows.Put(key, value);

    std::vector<std::string> visited;
    Status s = windows.Scan("", "", backwards, [&](std::string_view key, const Value&) {
      visited.emplace_back(key);
      windows.Delete(key);
      return true;
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<std::string> expected = {"a", "b", "c", "d", "e"};
    if (backwards) std::reverse(expected.begin(), expected.end());
    EXPECT_EQ(visited, expected);
    EXPECT_EQ(ScanInts(windows, "", ""), Items{});
    Checkpoint(*store, backwards ? "b2" : "f2");
    EXPECT_EQ(ScanInts(windows, "", ""), Items{});
  }
}

TEST_F(TaskStoreTest, ScanMatchesAModelOverRandomWritesCheckpointsAndReopens) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // A small cache, so that reads go to RocksDB after eviction as well as to the cache.
  TaskStoreOptions options;
  options.cache_max_entries = 8;

  std::vector<std::string> keys = {""};
  static constexpr char kAlphabet[] = {'\x00', 'a', 'b', '\xff'};
  while (keys.size() < 60) {
    std::string key;
    for (size_t n = 1 + rng() % 4; n > 0; --n) key.push_back(kAlphabet[rng() % 4]);
    keys.push_back(key);
  }
  auto random_key = [&] { return keys[rng() % keys.size()]; };

  std::map<std::string, int64_t> current;
  std::map<std::string, int64_t> committed;
  std::optional<std::map<std::string, int64_t>> prepared;
  std::string prepared_name;
  int checkpoints = 0;

  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  for (int step = 0; step < 5000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    KeyValueStore& kv = store->store("windows");
    const int op = static_cast<int>(rng() % 100);
    if (op < 35) {
      std::string key = random_key();
      int64_t value = static_cast<int64_t>(rng() % 1000);
      kv.Put(key, value);
      current[key] = value;
    } else if (op < 50) {
      std::string key = random_key();
      kv.Delete(key);
      current.erase(key);
    } else if (op < 65) {
      std::string key = random_key();
      auto it = current.find(key);
      ASSERT_EQ(GetInt(kv, key),
                it == current.end() ? std::nullopt : std::optional<int64_t>(it->second));
    } else if (op < 85) {
      std::string from = rng() % 4 == 0 ? "" : random_key();
      std::string to = rng() % 3 == 0 ? "" : random_key();
      bool backwards = rng() % 2 == 0;
      size_t limit = rng() % 3 == 0 ? 1 + rng() % 5 : 0;
      Items expected;
      if (to.empty() || from < to) {
        auto first = current.lower_bound(from);
        auto last = to.empty() ? current.end() : current.lower_bound(to);
        expected.assign(first, last);
      }
      if (backwards) std::reverse(expected.begin(), expected.end());
      if (limit > 0 && expected.size() > limit) expected.resize(limit);
      ASSERT_EQ(ScanInts(kv, from, to, backwards, limit), expected)
          << "[" << from << ", " << to << ")" << (backwards ? " backwards" : "");
    } else if (op < 90) {
      if (prepared) continue;
      prepared_name = "cp-" + std::to_string(++checkpoints);
      ASSERT_TRUE(store->Prepare(prepared_name).ok());
      prepared = current;
    } else if (op < 94) {
      if (!prepared) continue;
      ASSERT_TRUE(store->Commit().ok());
      committed = *std::exchange(prepared, std::nullopt);
    } else if (op < 98) {
      if (!prepared) continue;
      ASSERT_TRUE(store->Rollback().ok());
      prepared.reset();
    } else {
      // Reopen: what was not committed is gone; a pending checkpoint is recovered as prepared.
      store.reset();
      store = Open(options);
      ASSERT_NE(store, nullptr);
      if (prepared) {
        ASSERT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{prepared_name});
        if (rng() % 2 == 0) {
          ASSERT_TRUE(store->CommitPrepared(prepared_name).ok());
          committed = *prepared;
        } else {
          ASSERT_TRUE(store->RollbackPrepared(prepared_name).ok());
        }
        prepared.reset();
      }
      ASSERT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});
      current = committed;
    }
  }
  if (prepared) {
    ASSERT_TRUE(store->Rollback().ok());
  }
  Checkpoint(*store, "final");
  store.reset();
  store = Open(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ScanInts(store->store("windows"), "", ""), Items(current.begin(), current.end()));
}

TEST_F(TaskStoreTest, CommittedCheckpointSurvivesReopen) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  store->store("counts").Put("a", 1);
  store->store("windows").Put("w", 2);
  Checkpoint(*store, "c1");
  EXPECT_EQ(store->store("counts").dirty_count(), 0u);

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 1);
  EXPECT_EQ(GetInt(store->store("windows"), "w"), 2);
  EXPECT_EQ(GetInt(store->store("counts"), "w"), std::nullopt);  // stores are separate
}

TEST_F(TaskStoreTest, UncommittedWritesAreGoneAfterReopen) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  store->store("counts").Put("a", 1);
  Checkpoint(*store, "c1");
  store->store("counts").Put("a", 2);
  store->store("counts").Put("b", 3);
  store->PutMeta("offset", "9");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ScanInts(store->store("counts"), "", ""), (Items{{"a", 1}}));
  auto offset = store->GetMeta("offset");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, std::nullopt);
}

TEST_F(TaskStoreTest, CheckpointWithNothingChangedSucceeds) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  Checkpoint(*store, "empty");
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});
}

TEST_F(TaskStoreTest, RolledBackCheckpointKeepsWritesForTheNextOne) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  store->store("counts").Put("a", 1);
  store->PutMeta("offset", "5");
  ASSERT_TRUE(store->Prepare("c1").ok());
  ASSERT_TRUE(store->Rollback().ok());
  EXPECT_EQ(store->store("counts").dirty_count(), 1u);
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 1);
  Checkpoint(*store, "c2");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 1);
  auto offset = store->GetMeta("offset");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, "5");
}

// Records processed while a checkpoint is prepared belong to the next checkpoint.
TEST_F(TaskStoreTest, WritesAfterPrepareStayDirtyPastCommit) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  counts.Put("a", 1);
  counts.Put("b", 1);
  store->PutMeta("offset", "1");
  ASSERT_TRUE(store->Prepare("c1").ok());
  counts.Put("a", 2);
  counts.Put("c", 2);
  store->PutMeta("offset", "2");
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(counts.dirty_count(), 2u);  // a and c
  EXPECT_EQ(ScanInts(counts, "", ""), (Items{{"a", 2}, {"b", 1}, {"c", 2}}));
  auto offset = store->GetMeta("offset");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, "2");

  // Reopened without the second checkpoint: exactly the first.
  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ScanInts(store->store("counts"), "", ""), (Items{{"a", 1}, {"b", 1}}));
  offset = store->GetMeta("offset");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, "1");
}

TEST_F(TaskStoreTest, ValuesOfEveryTypeSurviveACheckpoint) {
  const Value values[] = {
      Value(),
      Value(true),
      Value(int64_t{-7}),
      Value(2.5),
      Value(std::string("text with \0 inside", 18)),
      Value(Value::Array{1, "two", Value()}),
      Value::MakeObject({{"sum", 10}, {"nested", Value::MakeObject({{"x", 1.5}})}})};
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (size_t i = 0; i < std::size(values); ++i) {
    store->store("windows").Put(std::to_string(i), values[i]);
  }
  Checkpoint(*store, "c1");
  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  for (size_t i = 0; i < std::size(values); ++i) {
    auto got = store->store("windows").Get(std::to_string(i));
    ASSERT_TRUE(got.ok());
    ASSERT_NE(*got, nullptr);
    EXPECT_EQ(**got, values[i]) << i;
  }
}

TEST_F(TaskStoreTest, MetaRoundTripsThroughACheckpoint) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto missing = store->GetMeta("watermark");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, std::nullopt);
  store->PutMeta("watermark", "1700000000000");
  store->PutMeta("offset/clicks/0", std::string("\0\x01", 2));
  auto uncommitted = store->GetMeta("watermark");
  ASSERT_TRUE(uncommitted.ok());
  EXPECT_EQ(*uncommitted, "1700000000000");
  Checkpoint(*store, "c1");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  auto watermark = store->GetMeta("watermark");
  auto offset = store->GetMeta("offset/clicks/0");
  ASSERT_TRUE(watermark.ok() && offset.ok());
  EXPECT_EQ(*watermark, "1700000000000");
  EXPECT_EQ(*offset, std::string("\0\x01", 2));
}

TEST_F(TaskStoreTest, UnknownStoreNameIsACheckFailure) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_DEATH((void)store->store("no_such_store"), "unknown state store 'no_such_store'");
}

TEST_F(TaskStoreTest, InvalidStoreNamesAreRefused) {
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"__meta"}, {""}, {"has space"}, {"slash/"}, {"a", "a"}}) {
    auto opened = TaskStore::Open(dir_.path(), names);
    ASSERT_FALSE(opened.ok()) << names.front();
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(TaskStore::Open(dir_.path(), {"A-z_0.9"}).ok());
}

TEST_F(TaskStoreTest, OpenFailsWhileAnotherTaskStoreHoldsTheDirectory) {
  auto first = Open();
  ASSERT_NE(first, nullptr);
  auto second = TaskStore::Open(dir_.path(), {"counts"});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(dir_.path().string()), std::string::npos)
      << second.status().ToString();
  EXPECT_NE(second.status().message().find("already open"), std::string::npos)
      << second.status().ToString();

  first.reset();
  EXPECT_TRUE(TaskStore::Open(dir_.path(), {"counts"}).ok());
}

TEST_F(TaskStoreTest, OpenFailsWhileAnotherProcessHoldsTheDirectory) {
  int opened[2];
  int release[2];
  ASSERT_EQ(pipe(opened), 0);
  ASSERT_EQ(pipe(release), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(opened[0]);
    close(release[1]);  // or the read below would never see the parent close it
    auto store = TaskStore::Open(dir_.path(), {"counts"});
    char byte = store.ok() ? 'y' : 'n';
    if (write(opened[1], &byte, 1) != 1) _exit(2);
    _exit(read(release[0], &byte, 1) == 0 ? 0 : 3);  // EOF once the parent closes its end
  }
  close(opened[1]);
  close(release[0]);
  char child_opened = 0;
  const bool got_byte = read(opened[0], &child_opened, 1) == 1;
  auto second = TaskStore::Open(dir_.path(), {"counts"});
  close(release[1]);  // lets the child exit, whatever the outcome
  close(opened[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(got_byte && child_opened == 'y') << "the child could not open the store";
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();
  EXPECT_NE(second.status().message().find("already open"), std::string::npos)
      << second.status().ToString();
}

TEST_F(TaskStoreTest, StoresNotListedAtOpenKeepTheirData) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  store->store("windows").Put("w", 1);
  Checkpoint(*store, "c1");
  store.reset();

  auto counts_only = TaskStore::Open(dir_.path(), {"counts"});
  ASSERT_TRUE(counts_only.ok()) << counts_only.status().ToString();
  (*counts_only)->store("counts").Put("a", 2);
  Checkpoint(**counts_only, "c2");
  counts_only = Status::Aborted("closed");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(GetInt(store->store("windows"), "w"), 1);
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 2);
}

TEST_F(TaskStoreTest, EvictedValuesAreReadBackFromRocksDB) {
  TaskStoreOptions options;
  options.cache_max_entries = 8;
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  auto key = [](int i) {
    std::string k = MessageKeyPrefix("user");
    AppendInt64Field(k, i);
    return k;
  };
  for (int i = 0; i < 100; ++i) counts.Put(key(i), i);
  EXPECT_EQ(counts.cached_count(), 100u);  // dirty entries are never evicted
  Checkpoint(*store, "c1");
  EXPECT_LE(counts.cached_count(), 8u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(GetInt(counts, key(i)), i) << i;
  for (int i = 0; i < 100; ++i) counts.Put(key(i), i + 1000);
  Checkpoint(*store, "c2");
  EXPECT_LE(counts.cached_count(), 8u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(GetInt(counts, key(i)), i + 1000) << i;
}

// CheckLoadedWith: every value read back from RocksDB (Get, Mutate, Scan, MutateEach) passes the
// check before anything sees it, its refusal naming the store and key; values written through
// the cache are the writer's and are not checked.
TEST_F(TaskStoreTest, ALoadCheckSeesEveryValueReadFromRocksDBAndNoneWrittenInMemory) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    store->store("counts").Put("a", 1);
    store->store("counts").Put("b", -2);
    Checkpoint(*store, "c1");
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  std::vector<std::string> checked;
  counts.CheckLoadedWith([&](std::string_view key, Value& value) {
    checked.emplace_back(key);
    if (value.as_int() < 0) return Status::Corruption("a negative count");
    value = value.as_int() * 10;  // what the check leaves is what is read
    return Status::OK();
  });
  counts.Put("c", -3);  // written in memory: not checked
  EXPECT_EQ(GetInt(counts, "c"), -3);
  EXPECT_EQ(GetInt(counts, "a"), 10);
  auto b = counts.Mutate("b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kCorruption);
  EXPECT_NE(b.status().message().find("a negative count"), std::string::npos);
  EXPECT_NE(b.status().message().find("store counts key"), std::string::npos)
      << b.status().ToString();
  EXPECT_EQ(checked, (std::vector<std::string>{"a", "b"}));
  // A Scan reads the committed values it does not find in the cache: "b" again.
  checked.clear();
  Status scanned = counts.Scan("", "", false, [](std::string_view, const Value&) { return true; });
  EXPECT_EQ(scanned.code(), StatusCode::kCorruption) << scanned.ToString();
  EXPECT_EQ(checked, (std::vector<std::string>{"a", "b"}));
  // MutateEach of a store whose committed keys are not all cached reads them as a Scan does.
  checked.clear();
  std::vector<std::string> visited;
  Status mutated = counts.MutateEach([&](std::string_view key, Value&) {
    visited.emplace_back(key);
    return Status::OK();
  });
  EXPECT_EQ(mutated.code(), StatusCode::kCorruption) << mutated.ToString();
  EXPECT_EQ(checked, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(visited.empty()) << "a key was visited before every value was read and checked";
}

TEST_F(TaskStoreTest, AStoreOpenedEmptyAnswersMissesWithoutRocksDBUntilAValueLeavesTheCache) {
  TaskStoreOptions options;
  options.cache_max_entries = 8;
  auto key = [](int i) {
    std::string k = MessageKeyPrefix("user");
    AppendInt64Field(k, i);
    return k;
  };
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  {
    KeyValueStore& counts = store->store("counts");
    for (int i = 0; i < 5; ++i) {
      auto missing = counts.Get(key(i));
      ASSERT_TRUE(missing.ok());
      EXPECT_EQ(*missing, nullptr);
      counts.Put(key(i), i);
    }
    Checkpoint(*store, "c1");
    counts.Delete(key(0));  // a committed delete leaves the cache; RocksDB has no value either
    Checkpoint(*store, "c2");
    EXPECT_EQ(GetInt(counts, key(0)), std::nullopt);
    EXPECT_EQ(GetInt(counts, key(1)), 1);
    EXPECT_EQ(counts.rocksdb_reads(), 0);
    // Past the cache's size: clean entries with values leave, and are read back from RocksDB.
    for (int i = 0; i < 100; ++i) counts.Put(key(i), i + 1000);
    Checkpoint(*store, "c3");
    for (int i = 0; i < 100; ++i) EXPECT_EQ(GetInt(counts, key(i)), i + 1000) << i;
    EXPECT_GT(counts.rocksdb_reads(), 0);
    EXPECT_EQ(GetInt(counts, key(500)), std::nullopt);
  }
  // Reopened with values in RocksDB: misses read it.
  store.reset();
  store = Open(options);
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  EXPECT_EQ(GetInt(counts, key(7)), 1007);
  EXPECT_EQ(counts.rocksdb_reads(), 1);
  // The other store of the same RocksDB was empty at the open: it reads nothing.
  EXPECT_EQ(GetInt(store->store("windows"), key(7)), std::nullopt);
  EXPECT_EQ(store->store("windows").rocksdb_reads(), 0);
}

TEST_F(TaskStoreTest, MutateChangesTheValueInPlaceAndItIsCheckpointed) {
  TaskStoreOptions options;
  options.cache_max_entries = 1;  // the second round reads evicted values back from RocksDB
  auto store = Open(options);
  ASSERT_NE(store, nullptr);
  KeyValueStore& counts = store->store("counts");
  for (int round = 0; round < 2; ++round) {
    for (const char* k : {"a", "b", "a"}) {
      auto v = counts.Mutate(k);
      ASSERT_TRUE(v.ok());
      **v = Value((*v)->is_int() ? (*v)->as_int() + 1 : 1);
    }
    Checkpoint(*store, "m" + std::to_string(round));
  }
  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 4);
  EXPECT_EQ(GetInt(store->store("counts"), "b"), 2);
}

// MutateEach visits every live key in byte order, committed or not, with its value to change in
// place; changes and deletes made in the visit are checkpointed. Both ways to it: a store whose
// cache holds every key (visited in place) and one that has evicted (a scan, then a lookup per
// key); the same answers.
TEST_F(TaskStoreTest, MutateEachVisitsEveryLiveKeyInOrderAndItsChangesAreCheckpointed) {
  for (const size_t cache : {size_t{1} << 20, size_t{2}}) {
    SCOPED_TRACE("cache of " + std::to_string(cache) + " entries");
    TaskStoreOptions options;
    options.cache_max_entries = cache;
    TestTempDir dir;
    auto open = [&] {
      auto opened = TaskStore::Open(dir.path(), {"counts"}, options);
      EXPECT_TRUE(opened.ok()) << opened.status().ToString();
      return opened.ok() ? std::move(opened).value() : nullptr;
    };
    auto store = open();
    ASSERT_NE(store, nullptr);
    KeyValueStore& counts = store->store("counts");
    // Committed, then changed, deleted and added uncommitted; keys of every length and byte.
    for (const char* k : {"m", "b", "\xff", "ba", "z", "a"}) counts.Put(k, int64_t{1});
    Checkpoint(*store, "first");
    counts.Put("b", int64_t{2});
    counts.Delete("z");
    counts.Put(std::string_view("\0", 1), int64_t{3});
    counts.Put("bb", int64_t{4});
    Items visited;
    Status each = counts.MutateEach([&](std::string_view key, Value& value) {
      visited.emplace_back(std::string(key), value.as_int());
      if (key == "m") {
        counts.Delete(key);
      } else {
        value = Value(value.as_int() * 10);
      }
      return Status::OK();
    });
    ASSERT_TRUE(each.ok()) << each.ToString();
    // The path taken: the cache visited in place reads nothing from RocksDB; after eviction the
    // evicted keys are read back.
    if (cache > 2) {
      EXPECT_EQ(counts.rocksdb_reads(), 0);
    } else {
      EXPECT_GT(counts.rocksdb_reads(), 0);
    }
    const Items expected = {
        {std::string(1, '\0'), 3}, {"a", 1}, {"b", 2}, {"ba", 1}, {"bb", 4}, {"m", 1}, {"\xff", 1}};
    EXPECT_EQ(visited, expected);
    // An error from the visit stops it and is returned.
    int calls = 0;
    Status stopped = counts.MutateEach([&](std::string_view, Value&) {
      ++calls;
      return Status::Internal("stop here");
    });
    EXPECT_EQ(stopped.message(), "stop here");
    EXPECT_EQ(calls, 1);
    Checkpoint(*store, "second");
    store.reset();
    store = open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(ScanInts(store->store("counts"), "", ""), (Items{{std::string(1, '\0'), 30},
                                                               {"a", 10},
                                                               {"b", 20},
                                                               {"ba", 10},
                                                               {"bb", 40},
                                                               {"\xff", 10}}));
  }
}

TEST_F(TaskStoreTest, PrepareAndCommitOutOfOrderAreRefused) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Commit().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->Prepare("c1").ok());
  EXPECT_EQ(store->Prepare("c2").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->CommitPrepared("c1").code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store->Commit().ok());
  EXPECT_EQ(store->CommitPrepared("c1").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->RollbackPrepared("nope").code(), StatusCode::kNotFound);
}

TEST_F(TaskStoreTest, CheckpointPreparedAtCloseIsRecoveredAsPrepared) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  store->store("counts").Put("a", 1);
  ASSERT_TRUE(store->Prepare("c1").ok());
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});  // its own is not listed

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{"c1"});
  EXPECT_EQ(store->Prepare("c2").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->CommitPrepared("c1").ok());
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 1);
  Checkpoint(*store, "c2");
}

// The child commits checkpoint c1, changes state and meta, prepares c2 (WAL fsynced) and is
// killed before committing it.
class TaskStoreCrashTest : public TaskStoreTest {
 protected:
  void PrepareC2AndDie() {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto opened = TaskStore::Open(dir_.path(), {"counts", "windows"});
      if (!opened.ok()) _exit(2);
      TaskStore& store = **opened;
      KeyValueStore& counts = store.store("counts");
      counts.Put("a", 1);
      counts.Put("b", 2);
      store.PutMeta("offset", "10");
      if (!store.Prepare("c1").ok() || !store.Commit().ok()) _exit(3);
      counts.Put("a", 100);
      counts.Delete("b");
      counts.Put("c", 3);
      store.PutMeta("offset", "20");
      if (!store.Prepare("c2").ok()) _exit(4);
      raise(SIGKILL);
      _exit(5);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    ASSERT_EQ(WTERMSIG(status), SIGKILL);
  }

  void ExpectState(TaskStore& store, const Items& counts, const std::string& offset) {
    EXPECT_EQ(ScanInts(store.store("counts"), "", ""), counts);
    auto got = store.GetMeta("offset");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, offset);
  }
};

TEST_F(TaskStoreCrashTest, PreparedCheckpointSurvivesKill9AndCommitsOnRecovery) {
  PrepareC2AndDie();
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{"c2"});
  // Until it is resolved, the committed state is c1's; reading it must not go stale.
  ExpectState(*store, {{"a", 1}, {"b", 2}}, "10");
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 1);

  ASSERT_TRUE(store->CommitPrepared("c2").ok());
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});
  EXPECT_EQ(GetInt(store->store("counts"), "a"), 100);
  ExpectState(*store, {{"a", 100}, {"c", 3}}, "20");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});
  ExpectState(*store, {{"a", 100}, {"c", 3}}, "20");
}

TEST_F(TaskStoreCrashTest, PreparedCheckpointSurvivesKill9AndRollsBackLeavingNoTrace) {
  PrepareC2AndDie();
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{"c2"});
  ASSERT_TRUE(store->RollbackPrepared("c2").ok());
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});
  ExpectState(*store, {{"a", 1}, {"b", 2}}, "10");

  store.reset();
  store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->PreparedCheckpoints(), std::vector<std::string>{});
  ExpectState(*store, {{"a", 1}, {"b", 2}}, "10");
  // The name is free again.
  store->store("counts").Put("d", 4);
  Checkpoint(*store, "c2");
  ExpectState(*store, {{"a", 1}, {"b", 2}, {"d", 4}}, "10");
}

}  // namespace
}  // namespace weir::state
