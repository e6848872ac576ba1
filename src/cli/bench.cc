// weir bench log | pipeline: figures for BENCHMARKS.md, each run checked for correctness.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "cli/bench_support.h"
#include "cli/commands.h"
#include "cli/local_log.h"
#include "core/heap_counter.h"
#include "core/process_stats.h"
#include "dataflow/clickstream.h"
#include "weir/application.h"
#include "weir/window.h"

namespace weir::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

uint64_t Checksum(std::string_view bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// The clickstream generator of the pipeline and window benchmarks, with the sizes asked for.
GeneratorOptions BenchGenerator(const BenchArgs& args) {
  GeneratorOptions generator;
  generator.partitions = args.partitions;
  generator.users = args.users;
  generator.events = args.records;
  return generator;
}

}  // namespace

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

std::string Figure(double v, const char* format) {
  if (v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

Status ForEachOutput(
    const std::string& data_dir, const std::string& topic_name,
    const std::function<Status(PartitionId, const log::StoredRecord&, const Value&)>& check) {
  WEIR_ASSIGN_OR_RETURN(LocalLog local, LocalLog::Open(data_dir));
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, local.log->GetTopic(topic_name));
  for (int32_t p = 0; p < topic->num_partitions(); ++p) {
    log::PartitionReader reader(topic->partition(PartitionId(p)), Offset(0));
    while (true) {
      WEIR_ASSIGN_OR_RETURN(auto records, reader.Next(8192));
      if (records.empty()) break;
      for (const log::StoredRecord& r : records) {
        auto value = Value::Parse(r.value);
        if (!value.ok()) return Status::Internal("bad output record in " + topic_name);
        WEIR_RETURN_IF_ERROR(check(PartitionId(p), r, *value));
      }
    }
  }
  return Status::OK();
}

namespace {

// Runs `work` for each partition on a thread of its own; the statuses, by partition.
std::vector<Status> OnEachPartition(int32_t partitions,
                                    const std::function<Status(int32_t)>& work) {
  std::vector<Status> statuses(partitions);
  std::vector<std::thread> threads;
  for (int32_t p = 0; p < partitions; ++p) {
    threads.emplace_back([&, p] { statuses[p] = work(p); });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

// One producer of `weir bench log`: `records` values of `value_bytes` appended in batches, with
// at most kInFlight appends waiting for durability. Adds each value's checksum to `sum` and each
// batch's acknowledgement latency (ms) to `latencies`.
Status ProduceLogBench(log::Partition& partition, int64_t records, int value_bytes,
                       std::vector<double>& latencies, uint64_t& sum) {
  constexpr int kBatch = 1000;      // records per append call
  constexpr size_t kInFlight = 64;  // appends a producer has outstanding before it waits
  std::string value(value_bytes, 'x');
  std::deque<std::pair<Offset, Clock::time_point>> in_flight;
  log::RecordBatchBuilder batch;
  for (int64_t i = 0; i < records;) {
    batch.Clear();
    for (int j = 0; j < kBatch && i < records; ++j, ++i) {
      std::snprintf(value.data(), value.size(), "{\"n\":%lld,\"pad\":\"",
                    static_cast<long long>(i));
      value.back() = '}';
      value[value.size() - 2] = '"';
      sum += Checksum(value);
      batch.AddRaw(EventTime(i), KeySerde::kNull, {}, value);
    }
    auto start = Clock::now();
    WEIR_ASSIGN_OR_RETURN(Offset base, partition.Append(batch));
    in_flight.emplace_back(base + static_cast<int64_t>(batch.count()), start);
    while (in_flight.size() > kInFlight || (i >= records && !in_flight.empty())) {
      WEIR_RETURN_IF_ERROR(partition.WaitDurable(in_flight.front().first));
      latencies.push_back(Seconds(Clock::now() - in_flight.front().second) * 1e3);
      in_flight.pop_front();
    }
  }
  return Status::OK();
}

// Reads the partition from offset 0 to its end: how many records, and the sum of their values'
// checksums.
Status ReplayLogBench(log::Partition& partition, int64_t& count, uint64_t& sum) {
  log::PartitionReader reader(partition, Offset(0));
  while (true) {
    WEIR_ASSIGN_OR_RETURN(auto records, reader.Next(8192));
    if (records.empty()) return Status::OK();
    for (const log::StoredRecord& r : records) sum += Checksum(r.value);
    count += static_cast<int64_t>(records.size());
  }
}

}  // namespace

int BenchLog(const BenchArgs& args) {
  BenchDir dir(args.data_dir);
  auto local = LocalLog::Open(dir.path(), args.fsync);
  if (!local.ok()) return Fail(local.status());
  log::TopicConfig config;
  config.partitions = args.partitions;
  auto topic = local->log->CreateTopic("bench.log", config);
  if (!topic.ok()) return Fail(topic.status());
  auto partition = [&](int32_t p) -> log::Partition& {
    return (*topic)->partition(PartitionId(p));
  };

  const int64_t per_partition = args.records / args.partitions;
  std::vector<std::vector<double>> latencies(args.partitions);
  std::vector<uint64_t> sums(args.partitions, 0);
  double cpu0 = ProcessCpuSeconds();
  auto t0 = Clock::now();
  AllocationMeter append_allocations;
  std::vector<Status> errors = OnEachPartition(args.partitions, [&](int32_t p) {
    return ProduceLogBench(partition(p), per_partition, args.value_bytes, latencies[p], sums[p]);
  });
  append_allocations.Stop();
  double append_wall = Seconds(Clock::now() - t0);
  double append_cpu = ProcessCpuSeconds() - cpu0;
  for (const Status& s : errors) {
    if (!s.ok()) return Fail(s);
  }
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  const int64_t total = per_partition * args.partitions;

  cpu0 = ProcessCpuSeconds();
  t0 = Clock::now();
  std::vector<int64_t> read_counts(args.partitions, 0);
  std::vector<uint64_t> read_sums(args.partitions, 0);
  AllocationMeter replay_allocations;
  errors = OnEachPartition(args.partitions, [&](int32_t p) {
    return ReplayLogBench(partition(p), read_counts[p], read_sums[p]);
  });
  replay_allocations.Stop();
  double replay_wall = Seconds(Clock::now() - t0);
  double replay_cpu = ProcessCpuSeconds() - cpu0;
  for (int32_t p = 0; p < args.partitions; ++p) {
    if (!errors[p].ok()) return Fail(errors[p]);
    if (read_counts[p] != per_partition || read_sums[p] != sums[p]) {
      return Fail(Status::Internal("replay of partition " + std::to_string(p) + " read " +
                                   std::to_string(read_counts[p]) + " records, expected " +
                                   std::to_string(per_partition) + " with matching contents"));
    }
  }
  // The replay above checksums every value, which a plain replay does not; the rate reported
  // includes that work.
  std::printf("weir bench log: %lld records of %d bytes, %d partitions, fsync=%s\n",
              static_cast<long long>(total), args.value_bytes, args.partitions, args.fsync.c_str());
  std::printf(
      "  durable append: %.0f records/s (%.1f MB/s), %.0f records/s per core; "
      "ack latency p50 %.2f ms, p99 %.2f ms; %s heap allocations per record\n",
      total / append_wall, total * args.value_bytes / append_wall / 1e6,
      total / std::max(append_cpu, 1e-9), Percentile(all, 0.5), Percentile(all, 0.99),
      append_allocations.PerEvent(total).c_str());
  std::printf(
      "  replay:         %.0f records/s (%.1f MB/s), %.0f records/s per core; "
      "checked %lld records; %s heap allocations per record\n",
      total / replay_wall, total * args.value_bytes / replay_wall / 1e6,
      total / std::max(replay_cpu, 1e-9), static_cast<long long>(total),
      replay_allocations.PerEvent(total).c_str());
  std::printf("  peak memory:    %.0f MiB\n", ProcessPeakRssBytes() / 1048576.0);
  return 0;
}

int BenchPipeline(const BenchArgs& args) {
  BenchDir dir(args.data_dir);
  GeneratorOptions generator = BenchGenerator(args);
  if (args.keys == "uniform") {
    generator.events_per_second = 100'000;
    generator.active_fraction = 1;  // every key in play all the time: the hot state is all keys
  } else {
    generator.events_per_second = 1'000;  // event time long enough for users to come and go
  }
  ApplicationOptions options;
  options.name = "bench-running-count";
  options.data_dir = dir.path();
  Application app(options);
  app.FromGenerator(generator).Aggregate({{"count", agg::Count()}}).ToTopic("bench.counts");
  AllocationMeter allocations;
  auto summary = app.Run();
  allocations.Stop();
  if (!summary.ok()) return Fail(summary.status());

  // Check: per key, the output is exactly 1, 2, ..., n where n is how often the generator
  // produced the key.
  std::map<std::string, int64_t> expected;
  dataflow::ClickstreamModel model(generator);
  for (int32_t p = 0; p < generator.partitions; ++p) {
    for (int64_t i = 0; i < model.EventsIn(PartitionId(p)); ++i) {
      ++expected[std::string(model.EventAt(PartitionId(p), i).key.bytes())];
    }
  }
  std::map<std::string, int64_t> seen;
  int64_t outputs = 0;
  Status checked = ForEachOutput(
      dir.path(), "bench.counts", [&](PartitionId, const log::StoredRecord& r, const Value& value) {
        if (!value.Find("count")) return Status::Internal("bad output record");
        int64_t& last = seen[std::string(r.key)];
        const int64_t count = value.Find("count")->as_int();
        if (count != last + 1) {
          return Status::Internal("key " + std::string(r.key) + ": count " + std::to_string(count) +
                                  " after " + std::to_string(last));
        }
        last = count;
        ++outputs;
        return Status::OK();
      });
  if (!checked.ok()) return Fail(checked);
  if (seen != expected) return Fail(Status::Internal("final counts differ from the generator's"));

  std::printf(
      "weir bench pipeline: running count per key, %lld events, %lld keys (%s), "
      "%d partitions, checkpoints every %lld ms / %lld records\n",
      static_cast<long long>(summary->records_in), static_cast<long long>(expected.size()),
      args.keys.c_str(), args.partitions,
      static_cast<long long>(options.checkpoint_interval.count()),
      static_cast<long long>(options.checkpoint_records));
  std::printf(
      "  throughput: %.0f events/s, %.0f events/s per core (%.2f s wall, %.2f s CPU); %s heap "
      "allocations per event\n",
      summary->records_in / summary->wall_seconds,
      summary->records_in / std::max(summary->cpu_seconds, 1e-9), summary->wall_seconds,
      summary->cpu_seconds, allocations.PerEvent(summary->records_in).c_str());
  std::printf(
      "  checkpoints: %lld; peak memory %.0f MiB; checked %lld outputs against the generator\n",
      static_cast<long long>(summary->checkpoints), summary->peak_rss_bytes / 1048576.0,
      static_cast<long long>(outputs));
  return 0;
}

int BenchWindows(const BenchArgs& args) {
  BenchDir dir(args.data_dir);
  // Users come and go (a fifth active at a time, each for minutes, quiet for longer), events up
  // to 2 s out of order: sessions open, grow, merge and close throughout the run.
  GeneratorOptions generator = BenchGenerator(args);
  // A fifth of the users active, each clicking every 8 s or so: 2000 events/s for 100k users,
  // and proportionally more for more users, so that all of them are in play.
  generator.events_per_second = std::max(2'000.0, static_cast<double>(args.users) / 50);
  generator.max_out_of_order_ms = 2'000;
  if (args.window_keys == "uniform") {
    // Every key all the time, one event per key per second of event time: as many open windows
    // as keys, so the run shows how expiry scales with what is stored.
    generator.active_fraction = 1;
    generator.events_per_second = static_cast<double>(args.users);
  }
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  WindowDefinition definition = args.window == "session" ? WindowDefinition::Session(seconds(30))
                                : args.window == "tumbling"
                                    ? WindowDefinition::Tumbling(seconds(10))
                                    : WindowDefinition::Hopping(seconds(10), seconds(2));
  definition.Grace(milliseconds(2'000));
  ApplicationOptions options;
  options.name = "bench-windows";
  options.data_dir = dir.path();
  Application app(options);
  app.FromGenerator(generator)
      .Window(definition)
      .Agg({{"n", agg::Count()}, {"amount", agg::Sum("amount")}})
      .Closing(args.closing == "key" ? Closing::kKey : Closing::kPartition)
      .Final()
      .ToTopic("bench.windows");
  AllocationMeter allocations;
  auto summary = app.Run();
  allocations.Stop();
  if (!summary.ok()) return Fail(summary.status());

  // Check: every admitted event is counted in its windows: once for tumbling and session
  // windows, size/step times for hopping ones (fewer only where one of them had closed).
  int64_t windows = 0, counted = 0;
  Status checked = ForEachOutput(dir.path(), "bench.windows",
                                 [&](PartitionId, const log::StoredRecord&, const Value& value) {
                                   if (!value.Find("n"))
                                     return Status::Internal("bad window result");
                                   counted += value.Find("n")->as_int();
                                   ++windows;
                                   return Status::OK();
                                 });
  if (!checked.ok()) return Fail(checked);
  const int64_t admitted = summary->records_in - summary->late;
  const int64_t per_event = args.window == "hopping" ? definition.size() / definition.step() : 1;
  const bool right = args.window == "hopping"
                         ? counted <= admitted * per_event && counted >= admitted
                         : counted == admitted;
  if (!right) {
    return Fail(Status::Internal("windows counted " + std::to_string(counted) + " events; " +
                                 std::to_string(admitted) + " were admitted"));
  }
  std::printf(
      "weir bench windows: %s, closing by %s, %lld events, %lld keys, %d partitions, "
      "checkpoints on\n",
      definition.Describe().c_str(), args.closing.c_str(),
      static_cast<long long>(summary->records_in), static_cast<long long>(args.users),
      args.partitions);
  std::printf(
      "  throughput: %.0f events/s, %.0f events/s per core (%.2f s wall, %.2f s CPU); "
      "%.0f ns CPU and %s heap allocations per event\n",
      summary->records_in / summary->wall_seconds,
      summary->records_in / std::max(summary->cpu_seconds, 1e-9), summary->wall_seconds,
      summary->cpu_seconds, summary->cpu_seconds * 1e9 / std::max<int64_t>(1, summary->records_in),
      allocations.PerEvent(summary->records_in).c_str());
  std::printf("  expiry looked at %.2f windows or index entries per event (closed ones included)\n",
              static_cast<double>(summary->window_expiry_visits) /
                  static_cast<double>(std::max<int64_t>(1, summary->records_in)));
  std::printf(
      "  %lld windows emitted, %lld late events, peak memory %.0f MiB; checked: the windows "
      "count every admitted event\n",
      static_cast<long long>(windows), static_cast<long long>(summary->late),
      summary->peak_rss_bytes / 1048576.0);
  return 0;
}

}  // namespace weir::cli
