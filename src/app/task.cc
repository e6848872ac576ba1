#include "app/task.h"

#include <charconv>

#include "app/manifest.h"
#include "app/runtime.h"

namespace weir::app {
namespace {

constexpr size_t kBatchRecords = 2048;
constexpr size_t kPrefetchFar = 16;
constexpr size_t kPrefetchNear = 8;
constexpr std::string_view kMetaSource = "source_position";
constexpr std::string_view kMetaWatermark = "watermark";
constexpr std::string_view kMetaCheckpoint = "checkpoint";

// Forwards the source's records to the first steps of the sub-topology.
class RootOperator : public dataflow::Operator {
 public:
  void Process(Record&& record) override { Forward(std::move(record)); }
};

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<int64_t> ParseInt(const std::string& s, std::string_view what) {
  int64_t v;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return Status::Corruption("bad " + std::string(what) + " in task state: '" + s + "'");
  }
  return v;
}

}  // namespace

Task::Task(Runtime& runtime, const SubTopology& sub, PartitionId partition)
    : runtime_(runtime),
      sub_(sub),
      partition_(partition),
      id_(std::to_string(sub.index) + "_" + std::to_string(partition.value())) {}

Task::~Task() = default;

Status Task::Open(int64_t checkpoint) {
  WEIR_ASSIGN_OR_RETURN(store_, state::TaskStore::Open(runtime_.TaskDir(id_), sub_.stateful_steps));
  const std::string expected = CheckpointManifest::TransactionName(checkpoint);
  for (const std::string& name : store_->PreparedCheckpoints()) {
    // The manifest names the checkpoint in force: its prepared state commits, later ones never
    // reached their commit point.
    WEIR_RETURN_IF_ERROR(name == expected ? store_->CommitPrepared(name)
                                          : store_->RollbackPrepared(name));
  }
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> stored_checkpoint,
                        store_->GetMeta(kMetaCheckpoint));
  if (stored_checkpoint) {
    WEIR_ASSIGN_OR_RETURN(int64_t at, ParseInt(*stored_checkpoint, "checkpoint"));
    if (at != checkpoint) {
      return Status::Corruption("task " + id_ + " state is at checkpoint " + std::to_string(at) +
                                " but the manifest says " + std::to_string(checkpoint) + " (" +
                                runtime_.TaskDir(id_).string() + ")");
    }
  }

  WEIR_ASSIGN_OR_RETURN(source_, OpenSource());
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> position, store_->GetMeta(kMetaSource));
  if (position) WEIR_RETURN_IF_ERROR(source_->RestorePosition(*position));
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> watermark, store_->GetMeta(kMetaWatermark));
  if (watermark) {
    WEIR_ASSIGN_OR_RETURN(int64_t wm, ParseInt(*watermark, "watermark"));
    watermark_ = Watermark(wm);
  }

  // Operators for the sub-topology's steps, linked as the graph links them.
  const dataflow::Graph& graph = runtime_.graph();
  root_ = std::make_unique<RootOperator>();
  std::map<int, dataflow::Operator*> by_step;
  by_step[sub_.root_step] = root_.get();
  for (int step_id : sub_.steps) {
    const dataflow::Step& step = graph.steps[step_id];
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<dataflow::Operator> op,
                          dataflow::MakeOperator(step, runtime_.owner(), *this));
    operators_.push_back(std::move(op));
    by_step[step_id] = operators_.back().get();
    by_step.at(step.parent)->AddChild(operators_.back().get());
  }
  // Writers for the dead letters exist from the start so that a source can use them.
  TopicOutput(sub_.dead_letter_topic);
  return Status::OK();
}

Result<std::unique_ptr<dataflow::Source>> Task::OpenSource() {
  const dataflow::Step& root = runtime_.graph().steps[sub_.root_step];
  switch (root.kind) {
    case dataflow::StepKind::kFileSource:
      return dataflow::OpenFileSource(root.file_source);
    case dataflow::StepKind::kTopicSource:
      idle_timeout_ = root.topic_source.idle_timeout;
      return dataflow::OpenTopicSource(runtime_.log(), root.topic_source, partition_);
    case dataflow::StepKind::kGeneratorSource:
      return dataflow::OpenGeneratorSource(runtime_.GeneratorModel(sub_.root_step), partition_,
                                           root.generator.max_rate);
    case dataflow::StepKind::kGroupBy: {
      TopicSourceOptions options;
      options.topic = sub_.input_topic;
      return dataflow::OpenTopicSource(runtime_.log(), options, partition_,
                                       runtime_.EndOfInput(sub_.input_topic));
    }
    default:
      return Status::Internal("sub-topology rooted at step " + root.name);
  }
}

