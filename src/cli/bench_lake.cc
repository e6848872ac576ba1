// weir bench lake: the lake (src/lake) over Nexmark bids kept as JSON in a topic of the embedded
// log. Three parts, each checked against the generator:
//
// 1. Materialization: N bids appended to a topic at once, a view over it (declared columns, or a
//    SQL transform with --sql), one Lake::Update timed: rows/s per core (process CPU), wall
//    rows/s, Parquet bytes and heap allocations per row, peak memory during the update. The
//    records are all in the open span of the view's default partition (1 h), so the update
//    writes them as one piece, in one COPY reading them through a batch of max_batch_records
//    (64 Ki; --batch-records) refilled as it goes. The view's count(*) and sum(price) must be
//    the generator's.
// 2. Optionally (--pipeline-events), what a view refreshed in the background costs a running
//    pipeline: Nexmark q0 with and without one over its output topic, events/s per core.
// 3. Queries: the same bids spread over 24 hours of event time and appended in 24 bursts, one per
//    hour of event time, each at the start of a new insert-time span of the view (--span-ms), so
//    that the view has 24 sealed partitions of one hour each (partitions follow the log's append
//    time, which the log stamps itself), each sorted by _ts. Then one hour's count and sum and
//    the latest 100 rows, each timed (median of --query-runs) through Lake::Query, through DuckDB
//    over one Parquet file of the same rows, and through DuckDB over the raw JSON lines
//    (read_json), in turn; the bytes each read (the process's rchar) and the partitions the
//    lake's query read (pruned by the hour's range of _ts; the latest rows by the certified
//    order).
//
// The last line is for scripts (bench/compare.sh).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_support.h"
#include "cli/commands.h"
#include "cli/local_log.h"
#include "cli/nexmark_queries.h"
#include "core/heap_counter.h"
#include "core/process_stats.h"
#include "lake/lake.h"
#include "nexmark/generator.h"
#include "nexmark/source.h"
#include "sql/database.h"
#include "weir/application.h"

namespace weir::cli {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kHours = 24;
constexpr int64_t kHourMs = 3'600'000;
// The day's first event time: 2023-11-14 22:00:00 UTC, on an hour.
constexpr int64_t kFirstMs = 1'699'999'200'000;
// The hour the one-hour query reads.
constexpr int kQueryHour = 12;
// The Parquet options of the one-file comparison: the lake's (materializer.cc).
constexpr const char* kCopyOptions =
    "FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, PARQUET_VERSION V2";
// --sql: Nexmark q1's currency conversion, keeping every bid and its price.
constexpr const char* kTransformSql =
    "SELECT auction, bidder, price, CAST(price * 0.908 AS BIGINT) AS price_euro_cents, channel, "
    "url, _ts, extra FROM records";

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// "2023-11-15 10:00:00": a TIMESTAMP literal of an epoch time in ms (whole seconds).
std::string TimestampLiteral(int64_t ms) {
  const std::time_t seconds = ms / 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char out[40];
  std::strftime(out, sizeof out, "TIMESTAMP '%Y-%m-%d %H:%M:%S'", &tm);
  return out;
}

// Bytes this process has read through read(2) and friends so far (/proc/self/io rchar), page
// cache hits included; -1 where the kernel does not say.
int64_t ReadBytes() {
  std::ifstream io("/proc/self/io");
  std::string name;
  int64_t value = 0;
  while (io >> name >> value) {
    if (name == "rchar:") return value;
  }
  return -1;
}

// Resets the process's peak resident set to the current one (Linux: clear_refs 5), so that
// PeakRssMib() tells the peak of what follows; false where it cannot.
bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

double PeakRssMib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;  // kB
  }
  return ProcessPeakRssBytes() / 1048576.0;
}

// The first `bids` bids of the Nexmark stream, their event times spread over 24 hours from
// kFirstMs (the generator's event rate set so), as the nexmark source writes them to a topic:
// null key, the bid's dateTime as timestamp, the flat JSON object as value.
class Bids {
 public:
  explicit Bids(int64_t bids) : bids_(bids), generator_(Config(bids)) {}

