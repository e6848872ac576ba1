// Micro-benchmarks of the TaskStore hot path and checkpoint cost.
//
//   ninja -C build-state task_store_benchmark && build-state/src/state/task_store_benchmark
//
// The store lives under $TMPDIR (or /tmp); a checkpoint's cost includes one WAL fsync there.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "state/key_encoding.h"
#include "state/task_store.h"

namespace weir::state {
namespace {

constexpr int kKeys = 100'000;

class BenchmarkDir {
 public:
  BenchmarkDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "weir-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~BenchmarkDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Keys shaped like windowed state: a message key and a window start.
std::vector<std::string> CounterKeys() {
  std::vector<std::string> keys;
  keys.reserve(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    std::string key = MessageKeyPrefix("user-" + std::to_string(i));
    AppendInt64Field(key, 1'700'000'000'000 + i % 60 * 60'000);
    keys.push_back(std::move(key));
  }
  return keys;
}

// The keys in a shuffled order, so that the loops below do not walk memory in the order the
// cache allocated it (records do not arrive in that order either).
std::vector<const std::string*> AccessOrder(const std::vector<std::string>& keys) {
  std::vector<const std::string*> order;
  order.reserve(keys.size());
  for (const std::string& key : keys) order.push_back(&key);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  return order;
}

std::unique_ptr<TaskStore> OpenOrDie(const std::filesystem::path& dir) {
  auto opened = TaskStore::Open(dir, {"counts"});
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    std::abort();
  }
  return std::move(opened).value();
}

// Get + Put of an int counter on a key already in the cache and already written since the last
// checkpoint: the per-record path in steady state.
void BM_CachedCounterIncrement(benchmark::State& state) {
  BenchmarkDir dir;
  auto task = OpenOrDie(dir.path());
  KeyValueStore& counts = task->store("counts");
  const std::vector<std::string> keys = CounterKeys();
  for (const std::string& key : keys) counts.Put(key, 0);

  const std::vector<const std::string*> order = AccessOrder(keys);
  size_t i = 0;
  for (auto _ : state) {
    const std::string& key = *order[i];
    if (++i == order.size()) i = 0;
    const Value* current = *counts.Get(key);
    counts.Put(key, current->as_int() + 1);
  }

  int64_t total = 0;
  for (const std::string& key : keys) total += (*counts.Get(key))->as_int();
  if (total != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("counters do not add up to the increments");
  }
  state.counters["keys"] = kKeys;
}
BENCHMARK(BM_CachedCounterIncrement);

// The same increment on a key that is cached but clean (not written since the last checkpoint):
// the first write of a key in a checkpoint interval also enters the ordered dirty index.
void BM_FirstIncrementSinceCheckpoint(benchmark::State& state) {
  BenchmarkDir dir;
  auto task = OpenOrDie(dir.path());
  KeyValueStore& counts = task->store("counts");
  const std::vector<std::string> keys = CounterKeys();
  for (const std::string& key : keys) counts.Put(key, 0);
  int checkpoints = 0;
  auto checkpoint = [&] {
    if (!task->Prepare("cp-" + std::to_string(++checkpoints)).ok() || !task->Commit().ok()) {
      std::abort();
    }
  };
  checkpoint();

  const std::vector<const std::string*> order = AccessOrder(keys);
  size_t i = 0;
  for (auto _ : state) {
    const std::string& key = *order[i];
    const Value* current = *counts.Get(key);
    counts.Put(key, current->as_int() + 1);
    if (++i == keys.size()) {
      i = 0;
      state.PauseTiming();
      checkpoint();
      state.ResumeTiming();
    }
  }

  int64_t total = 0;
  for (const std::string& key : keys) total += (*counts.Get(key))->as_int();
  if (total != static_cast<int64_t>(state.iterations())) {
    state.SkipWithError("counters do not add up to the increments");
  }
}
BENCHMARK(BM_FirstIncrementSinceCheckpoint);

// The floor for the benchmark above: the same find-and-assign pattern on a bare hash map of the
// same keys, with no store around it (two lookups per increment, as Get + Put).
void BM_BareHashMapIncrement(benchmark::State& state) {
  const std::vector<std::string> keys = CounterKeys();
  std::unordered_map<std::string, Value> counts;
  for (const std::string& key : keys) counts.emplace(key, 0);
  const std::vector<const std::string*> order = AccessOrder(keys);
  size_t i = 0;
  for (auto _ : state) {
    const std::string& key = *order[i];
    if (++i == order.size()) i = 0;
    int64_t current = counts.find(key)->second.as_int();
    counts.find(key)->second = current + 1;
  }
  int64_t total = 0;
  for (const auto& [key, value] : counts) total += value.as_int();
  if (total != static_cast<int64_t>(state.iterations())) state.SkipWithError("bad total");
}
BENCHMARK(BM_BareHashMapIncrement);

// Prepare (WAL fsync) + Commit of a checkpoint holding 100,000 dirty keys.
void BM_Checkpoint100kDirtyKeys(benchmark::State& state) {
  BenchmarkDir dir;
  const std::vector<std::string> keys = CounterKeys();
  int64_t round = 0;
  {
    auto task = OpenOrDie(dir.path());
    KeyValueStore& counts = task->store("counts");
    const std::vector<const std::string*> order = AccessOrder(keys);
    for (auto _ : state) {
      state.PauseTiming();
      ++round;
      for (const std::string* key : order) counts.Put(*key, round);
      state.ResumeTiming();
      if (!task->Prepare("cp-" + std::to_string(round)).ok() || !task->Commit().ok()) {
        state.SkipWithError("checkpoint failed");
        return;
      }
    }
  }
  // The last checkpoint is what a reopened store holds.
  auto task = OpenOrDie(dir.path());
  for (size_t i = 0; i < keys.size(); i += 997) {
    auto got = task->store("counts").Get(keys[i]);
    if (!got.ok() || *got == nullptr || (*got)->as_int() != round) {
      state.SkipWithError("reopened store does not hold the last checkpoint");
      return;
    }
  }
  state.counters["dirty_keys"] = kKeys;
}
BENCHMARK(BM_Checkpoint100kDirtyKeys)->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace
}  // namespace weir::state

BENCHMARK_MAIN();
