// What writing a topic's records to Parquet through a ColumnBatch costs, per row, on one core:
// filling the batch with Nexmark-like bids (auction, bidder, price BIGINT; channel VARCHAR; url
// VARCHAR of ~60 bytes; date_time TIMESTAMP; extra VARCHAR of ~40 bytes), DuckDB copying it to
// a zstd Parquet file (`COPY (SELECT * FROM batch()) TO ... (FORMAT parquet, COMPRESSION
// zstd)`, threads = 1), and both. The lake's target is 1.5 M rows/s per core for both.
//
//   ninja -C build batch_scan_benchmark
//   build/src/sql/batch_scan_benchmark --benchmark_repetitions=5
// (with --benchmark_report_aggregates_only=true for the mean, median and deviation only).
//
// Every copy is checked: the file read back has the rows, price sum and text bytes filled in.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sql/column_batch.h"
#include "sql/database.h"

namespace weir::sql {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kRows = 1'000'000;
// Distinct bids, used over and over: more than a Parquet row group's 122880 rows (DuckDB's
// default), so no row group holds a repeat that dictionaries or zstd would find.
constexpr size_t kPoolRows = size_t{1} << 17;
constexpr int64_t kFirstMs = 1'700'000'000'000;

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Bids made once, so that the fill times the batch and not the making of strings. Channels and
// urls follow the nexmark-flink generator's shape; extra is random letters.
struct BidPool {
  std::vector<int64_t> auction, bidder, price;
  std::vector<std::string> channel, url, extra;

  BidPool() {
    static constexpr const char* kHot[] = {"Google", "Facebook", "Baidu", "Apple"};
    uint64_t random = 42;
    auto letters = [&](size_t n) {
      std::string s(n, 'a');
      for (char& c : s) c = static_cast<char>('a' + SplitMix(random) % 26);
      return s;
    };
    for (size_t i = 0; i < kPoolRows; ++i) {
      auction.push_back(1000 + static_cast<int64_t>(SplitMix(random) % 100000));
      bidder.push_back(1000 + static_cast<int64_t>(SplitMix(random) % 10000));
      price.push_back(static_cast<int64_t>(SplitMix(random) % 10000000));
      const uint64_t k = SplitMix(random) % 10000;
      channel.push_back(k % 2 == 0 ? kHot[k / 2 % 4] : "channel-" + std::to_string(k));
      url.push_back("https://www.nexmark.com/" + letters(5) + "/" + letters(5) + "/" + letters(5) +
                    "/item.htm?query=1&channel_id=" + std::to_string(k));
      extra.push_back(letters(36 + SplitMix(random) % 9));
    }
  }
};

const BidPool& Pool() {
  static const BidPool pool;
  return pool;
}

// What a batch of kRows holds, to check the file against.
struct Expected {
  int64_t price_sum = 0;
  int64_t text_bytes = 0;
};

void Fill(ColumnBatch& batch) {
  const BidPool& pool = Pool();
  batch.Clear();
  for (int64_t r = 0; r < kRows; ++r) {
    const size_t p = static_cast<size_t>(r) & (kPoolRows - 1);
    batch.AppendInt(0, pool.auction[p]);
    batch.AppendInt(1, pool.bidder[p]);
    batch.AppendInt(2, pool.price[p]);
    batch.AppendText(3, pool.channel[p]);
    batch.AppendText(4, pool.url[p]);
    batch.AppendInt(5, kFirstMs + r / 10);
    batch.AppendText(6, pool.extra[p]);
  }
}

Expected ExpectedOfFill() {
  const BidPool& pool = Pool();
  Expected e;
  for (int64_t r = 0; r < kRows; ++r) {
    const size_t p = static_cast<size_t>(r) & (kPoolRows - 1);
    e.price_sum += pool.price[p];
    e.text_bytes +=
        static_cast<int64_t>(pool.channel[p].size() + pool.url[p].size() + pool.extra[p].size());
  }
  return e;
}

// One DuckDB with one worker thread, a batch registered as batch(), and a file to write.
struct Bench {
  std::unique_ptr<Database> db;
  ColumnBatch batch;
  fs::path dir;
  std::string file;