  // Calls f(timestamp_ms, json, price) for each bid, in order.
  template <typename F>
  void ForEach(F&& f) const {
    nexmark::Event event;
    std::string json;
    int64_t produced = 0;
    for (int64_t n = 0; produced < bids_; ++n) {
      if (nexmark::NexmarkGenerator::KindOfEventId(generator_.EventIdAt(n)) !=
          nexmark::EventKind::kBid) {
        continue;
      }
      generator_.EventAt(n, event);
      json.clear();
      event.AppendJson(json);
      f(event.timestamp.value(), std::string_view(json), event.bid().price);
      ++produced;
    }
  }

 private:
  static nexmark::NexmarkConfig Config(int64_t bids) {
    nexmark::NexmarkConfig config;
    config.first_event_ms = kFirstMs;
    // 46 of each 50 events are bids; a few events to spare keep the last bid inside the day.
    const double events = static_cast<double>(bids) * 50 / 46 + 100;
    config.events_per_second = events / (kHours * kHourMs / 1000.0);
    return config;
  }

  int64_t bids_;
  nexmark::NexmarkGenerator generator_;
};

// What the generator made: all of it, and per hour of event time.
struct Totals {
  int64_t count = 0;
  int64_t price_sum = 0;
  int64_t max_ts = INT64_MIN;
  int64_t hour_count[kHours] = {};
  int64_t hour_price_sum[kHours] = {};

  void Add(int64_t ts, int64_t price) {
    ++count;
    price_sum += price;
    max_ts = std::max(max_ts, ts);
    const int64_t hour = std::clamp<int64_t>((ts - kFirstMs) / kHourMs, 0, kHours - 1);
    ++hour_count[hour];
    hour_price_sum[hour] += price;
  }
};

std::vector<lake::ViewColumn> BidColumns() {
  using lake::ColumnKind;
  return {{"auction", ColumnKind::kBigInt}, {"bidder", ColumnKind::kBigInt},
          {"price", ColumnKind::kBigInt},   {"channel", ColumnKind::kVarchar},
          {"url", ColumnKind::kVarchar},    {"dateTime", ColumnKind::kBigInt},
          {"extra", ColumnKind::kVarchar}};
}

// Appends the batches durably; returns once every record is durable and visible.
Status AppendDurably(log::Partition& partition,
                     const std::vector<log::RecordBatchBuilder>& batches) {
  Offset end(0);
  for (const log::RecordBatchBuilder& b : batches) {
    WEIR_ASSIGN_OR_RETURN(Offset base, partition.Append(b));
    end = base + static_cast<int64_t>(b.count());
  }
  return batches.empty() ? Status::OK() : partition.WaitDurable(end);
}

// A query's rows as text cells, through the lake.
struct LakeRows {
  std::vector<std::string> names;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

// `stats`, when given, gets the query's (the partitions it read).
Result<LakeRows> LakeQuery(lake::Lake& lake, const std::string& sql,
                           lake::QueryStats* stats = nullptr) {
  LakeRows out;
  lake::QuerySink sink;
  sink.on_columns = [&](std::span<const std::string> names) {
    out.names.assign(names.begin(), names.end());
  };
  sink.on_row = [&](std::span<const std::optional<std::string>> cells) {
    out.rows.emplace_back(cells.begin(), cells.end());
  };
  lake::QueryOptions options;
  options.stats = stats;
  WEIR_RETURN_IF_ERROR(lake.Query(sql, options, sink));
  return out;
}

int64_t CellInt(const std::optional<std::string>& cell) {
  return cell ? std::stoll(*cell) : INT64_MIN;
}

// One query's answer, reduced to what is checked: rows, and the first row's two numbers (count
// and sum for the hour; the row count and the first row's dateTime for the latest rows).
struct Answer {
  int64_t rows = 0;
  int64_t a = INT64_MIN;
  int64_t b = INT64_MIN;
  bool operator==(const Answer&) const = default;
  std::string ToString() const {
    return std::to_string(rows) + " rows, " + std::to_string(a) + ", " + std::to_string(b);
  }
};

// The hour query and the latest-rows query, in the forms each system reads.
struct Queries {
  std::string hour;
  std::string latest;
};

// A query's timing: wall ms and bytes read, one entry per run.
struct Timings {
  std::vector<double> ms;
  std::vector<double> bytes;
  double MedianMs() { return Percentile(ms, 0.5); }
  double MedianMib() {
    return bytes.empty() || bytes[0] < 0 ? -1 : Percentile(bytes, 0.5) / 1048576.0;
  }
};

// Runs `query` once, timed, into `t`; returns its answer.
template <typename F>
Result<Answer> Timed(Timings& t, F&& query) {
  const int64_t read0 = ReadBytes();
  const auto start = Clock::now();
  Result<Answer> answer = query();
  t.ms.push_back(Seconds(Clock::now() - start) * 1e3);
  const int64_t read1 = ReadBytes();
  t.bytes.push_back(read0 < 0 || read1 < 0 ? -1 : static_cast<double>(read1 - read0));
  return answer;
}

// A query on a fresh DuckDB (as a `duckdb -c` would): the answer, `dateTime` or the second
// column read as the answer's b for the latest rows.
Result<Answer> DuckDbQuery(const std::string& sql, bool latest) {
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::OpenInMemory(0));
  Answer answer;
  size_t date_time = 0;
  WEIR_RETURN_IF_ERROR(db->Query(
      sql,
      [&](std::span<const sql::Column> columns) {
        for (size_t i = 0; i < columns.size(); ++i) {
          if (columns[i].name == "dateTime") date_time = i;
        }
      },
      [&](const sql::Row& row) {
        if (answer.rows++ > 0) return;
        if (latest) {
          answer.a = 0;
          answer.b = row.Int(date_time);
        } else {
          answer.a = row.Int(0);
          answer.b = row.IsNull(1) ? 0 : row.Int(1);
        }
      }));
  if (latest) answer.a = answer.rows;
  return answer;
}

