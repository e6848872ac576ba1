// weir bench nexmark: one Nexmark query run by Weir over the in-process generator, its answer
// checked against the same query computed in batch by DuckDB over the same events.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cli/bench_support.h"
#include "cli/commands.h"
#include "cli/nexmark_queries.h"
#include "core/heap_counter.h"
#include "core/process_stats.h"
#include "nexmark/canonical_row.h"
#include "nexmark/reference.h"
#include "nexmark/source.h"
#include "sql/database.h"
#include "weir/application.h"
#include "weir/subscription.h"

namespace weir::cli {
namespace {

using Clock = std::chrono::steady_clock;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

uint64_t RowHash(std::string_view row) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : row) h = (h ^ c) * 1099511628211ULL;
  return h ^ (h >> 29);
}

// What the generator alone costs: EventAt and WriteValue into one event and one value reused
// from event to event, as the source does (nexmark/source.cc), on one thread; the best of three
// passes, so that a moment of contention on a shared machine does not count.
double GeneratorEventsPerCpuSecond(const nexmark::NexmarkGenerator& generator, int64_t events) {
  const int64_t n = std::min<int64_t>(events, 1'000'000);
  double best = 1e300;
  int64_t sink = 0;
  nexmark::Event event;
  Value value;
  for (int pass = 0; pass < 3; ++pass) {
    const double cpu0 = ProcessCpuSeconds();
    for (int64_t i = 0; i < n; ++i) {
      generator.EventAt(i, event);
      event.WriteValue(value);
      sink += value.as_object().size();
    }
    best = std::min(best, ProcessCpuSeconds() - cpu0);
  }
  return sink > 0 ? static_cast<double>(n) / std::max(best, 1e-9) : 0;
}

// The rows of an answer, as canonical strings (nexmark/canonical_row.h), kept whole while
// small enough to show differences, else only hashed.
class Answer {
 public:
  static constexpr size_t kKeepRows = 1'000'000;

  void Add(std::string_view row) {
    hashes_.push_back(RowHash(row));
    if (hashes_.size() <= kKeepRows) rows_.emplace_back(row);
  }
  size_t size() const { return hashes_.size(); }

  // Empty if both hold the same multiset of rows; else what differs.
  std::string Diff(Answer& expected) {
    std::sort(hashes_.begin(), hashes_.end());
    std::sort(expected.hashes_.begin(), expected.hashes_.end());
    if (hashes_ == expected.hashes_) return "";
    std::string out = "Weir emitted " + std::to_string(size()) + " rows, DuckDB " +
                      std::to_string(expected.size());
    if (size() > kKeepRows || expected.size() > kKeepRows) return out + " (rows differ)";
    std::sort(rows_.begin(), rows_.end());
    std::sort(expected.rows_.begin(), expected.rows_.end());
    std::vector<std::string> only_weir, only_duckdb;
    std::set_difference(rows_.begin(), rows_.end(), expected.rows_.begin(), expected.rows_.end(),
                        std::back_inserter(only_weir));
    std::set_difference(expected.rows_.begin(), expected.rows_.end(), rows_.begin(), rows_.end(),
                        std::back_inserter(only_duckdb));
    out += "; " + std::to_string(only_weir.size()) + " only in Weir's, " +
           std::to_string(only_duckdb.size()) + " only in DuckDB's";
    for (size_t i = 0; i < std::min<size_t>(5, only_weir.size()); ++i) {
      out += "\n    only Weir:   " + only_weir[i];
    }
    for (size_t i = 0; i < std::min<size_t>(5, only_duckdb.size()); ++i) {
      out += "\n    only DuckDB: " + only_duckdb[i];
    }
    return out;
  }

 private:
  std::vector<uint64_t> hashes_;
  std::vector<std::string> rows_;
};

// One output row, canonical: the object's members in order.
std::string CanonicalOf(const Value& row, nexmark::Query query) {
  nexmark::CanonicalRow out;
  for (const auto& [name, v] : row.as_object()) {
    switch (v.type()) {
      case Value::Type::kInt:
        out.Int(v.as_int());
        break;
      case Value::Type::kDouble:
        if (query == nexmark::Query::kQ4) {
          out.Fixed4(v.as_double());
        } else {
          out.Double(v.as_double());
        }
        break;
      case Value::Type::kString:
        out.Text(v.as_string());
        break;
      default:
        out.Null();
        break;
    }
  }
  return std::string(out.str());
}

