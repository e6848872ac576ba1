#include "app/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "app/task.h"
#include "core/fault_injection.h"
#include "core/process_stats.h"

namespace weir::app {
namespace {

constexpr int64_t kRepartitionSegmentBytes = 16 << 20;

}  // namespace

Runtime::Runtime(const ApplicationOptions& options, const dataflow::Graph& graph)
    : options_(options), graph_(graph) {}

Runtime::~Runtime() {
  {
    std::lock_guard lock(mu_);
    exit_workers_ = true;
    pause_flag_ = true;
  }
  workers_cv_.notify_all();
  for (std::thread& w : workers_) {
    if (w.joinable()) w.join();
  }
  tasks_.clear();  // before the log: tasks hold readers of it
  for (RunService* service : started_services_) service->Stop();
}

std::filesystem::path Runtime::TaskDir(const std::string& task_id) const {
  return app_dir_ / "tasks" / task_id;
}

void Runtime::Progress(const std::string& line) {
  if (options_.on_progress) options_.on_progress(line);
}

Status Runtime::Setup() {
  std::filesystem::path data_dir(options_.data_dir);
  WEIR_ASSIGN_OR_RETURN(lock_, DataDirLock::Acquire(data_dir, options_.ways_out.data_dir));
  log::LogOptions log_options;
  log_options.dir = data_dir / "log";
  log_options.fsync = options_.fsync;
  WEIR_ASSIGN_OR_RETURN(log_, log::LogStore::Open(log_options));

  int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  worker_count_ = options_.workers > 0 ? options_.workers : hardware;
  WEIR_ASSIGN_OR_RETURN(plan_, Compile(graph_, options_, *log_, worker_count_));
  worker_count_ = std::max(1, std::min(worker_count_, plan_.task_count()));

  app_dir_ = data_dir / "apps" / options_.name;
  std::error_code ec;
  std::filesystem::create_directories(app_dir_ / "tasks", ec);
  if (ec) return Status::FromErrno(ec.value(), "creating " + app_dir_.string());

  WEIR_ASSIGN_OR_RETURN(std::optional<CheckpointManifest> manifest, LoadManifest(app_dir_));
  const std::string definition = graph_.Describe();
  if (manifest) {
    if (auto change = dataflow::DefinitionChange(manifest->definition, definition)) {
      return Status::FailedPrecondition(
          "pipeline '" + options_.name + "' changed since its last checkpoint (" +
          std::to_string(manifest->checkpoint) + ", in " + app_dir_.string() + "): " + *change +
          "; its state would not fit the new definition; reset it (" + options_.ways_out.reset +
          ") or give it another name");
    }
    manifest->definition = definition;  // options that may change did: record what runs now
  }

  for (const auto& [name, partitions] : plan_.output_topics) {
    // A fresh application must not read a repartition topic left by an earlier incarnation.
    if (!manifest && plan_.repartition_topics.count(name) && log_->GetTopic(name).ok()) {
      WEIR_RETURN_IF_ERROR(log_->DeleteTopic(name));
    }
    log::TopicConfig config;
    config.partitions = partitions;
    // Repartition topics are purged segment by segment behind their readers: small segments
    // keep what stays on disk to a few checkpoints' worth.
    if (plan_.repartition_topics.count(name)) config.segment_bytes = kRepartitionSegmentBytes;
    WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log_->GetOrCreateTopic(name, config));
    WEIR_RETURN_IF_ERROR(topic->ClaimForTransactions(options_.name));
    output_topics_[name] = topic;
  }
  if (!manifest) {
    CheckpointManifest fresh;
    fresh.definition = definition;
    manifest = std::move(fresh);
  } else {
    Progress("resuming " + options_.name + " from checkpoint " +
             std::to_string(manifest->checkpoint));
  }
  WEIR_RETURN_IF_ERROR(Recover(*manifest));