Result<Answer> LakeAnswer(lake::Lake& lake, const std::string& sql, bool latest,
                          int64_t& partitions_read) {
  lake::QueryStats stats;
  WEIR_ASSIGN_OR_RETURN(LakeRows rows, LakeQuery(lake, sql, &stats));
  partitions_read = stats.partitions_read;
  Answer answer;
  answer.rows = static_cast<int64_t>(rows.rows.size());
  if (rows.rows.empty()) return answer;
  if (latest) {
    auto it = std::find(rows.names.begin(), rows.names.end(), "dateTime");
    if (it == rows.names.end()) return Status::Internal("the view has no dateTime column");
    answer.a = answer.rows;
    answer.b = CellInt(rows.rows[0][static_cast<size_t>(it - rows.names.begin())]);
  } else {
    answer.a = CellInt(rows.rows[0][0]);
    answer.b = rows.rows[0][1] ? CellInt(rows.rows[0][1]) : 0;
  }
  return answer;
}

// Figures of one materialization.
struct Materialized {
  double wall_s = 0;
  double cpu_s = 0;
  std::string allocs_per_row;
  double peak_rss_mib = -1;
  lake::MaterializeFigures figures;
};

Result<Materialized> TimedUpdate(lake::Lake& lake, const std::string& view, bool open_too,
                                 int64_t rows) {
  Materialized m;
  const bool peak = ResetPeakRss();
  const double cpu0 = ProcessCpuSeconds();
  const auto start = Clock::now();
  AllocationMeter allocations;
  Status s = lake.Update(view, open_too, &m.figures);

  allocations.Stop();
  m.wall_s = Seconds(Clock::now() - start);
  m.cpu_s = ProcessCpuSeconds() - cpu0;
  m.peak_rss_mib = peak ? PeakRssMib() : -1;
  m.allocs_per_row = allocations.PerEvent(rows);
  WEIR_RETURN_IF_ERROR(s);
  return m;
}

// Part 2: Nexmark q0 with and without a lake view of its output refreshed in the background.
struct PipelineCost {
  double plain_per_core = -1;
  double lake_per_core = -1;
  double plain_wall = -1;
  double lake_wall = -1;
  int64_t view_rows = 0;
};

