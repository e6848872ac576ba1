// weir bench process: keyed process functions (issue 16), "count + idle timer per key" over the
// clickstream generator with a native handler or a remote worker (C++, Python, Node), checked
// against a model of the step's semantics computed here.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <queue>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "cli/bench_support.h"
#include "cli/commands.h"
#include "core/heap_counter.h"
#include "core/process_stats.h"
#include "dataflow/clickstream.h"
#include "dataflow/graph.h"
#include "process/count_idle.h"
#include "process/process_step.h"
#include "process/worker.h"
#include "weir/application.h"

namespace weir::cli {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The generator's lateness (GeneratorOptions' default): an input up to this much behind the
// watermark still gets its idle timer after it when idle_ms is longer.
constexpr int64_t kOutOfOrderMs = 2'000;

// One output of the step, {key, count} at its timer's time, folded into a sum that does not
// depend on the order outputs arrive in: the model folds its own the same way.
uint64_t OutputHash(std::string_view key, int64_t at, int64_t count) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  for (uint64_t v : {static_cast<uint64_t>(at), static_cast<uint64_t>(count)}) {
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 31;
  }
  return h;
}

// What the step emitted, summed as it arrives (from the task threads).
struct OutputFold {
  std::atomic<int64_t> outputs{0};
  std::atomic<int64_t> counted{0};  // the sum of the outputs' counts
  std::atomic<uint64_t> hashes{0};
  std::atomic<int64_t> malformed{0};  // without a count, or a key other than the record's

  void Add(std::string_view key, int64_t at, const Value& value) {
    const Value* k = value.Find("key");
    const Value* count = value.Find("count");
    if (k == nullptr || !k->is_string() || k->as_string() != key || count == nullptr ||
        !count->is_int()) {
      malformed.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    outputs.fetch_add(1, std::memory_order_relaxed);
    counted.fetch_add(count->as_int(), std::memory_order_relaxed);
    hashes.fetch_add(OutputHash(key, at, count->as_int()), std::memory_order_relaxed);
  }
};

// The outputs the README's semantics give for this input, computed by simulating them: per
// partition, the watermark is the largest event time so far; each input counts and moves its
// key's timer to time + idle; then every timer at or before the watermark fires, emitting the
// key's count and clearing it; at the end of input every timer left fires.
struct ModelOutputs {
  int64_t outputs = 0;
  int64_t counted = 0;
  uint64_t hashes = 0;
  int64_t fired_at_end = 0;  // timers still pending when the input ended
  int64_t keys_seen = 0;
};

ModelOutputs ComputeModel(const GeneratorOptions& generator, int64_t idle_ms) {
  ModelOutputs model;
  dataflow::ClickstreamModel events(generator);
  Record record;
  for (int32_t p = 0; p < generator.partitions; ++p) {
    std::unordered_map<std::string, int32_t> ids;
    std::vector<std::string> names;
    std::vector<int64_t> counts, timer_at;  // by key id; timer_at 0: none pending
    // (at, key id), earliest first; an entry whose time is not its key's timer any more was
    // replaced and is skipped.
    using Due = std::pair<int64_t, int32_t>;
    std::priority_queue<Due, std::vector<Due>, std::greater<>> timers;
    auto fire = [&](const Due& due) {
      model.outputs += 1;
      model.counted += counts[due.second];
      model.hashes += OutputHash(names[due.second], due.first, counts[due.second]);
      counts[due.second] = 0;
      timer_at[due.second] = 0;
    };
    int64_t watermark = INT64_MIN;
    for (int64_t i = 0; i < events.EventsIn(PartitionId(p)); ++i) {
      events.WriteEventAt(PartitionId(p), i, record);
      const int64_t t = record.timestamp.value();
      watermark = std::max(watermark, t);
      auto [it, added] =
          ids.try_emplace(std::string(record.key.bytes()), static_cast<int32_t>(names.size()));
      if (added) {
        names.emplace_back(record.key.bytes());
        counts.push_back(0);
        timer_at.push_back(0);
      }
      const int32_t id = it->second;
      counts[id] += 1;
      timer_at[id] = t + idle_ms;
      timers.push({t + idle_ms, id});
      while (!timers.empty() && timers.top().first <= watermark) {
        const Due due = timers.top();
        timers.pop();
        if (timer_at[due.second] == due.first) fire(due);
      }
    }
    for (; !timers.empty(); timers.pop()) {
      const Due due = timers.top();
      if (timer_at[due.second] != due.first) continue;
      ++model.fired_at_end;
      fire(due);
    }
    model.keys_seen += static_cast<int64_t>(names.size());
  }
  return model;
}

// The CPU time (user + system, seconds) of this process's children that are still running,
// from /proc: a worker's CPU so far, before it exits and getrusage(RUSAGE_CHILDREN) has it.
double LiveChildrenCpuSeconds() {
  double seconds = 0;
  std::error_code error;
  for (const auto& thread : fs::directory_iterator("/proc/self/task", error)) {
    std::ifstream children(thread.path() / "children");
    for (long pid; children >> pid;) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(stat, line);
      // Fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
      const size_t paren = line.rfind(')');
      if (paren == std::string::npos) continue;
      std::istringstream fields(line.substr(paren + 2));
      std::string field;
      long long utime = 0, stime = 0;
      for (int n = 3; n <= 15 && fields >> field; ++n) {
        if (n == 14) utime = std::stoll(field);
        if (n == 15) stime = std::stoll(field);
      }
      seconds += static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
  }
  return seconds;
}

struct ChildrenUsage {
  double cpu_seconds = 0;
  int64_t peak_rss_bytes = 0;  // the largest child's
};

ChildrenUsage WaitedChildrenUsage() {
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  return {static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
              static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
          static_cast<int64_t>(ru.ru_maxrss) * 1024};
}

// How long each call took, from the step handing it to the invoker to its results decoded.
class CallTimes {
 public:
  void Add(double ms) {
    std::lock_guard lock(mu_);
    ms_.push_back(ms);
  }
  std::vector<double> TakeMs() {
    std::lock_guard lock(mu_);
    return std::move(ms_);
  }

