// Watermarks after a repartition (docs/architecture.md §2, src/app/README.md "Watermarks"), through
// real applications: inputs on the embedded log, real task stores, results and late events read
// back from files and topics. A reading task's watermark is the minimum of its producers' marks, so
// which task runs ahead (WEIR_SLOW_TASKS) and where a run is stopped and restarted change no
// result and make no event late when every input partition is in event-time order. Also: an
// input that ended in an earlier run makes every later event late, with its reason; and
// repartition topics are purged behind their readers' checkpoints.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "app/pipeline_yaml.h"
#include "app/testing.h"
#include "nexmark/source.h"
#include "weir/weir.h"

namespace weir {
namespace {

using std::chrono::milliseconds;
using testing::ReadLines;
using testing::TempDir;
using testing::WriteLines;

constexpr int64_t kStart = 1'700'000'000'000;  // event time of the first events

// WEIR_SLOW_TASKS for the tasks made while it lives (they read it when constructed).
class SlowTasks {
 public:
  explicit SlowTasks(const std::string& spec) {
    if (spec.empty()) {
      unsetenv("WEIR_SLOW_TASKS");
    } else {
      setenv("WEIR_SLOW_TASKS", spec.c_str(), 1);
    }
  }
  ~SlowTasks() { unsetenv("WEIR_SLOW_TASKS"); }
  SlowTasks(const SlowTasks&) = delete;
  SlowTasks& operator=(const SlowTasks&) = delete;
};

int64_t Uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool Chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// One input event; its value is {"user", "page", "region", "ts", "id"}.
struct Event {
  std::string user;
  int64_t page = 0;
  int64_t ts = 0;
  int64_t id = 0;
};

constexpr int64_t kRegions = 8;  // an event's region is its page % kRegions

std::string EventJson(const Event& e) {
  return R"({"user":")" + e.user + R"(","page":)" + std::to_string(e.page) + R"(,"region":)" +
         std::to_string(e.page % kRegions) + R"(,"ts":)" + std::to_string(e.ts) + R"(,"id":)" +
         std::to_string(e.id) + "}";
}

// Creates `topic` in the log of `data_dir` with one partition per element of `partitions`,
// each holding its events in that order (keyed by user, timestamped with ts).
// REQUIRES: no process holds the data directory.
void WriteTopic(const std::string& data_dir, const std::string& topic,
                const std::vector<std::vector<Event>>& partitions) {
  auto log = log::LogStore::Open(
      {.dir = std::filesystem::path(data_dir) / "log", .fsync = FsyncPolicy::kNever});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto t = (*log)->CreateTopic(topic, {.partitions = static_cast<int32_t>(partitions.size())});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (size_t p = 0; p < partitions.size(); ++p) {
    log::Partition& partition = (*t)->partition(PartitionId(static_cast<int32_t>(p)));
    log::RecordBatchBuilder batch;
    for (size_t i = 0; i < partitions[p].size(); ++i) {
      const Event& e = partitions[p][i];
      batch.AddRaw(EventTime(e.ts), KeySerde::kString, e.user, EventJson(e));
      if (batch.count() >= 1000 || i + 1 == partitions[p].size()) {
        ASSERT_TRUE(partition.Append(batch, log::Durability::kNoWait).ok());
        batch.Clear();
      }
    }
  }
  ASSERT_TRUE((*log)->FlushAll().ok());
}

// What `got` has that `want` has not and the other way round (multisets, `want` sorted); empty
// if they are equal.
std::string Difference(const std::vector<std::string>& want, std::vector<std::string> got) {
  std::sort(got.begin(), got.end());
  if (want == got) return "";
  std::vector<std::string> missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::string s = std::to_string(want.size()) + " wanted, " + std::to_string(got.size()) +
                  " got; " + std::to_string(missing.size()) + " missing, " +
                  std::to_string(extra.size()) + " unexpected\n";
  for (size_t i = 0; i < missing.size() && i < 8; ++i) s += "    missing " + missing[i] + "\n";
  for (size_t i = 0; i < extra.size() && i < 8; ++i) s += "    unexpected " + extra[i] + "\n";
  return s;
}

// The windows [k*step, k*step + size) that hold `t`, by start.
std::vector<int64_t> WindowStarts(int64_t t, int64_t size, int64_t step) {
  std::vector<int64_t> starts;
  for (int64_t k = t / step; k >= 0 && k * step + size > t; --k) starts.push_back(k * step);
  std::reverse(starts.begin(), starts.end());
  return starts;
}

// "key [start,end) <value without start and end>" of a window result line.
std::string WindowResult(const std::string& line) {
  auto v = Value::Parse(line);
  if (!v.ok()) return "unparsable: " + line;
  const Value* key = v->Find("key");
  const Value* value = v->Find("value");
  if (key == nullptr || value == nullptr || !value->is_object() || !value->Find("start") ||
      !value->Find("end")) {
    return "not a window result: " + line;
  }
  std::string s = key->ToJson() + " [" + value->Find("start")->ToJson() + "," +
                  value->Find("end")->ToJson() + ")";
  for (const auto& [name, member] : value->as_object()) {
    if (name != "start" && name != "end") s += " " + name + "=" + member.ToJson();
  }
  return s;
}

std::vector<std::string> WindowResults(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& line : ReadLines(path)) out.push_back(WindowResult(line));
  return out;
}

// --- 1. the user report: a count by page after a group_by, with one source task slowed -------

TEST(AfterARepartition, NoEventIsLateWhateverTaskIsSlow) {
  // 4 partitions of 10,000 clicks each, every partition in event-time order over about five
  // minutes (each at its own pace), 50 pages.
  std::mt19937_64 rng(7);
  std::vector<std::vector<Event>> clicks(4);
  int64_t id = 0;
  for (int p = 0; p < 4; ++p) {
    int64_t ts = kStart + Uniform(rng, 0, 3000);
    const int64_t max_step = 50 + 10 * p;
    for (int i = 0; i < 10'000; ++i) {
      ts += Uniform(rng, 0, max_step);
      clicks[p].push_back(
          {"user-" + std::to_string(Uniform(rng, 0, 999)), Uniform(rng, 0, 49), ts, id++});
    }
  }
  // The model: a count per page and 10 s window.
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;
  for (const auto& partition : clicks) {
    for (const Event& e : partition) ++counts[{e.page, e.ts - e.ts % 10'000}];
  }
  std::vector<std::string> want;
  for (const auto& [window, n] : counts) {
    want.push_back(std::to_string(window.first) + " [" + std::to_string(window.second) + "," +
                   std::to_string(window.second + 10'000) + ") value=" + std::to_string(n));
  }
  std::sort(want.begin(), want.end());

  // Source tasks are 0_0..0_3, the window's tasks 1_0..1_3 (4 repartition partitions), on two
  // workers. A slowed source task is the report's case: the other producers reach the end of
  // their partitions (and the end of time) long before it.
  for (const std::string slow : {"", "0_0:40", "0_3:40", "0_1,0_2:40", "1_2:40"}) {
    SCOPED_TRACE("WEIR_SLOW_TASKS=" + slow);
    TempDir dir;
    WriteTopic(dir / "data", "clicks", clicks);
    WriteLines(dir / "clicks.yaml",
               {"name: clicks", "source: {topic: clicks, bounded: true, timestamp: ts}",
                "steps:", "  - group_by: {field: page, type: int}",
                "  - window: {tumbling: {size_ms: 10000, grace_ms: 0}}", "    agg: count",
                "    closing: partition", "    late: late.jsonl", "sink: {file: out.jsonl}",
                "workers: 2", "partitions: 4", "fsync: never", "checkpoint: {interval_ms: 50}"});
    SlowTasks slow_tasks(slow);
    app::PipelineOverrides overrides;
    overrides.data_dir = dir / "data";
    auto app = app::LoadPipelineFile(dir / "clicks.yaml", overrides);
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    auto summary = (*app)->Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_TRUE(summary->completed);
    EXPECT_EQ(summary->records_in, 40'000);
    EXPECT_EQ(summary->dead_letters, 0);
    EXPECT_EQ(summary->late, 0);
    std::vector<std::string> late = ReadLines(dir / "late.jsonl");
    EXPECT_TRUE(late.empty()) << late.size() << " late events, the first: " << late.front();
    EXPECT_EQ(Difference(want, WindowResults(dir / "out.jsonl")), "");
  }
}

// --- 2. random topologies, delays and restarts against an undisturbed run -------------------

enum class Topology { kWindow, kTwoWindows, kIntervalJoin };

const char* TopologyName(Topology t) {
  switch (t) {
    case Topology::kWindow:
      return "group_by -> window";
    case Topology::kTwoWindows:
      return "group_by -> window -> group_by -> window";
    case Topology::kIntervalJoin:
      return "group_by, group_by -> interval join";
  }
  return "?";
}

struct InputTopic {
  std::string name;
  std::vector<std::vector<Event>> partitions;  // each in event-time order
};

struct PropertyCase {
  uint64_t seed = 0;
  Topology topology = Topology::kWindow;
  std::vector<InputTopic> inputs;
  int32_t repartitions = 1;
  WindowDefinition first = WindowDefinition::Tumbling(milliseconds(1000));
  WindowDefinition second = WindowDefinition::Tumbling(milliseconds(1000));
  bool current = false;  // the first window emits every update
  IntervalJoinOptions join;

  int subtopologies() const { return topology == Topology::kWindow ? 2 : 3; }
  int32_t max_partitions() const {
    int32_t n = repartitions;
    for (const InputTopic& t : inputs) n = std::max(n, static_cast<int32_t>(t.partitions.size()));
    return n;
  }
  int64_t records() const {
    int64_t n = 0;
    for (const InputTopic& t : inputs) {
      for (const auto& p : t.partitions) n += static_cast<int64_t>(p.size());
    }
    return n;
  }
  std::string Describe() const {
    std::string s = "seed " + std::to_string(seed) + ", " + TopologyName(topology) + ": inputs";
    for (const InputTopic& t : inputs) {
      s += " " + t.name + "(";
      for (size_t p = 0; p < t.partitions.size(); ++p) {
        s += (p ? "," : "") + std::to_string(t.partitions[p].size());
      }
      s += " events)";
    }
    s += ", " + std::to_string(repartitions) + " repartition partitions";
    if (topology == Topology::kIntervalJoin) {
      s += ", interval join lower=" + std::to_string(join.lower.count()) +
           " upper=" + std::to_string(join.upper.count()) +
           " grace=" + std::to_string(join.grace.count()) + (join.left_outer ? " left_outer" : "");
    } else {
      s += ", " + first.Describe() + (current ? " current" : " final");
      if (topology == Topology::kTwoWindows) s += " then " + second.Describe();
    }
    return s;
  }
};

std::vector<std::vector<Event>> RandomPartitions(std::mt19937_64& rng, int partitions, int users,
                                                 int pages, int64_t& id) {
  std::vector<std::vector<Event>> out(partitions);
  for (auto& events : out) {
    const int64_t n = Uniform(rng, 200, 2500);
    const int64_t max_step = std::vector<int64_t>{3, 10, 30}[Uniform(rng, 0, 2)];
    int64_t ts = kStart + Uniform(rng, 0, 2000);
    for (int64_t i = 0; i < n; ++i) {
      ts += Uniform(rng, 0, max_step);
      events.push_back(
          {"u" + std::to_string(Uniform(rng, 0, users - 1)), Uniform(rng, 0, pages - 1), ts, id++});
    }
  }
  return out;
}

WindowDefinition RandomTimeWindow(std::mt19937_64& rng, int64_t min_size) {
  const int64_t size = min_size * Uniform(rng, 1, 5);
  const int64_t grace = std::vector<int64_t>{0, 0, 100, 1000}[Uniform(rng, 0, 3)];
  WindowDefinition w =
      Chance(rng, 0.5)
          ? WindowDefinition::Tumbling(milliseconds(size))
          : WindowDefinition::Hopping(milliseconds(size), milliseconds(size / Uniform(rng, 2, 4)));
  w.Grace(milliseconds(grace));
  return w;
}

PropertyCase RandomCase(uint64_t seed, Topology topology) {
  std::mt19937_64 rng(seed * 3 + static_cast<uint64_t>(topology));
  PropertyCase c;
  c.seed = seed;
  c.topology = topology;
  c.repartitions = static_cast<int32_t>(Uniform(rng, 1, 4));
  int64_t id = 0;
  if (topology == Topology::kIntervalJoin) {
    const int users = static_cast<int>(Uniform(rng, 3, 40));
    c.inputs.push_back({"left", RandomPartitions(rng, Uniform(rng, 1, 4), users, 10, id)});
    c.inputs.push_back({"right", RandomPartitions(rng, Uniform(rng, 1, 4), users, 10, id)});
    c.join.name = "ij";
    c.join.lower = milliseconds(Uniform(rng, 0, 150));
    c.join.upper = milliseconds(Uniform(rng, 0, 150));
    c.join.grace = milliseconds(Chance(rng, 0.5) ? 0 : Uniform(rng, 1, 100));
    c.join.left_outer = Chance(rng, 0.5);
    c.join.late_topic = "ij-late";
    return c;
  }
  c.inputs.push_back(
      {"clicks", RandomPartitions(rng, Uniform(rng, 1, 4), 100, Uniform(rng, 3, 60), id)});
  c.first = RandomTimeWindow(rng, 500);
  c.current = topology == Topology::kWindow && Chance(rng, 0.3);
  c.second = RandomTimeWindow(rng, c.first.size());
  return c;
}

void BuildCase(Application& app, const PropertyCase& c, const TempDir& dir, double max_rate) {
  auto from = [&](const InputTopic& t) {
    return app.FromTopic({.topic = t.name, .bounded = true, .max_rate = max_rate});
  };
  const std::string out = dir / "out.jsonl";
  if (c.topology == Topology::kIntervalJoin) {
    Stream left = from(c.inputs[0]).GroupBy("user", KeySerde::kString, c.repartitions);
    Stream right = from(c.inputs[1]).GroupBy("user", KeySerde::kString, c.repartitions);
    left.IntervalJoin(right, c.join).ToFile(out);
    return;
  }
  WindowedStream first =
      from(c.inputs[0]).GroupBy("page", KeySerde::kInt, c.repartitions).Window(c.first);
  first.Agg({{"n", agg::Count()}, {"region", agg::Min("region")}})
      .Closing(Closing::kPartition)
      .LateFile(dir / "late-1.jsonl");
  if (c.topology == Topology::kWindow) {
    (c.current ? first.Current() : first.Final()).ToFile(out);
    return;
  }
  WindowedStream second =
      first.Final().GroupBy("region", KeySerde::kInt, c.repartitions).Window(c.second);
  second.Agg({{"windows", agg::Count()}, {"events", agg::Sum("n")}})
      .Closing(Closing::kPartition)
      .LateFile(dir / "late-2.jsonl")
      .Final()
      .ToFile(out);
}

// The results the case must give, from its definition alone: window results as WindowResult
// writes them, join results as "key left-id right-id|null".
std::vector<std::string> ModelResults(const PropertyCase& c) {
  std::vector<std::string> out;
  if (c.topology == Topology::kIntervalJoin) {
    std::map<std::string, std::vector<const Event*>> right;
    for (const auto& p : c.inputs[1].partitions) {
      for (const Event& e : p) right[e.user].push_back(&e);
    }
    for (const auto& p : c.inputs[0].partitions) {
      for (const Event& l : p) {
        bool matched = false;
        for (const Event* r : right[l.user]) {
          if (r->ts < l.ts - c.join.lower.count() || r->ts > l.ts + c.join.upper.count()) continue;
          matched = true;
          out.push_back(l.user + " " + std::to_string(l.id) + " " + std::to_string(r->id));
        }
        if (!matched && c.join.left_outer)
          out.push_back(l.user + " " + std::to_string(l.id) + " null");
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const int64_t size = c.first.size(), step = c.first.step();
  std::map<std::pair<int64_t, int64_t>, int64_t> first;  // (page, start) -> events
  for (const auto& p : c.inputs[0].partitions) {
    for (const Event& e : p) {
      for (int64_t start : WindowStarts(e.ts, size, step)) ++first[{e.page, start}];
    }
  }
  auto span = [](int64_t key, int64_t start, int64_t end) {
    return std::to_string(key) + " [" + std::to_string(start) + "," + std::to_string(end) + ")";
  };
  if (c.topology == Topology::kWindow) {
    for (const auto& [window, n] : first) {
      const auto& [page, start] = window;
      for (int64_t k = c.current ? 1 : n; k <= n; ++k) {
        out.push_back(span(page, start, start + size) + " n=" + std::to_string(k) +
                      " region=" + std::to_string(page % kRegions));
      }
    }
  } else {
    // A first window's result is at its last instant, end - 1, keyed by its region.
    std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> second;
    for (const auto& [window, n] : first) {
      const auto& [page, start] = window;
      for (int64_t s : WindowStarts(start + size - 1, c.second.size(), c.second.step())) {
        auto& [windows, events] = second[{page % kRegions, s}];
        ++windows;
        events += n;
      }
    }
    for (const auto& [window, agg] : second) {
      out.push_back(span(window.first, window.second, window.second + c.second.size()) +
                    " windows=" + std::to_string(agg.first) +
                    " events=" + std::to_string(agg.second));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// An interval join's result line as "key left-id right-id|null".
std::string JoinResult(const std::string& line) {
  auto v = Value::Parse(line);
  const Value* key = v.ok() ? v->Find("key") : nullptr;
  const Value* left = v.ok() ? v->FindPath("value.left.id") : nullptr;
  const Value* right = v.ok() ? v->FindPath("value.right") : nullptr;
  if (key == nullptr || !key->is_string() || left == nullptr || !left->is_int() ||
      right == nullptr) {
    return "not a join result: " + line;
  }
  const Value* right_id = right->is_object() ? right->Find("id") : nullptr;
  return std::string(key->as_string()) + " " + left->ToJson() + " " +
         (right_id != nullptr ? right_id->ToJson() : right->ToJson());
}

struct CaseRun {
  std::vector<std::string> lines;  // the output file, sorted
  int64_t late = 0;                // RunSummary::late over the runs
  int64_t late_records = 0;        // in the late files and topic
  int64_t dead_letters = 0;
  int restarts = 0;
  std::string error;
};

// Runs the case in a fresh data directory to the end of its input: with `slow` as
// WEIR_SLOW_TASKS, each source partition read at `max_rate` records/s, and `stops` runs before
// the last that each stop at a checkpoint once they have read a random number of records.
CaseRun RunCase(const PropertyCase& c, const std::string& slow, double max_rate, int stops,
                std::mt19937_64& rng) {
  CaseRun result;
  TempDir dir;
  for (const InputTopic& t : c.inputs) WriteTopic(dir / "data", t.name, t.partitions);
  SlowTasks slow_tasks(slow);
  const int64_t per_run = std::max<int64_t>(1, c.records() / (stops + 1));
  for (int run = 0;; ++run) {
    const bool stop = run < stops;
    const int64_t stop_after = Uniform(rng, 1, per_run);
    ApplicationOptions options{.name = "wm",
                               .data_dir = dir / "data",
                               .workers = 2,
                               .checkpoint_interval = milliseconds(50),
                               .checkpoint_records = 4000,
                               .fsync = FsyncPolicy::kNever};
    Application* running = nullptr;
    if (stop) {
      options.on_checkpoint = [&running, stop_after](int64_t, int64_t records_in) {
        if (records_in >= stop_after) running->Stop();
      };
    }
    Application app(options);
    running = &app;
    BuildCase(app, c, dir, max_rate);
    auto summary = app.Run();
    if (!summary.ok()) {
      result.error = "run " + std::to_string(run) + " failed: " + summary.status().ToString();
      return result;
    }
    result.late += summary->late;
    result.dead_letters += summary->dead_letters;
    if (run > 0 && summary->restored_checkpoint == 0) {
      result.error = "run " + std::to_string(run) + " did not resume from a checkpoint";
      return result;
    }
    if (summary->completed) break;
    ++result.restarts;
    if (!stop || run > 20) {
      result.error = "run " + std::to_string(run) + " did not complete";
      return result;
    }
  }
  result.lines = ReadLines(dir / "out.jsonl");
  std::sort(result.lines.begin(), result.lines.end());
  for (const char* file : {"late-1.jsonl", "late-2.jsonl"}) {
    result.late_records += static_cast<int64_t>(ReadLines(dir / file).size());
  }
  if (c.topology == Topology::kIntervalJoin) {
    result.late_records += static_cast<int64_t>(testing::ReadTopic(dir / "data", "ij-late").size());
  }
  return result;
}

// What is wrong with a run that should have given `want` (sorted output lines), or "".
std::string Problems(const CaseRun& got, const std::vector<std::string>* want) {
  if (!got.error.empty()) return "    " + got.error + "\n";
  std::string s;
  if (got.late != 0 || got.late_records != 0) {
    s += "    " + std::to_string(got.late) + " late events counted, " +
         std::to_string(got.late_records) + " in the late outputs (inputs are in order)\n";
  }
  if (got.dead_letters != 0) s += "    " + std::to_string(got.dead_letters) + " dead letters\n";
  if (want != nullptr) {
    std::string d = Difference(*want, got.lines);
    if (!d.empty()) s += "    output differs from the reference run's: " + d;
  }
  return s;
}

TEST(AfterARepartition, PropertyRandomTopologiesDelaysAndRestarts) {
  int restarts = 0;
  for (uint64_t seed : {1, 2, 3}) {
    for (Topology topology : {Topology::kWindow, Topology::kTwoWindows, Topology::kIntervalJoin}) {
      const PropertyCase c = RandomCase(seed, topology);
      std::mt19937_64 rng(seed * 1000 + static_cast<uint64_t>(topology));
      const CaseRun reference = RunCase(c, "", 0, 0, rng);
      std::string problems = Problems(reference, nullptr);
      if (problems.empty()) {
        std::vector<std::string> got;
        for (const std::string& line : reference.lines) {
          got.push_back(topology == Topology::kIntervalJoin ? JoinResult(line)
                                                            : WindowResult(line));
        }
        std::string d = Difference(ModelResults(c), got);
        if (!d.empty()) problems += "    the reference run differs from the model: " + d;
        if (reference.lines.empty()) problems += "    the reference run has no results\n";
      }
      if (!problems.empty()) {
        ADD_FAILURE() << c.Describe() << "\n  reference run (no delay, no restart):\n" << problems;
        continue;
      }
      for (int variant = 0; variant < 2; ++variant) {
        // Up to two slow tasks, anywhere in the topology.
        std::set<std::string> tasks;
        for (int64_t k = Uniform(rng, 0, 2); k > 0; --k) {
          tasks.insert(std::to_string(Uniform(rng, 0, c.subtopologies() - 1)) + "_" +
                       std::to_string(Uniform(rng, 0, c.max_partitions() - 1)));
        }
        std::string slow;
        for (const std::string& task : tasks) slow += (slow.empty() ? "" : ",") + task;
        if (!slow.empty()) slow += ":" + std::to_string(Uniform(rng, 1, 8));
        const double max_rate = std::vector<double>{0, 20'000, 60'000}[Uniform(rng, 0, 2)];
        const int stops = static_cast<int>(Uniform(rng, 0, 3));
        const CaseRun got = RunCase(c, slow, max_rate, stops, rng);
        restarts += got.restarts;
        problems = Problems(got, &reference.lines);
        if (!problems.empty()) {
          ADD_FAILURE() << c.Describe() << "\n  variant " << variant << ": WEIR_SLOW_TASKS=" << slow
                        << ", max_rate " << max_rate << ", " << stops << " stops asked, "
                        << got.restarts << " restarts made:\n"
                        << problems;
        }
      }
    }
  }
  EXPECT_GT(restarts, 0) << "no run was ever stopped and restarted";
}

// --- 3. after the end of input, every event is late -------------------------------------------

struct EndOfInputCase {
  Closing closing;
  bool group_by;  // the window reads a repartition topic
};

void PrintTo(const EndOfInputCase& c, std::ostream* os) {
  *os << (c.closing == Closing::kKey ? "closing by key" : "closing by partition")
      << (c.group_by ? " after a group_by" : "");
}

class AfterTheEndOfInput : public ::testing::TestWithParam<EndOfInputCase> {};

TEST_P(AfterTheEndOfInput, GrownInputIsLateForEveryKeyWithItsReason) {
  const EndOfInputCase param = GetParam();
  TempDir dir;
  auto write = [&](const std::vector<Event>& events) {
    std::vector<std::string> lines;
    for (const Event& e : events) lines.push_back(EventJson(e));
    WriteLines(dir / "in.jsonl", lines);
  };
  auto run = [&]() -> Result<RunSummary> {
    Application app({.name = "ended", .data_dir = dir / "data", .fsync = FsyncPolicy::kNever});
    Stream stream =
        app.FromFile({.path = dir / "in.jsonl", .key = {"user"}, .timestamp_field = "ts"});
    if (param.group_by) stream = stream.GroupBy("page", KeySerde::kInt);
    stream.Window(WindowDefinition::Tumbling(milliseconds(1000)))
        .Agg(agg::Count())
        .Closing(param.closing)
        .LateFile(dir / "late.jsonl")
        .Final()
        .ToFile(dir / "out.jsonl");
    return app.Run();
  };
  std::vector<Event> events = {{"a", 1, 1000, 0},
                               {"b", 2, 1500, 1},
                               {"a", 1, 2500, 2},
                               {"b", 2, 4200, 3},
                               {"a", 1, 5100, 4}};
  write(events);
  auto first = run();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->completed);
  EXPECT_EQ(first->late, 0);
  const std::vector<std::string> results = ReadLines(dir / "out.jsonl");
  EXPECT_EQ(results.size(), 5u);  // every window closed at the end of input

  // The input grows: an existing key after everything, a new key, an existing key in a window
  // already emitted.
  const std::vector<Event> grown = {{"a", 1, 7000, 5}, {"z", 9, 7500, 6}, {"b", 2, 4300, 7}};
  events.insert(events.end(), grown.begin(), grown.end());
  write(events);
  auto second = run();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->completed);
  EXPECT_GT(second->restored_checkpoint, 0);
  EXPECT_EQ(second->records_in, 3);
  EXPECT_EQ(second->dead_letters, 0);
  // Nothing held: every event read is a late event or a dead letter.
  EXPECT_EQ(second->late + second->dead_letters, second->records_in);
  EXPECT_EQ(second->late, 3);
  EXPECT_EQ(ReadLines(dir / "out.jsonl"), results) << "a window emitted after the end of input";

  std::set<int64_t> late_ids;
  for (const std::string& line : ReadLines(dir / "late.jsonl")) {
    auto v = Value::Parse(line);
    ASSERT_TRUE(v.ok()) << line;
    const Value* reason = v->FindPath("value.reason");
    const Value* late_by = v->FindPath("value.late_by_ms");
    const Value* id = v->FindPath("value.value.id");
    ASSERT_TRUE(reason != nullptr && reason->is_string() && late_by != nullptr &&
                late_by->is_int() && id != nullptr && id->is_int())
        << line;
    EXPECT_NE(reason->as_string().find("input ended in an earlier run"), std::string::npos) << line;
    EXPECT_EQ(late_by->as_int(), 0) << line;
    const Event& e = events[id->as_int()];
    EXPECT_EQ(v->Find("key")->ToJson(),
              param.group_by ? std::to_string(e.page) : "\"" + e.user + "\"")
        << line;
    EXPECT_EQ(v->Find("timestamp")->as_int(), e.ts) << line;
    late_ids.insert(id->as_int());
  }
  EXPECT_EQ(late_ids, (std::set<int64_t>{5, 6, 7}));
}

INSTANTIATE_TEST_SUITE_P(, AfterTheEndOfInput,
                         ::testing::Values(EndOfInputCase{Closing::kKey, false},
                                           EndOfInputCase{Closing::kPartition, false},
                                           EndOfInputCase{Closing::kKey, true},
                                           EndOfInputCase{Closing::kPartition, true}),
                         [](const ::testing::TestParamInfo<EndOfInputCase>& info) {
                           return std::string(info.param.closing == Closing::kKey ? "ByKey"
                                                                                  : "ByPartition") +
                                  (info.param.group_by ? "AfterAGroupBy" : "");
                         });

// --- 4. repartition topics are purged --------------------------------------------------------

// Bytes of the segment files of each partition of the repartition topics under `log_dir`; also
// notes in `seen` the largest size each segment file has had.
std::map<int32_t, int64_t> RepartitionBytes(const std::filesystem::path& log_dir,
                                            const std::string& app,
                                            std::map<std::string, int64_t>& seen) {
  namespace fs = std::filesystem;
  std::map<int32_t, int64_t> bytes;
  std::error_code ec;
  const std::string prefix = app + ".repartition.";
  for (const fs::directory_entry& topic : fs::directory_iterator(log_dir, ec)) {
    const std::string name = topic.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.find('~') != std::string::npos) continue;
    for (const fs::directory_entry& partition : fs::directory_iterator(topic.path(), ec)) {
      if (!partition.is_directory(ec)) continue;
      const int32_t p = std::stoi(partition.path().filename().string());
      for (const fs::directory_entry& file : fs::directory_iterator(partition.path(), ec)) {
        if (file.path().extension() != ".log") continue;
        const auto size = static_cast<int64_t>(fs::file_size(file.path(), ec));
        if (ec) continue;  // purged meanwhile
        bytes[p] += size;
        int64_t& most = seen[file.path().string()];
        most = std::max(most, size);
      }
    }
  }
  return bytes;
}

// What a run through a repartition topic left on disk, partition by partition.
struct PurgeRun {
  Status status;
  RunSummary summary;
  int64_t checkpoints = 0;
  std::map<int32_t, int64_t> peak;     // the most bytes on disk at a checkpoint
  std::map<int32_t, int64_t> written;  // bytes of every segment file seen at a checkpoint
  std::map<int32_t, std::vector<int64_t>> at_checkpoints;  // MiB on disk at each checkpoint
  std::map<int32_t, std::pair<int64_t, int64_t>> offsets;  // first and next offset at the end
  // At each checkpoint (workers paused): bytes of the repartition topic on disk, and records
  // written to it that its readers had not read yet.
  std::vector<std::pair<int64_t, int64_t>> on_disk_and_unread;
  int64_t records_through = 0;  // records written to the repartition topic in all
};

// Nexmark's bids grouped by auction through `repartitions` partitions into a 10 s tumbling
// count, on 2 workers, with a checkpoint every 200 ms.
PurgeRun RunThroughARepartition(int32_t source_partitions, int32_t repartitions, int64_t events) {
  TempDir dir;
  const std::filesystem::path log_dir = std::filesystem::path(dir / "data") / "log";
  PurgeRun run;
  std::map<std::string, int64_t> seen;
  // Records going into the repartition topic (counted in the source tasks) and coming out of it
  // (counted in the window tasks): their difference at a checkpoint is what its readers lag.
  std::atomic<int64_t> produced{0};
  std::atomic<int64_t> consumed{0};
  Application app({.name = "purge",
                   .data_dir = dir / "data",
                   .workers = 2,
                   .partitions = repartitions,
                   .checkpoint_interval = milliseconds(200),
                   .fsync = FsyncPolicy::kNever,
                   .on_checkpoint = [&](int64_t, int64_t) {
                     ++run.checkpoints;
                     int64_t on_disk = 0;
                     for (const auto& [p, bytes] : RepartitionBytes(log_dir, "purge", seen)) {
                       run.peak[p] = std::max(run.peak[p], bytes);
                       run.at_checkpoints[p].push_back(bytes >> 20);
                       on_disk += bytes;
                     }
                     run.on_disk_and_unread.emplace_back(on_disk, produced - consumed);
                   }});
  nexmark::FromNexmark(app, {.partitions = source_partitions, .events = events})
      .Filter([&](const Value& v) {
        const Value* type = v.Find("type");
        const bool bid = type != nullptr && type->is_string() && type->as_string() == "bid";
        produced += bid;
        return bid;
      })
      .GroupBy("auction", KeySerde::kInt)
      .Filter([&](const Value&) {
        ++consumed;
        return true;
      })
      .Window(WindowDefinition::Tumbling(std::chrono::seconds(10)))
      .Agg(agg::Count())
      .Closing(Closing::kPartition)
      .LateFile(dir / "late.jsonl")
      .Final()
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  if (!summary.ok()) {
    run.status = summary.status();
    return run;
  }
  run.summary = *summary;
  run.records_through = produced;
  for (const auto& [path, bytes] : seen) {
    run.written[std::stoi(std::filesystem::path(path).parent_path().filename().string())] += bytes;
  }
  auto log = log::LogStore::Open({.dir = log_dir});
  if (!log.ok()) {
    run.status = log.status();
    return run;
  }
  for (const std::string& name : (*log)->ListTopics()) {
    if (name.rfind("purge.repartition.", 0) != 0) continue;
    auto topic = (*log)->GetTopic(name);
    if (!topic.ok()) {
      run.status = topic.status();
      return run;
    }
    for (int32_t p = 0; p < (*topic)->num_partitions(); ++p) {
      const log::Partition& partition = (*topic)->partition(PartitionId(p));
      run.offsets[p] = {partition.FirstOffset().value(), partition.NextOffset().value()};
    }
  }
  return run;
}

std::string Timeline(const std::vector<int64_t>& mib) {
  std::string s;
  for (int64_t m : mib) s += (s.empty() ? "" : " ") + std::to_string(m);
  return s + " (MiB at each checkpoint)";
}

// Checks a run's repartition topic: at every checkpoint, nothing on disk beyond what its readers
// had not read yet plus two segments per partition (the one being written and the one being
// read), and at the end most of it gone and the first offset past 0. How far the readers lag
// depends on how the machine schedules the workers; what the purge leaves behind them does not.
void ExpectPurged(const PurgeRun& run, int32_t partitions) {
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  ASSERT_TRUE(run.summary.completed);
  EXPECT_EQ(run.summary.late, 0);
  EXPECT_EQ(run.summary.dead_letters, 0);
  EXPECT_GE(run.checkpoints, 5);
  ASSERT_EQ(run.peak.size(), static_cast<size_t>(partitions));
  ASSERT_EQ(run.offsets.size(), static_cast<size_t>(partitions));
  constexpr int64_t kSegment = 16 << 20;  // repartition topics' segment size
  for (const auto& [p, bytes] : run.peak) {
    const std::string where = "partition " + std::to_string(p) + ": " +
                              std::to_string(run.written.at(p) >> 20) + " MiB written, " +
                              Timeline(run.at_checkpoints.at(p));
    const auto [first, next] = run.offsets.at(p);
    EXPECT_GT(first, 0) << where;
    EXPECT_GE(next, 4 * (next - first))
        << where << ": offsets " << first << " to " << next << " kept";
  }
  int64_t written = 0;
  for (const auto& [p, bytes] : run.written) written += bytes;
  ASSERT_GT(run.records_through, 0);
  const double bytes_per_record = static_cast<double>(written) / run.records_through;
  for (size_t i = 0; i < run.on_disk_and_unread.size(); ++i) {
    const auto [on_disk, unread] = run.on_disk_and_unread[i];
    const auto unread_bytes = static_cast<int64_t>(unread * bytes_per_record);
    EXPECT_LE(on_disk, unread_bytes + partitions * (2 * kSegment + (4 << 20)))
        << "checkpoint " << i + 1 << ": " << (on_disk >> 20) << " MiB on disk, "
        << (unread_bytes >> 20) << " MiB of it not read yet";
  }
}

TEST(RepartitionTopics, ArePurgedBehindTheReadersCheckpoints) {
  // 1.5 M events, 1.4 M bids of about 270 bytes: some 180 MiB through each of 2 partitions,
  // written by 2 producers (the default for 2 source partitions on 2 workers). How far the
  // readers lag is up to the machine's scheduler (CI ran them 35-62 MiB behind); the test bounds
  // what stays on disk beyond that lag.
  ExpectPurged(RunThroughARepartition(2, 2, 1'500'000), 2);
}

}  // namespace
}  // namespace weir