// Keeps a lake view of the q0 output topic up to date in the background while the pipeline
// runs; the last update, after the run, brings it to the end of the topic.
class LakeService : public RunService {
 public:
  LakeService(fs::path dir, std::string topic) : dir_(std::move(dir)), topic_(std::move(topic)) {}
  Status Start(log::LogStore& log, const std::function<void(const std::string&)>&) override {
    lake::LakeOptions options;
    options.dir = dir_;
    WEIR_ASSIGN_OR_RETURN(lake_, lake::Lake::Open(log, std::move(options)));
    lake::ViewSpec spec;
    spec.name = "q0";
    spec.topic = topic_;
    spec.refresh = std::chrono::seconds(1);
    WEIR_RETURN_IF_ERROR(lake_->Register(spec));
    lake_->StartBackground();
    return Status::OK();
  }
  void Stop() override {
    lake_->StopBackground();
    lake::MaterializeFigures figures;
    status_ = lake_->Update("q0", true, &figures);
    if (auto described = lake_->Describe("q0"); described.ok()) rows_ = described->rows;
    lake_.reset();
  }
  const Status& status() const { return status_; }
  int64_t rows() const { return rows_; }

 private:
  fs::path dir_;
  std::string topic_;
  std::unique_ptr<lake::Lake> lake_;
  Status status_;
  int64_t rows_ = 0;
};

Result<RunSummary> RunQ0(const std::string& data_dir, int64_t events,
                         std::shared_ptr<RunService> service) {
  nexmark::NexmarkSourceOptions source;
  source.partitions = 2;
  source.events = events;
  nexmark::QueryOptions query;
  query.output_topic = "nexmark.out";
  query.model = nexmark::NexmarkConfigOf(source);
  ApplicationOptions options;
  options.name = "bench-lake-q0";
  options.data_dir = data_dir;
  if (service) options.services.push_back(std::move(service));
  Application app(options);
  nexmark::AddQuery(nexmark::Query::kQ0, nexmark::FromNexmark(app, source), query);
  return app.Run();
}

Result<PipelineCost> MeasurePipelineCost(const std::string& dir, int64_t events) {
  PipelineCost cost;
  // The run without the lake first, then with it; each in a data directory of its own.
  WEIR_ASSIGN_OR_RETURN(RunSummary plain, RunQ0(dir + "/q0-plain", events, nullptr));
  auto service = std::make_shared<LakeService>(fs::path(dir) / "q0-lake" / "lake", "nexmark.out");
  WEIR_ASSIGN_OR_RETURN(RunSummary with_lake, RunQ0(dir + "/q0-lake", events, service));
  WEIR_RETURN_IF_ERROR(service->status());
  const int64_t bids = plain.records_out;
  if (with_lake.records_out != bids || service->rows() != bids) {
    return Status::Internal("q0 wrote " + std::to_string(plain.records_out) + " and " +
                            std::to_string(with_lake.records_out) + " bids; the view holds " +
                            std::to_string(service->rows()));
  }
  cost.plain_per_core = plain.records_in / std::max(plain.cpu_seconds, 1e-9);
  cost.lake_per_core = with_lake.records_in / std::max(with_lake.cpu_seconds, 1e-9);
  cost.plain_wall = plain.records_in / std::max(plain.wall_seconds, 1e-9);
  cost.lake_wall = with_lake.records_in / std::max(with_lake.wall_seconds, 1e-9);
  cost.view_rows = service->rows();
  fs::remove_all(dir + "/q0-plain");
  fs::remove_all(dir + "/q0-lake");
  return cost;
}

// Part 1: every bid appended to a topic at once, then one update of a view over it (timed) and
// its check. Fills `totals` with what the generator made.
struct Bulk {
  Materialized m;
  int64_t bytes = 0;  // of the view's live files
  size_t partitions = 0;
};