  for (const std::string& topic : plan_.repartition_topics) {
    end_of_input_[topic] = std::make_unique<std::atomic<bool>>(false);
  }
  for (const SubTopology& sub : plan_.subtopologies) {
    for (int32_t p = 0; p < sub.partitions; ++p) {
      tasks_.push_back(std::make_unique<Task>(*this, sub, PartitionId(p)));
      WEIR_RETURN_IF_ERROR(WithWayToStartOver(tasks_.back()->Open(manifest_.checkpoint)));
    }
  }
  // Services start once everything opened: a run that cannot start says only why.
  const std::function<void(const std::string&)> progress = [this](const std::string& line) {
    Progress(line);
  };
  for (const std::shared_ptr<RunService>& service : options_.services) {
    WEIR_RETURN_IF_ERROR(service->Start(*log_, progress));
    started_services_.push_back(service.get());
  }
  return Status::OK();
}

Status Runtime::Recover(const CheckpointManifest& manifest) {
  const bool fresh = manifest.topic_ends.empty() && manifest.checkpoint == 0;
  manifest_ = manifest;
  for (const auto& [name, topic] : output_topics_) {
    std::vector<Offset> ends;
    auto known = manifest.topic_ends.find(name);
    if (!fresh && (known == manifest.topic_ends.end() ||
                   known->second.size() != static_cast<size_t>(topic->num_partitions()))) {
      return Status::Corruption("checkpoint manifest in " + app_dir_.string() +
                                " does not describe output topic " + name);
    }
    for (int32_t p = 0; p < topic->num_partitions(); ++p) {
      log::Partition& partition = topic->partition(PartitionId(p));
      // Fresh: keep what others committed to the topic before; drop any uncommitted tail.
      Offset end = fresh ? partition.NextOffset() : known->second[p];
      WEIR_RETURN_IF_ERROR(partition.TruncateTo(end, options_.name));
      WEIR_RETURN_IF_ERROR(partition.Publish(end, options_.name));
      ends.push_back(end);
    }
    manifest_.topic_ends[name] = std::move(ends);
  }
  for (const std::string& path : plan_.files) {
    auto known = manifest.file_lengths.find(path);
    int64_t length = known == manifest.file_lengths.end() ? 0 : known->second;
    WEIR_ASSIGN_OR_RETURN(files_[path], dataflow::SharedFile::Open(path, length));
    manifest_.file_lengths[path] = length;
  }
  stdout_ = dataflow::SharedFile::Stdout();
  if (fresh) WEIR_RETURN_IF_ERROR(SaveManifest(app_dir_, manifest_));
  return Status::OK();
}

void Runtime::ReportProgress(int64_t checkpoint, int64_t records_in) {
  constexpr auto kEvery = std::chrono::seconds(5);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_.time < kEvery) return;
  const double seconds = std::chrono::duration<double>(now - last_progress_.time).count();
  const double rate = static_cast<double>(records_in - last_progress_.records_in) / seconds;
  Progress(std::to_string(records_in) + " records in (" + std::to_string(std::lround(rate)) +
           "/s over the last " + std::to_string(std::lround(seconds)) + " s), checkpoint " +
           std::to_string(checkpoint));
  last_progress_ = {now, records_in};
}

Status Runtime::WithWayToStartOver(Status status) const {
  if (status.code() != StatusCode::kFailedPrecondition && status.code() != StatusCode::kCorruption)
    return status;
  return Status(status.code(), status.message() + "; to start over, reset the application (" +
                                   options_.ways_out.reset + ")");
}

void Runtime::Fail(Status status) {
  {
    std::lock_guard lock(mu_);
    if (error_.ok()) error_ = WithWayToStartOver(std::move(status));
  }
  coordinator_cv_.notify_all();
}

void Runtime::NotifyTaskFinished() {
  checkpoint_wanted_ = true;
  std::lock_guard lock(mu_);
  coordinator_cv_.notify_all();
}

void Runtime::CountRecords(int64_t n) {
  if (n == 0) return;
  int64_t total = records_since_checkpoint_.fetch_add(n, std::memory_order_relaxed) + n;
  if (total >= options_.checkpoint_records && !checkpoint_wanted_.exchange(true)) {
    std::lock_guard lock(mu_);
    coordinator_cv_.notify_all();
  }
}

void Runtime::Stop() {
  stop_ = true;
  std::lock_guard lock(mu_);
  coordinator_cv_.notify_all();
}