// Receives the output topic over WebSocket while the run lasts and notes, per partition and
// offset, the wall clock (ms) at which each record arrived.
class ArrivalRecorder {
 public:
  // `partitions`: as many as the output topic may have (a partition it lacks is skipped).
  ArrivalRecorder(std::string topic, int32_t partitions)
      : topic_(std::move(topic)), arrivals_(static_cast<size_t>(partitions)) {}
  ~ArrivalRecorder() { Stop(); }

  // Called once the server listens on `port`.
  void Start(int port) {
    for (int p = 0; p < static_cast<int>(arrivals_.size()); ++p) {
      threads_.emplace_back([this, port, p] { Receive(port, p); });
    }
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  // Arrival time of (partition, offset), or -1.
  int64_t ArrivalMs(int32_t partition, int64_t offset) const {
    if (partition >= static_cast<int32_t>(arrivals_.size())) return -1;
    const auto& a = arrivals_[partition];
    return offset < static_cast<int64_t>(a.size()) ? a[offset] : -1;
  }

 private:
  void Receive(int port, int partition) {
    SubscriptionOptions options;
    options.url = "ws://127.0.0.1:" + std::to_string(port) + "/streams/" + topic_ +
                  "?partition=" + std::to_string(partition);
    auto subscription = Subscription::Open(options);
    if (!subscription.ok()) return;  // a partition the output topic does not have
    std::vector<int64_t>& arrivals = arrivals_[partition];
    while (!stop_) {
      auto message = (*subscription)->Next(std::chrono::milliseconds(50));
      if (!message.ok()) return;
      if (!*message) continue;
      const auto offset = static_cast<size_t>((*message)->offset.value());
      if (arrivals.size() <= offset) arrivals.resize(offset + 1, -1);
      arrivals[offset] = WallMs();
    }
  }

  std::string topic_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<std::vector<int64_t>> arrivals_;  // per partition, by offset
};

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Weir's answer, and the latency of each row that the watermark (not the end of input) made.
// With the discard sink nothing is kept: only the number of rows it dropped.
struct WeirOutput {
  Answer answer;
  std::vector<double> latencies;
  std::optional<int64_t> discarded_rows;  // set with the discard sink