Result<Bulk> MaterializeAtOnce(log::LogStore& log, const fs::path& dir, const Bids& bids,
                               const std::string& sql, int64_t batch_records, Totals& totals) {
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.CreateTopic("bids.bulk", {}));
  log::Partition& partition = topic->partition(PartitionId(0));
  std::vector<log::RecordBatchBuilder> batches(1);
  Status appended = Status::OK();
  bids.ForEach([&](int64_t ts, std::string_view json, int64_t price) {
    totals.Add(ts, price);
    batches.back().AddRaw(EventTime(ts), KeySerde::kNull, {}, json);
    if (batches.back().count() == 1000) {
      if (appended.ok()) appended = partition.Append(batches.back()).status();
      batches.back().Clear();
    }
  });
  WEIR_RETURN_IF_ERROR(appended);
  WEIR_RETURN_IF_ERROR(AppendDurably(partition, batches));

  lake::LakeOptions options;
  options.dir = dir / "lake-bulk";
  if (batch_records > 0) options.materialize.max_batch_records = static_cast<size_t>(batch_records);
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<lake::Lake> lake, lake::Lake::Open(log, options));
  lake::ViewSpec spec;
  spec.name = "bulk";
  spec.topic = "bids.bulk";
  spec.columns = BidColumns();
  spec.sql = sql;
  WEIR_RETURN_IF_ERROR(lake->Register(spec));
  Bulk bulk;
  WEIR_ASSIGN_OR_RETURN(bulk.m, TimedUpdate(*lake, "bulk", /*open_too=*/true, totals.count));
  WEIR_ASSIGN_OR_RETURN(LakeRows check, LakeQuery(*lake, "SELECT count(*), sum(price) FROM bulk"));
  const int64_t count = CellInt(check.rows.at(0)[0]);
  const int64_t sum = CellInt(check.rows.at(0)[1]);
  if (count != totals.count || sum != totals.price_sum) {
    return Status::Internal("the view holds " + std::to_string(count) + " bids of price sum " +
                            std::to_string(sum) + "; the generator made " +
                            std::to_string(totals.count) + " of " +
                            std::to_string(totals.price_sum));
  }
  WEIR_ASSIGN_OR_RETURN(lake::ViewStatus described, lake->Describe("bulk"));
  bulk.bytes = described.bytes;
  bulk.partitions = described.partitions.size();
  // Not needed any more: room for part 3's.
  lake.reset();
  WEIR_RETURN_IF_ERROR(log.DeleteTopic("bids.bulk"));
  fs::remove_all(options.dir);
  return bulk;
}

// Part 3's data: the bids of each hour of event time appended in a burst at the start of an
// insert-time span of its own (so 24 sealed partitions of one hour each), the view updated once
// (timed), and the same rows as one Parquet file and as JSON lines.
struct Day {
  std::unique_ptr<lake::Lake> lake;
  Materialized m;
  int64_t partitions = 0;
  int64_t sealed = 0;
  int64_t bursts_late = 0;  // bursts that ended after their span (split in two partitions)
  double lake_mib = 0;
  double parquet_mib = 0;
  double json_mib = 0;
  std::string lake_relation;  // a SELECT over the view's files, as the lake defines it
  std::string parquet_path;
  std::string json_path;
};

// Appends `bids` to `partition`, hour by hour of event time, each hour at the start of a span of
// `span_ms` of the wall clock, and writes them to `json_path` as JSON lines.
Status AppendInBursts(log::Partition& partition, const Bids& bids, int64_t span_ms,
                      const std::string& json_path, Day& day, int64_t& last_span_end) {
  std::ofstream json_file(json_path, std::ios::binary);
  std::vector<log::RecordBatchBuilder> burst(1);
  int64_t burst_hour = 0;
  Status appended = Status::OK();
  auto flush_burst = [&] {
    if (!appended.ok()) return;
    const int64_t start = (WallMs() / span_ms + 1) * span_ms;
    std::this_thread::sleep_for(std::chrono::milliseconds(start - WallMs() + 1));
    appended = AppendDurably(partition, burst);
    last_span_end = (WallMs() / span_ms + 1) * span_ms;
    if (WallMs() >= start + span_ms) ++day.bursts_late;
    burst.assign(1, log::RecordBatchBuilder());
  };
  bids.ForEach([&](int64_t ts, std::string_view json, int64_t) {
    const int64_t hour = std::clamp<int64_t>((ts - kFirstMs) / kHourMs, 0, kHours - 1);
    if (hour != burst_hour) {
      flush_burst();
      burst_hour = hour;
    }
    json_file << json << '\n';
    if (burst.back().count() == 1000) burst.emplace_back();
    burst.back().AddRaw(EventTime(ts), KeySerde::kNull, {}, json);
  });
  flush_burst();
  WEIR_RETURN_IF_ERROR(appended);
  json_file.close();
  if (!json_file) return Status::IOError("writing " + json_path);
  return Status::OK();
}

