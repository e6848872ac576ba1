// Durable append and sequential replay of 100-byte records: the embedded log's segment files
// against RocksDB used as an append-only log (key = big-endian offset, one WriteBatch + WAL
// fsync per group): the comparison behind building the log on segment files
// (docs/architecture.md §3), its figures recorded in README.md.
//
//   ninja -C build-log log_benchmark && build-log/src/log/log_benchmark
//
// Every benchmark checks its result (record count, offsets, bytes) and fails if it is wrong.
#include <benchmark/benchmark.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/coding.h"
#include "log/log.h"

namespace weir::log {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kRecords = 1'000'000;

class BenchDir {
 public:
  BenchDir() {
    path_ = fs::temp_directory_path() /
            ("weir-log-bench-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~BenchDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// 1000 users, each with a 100-byte JSON value, made once so that the benchmarks time the
// storage and not the string building.
struct Corpus {
  std::vector<std::string> keys, values;
  Corpus() {
    for (int u = 0; u < 1000; ++u) {
      keys.push_back("user-" + std::to_string(u));
      std::string v = "{\"user\":\"" + keys.back() + "\",\"pad\":\"";
      while (v.size() < 98) v.push_back('p');
      values.push_back(v + "\"}");
    }
  }
};
const Corpus& TheCorpus() {
  static const Corpus corpus;
  return corpus;
}

void AddRecord(RecordBatchBuilder& b, int64_t i) {
  const Corpus& c = TheCorpus();
  b.AddRaw(EventTime(1700000000000 + i), KeySerde::kString, c.keys[i % 1000], c.values[i % 1000]);
}

// --- segment files -----------------------------------------------------------------------------

std::unique_ptr<LogStore> OpenLog(const fs::path& dir) {
  LogOptions options;
  options.dir = dir;
  auto store = LogStore::Open(options);
  if (!store.ok()) return nullptr;
  return std::move(store).value();
}

// One producer, `per_append` records per Append, no waiting; one WaitDurable at the end.
void BM_SegmentLog_DurableAppend(benchmark::State& state) {
  const int64_t per_append = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    BenchDir dir;
    auto store = OpenLog(dir.path());
    Partition& p = (*store->CreateTopic("bench", {}))->partition(PartitionId(0));
    RecordBatchBuilder b;
    state.ResumeTiming();
    for (int64_t i = 0; i < kRecords;) {
      b.Clear();
      for (int64_t k = 0; k < per_append; ++k, ++i) AddRecord(b, i);
      if (!p.Append(b).ok()) state.SkipWithError("append failed");
    }
    if (!p.WaitDurable(Offset(kRecords)).ok()) state.SkipWithError("not durable");
    state.PauseTiming();
    if (p.NextOffset() != Offset(kRecords)) state.SkipWithError("wrong end");
    store.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_SegmentLog_DurableAppend)
    ->Arg(1)
    ->Arg(100)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// `threads` producers, each appending 100 records and waiting until they are durable.
void BM_SegmentLog_DurableAppendWaitingThreads(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr int64_t kPerAppend = 100;
  for (auto _ : state) {
    state.PauseTiming();
    BenchDir dir;
    auto store = OpenLog(dir.path());
    Partition& p = (*store->CreateTopic("bench", {}))->partition(PartitionId(0));
    std::atomic<bool> failed{false};
    state.ResumeTiming();
    std::vector<std::thread> producers;
    for (int t = 0; t < threads; ++t) {
      producers.emplace_back([&, t] {
        RecordBatchBuilder b;
        for (int64_t i = t * kPerAppend; i < kRecords; i += threads * kPerAppend) {
          b.Clear();
          for (int64_t k = 0; k < kPerAppend; ++k) AddRecord(b, i + k);
          if (!p.Append(b, Durability::kWaitDurable).ok()) failed = true;
        }
      });
    }
    for (auto& t : producers) t.join();
    state.PauseTiming();
    if (failed || p.NextOffset() != Offset(kRecords)) state.SkipWithError("append failed");
    store.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_SegmentLog_DurableAppendWaitingThreads)
    ->Arg(4)
    ->Arg(16)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_SegmentLog_Replay(benchmark::State& state) {
  BenchDir dir;
  auto store = OpenLog(dir.path());
  Partition& p = (*store->CreateTopic("bench", {}))->partition(PartitionId(0));
  RecordBatchBuilder b;
  for (int64_t i = 0; i < kRecords;) {
    b.Clear();
    for (int k = 0; k < 1000; ++k, ++i) AddRecord(b, i);
    (void)p.Append(b);
  }
  if (!p.WaitDurable(Offset(kRecords)).ok()) state.SkipWithError("not durable");
  for (auto _ : state) {
    PartitionReader reader(p, Offset(0));
    int64_t n = 0, bytes = 0;
    for (;;) {
      auto records = reader.Next();
      if (!records.ok() || records->empty()) break;
      for (const StoredRecord& r : *records) {
        if (r.offset.value() != n) state.SkipWithError("offsets not dense");
        bytes += static_cast<int64_t>(r.value.size());
        ++n;
      }
    }
    if (n != kRecords || bytes != kRecords * 100) state.SkipWithError("wrong records");
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_SegmentLog_Replay)->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);

// --- RocksDB -----------------------------------------------------------------------------------

std::unique_ptr<rocksdb::DB> OpenRocks(const fs::path& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.compression = rocksdb::kNoCompression;  // the segment files do not compress either
  options.write_buffer_size = 64 << 20;
  options.IncreaseParallelism(2);
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::Open(options, dir.string(), &db).ok()) return nullptr;
  return std::unique_ptr<rocksdb::DB>(db);
}

std::string OffsetKey(int64_t offset) {
  std::string key;
  coding::PutBigEndian64(key, static_cast<uint64_t>(offset));
  return key;
}

// The same record bytes as the log stores, one key per offset, one synced WriteBatch per group.
void BM_RocksDB_DurableAppend(benchmark::State& state) {
  const int64_t group = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    BenchDir dir;
    auto db = OpenRocks(dir.path());
    if (!db) state.SkipWithError("open failed");
    rocksdb::WriteOptions sync;
    sync.sync = true;
    RecordBatchBuilder b;
    state.ResumeTiming();
    rocksdb::WriteBatch batch;
    for (int64_t i = 0; i < kRecords;) {
      batch.Clear();
      for (int64_t k = 0; k < group; ++k, ++i) {
        b.Clear();
        AddRecord(b, i);
        batch.Put(OffsetKey(i), b.payload());
      }
      if (!db->Write(sync, &batch).ok()) state.SkipWithError("write failed");
    }
    state.PauseTiming();
    db.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_RocksDB_DurableAppend)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// `threads` writers each writing 100 records per synced WriteBatch (RocksDB groups concurrent
// writers into one WAL write and fsync, as the log's committer does). Offsets are handed out by
// an atomic counter, as a log would.
void BM_RocksDB_DurableAppendWaitingThreads(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr int64_t kPerWrite = 100;
  for (auto _ : state) {
    state.PauseTiming();
    BenchDir dir;
    auto db = OpenRocks(dir.path());
    std::atomic<int64_t> next{0};
    std::atomic<bool> failed{false};
    state.ResumeTiming();
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t) {
      writers.emplace_back([&] {
        rocksdb::WriteOptions sync;
        sync.sync = true;
        RecordBatchBuilder b;
        rocksdb::WriteBatch batch;
        for (;;) {
          const int64_t base = next.fetch_add(kPerWrite);
          if (base >= kRecords) break;
          batch.Clear();
          for (int64_t k = 0; k < kPerWrite; ++k) {
            b.Clear();
            AddRecord(b, base + k);
            batch.Put(OffsetKey(base + k), b.payload());
          }
          if (!db->Write(sync, &batch).ok()) failed = true;
        }
      });
    }
    for (auto& t : writers) t.join();
    state.PauseTiming();
    if (failed) state.SkipWithError("write failed");
    db.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_RocksDB_DurableAppendWaitingThreads)
    ->Arg(4)
    ->Arg(16)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_RocksDB_Replay(benchmark::State& state) {
  BenchDir dir;
  auto db = OpenRocks(dir.path());
  {
    RecordBatchBuilder b;
    rocksdb::WriteBatch batch;
    for (int64_t i = 0; i < kRecords;) {
      batch.Clear();
      for (int k = 0; k < 1000; ++k, ++i) {
        b.Clear();
        AddRecord(b, i);
        batch.Put(OffsetKey(i), b.payload());
      }
      (void)db->Write(rocksdb::WriteOptions(), &batch);
    }
    (void)db->Flush(rocksdb::FlushOptions());
  }
  for (auto _ : state) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    int64_t n = 0, bytes = 0;
    std::vector<StoredRecord> decoded;
    for (it->Seek(OffsetKey(0)); it->Valid(); it->Next()) {
      // Decoded as the log's reader decodes, so both hand the caller the same record views.
      decoded.clear();
      const rocksdb::Slice v = it->value();
      const int64_t offset = static_cast<int64_t>(coding::DecodeBigEndian64(it->key().data()));
      if (offset != n ||
          !DecodeRecords(std::string_view(v.data(), v.size()), 1, Offset(offset), decoded).ok()) {
        state.SkipWithError("bad record");
        break;
      }
      bytes += static_cast<int64_t>(decoded[0].value.size());
      ++n;
    }
    if (n != kRecords || bytes != kRecords * 100) state.SkipWithError("wrong records");
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_RocksDB_Replay)->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weir::log

BENCHMARK_MAIN();