 private:
  std::mutex mu_;
  std::vector<double> ms_;
};

// A remote invoker timed from outside: the step's calls pass through unchanged.
class TimedInvoker final : public process::Invoker {
 public:
  TimedInvoker(std::unique_ptr<process::Invoker> inner, std::shared_ptr<CallTimes> times)
      : inner_(std::move(inner)), times_(std::move(times)) {}
  std::optional<process::InvokeError> Invoke(const process::Call& call,
                                             std::vector<ProcessResult>& results) override {
    const auto start = Clock::now();
    std::optional<process::InvokeError> error = inner_->Invoke(call, results);
    times_->Add(Seconds(Clock::now() - start) * 1e3);
    return error;
  }
  std::chrono::milliseconds RetryDelay(int32_t attempt) const override {
    return inner_->RetryDelay(attempt);
  }

 private:
  std::unique_ptr<process::Invoker> inner_;
  std::shared_ptr<CallTimes> times_;
};

// The first of `candidates` that exists, or an error naming them and the flag.
Result<std::string> FirstExisting(const std::vector<fs::path>& candidates, const char* what) {
  std::string tried;
  for (const fs::path& path : candidates) {
    std::error_code error;
    if (fs::is_regular_file(path, error)) return fs::weakly_canonical(path).string();
    tried += (tried.empty() ? "" : ", ") + path.string();
  }
  return Status::InvalidArgument(std::string("cannot find ") + what + " (tried " + tried +
                                 "); give it with --worker");
}

// The worker's command: weir-cpp-worker beside the weir binary (or in the build tree's
// src/process), or examples/workers/{python,node}/count_idle.* from the current directory or the
// source tree above the build tree; `--worker` overrides the binary or script.
Result<std::vector<std::string>> WorkerCommand(const BenchArgs& args) {
  const std::string idle = std::to_string(args.idle_ms);
  std::error_code error;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", error).parent_path();
  if (args.handler == "cpp") {
    std::string binary = args.worker;
    if (binary.empty()) {
      WEIR_ASSIGN_OR_RETURN(binary, FirstExisting({exe_dir / "weir-cpp-worker",
                                                   exe_dir / "../process/weir-cpp-worker"},
                                                  "weir-cpp-worker"));
    }
    return std::vector<std::string>{binary, "count-idle", idle};
  }
  const bool python = args.handler == "python";
  std::string script = args.worker;
  if (script.empty()) {
    const fs::path relative =
        python ? "examples/workers/python/count_idle.py" : "examples/workers/node/count_idle.js";
    WEIR_ASSIGN_OR_RETURN(
        script, FirstExisting({relative, exe_dir / "../../.." / relative}, "the worker script"));
  }
  return std::vector<std::string>{python ? "python3" : "node", script, idle};
}

// When the first output came: with every timer pending until the end of input, the start of the
// firing phase.
struct FiringPhase {
  std::once_flag once;
  Clock::time_point wall;
  double cpu = 0;          // this process's
  double workers_cpu = 0;  // the running workers'
  void Mark() {
    std::call_once(once, [this] {
      wall = Clock::now();
      cpu = ProcessCpuSeconds();
      workers_cpu = LiveChildrenCpuSeconds();
    });
  }
};

}  // namespace