int64_t Runtime::SourceRecords() const {
  int64_t n = 0;
  // Records read from repartition topics were counted when the application first read them.
  for (const auto& task : tasks_) n += task->source_records_in();
  return n;
}

bool Runtime::AllTasksFinished() const {
  return std::all_of(tasks_.begin(), tasks_.end(), [](const auto& t) { return t->finished(); });
}

void Runtime::WorkerLoop(std::vector<Task*> tasks) {
  bool failed = false;
  while (true) {
    if (pause_flag_.load(std::memory_order_acquire)) {
      std::unique_lock lock(mu_);
      if (exit_workers_) break;
      if (pause_requested_) {
        ++parked_;
        coordinator_cv_.notify_all();
        uint64_t generation = resume_generation_;
        workers_cv_.wait(lock, [&] { return resume_generation_ != generation || exit_workers_; });
        --parked_;
        continue;
      }
    }
    bool worked = false;
    bool runnable = false;
    uint64_t seen = log_->ChangeEpoch();
    for (Task* task : tasks) {
      if (failed || task->finished()) continue;
      runnable = true;
      auto ran = task->RunBatch();
      if (!ran.ok()) {
        failed = true;
        Fail(ran.status());
        break;
      }
      worked |= *ran;
    }
    if (worked) continue;
    if (runnable && !failed) {
      log_->WaitForChange(seen, std::chrono::milliseconds(5));
    } else {
      // Nothing left to run here: wait for a checkpoint to park for, or the end.
      std::unique_lock lock(mu_);
      workers_cv_.wait(lock, [&] { return pause_requested_ || exit_workers_; });
    }
  }
  std::lock_guard lock(mu_);
  ++exited_;
  coordinator_cv_.notify_all();
}

void Runtime::PauseWorkers() {
  std::unique_lock lock(mu_);
  pause_requested_ = true;
  pause_flag_.store(true, std::memory_order_release);
  workers_cv_.notify_all();
  coordinator_cv_.wait(lock, [&] { return parked_ + exited_ == worker_count_; });
}

void Runtime::ResumeWorkers() {
  {
    std::lock_guard lock(mu_);
    pause_requested_ = false;
    pause_flag_.store(false, std::memory_order_release);
    ++resume_generation_;
  }
  workers_cv_.notify_all();
}

Status Runtime::Checkpoint() {
  const int64_t id = manifest_.checkpoint + 1;
  // Which repartition topics will have no more input once this checkpoint publishes: those
  // whose every upstream task had finished when the workers parked.
  std::vector<std::string> ending;
  for (const SubTopology& sub : plan_.subtopologies) {
    for (const SubTopologyInput& input : sub.inputs) {
      if (!input.from_repartition() || end_of_input_.at(input.topic)->load()) continue;
      bool upstream_done = true;
      for (const auto& task : tasks_) {
        bool is_upstream = std::find(input.upstream.begin(), input.upstream.end(),
                                     task->subtopology().index) != input.upstream.end();
        if (is_upstream && !task->finished()) upstream_done = false;
      }
      if (upstream_done) ending.push_back(input.topic);
    }
  }

  CheckpointManifest next = manifest_;
  next.checkpoint = id;
  for (auto& [name, topic] : output_topics_) {
    std::vector<Offset>& ends = next.topic_ends[name];
    for (int32_t p = 0; p < topic->num_partitions(); ++p) {
      WEIR_ASSIGN_OR_RETURN(ends[p], topic->partition(PartitionId(p)).Flush(options_.name));
    }
  }
  for (auto& [path, file] : files_) {
    WEIR_ASSIGN_OR_RETURN(next.file_lengths[path], file->Sync());
  }
  MaybeInjectFault("checkpoint.before_prepare");
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Status s = tasks_[i]->Prepare(id);
    if (!s.ok()) {
      for (size_t j = 0; j < i; ++j) (void)tasks_[j]->Rollback();
      return s;
    }
  }
  MaybeInjectFault("checkpoint.before_manifest");
  Status saved = SaveManifest(app_dir_, next);
  if (!saved.ok()) {
    for (const auto& task : tasks_) (void)task->Rollback();
    return saved.WithContext("writing the checkpoint manifest");
  }
  MaybeInjectFault("checkpoint.after_manifest");
  // Checkpoint `id` is committed. What follows makes it take effect in this process; a crash
  // from here on is finished by recovery.
  for (const auto& task : tasks_) WEIR_RETURN_IF_ERROR(task->Commit());
  for (auto& [name, topic] : output_topics_) {
    const std::vector<Offset>& ends = next.topic_ends.at(name);
    for (int32_t p = 0; p < topic->num_partitions(); ++p) {
      WEIR_RETURN_IF_ERROR(topic->partition(PartitionId(p)).Publish(ends[p], options_.name));
    }
  }
  manifest_ = std::move(next);
  WEIR_RETURN_IF_ERROR(PurgeRepartitionTopics());
  for (const std::string& topic : ending)
    end_of_input_.at(topic)->store(true, std::memory_order_release);
  records_since_checkpoint_ = 0;
  ++checkpoints_taken_;
  const int64_t records_in = SourceRecords();
  if (options_.on_checkpoint) options_.on_checkpoint(id, records_in);
  ReportProgress(id, records_in);
  return Status::OK();
}