Result<Day> BuildDay(log::LogStore& log, const fs::path& dir, const Bids& bids, int64_t span_ms,
                     int64_t rows) {
  Day day;
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.CreateTopic("bids", {}));
  lake::LakeOptions options;
  options.dir = dir / "lake";
  options.materialize.seal_grace = std::chrono::milliseconds(0);
  WEIR_ASSIGN_OR_RETURN(day.lake, lake::Lake::Open(log, options));
  lake::ViewSpec spec;
  spec.name = "bids";
  spec.topic = "bids";
  spec.columns = BidColumns();
  spec.partition = std::chrono::milliseconds(span_ms);
  // What a "latest rows" query may rely on: each file sorted by _ts, partitions' ranges apart.
  spec.sort = {"_ts"};
  spec.order = lake::ScanOrder::kConcatenated;
  WEIR_RETURN_IF_ERROR(day.lake->Register(spec));
  day.json_path = (dir / "bids.jsonl").string();
  int64_t last_span_end = 0;
  WEIR_RETURN_IF_ERROR(AppendInBursts(topic->partition(PartitionId(0)), bids, span_ms,
                                      day.json_path, day, last_span_end));
  // Every span closed (the seal grace is 0), then one update writes the sealed partitions.
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<int64_t>(0, last_span_end - WallMs() + 1)));
  WEIR_ASSIGN_OR_RETURN(day.m, TimedUpdate(*day.lake, "bids", /*open_too=*/false, rows));
  WEIR_ASSIGN_OR_RETURN(lake::ViewStatus status, day.lake->Describe("bids"));
  day.partitions = static_cast<int64_t>(status.partitions.size());
  day.lake_mib = static_cast<double>(status.bytes) / 1048576.0;
  std::string files;
  for (const lake::PartitionRecord& p : status.partitions) {
    day.sealed += p.sealed;
    if (!p.file.empty())
      files += (files.empty() ? "" : ", ") + Quoted((options.dir / p.file).string());
  }
  day.lake_relation = "SELECT * FROM read_parquet([" + files + "])";

  // One Parquet file of the same rows, with the lake's options.
  day.parquet_path = (dir / "bids.parquet").string();
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::OpenInMemory(0));
  WEIR_RETURN_IF_ERROR(db->Execute("COPY (" + day.lake_relation + ") TO " +
                                   Quoted(day.parquet_path) + " (" + kCopyOptions + ")"));
  std::error_code ec;
  day.parquet_mib = static_cast<double>(fs::file_size(day.parquet_path, ec)) / 1048576.0;
  day.json_mib = static_cast<double>(fs::file_size(day.json_path, ec)) / 1048576.0;
  return day;
}

// Part 3's queries: each by each system in turn, run after run, so that a slower moment of a
// shared machine falls on all of them; every answer checked against the generator's.
struct QueryFigures {
  Timings lake_hour, parquet_hour, json_hour, lake_latest, parquet_latest, json_latest;
  int64_t hour_files = -1;    // the lake's partitions its hour query read (QueryStats)
  int64_t latest_files = -1;  // and its latest rows
};