  Bench() {
    dir = fs::temp_directory_path() / ("weir-batch-scan-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    file = (dir / "bids.parquet").string();
    auto opened = Database::OpenInMemory(1);
    WEIR_CHECK(opened.ok(), opened.status().ToString());
    db = std::move(opened).value();
    batch.Reset({{"auction", ColumnBatch::Type::kBigInt},
                 {"bidder", ColumnBatch::Type::kBigInt},
                 {"price", ColumnBatch::Type::kBigInt},
                 {"channel", ColumnBatch::Type::kVarchar},
                 {"url", ColumnBatch::Type::kVarchar},
                 {"date_time", ColumnBatch::Type::kTimestampMs},
                 {"extra", ColumnBatch::Type::kVarchar}});
    Status s = db->RegisterBatchScan("batch", &batch);
    WEIR_CHECK(s.ok(), s.ToString());
    Pool();
  }
  ~Bench() { fs::remove_all(dir); }

  std::string CopySql(std::string_view options) const {
    return "COPY (SELECT * FROM batch()) TO '" + file + "' (FORMAT parquet, " +
           std::string(options) + ")";
  }

  // The file holds what `e` says; the error otherwise.
  std::string Check(const Expected& e) {
    int64_t rows = -1, price_sum = -1, text_bytes = -1;
    Status s = db->Query(
        "SELECT count(*), sum(price)::BIGINT, "
        "sum(strlen(channel) + strlen(url) + strlen(extra))::BIGINT FROM read_parquet('" +
            file + "')",
        [&](const Row& row) {
          rows = row.Int(0);
          price_sum = row.Int(1);
          text_bytes = row.Int(2);
        });
    if (!s.ok()) return s.ToString();
    if (rows != kRows || price_sum != e.price_sum || text_bytes != e.text_bytes) {
      return "the file has " + std::to_string(rows) + " rows, price sum " +
             std::to_string(price_sum) + ", text bytes " + std::to_string(text_bytes);
    }
    return "";
  }
};

Bench& TheBench() {
  static Bench bench;
  return bench;
}

void Report(benchmark::State& state, Bench& bench) {
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(kRows), benchmark::Counter::kIsIterationInvariantRate);
  std::error_code ec;
  const auto bytes = fs::file_size(bench.file, ec);
  if (!ec) state.counters["file_bytes/row"] = static_cast<double>(bytes) / kRows;
}

// The COPY options of each case: the lake's (zstd at DuckDB's default level, 3), then cheaper
// ones for comparison, down to the floor of no compression and no dictionary encoding (the scan
// and DuckDB's Parquet writer alone). DICTIONARY_SIZE_LIMIT 1 skips the writer's per-row-group
// dictionary attempt, which the url and extra columns (all distinct) always abandon.
constexpr std::string_view kCopyOptions[] = {
    "COMPRESSION zstd",
    "COMPRESSION zstd, COMPRESSION_LEVEL 1",
    "COMPRESSION zstd, COMPRESSION_LEVEL 1, DICTIONARY_SIZE_LIMIT 1",
    "COMPRESSION uncompressed, DICTIONARY_SIZE_LIMIT 1",
};

void BM_Fill(benchmark::State& state) {
  Bench& bench = TheBench();
  for (auto _ : state) {
    Fill(bench.batch);
    benchmark::ClobberMemory();
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(kRows), benchmark::Counter::kIsIterationInvariantRate);
}

// The scan alone: every column copied into DuckDB's vectors and read by a filter that keeps every
// row, counted.
void BM_Scan(benchmark::State& state) {
  Bench& bench = TheBench();
  Fill(bench.batch);
  int64_t rows = -1;
  for (auto _ : state) {
    Status s = bench.db->Query(
        "SELECT count(*) FROM batch() WHERE auction + bidder + price + strlen(channel) + "
        "strlen(url) + strlen(extra) + epoch_ms(date_time) >= 0",
        [&](const Row& row) { rows = row.Int(0); });
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  if (rows != kRows) {
    state.SkipWithError(("the scan counted " + std::to_string(rows) + " rows").c_str());
    return;
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(kRows), benchmark::Counter::kIsIterationInvariantRate);
}

// COPY of the batch to Parquet with kCopyOptions[range(0)]; with `fill`, each iteration fills
// the batch first.
void BM_Copy(benchmark::State& state, bool fill) {
  Bench& bench = TheBench();
  const std::string_view options = kCopyOptions[state.range(0)];
  state.SetLabel(std::string(options));
  const std::string sql = bench.CopySql(options);
  if (!fill) Fill(bench.batch);
  for (auto _ : state) {
    if (fill) Fill(bench.batch);
    Status s = bench.db->Execute(sql);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  if (std::string error = bench.Check(ExpectedOfFill()); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  Report(state, bench);
}

BENCHMARK(BM_Fill)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Scan)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy, ToParquet, false)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Copy, FillAndToParquet, true)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace weir::sql

BENCHMARK_MAIN();
