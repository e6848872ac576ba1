// Application: a named dataflow over one data directory, run to completion or until stopped.
//
// Run() compiles the graph into per-partition tasks, recovers them from the last checkpoint,
// runs them on worker threads and checkpoints every `checkpoint_interval` or
// `checkpoint_records` records: state, consumed positions and output positions are made
// durable together, so on the embedded log a crash at any instant followed by another Run()
// gives the outputs of a run that never crashed (docs/architecture.md §4).
//
// Bounded sources (files, bounded topics, generators with a count) end: their watermark goes to
// +infinity, every downstream task drains, and Run() returns after a final checkpoint.
// Otherwise Run() returns after Stop() (thread-safe, e.g. from a signal handler's thread).
//
// One process at a time may use a data directory (it is locked).
//
// What a resume checks. Each checkpoint records the graph as Definition() describes it (in
// <data_dir>/apps/<name>/manifest.json): every step in the order it was added, with its kind,
// its name (given, or "<kind>-<index>"), its parents, and the options its kind declares fixed,
// for example a file source's path, key, key type and timestamp field; a topic source's or
// sink's topic; a GroupBy's field, type and partitions; a window's kind, size, closing, emit mode
// and aggregations (each by kind and field). Options declared changeable (rates, a session's gap,
// grace, a join's timeouts) are recorded as they ran last. Run() refuses to resume, naming the
// step and the option with both values, when a step was added, removed, renamed, moved to other
// parents or is of another kind, or when a fixed option differs.
// A file source's saved position also carries a checksum of the 64 KiB read before it: a file
// rewritten or cut shorter under the same path is refused (one that only grew resumes).
// The engine records nothing of the functions given to Map, Filter, FlatMap, Apply, Update,
// SelectKey or a Reduce aggregation (only the step's kind and name): a changed function resumes
// over the old state. Rename the step, or Reset(), when its state no longer fits.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weir/fsync.h"
#include "weir/process.h"
#include "weir/status.h"
#include "weir/stream.h"

namespace weir {

namespace app {
class Runtime;
}
namespace log {
class LogStore;
}

// Something that runs beside an application while Run() lasts, over the data directory's log:
// `weir run --listen` serves the topics this way (src/cli/run.cc). Start is called on the
// coordinator thread once the log is open and recovered, before any task runs, and Stop before
// the log closes (only if Start succeeded).
class RunService {
 public:
  virtual ~RunService() = default;
  // An error fails the run before anything is processed. `progress` is where a line for the
  // user goes (ApplicationOptions::on_progress), possibly nowhere.
  virtual Status Start(log::LogStore& log,
                       const std::function<void(const std::string&)>& progress) = 0;
  virtual void Stop() = 0;
};

// How a refusal names its ways out, in the words of whoever runs the application: the C++ API's
// by default; `weir run` gives its command-line flags.
struct WaysOut {
  std::string reset = "Application::Reset()";             // discards the state: start over
  std::string data_dir = "ApplicationOptions::data_dir";  // where another data directory is set
};

// Every member of an option struct has a default initializer, so that a designated initializer
// naming some of them compiles without -Wmissing-field-initializers warnings.
struct ApplicationOptions {
  std::string name{};  // 1-200 of [A-Za-z0-9._-]; names state, internal topics, DLQ
  std::string data_dir = "./weir-data";
  int workers = 0;  // worker threads; 0: min(cores, tasks)
  int32_t partitions =
      0;  // repartition topics' partitions, to kMaxPartitions; 0: max(source, workers)
  std::chrono::milliseconds checkpoint_interval{1000};
  int64_t checkpoint_records = 1'000'000;   // also checkpoint after this many input records
  FsyncPolicy fsync = FsyncPolicy::kGroup;  // when the log fsyncs (weir/fsync.h)
  // Progress lines (resuming, throughput) go here; empty: silent.
  std::function<void(const std::string&)> on_progress{};
  // Called on the coordinator thread after each committed checkpoint, with its number and the
  // records read from sources since the run started. It may call Stop().
  std::function<void(int64_t checkpoint, int64_t records_in)> on_checkpoint{};
  // Started once the log is open, stopped before it closes (RunService).
  std::vector<std::shared_ptr<RunService>> services{};
  // Named by refusals: a changed definition or input, state this build cannot read, a data
  // directory in use.
  WaysOut ways_out{};
};

// What a run did, for the CLI's summary and for tests.
struct RunSummary {
  int64_t records_in = 0;
  int64_t records_out = 0;
  int64_t dead_letters = 0;
  // Records a function given to a step failed on (it threw): dead-lettered, and counted in
  // dead_letters too (weir/stream.h).
  int64_t user_function_failures = 0;
  int64_t late = 0;          // events window and join steps found late
  int64_t join_evicted = 0;  // messages of join groups evicted (timeout, max_pending, end)
  int64_t redelivered = 0;   // records delivered again after a nak or a restart
  // Windows and index entries that closing windows looked at, closed ones included: about one
  // per record plus one per closed window, whatever the number of stored windows.
  int64_t window_expiry_visits = 0;
  ProcessCounters process;  // process steps (weir/process.h)
  int64_t checkpoints = 0;
  int64_t restored_checkpoint = 0;  // the checkpoint the run started from (0: fresh)
  bool completed = false;           // every source ended and drained
  double cpu_seconds = 0;           // process CPU time during the run
  double wall_seconds = 0;
  int64_t peak_rss_bytes = 0;
};

class Application {
 public:
  explicit Application(ApplicationOptions options);
  ~Application();
  Application(const Application&) = delete;
  Application& operator=(const Application&) = delete;

  Stream FromFile(FileSourceOptions options);
  Stream FromTopic(TopicSourceOptions options);
  Stream FromGenerator(GeneratorOptions options);
  // The NATS connector's (src/nats/): link weir::nats to use it.
  Stream FromJetStream(JetStreamSourceOptions options);

  // Input-group assembly (weir/join.h) over named parents of this application, which must be
  // co-partitioned (as many partitions each; a group-by before the join makes them so).
  Stream Join(std::vector<std::pair<std::string, Stream>> parents, JoinOptions options);

  // Definition errors (a bad name, a step after a sink, no sink, a source without a key) are
  // reported here, before anything is opened.
  Result<RunSummary> Run();
  void Stop();

  // Discards the application's state and checkpoint (not its input or output topics), so that
  // the next Run starts over. kFailedPrecondition if the data directory is in use.
  Status Reset();

  const ApplicationOptions& options() const { return options_; }
  // The definition a restart must match, as the checkpoint records it (JSON: every step's kind,
  // name, parents, fixed and changeable options; see "What a resume checks" above).
  std::string Definition() const;

 private:
  friend struct dataflow::GraphAccess;
  ApplicationOptions options_;
  std::unique_ptr<dataflow::Graph> graph_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<app::Runtime*> running_{nullptr};
};

}  // namespace weir