int BenchProcess(const BenchArgs& args) {
  const std::string& handler = args.handler;
  if (handler != "native" && handler != "cpp" && handler != "python" && handler != "node") {
    return Fail(
        Status::InvalidArgument("--handler is native, cpp, python or node, not '" + handler + "'"));
  }
  if (args.idle_ms <= kOutOfOrderMs) {
    // An input that late would have to set its timer at or before the watermark: refused.
    return Fail(Status::InvalidArgument("--idle-ms must be more than the generator's lateness (" +
                                        std::to_string(kOutOfOrderMs) + " ms)"));
  }
  if (args.sink != "discard" && args.sink != "topic") {
    return Fail(Status::InvalidArgument("--sink is discard or topic, not '" + args.sink + "'"));
  }
  GeneratorOptions generator;
  generator.partitions = args.partitions;
  generator.users = args.users;
  generator.events = args.records;
  generator.active_fraction = 1;  // every key in play all the time
  generator.max_out_of_order_ms = kOutOfOrderMs;
  // Default: a key's mean gap between inputs is the idle time, so about a third of the gaps
  // fire the timer.
  generator.events_per_second =
      args.process_event_rate > 0
          ? args.process_event_rate
          : static_cast<double>(args.users) * 1000.0 / static_cast<double>(args.idle_ms);

  ProcessOptions options = process::CountIdleOptions();
  options.limits.max_keys = std::max(options.limits.max_keys, args.users);
  options.limits.max_timers = std::max(options.limits.max_timers, args.users);
  options.limits.max_activations_per_call = args.per_call;
  std::vector<std::string> command;
  if (handler != "native") {
    auto resolved = WorkerCommand(args);
    if (!resolved.ok()) return Fail(resolved.status());
    command = std::move(*resolved);
  }

  BenchDir dir(args.data_dir);
  OutputFold fold;
  FiringPhase firing;
  auto times = std::make_shared<CallTimes>();
  RunSummary summary;
  Clock::time_point run_end;
  double run_end_cpu = 0;
  AllocationMeter allocations;
  const ChildrenUsage children_before = WaitedChildrenUsage();
  {
    Application app({.name = "bench-process", .data_dir = dir.path()});
    Stream input = app.FromGenerator(generator);
    Stream counted = input;
    if (handler == "native") {
      counted = input.Process(options, std::make_shared<process::CountIdle>(args.idle_ms));
    } else {
      process::RemoteWorkerOptions worker;
      worker.process = options;
      worker.command = command;
      auto make_invoker =
          [worker, times](std::string_view step) -> Result<std::unique_ptr<process::Invoker>> {
        process::RemoteWorkerOptions for_task = worker;
        for_task.step = std::string(step);
        WEIR_ASSIGN_OR_RETURN(std::unique_ptr<process::Invoker> invoker,
                              process::StartRemoteInvoker(for_task));
        return std::unique_ptr<process::Invoker>(new TimedInvoker(std::move(invoker), times));
      };
      counted = dataflow::GraphAccess::AddStep(
          input, process::MakeProcessStep(options, std::move(make_invoker)), "count_idle");
    }
    if (args.sink == "topic") {
      counted.ToTopic("bench.process");
    } else {
      counted.ForEach([&](const Record& r) {
        firing.Mark();
        fold.Add(r.key.bytes(), r.timestamp.value(), r.value);
      });
    }
    allocations = AllocationMeter();
    auto run = app.Run();
    allocations.Stop();
    run_end = Clock::now();
    run_end_cpu = ProcessCpuSeconds();
    if (!run.ok()) return Fail(run.status());
    summary = *run;
  }  // the workers stop and are reaped here
  const ChildrenUsage children_after = WaitedChildrenUsage();
  const double workers_cpu = children_after.cpu_seconds - children_before.cpu_seconds;

  if (args.sink == "topic") {
    Status read = ForEachOutput(dir.path(), "bench.process",
                                [&](PartitionId, const log::StoredRecord& r, const Value& value) {
                                  fold.Add(r.key, r.timestamp.value(), value);
                                  return Status::OK();
                                });
    if (!read.ok()) return Fail(read);
  }

  // Check: the outputs are the model's, output for output ({key, count} at the timer's time, as
  // a multiset); every input counted once; the step's counters agree; nothing refused.
  const ModelOutputs model = ComputeModel(generator, args.idle_ms);
  const ProcessCounters& counters = summary.process;
  const int64_t events = summary.records_in;
  std::string wrong;
  if (fold.malformed.load() > 0) {
    wrong = std::to_string(fold.malformed.load()) + " outputs without {key, count}";
  } else if (fold.outputs.load() != model.outputs || fold.hashes.load() != model.hashes) {
    wrong = std::to_string(fold.outputs.load()) + " outputs differ from the model's " +
            std::to_string(model.outputs);
  } else if (fold.counted.load() != events || events != args.records) {
    wrong = "the outputs count " + std::to_string(fold.counted.load()) + " inputs of " +
            std::to_string(events);
  } else if (counters.timers_fired != model.outputs ||
             counters.activations != events + model.outputs) {
    wrong = "the step counted " + std::to_string(counters.activations) + " activations and " +
            std::to_string(counters.timers_fired) + " timers fired";
  } else if (counters.refused + counters.dead_lettered + counters.timers_dropped > 0) {
    wrong = "the step refused " + std::to_string(counters.refused) + " calls";
  }
  if (!wrong.empty()) return Fail(Status::Internal("bench process: WRONG ANSWER: " + wrong));

  const double activations = static_cast<double>(counters.activations);
  const double engine_cpu = std::max(summary.cpu_seconds, 1e-9);
  const double total_cpu = engine_cpu + workers_cpu;
  std::vector<double> latencies = times->TakeMs();
  std::vector<double> for_p99 = latencies;
  const double p50 = latencies.empty() ? -1 : Percentile(latencies, 0.5);
  const double p99 = latencies.empty() ? -1 : Percentile(for_p99, 0.99);
  // The firing phase is measured when every timer waited for the end of input (none fired
  // before it): from the first output to the end of the run, engine and workers.
  const bool phased =
      model.outputs > 0 && model.fired_at_end == model.outputs && args.sink == "discard";
  const double firing_wall = phased ? Seconds(run_end - firing.wall) : -1;
  const double firing_cpu =
      phased ? (run_end_cpu - firing.cpu) + (workers_cpu - firing.workers_cpu) : -1;
  const double firing_rate =
      phased ? static_cast<double>(model.fired_at_end) / std::max(firing_cpu, 1e-9) : -1;
  // Before it, every activation was an input.
  const double input_rate =
      phased ? static_cast<double>(events) / std::max(total_cpu - firing_cpu, 1e-9) : -1;

  std::printf(
      "weir bench process: count + idle timer per key (idle %lld ms), handler %s, %lld events, "
      "%lld keys, %d partitions, %.0f events/s of event time, up to %lld activations per call, "
      "%s sink, checkpoints on\n",
      static_cast<long long>(args.idle_ms), handler.c_str(), static_cast<long long>(events),
      static_cast<long long>(args.users), args.partitions, generator.events_per_second,
      static_cast<long long>(args.per_call), args.sink.c_str());
  if (!command.empty()) {
    std::string joined;
    for (const std::string& arg : command) joined += (joined.empty() ? "" : " ") + arg;
    std::printf("  worker: %s (one per partition)\n", joined.c_str());
  }
  std::printf(
      "  activations: %lld (%lld inputs + %lld timers fired, %lld of them at the end of input), "
      "%lld calls (%.1f activations each), %lld keys seen\n",
      static_cast<long long>(counters.activations), static_cast<long long>(events),
      static_cast<long long>(counters.timers_fired), static_cast<long long>(model.fired_at_end),
      static_cast<long long>(counters.calls),
      activations / std::max<double>(1, static_cast<double>(counters.calls)),
      static_cast<long long>(model.keys_seen));
  std::printf(
      "  throughput: %.0f activations/s, %.0f activations/s per core (%.2f s wall, %.2f s CPU: "
      "engine %.2f + workers %.2f); engine alone %.0f per core; %s heap allocations per "
      "activation (engine)\n",
      activations / summary.wall_seconds, activations / total_cpu, summary.wall_seconds, total_cpu,
      summary.cpu_seconds, workers_cpu, activations / engine_cpu,
      allocations.PerEvent(counters.activations).c_str());
  if (!latencies.empty()) {
    std::printf(
        "  call latency (the invoker's Invoke, send to results decoded): p50 %.3f ms, p99 "
        "%.3f ms over %zu calls\n",
        p50, p99, for_p99.size());
  }
  if (phased) {
    std::printf(
        "  firing at the end of input: %lld timers in %.2f s wall, %.2f s CPU (engine + workers, "
        "from the first firing to the end of the run): %.0f firings/s per core; the inputs "
        "before it: %.0f activations/s per core\n",
        static_cast<long long>(model.fired_at_end), firing_wall, firing_cpu, firing_rate,
        input_rate);
  }
  std::printf("  peak memory: engine %.0f MiB%s\n", summary.peak_rss_bytes / 1048576.0,
              command.empty() ? ""
                              : (", largest worker " +
                                 Figure(children_after.peak_rss_bytes / 1048576.0, "%.0f") + " MiB")
                                    .c_str());
  std::printf(
      "  check: %lld outputs {key, count} at their timers' times, equal to the model's; their "
      "counts sum to the %lld inputs\n",
      static_cast<long long>(model.outputs), static_cast<long long>(events));
  std::printf(
      "process handler=%s events=%lld keys=%lld idle_ms=%lld verified=yes activations=%lld "
      "timers_fired=%lld fired_at_end=%lld calls=%lld activations_per_cpu_s=%.0f "
      "engine_activations_per_cpu_s=%.0f engine_cpu_s=%.2f workers_cpu_s=%.2f wall_s=%.2f "
      "allocs_per_activation=%s peak_rss_mib=%.0f worker_peak_rss_mib=%s p50_ms=%s p99_ms=%s "
      "end_firings_per_cpu_s=%s input_activations_per_cpu_s=%s\n",
      handler.c_str(), static_cast<long long>(events), static_cast<long long>(args.users),
      static_cast<long long>(args.idle_ms), static_cast<long long>(counters.activations),
      static_cast<long long>(counters.timers_fired), static_cast<long long>(model.fired_at_end),
      static_cast<long long>(counters.calls), activations / total_cpu, activations / engine_cpu,
      summary.cpu_seconds, workers_cpu, summary.wall_seconds,
      allocations.PerEvent(counters.activations).c_str(), summary.peak_rss_bytes / 1048576.0,
      command.empty() ? "-" : Figure(children_after.peak_rss_bytes / 1048576.0, "%.0f").c_str(),
      Figure(p50, "%.3f").c_str(), Figure(p99, "%.3f").c_str(), Figure(firing_rate, "%.0f").c_str(),
      Figure(input_rate, "%.0f").c_str());
  return 0;
}

}  // namespace weir::cli
