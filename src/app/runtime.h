// The runtime of one application run: tasks on worker threads, and the checkpoint coordinator.
//
// Threads: Run() is the coordinator. Worker threads each own a fixed set of tasks and run them
// batch by batch; nothing in the per-record path locks. A checkpoint parks every worker at a
// batch boundary (no record is in flight: tasks talk only through topics), then:
//   1. flushes and fsyncs every output partition and output file, noting their ends;
//   2. prepares every task store's transaction "ckpt-K" (state, source position, watermark);
//   3. writes the manifest for K: the commit point;
//   4. commits the task stores, publishes the output partitions up to their ends (readers,
//      including downstream tasks, see them now), and resumes the workers.
// A crash before 3 leaves K-1 in force: recovery rolls back "ckpt-K" and truncates the outputs
// to K-1's ends. A crash after 3 leaves K: recovery commits "ckpt-K". Either way the outputs are
// those of a run that never crashed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/data_dir.h"
#include "app/manifest.h"
#include "app/plan.h"
#include "dataflow/graph.h"
#include "dataflow/outputs.h"
#include "dataflow/sources.h"
#include "log/log.h"
#include "weir/application.h"

namespace weir::app {

class Task;

class Runtime {
 public:
  Runtime(const ApplicationOptions& options, const dataflow::Graph& graph);
  ~Runtime();

  // Recovers, runs until the sources end (or Stop), takes a final checkpoint.
  Result<RunSummary> Run();
  // Thread-safe: finish after the next checkpoint.
  void Stop();

  // For tasks (any thread).
  const ApplicationOptions& options() const { return options_; }
  const dataflow::Graph& graph() const { return graph_; }
  log::LogStore& log() { return *log_; }
  log::Topic* OutputTopic(const std::string& name) { return output_topics_.at(name); }
  dataflow::SharedFile* OutputFile(const std::string& path) { return files_.at(path).get(); }
  dataflow::SharedFile* Stdout() { return stdout_.get(); }
  const std::atomic<bool>* EndOfInput(const std::string& repartition_topic) {
    return end_of_input_.at(repartition_topic).get();
  }
  bool IsSinkTopic(const std::string& topic) const { return plan_.sink_topics.count(topic) > 0; }
  bool IsRepartitionTopic(const std::string& topic) const {
    return plan_.repartition_topics.count(topic) > 0;
  }
  std::filesystem::path TaskDir(const std::string& task_id) const;
  const std::string& owner() const { return options_.name; }
  // A task ended its input: the coordinator checkpoints soon so downstream tasks see the rest.
  void NotifyTaskFinished();
  // Workers report input records so checkpoints also follow checkpoint_records.
  void CountRecords(int64_t n);

 private:
  Status Setup();
  Status Recover(const CheckpointManifest& manifest);
  // A task that cannot go on from its checkpoint (its input changed, its state is unreadable:
  // kFailedPrecondition, kCorruption, when it opens or as it runs) is refused with the way to
  // start over, in the caller's words (ApplicationOptions::ways_out).
  Status WithWayToStartOver(Status status) const;
  Status Checkpoint();
  // Deletes the repartition records that every reading task's committed checkpoint has passed
  // (whole segments), as Kafka Streams purges its repartition topics after a commit.
  Status PurgeRepartitionTopics();
  void WorkerLoop(std::vector<Task*> tasks);
  void Fail(Status status);
  void PauseWorkers();
  void ResumeWorkers();
  bool AllTasksFinished() const;
  // Records read from sources so far. REQUIRES: workers parked or stopped.
  int64_t SourceRecords() const;
  void Progress(const std::string& line);
  // A progress line at most every few seconds: records in, rate, checkpoint.
  void ReportProgress(int64_t checkpoint, int64_t records_in);

  ApplicationOptions options_;
  const dataflow::Graph& graph_;
  std::filesystem::path app_dir_;
  std::unique_ptr<DataDirLock> lock_;
  std::unique_ptr<log::LogStore> log_;
  Plan plan_;
  CheckpointManifest manifest_;
  std::map<std::string, log::Topic*> output_topics_;
  std::map<std::string, std::unique_ptr<dataflow::SharedFile>> files_;
  std::unique_ptr<dataflow::SharedFile> stdout_;
  std::map<std::string, std::unique_ptr<std::atomic<bool>>> end_of_input_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<RunService*> started_services_;  // stopped before the log closes
  std::vector<std::thread> workers_;
  int worker_count_ = 1;

  // Coordination between the coordinator and the workers.
  std::mutex mu_;
  std::condition_variable workers_cv_;      // workers wait here while parked
  std::condition_variable coordinator_cv_;  // the coordinator waits here between checkpoints
  bool pause_requested_ = false;            // guarded by mu_; mirrored in pause_flag_
  std::atomic<bool> pause_flag_{false};
  uint64_t resume_generation_ = 0;  // guarded by mu_
  int parked_ = 0;                  // guarded by mu_
  int exited_ = 0;                  // guarded by mu_
  bool exit_workers_ = false;       // guarded by mu_
  Status error_;                    // guarded by mu_
  std::atomic<bool> stop_{false};
  std::atomic<bool> checkpoint_wanted_{false};
  std::atomic<int64_t> records_since_checkpoint_{0};
  int64_t checkpoints_taken_ = 0;
  struct {
    std::chrono::steady_clock::time_point time;
    int64_t records_in = 0;
  } last_progress_;  // coordinator thread only
};

}  // namespace weir::app