  size_t rows() const {
    return discarded_rows ? static_cast<size_t>(*discarded_rows) : answer.size();
  }
  // Empty if the answer is DuckDB's (with the discard sink: as many rows); else what differs.
  std::string Diff(Answer& expected) {
    if (!discarded_rows) return answer.Diff(expected);
    if (rows() == expected.size()) return "";
    return "Weir discarded " + std::to_string(rows()) + " rows, DuckDB answered " +
           std::to_string(expected.size());
  }
};

Result<WeirOutput> ReadWeirOutput(const BenchArgs& args, nexmark::Query query,
                                  const nexmark::QueryOptions& query_options,
                                  const nexmark::NexmarkGenerator& generator,
                                  const ArrivalRecorder& arrivals, const std::string& data_dir) {
  const bool paced = args.rate > 0;
  WeirOutput out;
  std::map<std::string, std::string> last_per_key;
  const int64_t completion_delay = nexmark::CompletionDelayMs(query, query_options);
  const int64_t last_event_ms = generator.TimestampForNumber(args.records - 1).value();
  WEIR_RETURN_IF_ERROR(
      ForEachOutput(data_dir, query_options.output_topic,
                    [&](PartitionId p, const log::StoredRecord& r, const Value& row) -> Status {
                      if (!row.is_object())
                        return Status::Internal("an output row is not an object");
                      if (nexmark::LastPerKey(query)) {
                        last_per_key[std::string(r.key)] = CanonicalOf(row, query);
                      } else {
                        out.answer.Add(CanonicalOf(row, query));
                      }
                      const int64_t complete = r.timestamp.value() + completion_delay;
                      const int64_t arrived = arrivals.ArrivalMs(p.value(), r.offset.value());
                      if (paced && arrived >= 0 && complete <= last_event_ms) {
                        out.latencies.push_back(static_cast<double>(arrived - complete));
                      }
                      return Status::OK();
                    }));
  for (const auto& [key, row] : last_per_key) out.answer.Add(row);
  return out;
}

// DuckDB's answer over the same events, and what it cost.
struct DuckDbOutput {
  Answer answer;
  double load_seconds = 0;
  double cpu_seconds = 0;
  double wall_seconds = 0;
};

Result<DuckDbOutput> RunDuckDb(const nexmark::NexmarkGenerator& generator, int64_t events,
                               nexmark::Query query) {
  WEIR_ASSIGN_OR_RETURN(auto db, sql::Database::OpenInMemory());
  DuckDbOutput out;
  auto load_start = Clock::now();
  WEIR_RETURN_IF_ERROR(nexmark::LoadEvents(*db, generator, events));
  out.load_seconds = Seconds(Clock::now() - load_start);
  const double cpu0 = ProcessCpuSeconds();
  auto query_start = Clock::now();
  Status reference =
      nexmark::ReferenceRows(*db, query, [&](std::string_view row) { out.answer.Add(row); });
  out.cpu_seconds = ProcessCpuSeconds() - cpu0;
  out.wall_seconds = Seconds(Clock::now() - query_start);
  WEIR_RETURN_IF_ERROR(reference);
  return out;
}

// The figures of one run, for people and (the last line) for scripts.
// `allocations_per_event`: heap allocations of the run (the pipeline's threads and the rest of
// the process while it ran) per event, or "n/a" (heap_counter.h).
void PrintNexmark(const BenchArgs& args, const RunSummary& summary,
                  const std::string& allocations_per_event, double generator_rate, WeirOutput& weir,
                  const DuckDbOutput& duckdb, const std::string& diff) {
  const bool paced = args.rate > 0;
  const double events = static_cast<double>(args.records);
  std::vector<double>& latencies = weir.latencies;
  const double duckdb_cpu = duckdb.cpu_seconds, duckdb_wall = duckdb.wall_seconds;
  const double load_seconds = duckdb.load_seconds;
  const double weir_rate = events / std::max(summary.cpu_seconds, 1e-9);
  const double generator_cpu = events / std::max(generator_rate, 1e-9);
  const double pipeline_rate =
      summary.cpu_seconds > generator_cpu ? events / (summary.cpu_seconds - generator_cpu) : -1;
  const double duckdb_rate = events / std::max(duckdb_cpu, 1e-9);
  // On equal terms: DuckDB's figure leaves out making and loading its input, so the pipeline
  // without the generator is set beside it too (ratio_to_duckdb charges Weir for its input).
  const double pipeline_ratio = pipeline_rate > 0 ? pipeline_rate / duckdb_rate : -1;
  std::vector<double> for_p99 = latencies;
  const double p50 = Percentile(latencies, 0.5), p99 = Percentile(for_p99, 0.99);

  std::printf(
      "weir bench nexmark %s: %lld events, %d partitions, %s, grace %lld ms, checkpoints every "
      "%lld ms\n",
      args.query.c_str(), static_cast<long long>(args.records), args.partitions,
      paced ? ("live at " + Figure(args.rate, "%.0f") + " events/s").c_str()
            : "as fast as possible",
      static_cast<long long>(args.grace_ms), static_cast<long long>(args.checkpoint_ms));
  std::printf(
      "  Weir: %.0f events/s, %.0f events/s per core (%.2f s wall, %.2f s CPU), "
      "peak memory %.0f MiB, %s heap allocations per event, %lld checkpoints, %lld late\n",
      events / summary.wall_seconds, weir_rate, summary.wall_seconds, summary.cpu_seconds,
      summary.peak_rss_bytes / 1048576.0, allocations_per_event.c_str(),
      static_cast<long long>(summary.checkpoints), static_cast<long long>(summary.late));
  std::printf(
      "  generator alone: %.0f events/s per core; pipeline without it: %s events/s per "
      "core\n",
      generator_rate, Figure(pipeline_rate, "%.0f").c_str());
  if (paced) {
    std::printf(
        "  latency (output seen over WebSocket - event time of completion): p50 %s ms, "
        "p99 %s ms over %zu rows\n",
        Figure(p50, "%.1f").c_str(), Figure(p99, "%.1f").c_str(), latencies.size());
  }
  std::printf(
      "  DuckDB batch: %.0f events/s per core (%.2f s wall, %.2f s CPU; loading took "
      "%.1f s); Weir per core / DuckDB per core: %.2fx; without the generator, as DuckDB is "
      "without its loading: %sx\n",
      duckdb_rate, duckdb_wall, duckdb_cpu, load_seconds, weir_rate / duckdb_rate,
      Figure(pipeline_ratio, "%.2f").c_str());
  const char* same = weir.discarded_rows ? "as many as DuckDB's (discarded: counted, not compared)"
                                         : "equal to DuckDB's";
  std::printf("  check: %zu rows, %s\n", weir.rows(),
              diff.empty() ? same : ("DIFFERENT: " + diff).c_str());
  std::printf(
      "nexmark query=%s events=%lld rate=%s verified=%s rows=%zu events_per_cpu_s=%.0f "
      "generator_events_per_cpu_s=%.0f pipeline_events_per_cpu_s=%s "
      "duckdb_events_per_cpu_s=%.0f ratio_to_duckdb=%.2f pipeline_ratio_to_duckdb=%s "
      "peak_rss_mib=%.0f allocs_per_event=%s "
      "p50_ms=%s p99_ms=%s wall_s=%.2f late=%lld\n",
      args.query.c_str(), static_cast<long long>(args.records), Figure(args.rate, "%.0f").c_str(),
      !diff.empty() ? "no" : (weir.discarded_rows ? "count" : "yes"), weir.rows(), weir_rate,
      generator_rate, Figure(pipeline_rate, "%.0f").c_str(), duckdb_rate, weir_rate / duckdb_rate,
      Figure(pipeline_ratio, "%.2f").c_str(), summary.peak_rss_bytes / 1048576.0,
      allocations_per_event.c_str(), Figure(p50, "%.1f").c_str(), Figure(p99, "%.1f").c_str(),
      summary.wall_seconds, static_cast<long long>(summary.late));
}

}  // namespace