Status Runtime::PurgeRepartitionTopics() {
  for (const auto& task : tasks_) {
    const SubTopology& sub = task->subtopology();
    for (size_t i = 0; i < sub.inputs.size(); ++i) {
      const int64_t from = task->RetainFrom(i);
      if (from < 0) continue;
      log::Partition& partition =
          output_topics_.at(sub.inputs[i].topic)->partition(task->partition());
      WEIR_RETURN_IF_ERROR(
          partition.DeleteBefore(Offset(from), options_.name).status().WithContext("purging"));
    }
  }
  return Status::OK();
}

Result<RunSummary> Runtime::Run() {
  auto wall_start = std::chrono::steady_clock::now();
  double cpu_start = ProcessCpuSeconds();
  WEIR_RETURN_IF_ERROR(Setup());
  RunSummary summary;
  summary.restored_checkpoint = manifest_.checkpoint;
  last_progress_ = {std::chrono::steady_clock::now(), 0};

  std::vector<std::vector<Task*>> assignment(worker_count_);
  for (size_t i = 0; i < tasks_.size(); ++i)
    assignment[i % worker_count_].push_back(tasks_[i].get());
  for (int w = 0; w < worker_count_; ++w) {
    workers_.emplace_back([this, tasks = assignment[w]] { WorkerLoop(tasks); });
  }

  Status result;
  auto next_checkpoint = std::chrono::steady_clock::now() + options_.checkpoint_interval;
  while (true) {
    {
      std::unique_lock lock(mu_);
      coordinator_cv_.wait_until(lock, next_checkpoint, [&] {
        return !error_.ok() || stop_.load() || checkpoint_wanted_.load();
      });
      if (!error_.ok()) break;
    }
    checkpoint_wanted_ = false;
    PauseWorkers();
    {
      std::lock_guard lock(mu_);
      if (!error_.ok()) break;  // a worker failed before parking: its batch is not checkpointed
    }
    bool finished_before = AllTasksFinished();
    result = Checkpoint();
    ResumeWorkers();
    if (!result.ok()) break;
    next_checkpoint = std::chrono::steady_clock::now() + options_.checkpoint_interval;
    if (finished_before) {
      summary.completed = true;
      break;
    }
    if (stop_) break;
  }
  {
    std::lock_guard lock(mu_);
    exit_workers_ = true;
    pause_flag_ = true;
    if (result.ok()) result = error_;
  }
  workers_cv_.notify_all();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
  if (!result.ok()) return result;

  summary.records_in = SourceRecords();
  for (const auto& task : tasks_) {
    summary.records_out += task->records_out();
    summary.dead_letters += task->dead_letters();
    summary.late += task->late();
    summary.user_function_failures += task->user_function_failures();
    summary.process += task->process();
    summary.window_expiry_visits += task->expiry_visits();
    summary.join_evicted += task->evicted();
    summary.redelivered += task->redelivered();
  }
  summary.checkpoints = checkpoints_taken_;
  summary.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  summary.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  summary.peak_rss_bytes = ProcessPeakRssBytes();
  return summary;
}

}  // namespace weir::app
