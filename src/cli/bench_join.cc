// weir bench join: input-group assembly in time mode, and the interval join, reading inputs
// written beforehand to the embedded log; each run checks its output.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "cli/bench_support.h"
#include "cli/commands.h"
#include "core/heap_counter.h"
#include "cli/local_log.h"
#include "core/process_stats.h"
#include "weir/application.h"

namespace weir::cli {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kBaseTime = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

// Bytes the allocator has handed out and not taken back (heap and mmapped blocks).
int64_t HeapInUseBytes() {
  struct mallinfo2 info = ::mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

// Writes `values` (ts, JSON) to partition `partition` of `topic`, in batches.
Status WriteAll(log::Topic& topic, int32_t partition,
                const std::vector<std::pair<int64_t, std::string>>& values) {
  log::RecordBatchBuilder batch;
  log::Partition& p = topic.partition(PartitionId(partition));
  for (size_t i = 0; i < values.size();) {
    batch.Clear();
    for (size_t n = 0; n < 4096 && i < values.size(); ++n, ++i) {
      batch.AddRaw(EventTime(values[i].first), KeySerde::kNull, {}, values[i].second);
    }
    const bool last = i == values.size();
    WEIR_RETURN_IF_ERROR(
        p.Append(batch, last ? log::Durability::kWaitDurable : log::Durability::kFlushSoon)
            .status());
  }
  return Status::OK();
}

Result<log::Topic*> NewTopic(LocalLog& local, const std::string& name, int32_t partitions) {
  log::TopicConfig config;
  config.partitions = partitions;
  return local.log->CreateTopic(name, config);
}

void PrintRun(const char* what, const RunSummary& s, const AllocationMeter& allocations,
              int64_t outputs, const char* unit) {
  std::printf(
      "  %s: %.0f input messages/s per core, %.0f %s/s per core (%.2f s wall, %.2f s CPU); %s "
      "heap allocations per input message\n",
      what, s.records_in / std::max(s.cpu_seconds, 1e-9), outputs / std::max(s.cpu_seconds, 1e-9),
      unit, s.wall_seconds, s.cpu_seconds, allocations.PerEvent(s.records_in).c_str());
}

// --- time mode ---------------------------------------------------------------------------------

// Three synchronized sensors at `sync_hz` (1% of their messages lost, +-10% of a period of
// jitter) and an IMU at 1 kHz collected within half a period of each group.
struct SensorPlan {
  int64_t period_ms;
  int64_t jitter_ms;
  int64_t ticks;  // per partition
  static bool Lost(int32_t p, int64_t tick, int sensor) {
    uint64_t h = (static_cast<uint64_t>(p) * 1'000'003 + tick) * 31 + sensor;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h % 100 == 0;
  }
  int64_t SyncTime(int32_t p, int64_t tick, int sensor) const {
    const int64_t spread = 2 * jitter_ms + 1;
    return kBaseTime + tick * period_ms +
           static_cast<int64_t>((tick * 7 + sensor * 13 + p) % spread) - jitter_ms;
  }
};

constexpr const char* kSensors[] = {"cam_a", "cam_b", "cam_c"};

Status WriteSensors(LocalLog& local, const SensorPlan& plan, int32_t partitions, bool with_imu,
                    int sync_sensors) {
  for (int s = 0; s < 3; ++s) {
    WEIR_ASSIGN_OR_RETURN(log::Topic * topic, NewTopic(local, kSensors[s], partitions));
    if (s >= sync_sensors) continue;  // a sensor that never reports
    for (int32_t p = 0; p < partitions; ++p) {
      std::vector<std::pair<int64_t, std::string>> values;
      for (int64_t k = 0; k < plan.ticks; ++k) {
        if (SensorPlan::Lost(p, k, s)) continue;
        const int64_t ts = plan.SyncTime(p, k, s);
        values.emplace_back(ts, R"({"ts":)" + std::to_string(ts) + R"(,"seq":)" +
                                    std::to_string(k) + R"(,"exposure":0.0125})");
      }
      WEIR_RETURN_IF_ERROR(WriteAll(*topic, p, values));
    }
  }
  if (!with_imu) return Status::OK();
  WEIR_ASSIGN_OR_RETURN(log::Topic * imu, NewTopic(local, "imu", partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    std::vector<std::pair<int64_t, std::string>> values;
    for (int64_t t = 0; t < plan.ticks * plan.period_ms; ++t) {
      const int64_t ts = kBaseTime + t;
      values.emplace_back(ts, R"({"ts":)" + std::to_string(ts) + R"(,"ax":0.01,"ay":-0.02})");
    }
    WEIR_RETURN_IF_ERROR(WriteAll(*imu, p, values));
  }
  return Status::OK();
}

Stream SensorJoin(Application& app, const SensorPlan& plan, bool with_imu, int quorum,
                  milliseconds timeout) {
  auto from = [&](const char* topic) {
    return app.FromTopic({.topic = topic, .timestamp_field = "ts", .bounded = true});
  };
  std::vector<std::pair<std::string, Stream>> parents;
  for (const char* s : kSensors) parents.emplace_back(s, from(s));
  JoinOptions options{.mode = JoinMode::kTime,
                      .tolerance = milliseconds(std::max<int64_t>(1, plan.period_ms * 3 / 10)),
                      .timeout = timeout,
                      .quorum = quorum,
                      .max_pending = 1'000'000'000};
  if (with_imu) {
    parents.emplace_back("imu", from("imu"));
    options.collect = {{"imu", milliseconds(plan.period_ms / 2)}};
  }
  return app.Join(std::move(parents), options);
}

// Checks the groups: one per tick with at least two sensors, each sensor's message of that
// tick, IMU samples within the window of the group time, oldest first, no more than were sent.
Status CheckGroups(const std::string& data_dir, const SensorPlan& plan, int32_t partitions,
                   int64_t& groups, int64_t& samples) {
  int64_t expected = 0;
  for (int32_t p = 0; p < partitions; ++p) {
    for (int64_t k = 0; k < plan.ticks; ++k) {
      int present = 0;
      for (int s = 0; s < 3; ++s) present += SensorPlan::Lost(p, k, s) ? 0 : 1;
      expected += present >= 2;
    }
  }
  const int64_t window = plan.period_ms / 2;
  WEIR_RETURN_IF_ERROR(ForEachOutput(
      data_dir, "bench.groups",
      [&](PartitionId, const log::StoredRecord&, const Value& g) -> Status {
        ++groups;
        int64_t seq = -1;
        int present = 0;
        for (const char* s : kSensors) {
          const Value* m = g.Find(s);
          if (m == nullptr || m->is_null()) continue;
          ++present;
          const int64_t k = m->Find("seq")->as_int();
          if (seq >= 0 && k != seq) return Status::Internal("a group mixes ticks: " + g.ToJson());
          seq = k;
        }
        if (present < 2) return Status::Internal("a group below quorum: " + g.ToJson());
        const int64_t t = g.Find("event_ts")->as_int();
        int64_t previous = INT64_MIN;
        for (const Value& sample : g.Find("imu")->as_array()) {
          const int64_t ts = sample.Find("ts")->as_int();
          if (ts < t - window || ts > t + window || ts <= previous) {
            return Status::Internal("samples outside the window or out of order: " + g.ToJson());
          }
          previous = ts;
          ++samples;
        }
        return Status::OK();
      }));
  if (samples > partitions * plan.ticks * plan.period_ms) {
    return Status::Internal("more samples attached than the IMU sent");
  }
  if (groups != expected) {
    return Status::Internal("emitted " + std::to_string(groups) + " groups; " +
                            std::to_string(expected) + " ticks had two sensors or more");
  }
  return Status::OK();
}

SensorPlan MakeSensorPlan(const BenchArgs& args) {
  SensorPlan plan;
  plan.period_ms = std::max<int64_t>(1, 1000 / std::max(1, args.sync_hz));
  plan.jitter_ms = plan.period_ms / 10;
  // Messages per tick and partition: three sensors and period_ms IMU samples.
  plan.ticks = std::max<int64_t>(1, args.records / (args.partitions * (3 + plan.period_ms)));
  return plan;
}

// Throughput: every message through the join, groups checked.
int BenchTimeJoin(const BenchArgs& args) {
  const SensorPlan plan = MakeSensorPlan(args);
  int64_t groups = 0, samples = 0;
  RunSummary run;
  AllocationMeter allocations;
  {
    BenchDir dir(args.data_dir);
    {
      auto local = LocalLog::Open(dir.path());
      if (!local.ok()) return Fail(local.status());
      Status written = WriteSensors(*local, plan, args.partitions, true, 3);
      if (!written.ok()) return Fail(written);
    }
    Application app({.name = "bench-join", .data_dir = dir.path()});
    SensorJoin(app, plan, true, 2, milliseconds(5 * plan.period_ms)).ToTopic("bench.groups");
    allocations = AllocationMeter();
    auto summary = app.Run();
    allocations.Stop();
    if (!summary.ok()) return Fail(summary.status());
    run = *summary;
    Status checked = CheckGroups(dir.path(), plan, args.partitions, groups, samples);
    if (!checked.ok()) return Fail(checked);
  }
  std::printf(
      "weir bench join: time mode, 3 sensors at %d Hz (1%% lost, +-%lld ms jitter) + an IMU at "
      "1 kHz collected within %lld ms, quorum 2, %d partitions, from the embedded log, "
      "checkpoints on\n",
      args.sync_hz, static_cast<long long>(plan.jitter_ms),
      static_cast<long long>(plan.period_ms / 2), args.partitions);
  PrintRun("throughput", run, allocations, groups, "groups");
  std::printf(
      "  %lld groups (%.1f IMU samples each), %lld messages; peak memory %.0f MiB; "
      "checked: one group per tick with two sensors or more, samples in their window\n",
      static_cast<long long>(groups), static_cast<double>(samples) / std::max<int64_t>(1, groups),
      static_cast<long long>(run.records_in), run.peak_rss_bytes / 1048576.0);

  return 0;
}

// Memory per pending group: two sensors report, the third never does and there is no timeout,
// so every group stays pending until the end of input.
int BenchPendingGroups(const BenchArgs& args) {
  const SensorPlan plan = MakeSensorPlan(args);
  BenchDir dir(args.data_dir);
  {
    auto local = LocalLog::Open(dir.path());
    if (!local.ok()) return Fail(local.status());
    Status written = WriteSensors(*local, plan, args.partitions, false, 2);
    if (!written.ok()) return Fail(written);
  }
  int64_t heap_first = -1, records_first = 0, heap_last = 0, records_last = 0;
  Application app({.name = "bench-join-pending",
                   .data_dir = dir.path(),
                   .checkpoint_records = 20'000,
                   .on_checkpoint = [&](int64_t, int64_t records_in) {
                     const int64_t heap = HeapInUseBytes();
                     if (heap_first < 0) {
                       heap_first = heap;
                       records_first = records_in;
                     }
                     if (records_in > records_last) {
                       heap_last = heap;
                       records_last = records_in;
                     }
                   }});
  SensorJoin(app, plan, false, 3, milliseconds(0)).ToTopic("bench.groups");
  auto pending = app.Run();
  if (!pending.ok()) return Fail(pending.status());
  // Two messages per pending group.
  const double pending_groups = static_cast<double>(records_last - records_first) / 2;
  if (pending->join_evicted != pending->records_in || pending_groups <= 0) {
    return Fail(Status::Internal("the pending run evicted " +
                                 std::to_string(pending->join_evicted) + " of " +
                                 std::to_string(pending->records_in) + " messages"));
  }
  std::printf(
      "weir bench join: memory of pending groups (time mode, 2 of 3 sensors, no timeout), %d "
      "partitions\n",
      args.partitions);
  std::printf(
      "  memory per pending group (2 members held): %.0f bytes (heap in use %+.0f MiB over %.0f "
      "groups between checkpoints)\n",
      static_cast<double>(heap_last - heap_first) / pending_groups,
      (heap_last - heap_first) / 1048576.0, pending_groups);
  return 0;
}

// --- interval join -----------------------------------------------------------------------------

int BenchIntervalJoin(const BenchArgs& args) {
  BenchDir dir(args.data_dir);
  const int64_t per_side = args.records / 2;
  const int64_t keys = std::max<int64_t>(1, args.users);
  const milliseconds bound(500);
  // Both sides: one event per ms of event time, each for a random key; a key lives in the
  // partition key % partitions on both sides (co-partitioned).
  std::vector<std::vector<std::vector<int64_t>>> times(
      2, std::vector<std::vector<int64_t>>(static_cast<size_t>(keys)));
  {
    auto local = LocalLog::Open(dir.path());
    if (!local.ok()) return Fail(local.status());
    std::mt19937_64 rng(7);
    for (int side = 0; side < 2; ++side) {
      auto topic = NewTopic(*local, side == 0 ? "left" : "right", args.partitions);
      if (!topic.ok()) return Fail(topic.status());
      std::vector<std::vector<std::pair<int64_t, std::string>>> values(args.partitions);
      for (int64_t i = 0; i < per_side; ++i) {
        const int64_t key = static_cast<int64_t>(rng() % static_cast<uint64_t>(keys));
        const int64_t ts = kBaseTime + i;
        times[side][key].push_back(ts);
        values[key % args.partitions].emplace_back(ts, R"({"k":)" + std::to_string(key) +
                                                           R"(,"ts":)" + std::to_string(ts) +
                                                           R"(,"v":)" + std::to_string(i) + "}");
      }
      for (int32_t p = 0; p < args.partitions; ++p) {
        Status written = WriteAll(**topic, p, values[p]);
        if (!written.ok()) return Fail(written);
      }
    }
  }
  Application app({.name = "bench-interval", .data_dir = dir.path()});
  auto from = [&](const char* topic) {
    return app.FromTopic(
        {.topic = topic, .key = {"k", KeySerde::kInt}, .timestamp_field = "ts", .bounded = true});
  };
  from("left").IntervalJoin(from("right"), {.lower = bound, .upper = bound}).ToTopic("bench.pairs");
  AllocationMeter allocations;
  auto summary = app.Run();
  allocations.Stop();
  if (!summary.ok()) return Fail(summary.status());

  // Check: as many pairs as a per-key two-pointer count finds, each within the bounds.
  int64_t expected = 0;
  for (int64_t k = 0; k < keys; ++k) {
    const auto& l = times[0][k];
    const auto& r = times[1][k];
    size_t lo = 0, hi = 0;
    for (int64_t t : l) {
      while (lo < r.size() && r[lo] < t - bound.count()) ++lo;
      while (hi < r.size() && r[hi] <= t + bound.count()) ++hi;
      expected += static_cast<int64_t>(hi - lo);
    }
  }
  int64_t pairs = 0;
  Status checked = ForEachOutput(
      dir.path(), "bench.pairs", [&](PartitionId, const log::StoredRecord&, const Value& v) {
        const int64_t lt = v.FindPath("left.ts")->as_int();
        const int64_t rt = v.FindPath("right.ts")->as_int();
        if (rt < lt - bound.count() || rt > lt + bound.count() ||
            v.FindPath("left.k")->as_int() != v.FindPath("right.k")->as_int()) {
          return Status::Internal("a pair out of bounds: " + v.ToJson());
        }
        ++pairs;
        return Status::OK();
      });
  if (!checked.ok()) return Fail(checked);
  if (pairs != expected) {
    return Fail(Status::Internal("emitted " + std::to_string(pairs) + " pairs; expected " +
                                 std::to_string(expected)));
  }
  std::printf(
      "weir bench join: interval join, two streams of %lld events, %lld keys, +-%lld ms, %d "
      "partitions, from the embedded log, checkpoints on\n",
      static_cast<long long>(per_side), static_cast<long long>(keys),
      static_cast<long long>(bound.count()), args.partitions);
  PrintRun("throughput", *summary, allocations, pairs, "pairs");
  std::printf("  %lld pairs; peak memory %.0f MiB; checked: every pair a brute-force count finds\n",
              static_cast<long long>(pairs), summary->peak_rss_bytes / 1048576.0);
  return 0;
}

}  // namespace

int BenchJoin(const BenchArgs& args) {
  if (args.join == "interval") return BenchIntervalJoin(args);
  if (args.join == "pending") return BenchPendingGroups(args);
  return BenchTimeJoin(args);
}

}  // namespace weir::cli