int BenchNexmark(const BenchArgs& args) {
  auto query = nexmark::ParseQuery(args.query);
  if (!query.ok()) return Fail(query.status());
  const bool paced = args.rate > 0;
  if (args.nexmark_sink != "topic" && args.nexmark_sink != "discard") {
    return Fail(
        Status::InvalidArgument("--sink is topic or discard, not '" + args.nexmark_sink + "'"));
  }
  const bool discard = args.nexmark_sink == "discard";
  if (discard && (paced || nexmark::LastPerKey(*query))) {
    return Fail(Status::InvalidArgument(
        paced ? "--sink discard keeps no output to measure latency on: drop --rate"
              : "--sink discard counts rows, and " + args.query +
                    " emits updates per key: its answer is checked through the topic only"));
  }
  BenchDir dir(args.data_dir);

  nexmark::NexmarkSourceOptions source;
  source.partitions = args.partitions;
  source.events = args.records;
  source.events_per_second = paced ? args.rate : args.event_rate;
  source.out_of_order_group_size = args.out_of_order_group;
  if (paced) {
    source.real_time = true;
    source.first_event_ms = WallMs() + 1000;  // after start-up, so no backlog at the start
  }
  nexmark::QueryOptions query_options;
  query_options.output_topic = "nexmark.out";
  query_options.discard_output = discard;
  query_options.grace = std::chrono::milliseconds(args.grace_ms);
  query_options.model = nexmark::NexmarkConfigOf(source);
  const nexmark::NexmarkGenerator generator(query_options.model);

  const double generator_rate = GeneratorEventsPerCpuSecond(generator, args.records);

  ApplicationOptions options;
  options.name = "bench-nexmark-" + args.query;
  options.data_dir = dir.path();
  options.checkpoint_interval = std::chrono::milliseconds(args.checkpoint_ms);
  // Output topics have as many partitions as the tasks that write them: at most the source's
  // partitions or the cores (the default repartition count).
  ArrivalRecorder arrivals(
      query_options.output_topic,
      std::max<int32_t>(args.partitions,
                        static_cast<int32_t>(std::thread::hardware_concurrency())));
  if (paced) {
    ServerOptions serve;
    serve.listen = "127.0.0.1:0";
    options.services.push_back(
        ServeTopicsWhileRunning(serve, [&arrivals](int port) { arrivals.Start(port); }));
  }
  Application app(options);
  nexmark::AddQuery(*query, nexmark::FromNexmark(app, source), query_options);
  AllocationMeter allocations;
  auto summary = app.Run();
  allocations.Stop();
  arrivals.Stop();
  if (!summary.ok()) return Fail(summary.status());

  Result<WeirOutput> weir = WeirOutput{};
  if (query_options.discard_output) {
    weir->discarded_rows = summary->records_out;
  } else {
    weir = ReadWeirOutput(args, *query, query_options, generator, arrivals, dir.path());
    if (!weir.ok()) return Fail(weir.status());
  }
  auto duckdb = RunDuckDb(generator, args.records, *query);
  if (!duckdb.ok()) return Fail(duckdb.status());
  const std::string diff = weir->Diff(duckdb->answer);
  PrintNexmark(args, *summary, allocations.PerEvent(args.records), generator_rate, *weir, *duckdb,
               diff);
  return diff.empty() ? 0 : 1;
}

}  // namespace weir::cli