Result<QueryFigures> TimeQueries(Day& day, const Totals& totals, int runs) {
  const int64_t hour_begin = kFirstMs + kQueryHour * kHourMs;
  const std::string ts_range = " >= " + TimestampLiteral(hour_begin) + " AND _ts < " +
                               TimestampLiteral(hour_begin + kHourMs);
  const std::string ms_range = " >= " + std::to_string(hour_begin) + " AND dateTime < " +
                               std::to_string(hour_begin + kHourMs);
  const Queries on_lake{"SELECT count(*), sum(price) FROM bids WHERE _ts" + ts_range,
                        "SELECT * FROM bids ORDER BY _ts DESC LIMIT 100"};
  const std::string parquet = "read_parquet(" + Quoted(day.parquet_path) + ")";
  const Queries on_parquet{
      "SELECT count(*), sum(price)::BIGINT FROM " + parquet + " WHERE _ts" + ts_range,
      "SELECT * FROM " + parquet + " ORDER BY _ts DESC LIMIT 100"};
  const std::string json = "read_json(" + Quoted(day.json_path) + ")";
  const Queries on_json{
      "SELECT count(*), sum(price)::BIGINT FROM " + json + " WHERE dateTime" + ms_range,
      "SELECT * FROM " + json + " ORDER BY dateTime DESC LIMIT 100"};
  const Answer hour{1, totals.hour_count[kQueryHour], totals.hour_price_sum[kQueryHour]};
  const int64_t latest_rows = std::min<int64_t>(100, totals.count);
  const Answer latest{latest_rows, latest_rows, totals.max_ts};

  QueryFigures f;
  lake::Lake& lake = *day.lake;
  struct Case {
    const char* what;
    Timings& timings;
    std::function<Result<Answer>()> run;
    Answer expected;
  };
  const Case cases[] = {
      {"lake, one hour", f.lake_hour,
       [&] { return LakeAnswer(lake, on_lake.hour, false, f.hour_files); }, hour},
      {"DuckDB over one Parquet file, one hour", f.parquet_hour,
       [&] { return DuckDbQuery(on_parquet.hour, false); }, hour},
      {"DuckDB over JSON lines, one hour", f.json_hour,
       [&] { return DuckDbQuery(on_json.hour, false); }, hour},
      {"lake, latest 100", f.lake_latest,
       [&] { return LakeAnswer(lake, on_lake.latest, true, f.latest_files); }, latest},
      {"DuckDB over one Parquet file, latest 100", f.parquet_latest,
       [&] { return DuckDbQuery(on_parquet.latest, true); }, latest},
      {"DuckDB over JSON lines, latest 100", f.json_latest,
       [&] { return DuckDbQuery(on_json.latest, true); }, latest},
  };
  for (int run = 0; run < runs; ++run) {
    for (const Case& c : cases) {
      Result<Answer> got = Timed(c.timings, c.run);
      if (!got.ok()) return got.status().WithContext(c.what);
      if (!(*got == c.expected)) {
        return Status::Internal(std::string(c.what) + ": " + got->ToString() + ", expected " +
                                c.expected.ToString());
      }
    }
  }
  return f;
}

}  // namespace