Result<bool> Task::RunBatch() {
  if (finished_) return false;
  batch_.Clear();
  WEIR_ASSIGN_OR_RETURN(dataflow::PollResult polled, source_->Poll(kBatchRecords, batch_, *this));
  Watermark before = watermark_;
  const size_t n = batch_.records.size();
  for (size_t i = 0; i < n; ++i) {
    // Announce records ahead so that stateful steps' cache misses overlap (see Prefetch).
    if (i + kPrefetchFar < n) root_->Prefetch(batch_.records[i + kPrefetchFar], 0);
    if (i + kPrefetchNear < n) root_->Prefetch(batch_.records[i + kPrefetchNear], 1);
    Record& record = batch_.records[i];
    current_position_ = batch_.positions[i];
    watermark_ = watermark_.Advance(record.timestamp);
    root_->Process(std::move(record));
  }
  records_in_ += static_cast<int64_t>(batch_.records.size());
  runtime_.CountRecords(static_cast<int64_t>(batch_.records.size()));
  if (!batch_.records.empty()) {
    last_input_ = std::chrono::steady_clock::now();
    watermark_at_last_input_ = watermark_;
  } else if (polled == dataflow::PollResult::kIdle) {
    AdvanceIdleWatermark();
  }
  if (polled == dataflow::PollResult::kEnd) {
    // Bounded input has ended: every event time is now complete (as Flink does for bounded
    // sources), so every window may close.
    watermark_ = Watermark::Max();
  }
  if (watermark_ != before) root_->OnWatermark(watermark_);
  WEIR_RETURN_IF_ERROR(root_->TakeError().WithContext("task " + id_));
  WEIR_RETURN_IF_ERROR(FlushOutputs());
  if (polled == dataflow::PollResult::kEnd) {
    finished_ = true;
    runtime_.NotifyTaskFinished();
    return true;
  }
  return polled == dataflow::PollResult::kRecords;
}

void Task::AdvanceIdleWatermark() {
  if (idle_timeout_.count() <= 0 || watermark_at_last_input_ == Watermark::Min()) return;
  auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - last_input_);
  if (quiet < idle_timeout_) return;
  watermark_ = watermark_.Advance(EventTime(watermark_at_last_input_.value()) + quiet);
}

Status Task::FlushOutputs() {
  for (auto& [name, writer] : topic_writers_) {
    WEIR_RETURN_IF_ERROR(writer->Flush().WithContext("writing topic " + name));
  }
  for (auto& [path, writer] : line_writers_) {
    WEIR_RETURN_IF_ERROR(writer->Flush());
  }
  return Status::OK();
}

Status Task::Prepare(int64_t checkpoint) {
  store_->PutMeta(kMetaSource, source_->SavePosition());
  store_->PutMeta(kMetaWatermark, std::to_string(watermark_.value()));
  store_->PutMeta(kMetaCheckpoint, std::to_string(checkpoint));
  return store_->Prepare(CheckpointManifest::TransactionName(checkpoint))
      .WithContext("task " + id_ + " checkpoint");
}

Status Task::Commit() { return store_->Commit().WithContext("task " + id_ + " commit"); }

Status Task::Rollback() { return store_->Rollback().WithContext("task " + id_ + " rollback"); }

int64_t Task::records_out() const {
  int64_t n = 0;
  for (const auto& [name, writer] : topic_writers_) {
    if (runtime_.IsSinkTopic(name)) n += writer->records_written();
  }
  for (const auto& [path, writer] : line_writers_) n += writer->records_written();
  return n;
}

state::KeyValueStore& Task::Store(std::string_view step_name) { return store_->store(step_name); }

dataflow::TopicWriter& Task::TopicOutput(std::string_view topic) {
  auto it = topic_writers_.find(topic);
  if (it == topic_writers_.end()) {
    std::string name(topic);
    auto writer =
        std::make_unique<dataflow::TopicWriter>(runtime_.OutputTopic(name), runtime_.owner());
    it = topic_writers_.emplace(name, std::move(writer)).first;
  }
  return *it->second;
}

dataflow::LineWriter& Task::FileOutput(std::string_view path) {
  auto it = line_writers_.find(path);
  if (it == line_writers_.end()) {
    std::string p(path);
    it = line_writers_.emplace(p, std::make_unique<dataflow::LineWriter>(runtime_.OutputFile(p)))
             .first;
  }
  return *it->second;
}

dataflow::LineWriter& Task::StdoutOutput() {
  constexpr std::string_view kStdout = "<stdout>";
  auto it = line_writers_.find(kStdout);
  if (it == line_writers_.end()) {
    it = line_writers_
             .emplace(std::string(kStdout),
                      std::make_unique<dataflow::LineWriter>(runtime_.Stdout()))
             .first;
  }
  return *it->second;
}

void Task::DeadLetter(std::string_view reason, const Record& record) {
  Record dead{record.key,
              dataflow::MakeDeadLetterValue(reason, source_->Describe(),
                                            source_->PositionValue(current_position_),
                                            record.value.ToJson()),
              record.timestamp,
              {}};
  TopicOutput(sub_.dead_letter_topic).WriteTo(PartitionId(0), dead);
  ++dead_letters_;
}

void Task::RawDeadLetter(std::string_view reason, Value position, std::string_view raw) {
  Record dead{Key(),
              dataflow::MakeDeadLetterValue(reason, source_->Describe(), std::move(position), raw),
              EventTime(WallClockMs()),
              {}};
  TopicOutput(sub_.dead_letter_topic).WriteTo(PartitionId(0), dead);
  ++dead_letters_;
}

}  // namespace weir::app