int BenchLake(const BenchArgs& args) {
  if (args.lake_bids < 1) return Fail(Status::InvalidArgument("--bids must be at least 1"));
  if (args.lake_span_ms < 10) return Fail(Status::InvalidArgument("--span-ms must be at least 10"));
  if (args.lake_query_runs < 1) {
    return Fail(Status::InvalidArgument("--query-runs must be at least 1"));
  }
  BenchDir dir(args.data_dir);
  const std::string sql = !args.lake_sql_text.empty() ? args.lake_sql_text
                          : args.lake_sql             ? kTransformSql
                                                      : "";
  const Bids bids(args.lake_bids);

  // Part 2 first, while nothing else is in the data directory.
  std::optional<PipelineCost> pipeline;
  if (args.lake_pipeline_events > 0) {
    auto cost = MeasurePipelineCost(dir.path(), args.lake_pipeline_events);
    if (!cost.ok()) return Fail(cost.status().WithContext("pipeline cost"));
    pipeline = *cost;
  }

  auto local = LocalLog::Open(dir.path());
  if (!local.ok()) return Fail(local.status());
  Totals totals;
  auto bulk =
      MaterializeAtOnce(*local->log, dir.path(), bids, sql, args.lake_batch_records, totals);
  if (!bulk.ok()) return Fail(bulk.status());
  auto day = BuildDay(*local->log, dir.path(), bids, args.lake_span_ms, totals.count);
  if (!day.ok()) return Fail(day.status());
  auto q = TimeQueries(*day, totals, args.lake_query_runs);
  if (!q.ok()) return Fail(q.status());

  // The figures.
  const double rows = static_cast<double>(totals.count);
  const double per_core = rows / std::max(bulk->m.cpu_s, 1e-9);
  const double per_s = rows / std::max(bulk->m.wall_s, 1e-9);
  const double bytes_per_row = static_cast<double>(bulk->bytes) / rows;
  const double day_per_core = rows / std::max(day->m.cpu_s, 1e-9);
  const std::string peak_rss = Figure(bulk->m.peak_rss_mib, "%.0f");
  std::printf("weir bench lake: %lld Nexmark bids as JSON in a topic (1 partition), view %s\n",
              static_cast<long long>(totals.count),
              sql.empty() ? "without SQL (declared columns)" : ("with SQL: " + sql).c_str());
  std::printf(
      "  materialize (one update, one span): %.0f rows/s per core, %.0f rows/s wall (%.2f s wall, "
      "%.2f s CPU); %.1f Parquet bytes per row (%.1f MiB in %zu partition(s); %.1f MiB written "
      "in all); %s heap allocations per row; peak memory %s MiB\n",
      per_core, per_s, bulk->m.wall_s, bulk->m.cpu_s, bytes_per_row, bulk->bytes / 1048576.0,
      bulk->partitions, bulk->m.figures.bytes / 1048576.0, bulk->m.allocs_per_row.c_str(),
      peak_rss.c_str());
  std::printf("  check: count(*) %lld and sum(price) %lld equal the generator's\n",
              static_cast<long long>(totals.count), static_cast<long long>(totals.price_sum));
  if (pipeline) {
    std::printf(
        "  pipeline cost (Nexmark q0, %lld events, view of its output refreshed every 1 s): "
        "%.0f events/s per core with the view, %.0f without (%.2fx); wall %.0f / %.0f events/s; "
        "the view holds the %lld bids\n",
        static_cast<long long>(args.lake_pipeline_events), pipeline->lake_per_core,
        pipeline->plain_per_core, pipeline->lake_per_core / pipeline->plain_per_core,
        pipeline->lake_wall, pipeline->plain_wall, static_cast<long long>(pipeline->view_rows));
  }
  std::printf(
      "  day: 24 hours of bids appended in 24 bursts (span %lld ms): %lld partitions (%lld "
      "sealed; %lld bursts ended after their span), written at %.0f rows/s per core (%.2f s "
      "CPU), %.1f MiB; one Parquet file %.1f MiB; JSON lines %.1f MiB\n",
      static_cast<long long>(args.lake_span_ms), static_cast<long long>(day->partitions),
      static_cast<long long>(day->sealed), static_cast<long long>(day->bursts_late), day_per_core,
      day->m.cpu_s, day->lake_mib, day->parquet_mib, day->json_mib);
  auto line = [&](const char* what, Timings& lake, int64_t files, Timings& parquet, Timings& json) {
    std::printf(
        "  %s, median of %d: lake %.1f ms (%s MiB read, %s of %lld partitions read), DuckDB over "
        "one Parquet file %.1f ms (%s MiB), over JSON lines %.1f ms (%s MiB)\n",
        what, args.lake_query_runs, lake.MedianMs(), Figure(lake.MedianMib(), "%.1f").c_str(),
        Figure(static_cast<double>(files), "%.0f").c_str(), static_cast<long long>(day->partitions),
        parquet.MedianMs(), Figure(parquet.MedianMib(), "%.1f").c_str(), json.MedianMs(),
        Figure(json.MedianMib(), "%.1f").c_str());
  };
  const std::string hour_what =
      "one hour (count, sum; " + std::to_string(totals.hour_count[kQueryHour]) + " rows)";
  line(hour_what.c_str(), q->lake_hour, q->hour_files, q->parquet_hour, q->json_hour);
  line("latest 100 rows", q->lake_latest, q->latest_files, q->parquet_latest, q->json_latest);
  std::printf("  checked: every query's answer equals the generator's\n");
  const std::string ratio =
      pipeline ? Figure(pipeline->lake_per_core / pipeline->plain_per_core, "%.2f") : "-";
  std::printf(
      "lake rows=%lld verified=yes sql=%s rows_per_cpu_s=%.0f rows_per_s=%.0f bytes_per_row=%.1f "
      "allocs_per_row=%s peak_rss_mib=%s day_rows_per_cpu_s=%.0f partitions=%lld "
      "query_hour_ms=%.1f query_latest_ms=%.1f duckdb_parquet_hour_ms=%.1f "
      "duckdb_parquet_latest_ms=%.1f duckdb_json_hour_ms=%.1f duckdb_json_latest_ms=%.1f "
      "pipeline_lake_ratio=%s\n",
      static_cast<long long>(totals.count), sql.empty() ? "no" : "yes", per_core, per_s,
      bytes_per_row, bulk->m.allocs_per_row.c_str(), peak_rss.c_str(), day_per_core,
      static_cast<long long>(day->partitions), q->lake_hour.MedianMs(), q->lake_latest.MedianMs(),
      q->parquet_hour.MedianMs(), q->parquet_latest.MedianMs(), q->json_hour.MedianMs(),
      q->json_latest.MedianMs(), ratio.c_str());
  return 0;
}

}  // namespace weir::cli
