#include "app/task.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <tuple>

#include "app/manifest.h"
#include "app/runtime.h"
#include "app/task_meta.h"
#include "core/fault_injection.h"
#include "dataflow/watermark_marks.h"

namespace weir::app {
namespace {

// Records per batch. A batch's records are written into slots that are reused batch after batch
// and read by every step: 512 keeps them in the core's L2 cache (a Nexmark event's slot, with its
// strings, is about 1 KiB), where 2048 spilled them and the next write into a slot missed;
// 512 against 2048, three interleaved pairs each: Nexmark q0 1.30x (discard and topic sinks),
// q5 1.26x, q11 1.22x, bench pipeline 1.13x, session windows 1.18x, join 1.18x.
constexpr size_t kBatchRecords = 512;
// Records per poll of a single input whose steps prefetch no state: its slots are rewritten and
// read again while still in L1/L2 (64 records of about 1 KiB), where a 512-record poll has the
// source write every slot before the first step reads one, which by then has left L2 (q0's
// member lookups stalled there: 28% of its profile). Four interleaved pairs, 64 against 512:
// q0 discard 1.16x (32: 0.86x of 64; 128: 1.13x). An input with prefetching steps keeps whole
// batches: its prefetch runs up to 16 records ahead within a poll (dataflow::kPrefetchAhead), and
// polls of 64 cut that short (bench pipeline 0.89x, q5 0.88x).
constexpr size_t kPollRecordsWithoutPrefetch = 64;
constexpr std::string_view kMetaSource = "source_position";
constexpr std::string_view kMetaWatermark = "watermark";
constexpr std::string_view kMetaCheckpoint = "checkpoint";
constexpr std::string_view kMetaHeld = "held_deliveries";
constexpr std::string_view kMetaInputWatermarks = "input_watermarks";
constexpr std::string_view kMetaPendingMarks = "pending_marks";

// Input 0's position keeps the name it had before tasks had several inputs.
std::string SourcePositionMeta(size_t input) {
  return input == 0 ? std::string(kMetaSource)
                    : std::string(kMetaSource) + "." + std::to_string(input);
}

// Forwards the source's records to the first steps of the sub-topology.
class RootOperator : public dataflow::Operator {
 public:
  void Process(Record&& record) override { ForwardUnchanged(std::move(record)); }
};

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Task::Task(Runtime& runtime, const SubTopology& sub, PartitionId partition)
    : runtime_(runtime),
      sub_(sub),
      partition_(partition),
      id_(TaskId(sub.index, partition.value())),
      injected_delay_(InjectedTaskDelay(id_)) {}

Task::~Task() = default;

Status Task::Open(int64_t checkpoint) {
  WEIR_RETURN_IF_ERROR(OpenStore(checkpoint));
  std::map<int, dataflow::Operator*> by_step;
  WEIR_RETURN_IF_ERROR(OpenInputs(by_step));
  WEIR_RETURN_IF_ERROR(RestoreProgress());
  WEIR_RETURN_IF_ERROR(MakeOperators(by_step));
  for (Input& input : inputs_) {
    input.root->CollectPrefetching(input.prefetching);
    input.root->set_unchanged_input(&unchanged_input_);
  }
  for (auto& op : operators_) op->set_unchanged_input(&unchanged_input_);
  // Writers for the dead letters exist from the start so that a source can use them.
  TopicOutput(sub_.dead_letter_topic);
  return Status::OK();
}

Status Task::OpenStore(int64_t checkpoint) {
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
    Result<int64_t> at = DecodeCheckpointNumber(*stored_checkpoint);
    if (!at.ok()) return at.status().WithContext("task " + id_);
    if (*at != checkpoint) {
      return Status::Corruption("task " + id_ + " state is at checkpoint " + std::to_string(*at) +
                                " but the manifest says " + std::to_string(checkpoint) + " (" +
                                runtime_.TaskDir(id_).string() + ")");
    }
  }
  return Status::OK();
}

Status Task::OpenInputs(std::map<int, dataflow::Operator*>& by_step) {
  inputs_.resize(sub_.inputs.size());
  for (size_t i = 0; i < sub_.inputs.size(); ++i) {
    Input& input = inputs_[i];
    input.from_repartition = sub_.inputs[i].from_repartition();
    input.producer_marks.assign(sub_.inputs[i].producers.size(), Watermark::Min());
    WEIR_ASSIGN_OR_RETURN(input.source, OpenSource(sub_.inputs[i]));
    input.redelivers_itself = input.source->RedeliversItself();
    WEIR_ASSIGN_OR_RETURN(std::optional<std::string> position,
                          store_->GetMeta(SourcePositionMeta(i)));
    if (position) WEIR_RETURN_IF_ERROR(input.source->RestorePosition(*position));
    input.root = std::make_unique<RootOperator>();
    by_step[sub_.inputs[i].root_step] = input.root.get();
  }
  retain_from_.assign(inputs_.size(), -1);
  return Status::OK();
}

Status Task::RestoreProgress() {
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> watermark, store_->GetMeta(kMetaWatermark));
  if (watermark) {
    Result<Watermark> saved = DecodeTaskWatermark(*watermark);
    if (!saved.ok()) return saved.status().WithContext("task " + id_);
    watermark_ = *saved;
  }
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> input_watermarks,
                        store_->GetMeta(kMetaInputWatermarks));
  if (input_watermarks) WEIR_RETURN_IF_ERROR(RestoreInputWatermarks(*input_watermarks));
  if (watermark_.IsEndOfInput()) {
    // The input ended in an earlier run, which closed every window: anything read now is late
    // (window.h), and downstream tasks hear so again.
    for (Input& input : inputs_) {
      input.watermark = Watermark::Max();
      std::fill(input.producer_marks.begin(), input.producer_marks.end(), Watermark::Max());
    }
  }
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> held, store_->GetMeta(kMetaHeld));
  if (held) WEIR_RETURN_IF_ERROR(RestoreHeld(*held));
  WEIR_ASSIGN_OR_RETURN(std::optional<std::string> pending, store_->GetMeta(kMetaPendingMarks));
  if (pending) WEIR_RETURN_IF_ERROR(RestorePendingMarks(*pending));
  return Status::OK();
}

// Operators for the sub-topology's steps, linked as the graph links them; a multi-input step is
// linked to each parent through a port.
Status Task::MakeOperators(std::map<int, dataflow::Operator*>& by_step) {
  const dataflow::Graph& graph = runtime_.graph();
  for (int step_id : sub_.steps) {
    const dataflow::Node& node = graph.nodes[step_id];
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<dataflow::Operator> op,
                          node.def().MakeOperator({runtime_.owner(), node.name, *this}));
    dataflow::Operator* created = op.get();
    operators_.push_back(std::move(op));
    by_step[step_id] = created;
    if (!node.def().multi_input()) {
      by_step.at(node.parent())->AddChild(created);
      continue;
    }
    auto& multi = static_cast<dataflow::MultiInputOperator&>(*created);
    for (size_t k = 0; k < node.parents.size(); ++k) {
      operators_.push_back(dataflow::MakeInputPort(multi, static_cast<int>(k)));
      by_step.at(node.parents[k])->AddChild(operators_.back().get());
    }
  }
  return Status::OK();
}

Result<std::unique_ptr<dataflow::Source>> Task::OpenSource(const SubTopologyInput& input) {
  const dataflow::Node& root = runtime_.graph().nodes[input.root_step];
  if (root.is_source()) {
    idle_timeout_ = std::max(idle_timeout_, root.source().idle_timeout());
    return root.source().Open(runtime_.log(), partition_);
  }
  TopicSourceOptions options;
  options.topic = input.topic;
  const dataflow::RepartitionReading reading{runtime_.EndOfInput(input.topic), input.producers};
  return dataflow::OpenTopicSource(runtime_.log(), options, partition_, &reading);
}

Result<bool> Task::RunBatch() {
  if (finished_) return false;
  if (injected_delay_.count() > 0) std::this_thread::sleep_for(injected_delay_);
  Watermark before = watermark_;
  const bool redelivered = !redeliveries_.empty();
  if (redelivered) WEIR_RETURN_IF_ERROR(ProcessRedeliveries());
  bool all_ended = true;
  WEIR_ASSIGN_OR_RETURN(bool processed, ProcessInputs(all_ended));
  if (processed) {
    last_input_ = std::chrono::steady_clock::now();
    watermark_at_last_input_ = watermark_;
    idle_without_input_ = false;
  } else if (!all_ended) {
    AdvanceIdleWatermark();
  }
  if (all_ended) {
    // Bounded input has ended: every event time is now complete (as Flink does for bounded
    // sources), so every window may close and every join group settles.
    watermark_ = Watermark::Max();
  }
  // A drain that asked for redeliveries (a nak at the end of input) is drained again.
  if (watermark_ != before || (all_ended && redelivered)) {
    for (Input& input : inputs_) input.root->OnWatermark(watermark_);
  }
  for (Input& input : inputs_) input.root->OnBatchEnd();
  for (Input& input : inputs_) {
    WEIR_RETURN_IF_ERROR(input.root->TakeError().WithContext("task " + id_));
  }
  WriteWatermarkMarks();  // after what the watermark made the steps emit
  WEIR_RETURN_IF_ERROR(FlushOutputs());
  if (all_ended && redeliveries_.empty()) finished_ = true;
  if (finished_) {
    runtime_.NotifyTaskFinished();
    return true;
  }
  return processed || redelivered;
}

Result<bool> Task::ProcessInputs(bool& all_ended) {
  const size_t n = inputs_.size();
  std::vector<bool>& polled = polled_inputs_;
  std::vector<bool>& idle = idle_inputs_;
  polled.assign(n, false);
  idle.assign(n, false);
  size_t processed = 0;
  while (processed < kBatchRecords) {
    // Refill every input whose batch is used up. With several inputs, one already refilled in
    // this call stops the merge instead: its next record may be earlier than the others' (the
    // next call goes on). A single input refills until the batch is full, so that a reader
    // takes as much per batch as its producers write (a poll may end at a log block's end).
    // An idle input holds nobody back.
    bool wait_for_refill = false;
    for (size_t i = 0; i < n; ++i) {
      Input& input = inputs_[i];
      if (input.ended || idle[i] || input.next < input.batch.records.size()) continue;
      if (polled[i] && n > 1) {
        wait_for_refill = true;
        break;
      }
      polled[i] = true;
      ApplyMarks(input, input.batch.records.size());
      input.batch.Clear();
      input.next = 0;
      input.next_mark = 0;
      current_input_ = static_cast<int32_t>(i);
      const size_t poll_records =
          input.prefetching.empty() ? kPollRecordsWithoutPrefetch : kBatchRecords;
      WEIR_ASSIGN_OR_RETURN(
          dataflow::PollResult result,
          input.source->Poll(
              n == 1 ? std::min(poll_records, kBatchRecords - processed) : kBatchRecords,
              input.batch, *this));
      if (result == dataflow::PollResult::kEnd) {
        input.ended = true;
        input.watermark = Watermark::Max();
        RefreshWatermark();
        if (n > 1) input.root->OnInputEnd();
      } else if (input.batch.records.empty()) {
        idle[i] = true;
      }
    }
    if (wait_for_refill) break;
    // The input whose next record is earliest in event time (ties: the first input).
    size_t chosen = n;
    for (size_t i = 0; i < n; ++i) {
      const Input& input = inputs_[i];
      if (input.next >= input.batch.records.size()) continue;
      if (chosen == n || input.batch.records[input.next].timestamp <
                             inputs_[chosen].batch.records[inputs_[chosen].next].timestamp) {
        chosen = i;
      }
    }
    if (chosen == n) break;
    Input& input = inputs_[chosen];
    // Announce records ahead so that stateful steps' cache misses overlap (see Prefetch).
    const size_t size = input.batch.records.size();
    for (dataflow::Operator* step : input.prefetching) {
      for (int stage = 0; stage < dataflow::kPrefetchStages; ++stage) {
        const size_t ahead = input.next + dataflow::kPrefetchAhead[stage];
        if (ahead < size) step->Prefetch(input.batch.records[ahead], stage);
      }
    }
    if (input.next_mark < input.batch.marks.size()) ApplyMarks(input, input.next);
    ProcessRecord(static_cast<int32_t>(chosen), input.batch, input.next++, 1);
    ++input.records_in;
    ++processed;
  }
  // Marks after an input's last record take effect now; the records after a mark still waiting
  // in the batch cannot be earlier than it.
  for (Input& input : inputs_) {
    if (input.next == input.batch.records.size()) ApplyMarks(input, input.next);
  }
  records_in_ += static_cast<int64_t>(processed);
  runtime_.CountRecords(static_cast<int64_t>(processed));
  all_ended = true;
  for (const Input& input : inputs_) all_ended &= input.ended;
  return processed > 0;
}

void Task::ProcessRecord(int32_t input_index, dataflow::SourceBatch& batch, size_t index,
                         int32_t deliveries) {
  Input& input = inputs_[input_index];
  current_input_ = input_index;
  current_position_ = batch.positions[index];
  current_token_ = batch.reread_token(index);
  current_identity_ = batch.identity(index);
  current_deliveries_ = deliveries;
  current_held_ = false;
  Record& record = batch.records[index];
  if (!input.from_repartition && record.timestamp.value() > input.watermark.value()) {
    input.watermark = input.watermark.Advance(record.timestamp);
    RefreshWatermark();
  }
  unchanged_input_.json = batch.json_of(index);
  unchanged_input_.value = unchanged_input_.json.empty() ? nullptr : &record.value;
  input.root->Process(std::move(record));
  unchanged_input_.value = nullptr;
  if (!current_held_ && input.redelivers_itself) {
    input.source->Resolve(current_position_, Resolution::kAck);
  }
}

Delivery Task::HoldCurrent() {
  current_held_ = true;
  Held& held = held_[HeldKey{current_input_, SourcePosition(current_position_)}];
  if (held.holds++ == 0) {
    held.token = current_token_;
    held.deliveries = current_deliveries_;
  }
  return {current_input_, SourcePosition(current_position_), current_identity_,
          current_deliveries_};
}

void Task::Resolve(const Delivery& delivery, Resolution resolution) {
  auto it = held_.find(HeldKey{delivery.input, delivery.position});
  if (it == held_.end()) return;
  Held& held = it->second;
  held.nak |= resolution == Resolution::kNak;
  held.all_term &= resolution == Resolution::kTerm;
  if (--held.holds > 0) return;
  const Resolution final = held.nak        ? Resolution::kNak
                           : held.all_term ? Resolution::kTerm
                                           : Resolution::kAck;
  Input& input = inputs_[delivery.input];
  if (input.redelivers_itself) {
    input.source->Resolve(delivery.position.value(), final);
  } else if (final == Resolution::kNak) {
    redeliveries_.push_back(
        {delivery.input, delivery.position.value(), held.token, held.deliveries + 1});
  }
  held_.erase(it);
}

Status Task::ProcessRedeliveries() {
  // Read them all, then feed them in event-time order (as the inputs are merged).
  std::vector<Redelivery> due = std::move(redeliveries_);
  redeliveries_.clear();
  std::vector<dataflow::SourceBatch> batches(inputs_.size());
  std::vector<std::vector<int32_t>> deliveries(inputs_.size());
  std::vector<std::tuple<EventTime, int32_t, size_t>> order;  // time, input, index
  for (const Redelivery& r : due) {
    WEIR_ASSIGN_OR_RETURN(Record record, inputs_[r.input].source->Reread(r.position, r.token));
    dataflow::SourceBatch& batch = batches[r.input];
    order.emplace_back(record.timestamp, r.input, batch.records.size());
    batch.records.push_back(std::move(record));
    batch.positions.push_back(r.position);
    batch.reread_tokens.push_back(r.token);
    deliveries[r.input].push_back(r.deliveries);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  for (const auto& [time, input, index] : order) {
    ProcessRecord(input, batches[input], index, deliveries[input][index]);
  }
  redelivered_ += static_cast<int64_t>(due.size());
  return Status::OK();
}

std::string Task::SaveHeld() const {
  // Those waiting for their redelivery count as held, delivered as often as before the nak.
  // Records an input has read but the merge has not reached yet are saved too, never delivered
  // (its saved position is past them). Sorted, so that a restart redelivers them in one order
  // whatever the hash table's.
  std::vector<SavedDelivery> all;
  for (const Redelivery& r : redeliveries_) {
    all.push_back({r.input, r.position, r.token, DeliveryState::kHeld, r.deliveries - 1});
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& input = inputs_[i];
    if (input.redelivers_itself) continue;  // not acknowledged: the broker resends them
    const dataflow::SourceBatch& batch = input.batch;
    for (size_t k = input.next; k < batch.records.size(); ++k) {
      all.push_back({static_cast<int32_t>(i), batch.positions[k], batch.reread_token(k),
                     DeliveryState::kReadNotMerged, 0});
    }
  }
  for (const auto& [key, held] : held_) {
    if (inputs_[key.input].redelivers_itself) continue;  // the broker redelivers it
    all.push_back(
        {key.input, key.position.value(), held.token, DeliveryState::kHeld, held.deliveries});
  }
  std::sort(all.begin(), all.end(), [](const SavedDelivery& a, const SavedDelivery& b) {
    return std::tie(a.input, a.position) < std::tie(b.input, b.position);
  });
  return EncodeSavedDeliveries(all);
}

Status Task::RestoreHeld(std::string_view saved) {
  Result<std::vector<SavedDelivery>> deliveries = DecodeSavedDeliveries(saved);
  if (!deliveries.ok()) return deliveries.status().WithContext("task " + id_);
  for (const SavedDelivery& d : *deliveries) {
    if (static_cast<size_t>(d.input) >= inputs_.size()) {
      return Status::Corruption("task " + id_ + ": held delivery of an unknown input " +
                                std::to_string(d.input));
    }
    Input& input = inputs_[d.input];
    if (d.state == DeliveryState::kReadNotMerged) {
      // Back at the head of its input, merged in event-time order with what comes next, as if
      // the stop had not happened.
      WEIR_ASSIGN_OR_RETURN(Record record, input.source->Reread(d.position, d.reread_token));
      input.batch.records.push_back(std::move(record));
      input.batch.positions.push_back(d.position);
      input.batch.reread_tokens.push_back(d.reread_token);
      continue;
    }
    // Held when the last run stopped: delivered again first.
    redeliveries_.push_back({d.input, d.position, d.reread_token, d.deliveries + 1});
  }
  return Status::OK();
}

void Task::AdvanceIdleWatermark() {
  if (idle_timeout_.count() <= 0) return;
  auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - last_input_);
  if (quiet < idle_timeout_) return;
  if (watermark_at_last_input_ == Watermark::Min()) {
    idle_without_input_ = true;  // no event time to follow the clock from: readers skip it
    return;
  }
  idle_floor_ = idle_floor_.Advance(EventTime(watermark_at_last_input_.value()) + quiet);
  RefreshWatermark();
}

void Task::ApplyMarks(Input& input, size_t upto) {
  const std::vector<dataflow::SourceBatch::Mark>& marks = input.batch.marks;
  bool moved = false;
  for (; input.next_mark < marks.size() && marks[input.next_mark].before <= upto;
       ++input.next_mark) {
    const dataflow::SourceBatch::Mark& mark = marks[input.next_mark];
    Watermark& producer = input.producer_marks[mark.producer];
    if (mark.watermark.value() > producer.value()) {
      producer = mark.watermark;
      moved = true;
    }
  }
  if (!moved) return;
  input.watermark = ProducersWatermark(input);
  RefreshWatermark();
}

Watermark Task::ProducersWatermark(const Input& input) {
  Watermark lowest = Watermark::Max();
  bool any_active = false;
  for (Watermark mark : input.producer_marks) {
    if (mark == dataflow::kIdleMark) continue;
    lowest = std::min(lowest, mark);
    any_active = true;
  }
  return any_active ? lowest : input.watermark;
}

void Task::RefreshWatermark() {
  Watermark lowest = Watermark::Max();
  for (const Input& input : inputs_) {
    Watermark w = input.from_repartition ? input.watermark : std::max(input.watermark, idle_floor_);
    lowest = std::min(lowest, w);
  }
  if (lowest.value() > watermark_.value()) watermark_ = lowest;
}

void Task::WriteWatermarkMarks() {
  // What the task's steps may still emit can be up to mark_lag_ms behind its watermark. The end
  // of input stays +infinity: everything has been emitted then.
  Watermark mark = watermark_.IsEndOfInput() || watermark_ == Watermark::Min()
                       ? watermark_
                       : Watermark(SubtractSaturating(watermark_.value(), sub_.mark_lag_ms));
  if (mark == Watermark::Min() && idle_without_input_) mark = dataflow::kIdleMark;
  if (mark == last_mark_) return;
  for (const std::string& topic : sub_.repartition_outputs) {
    TopicOutput(topic).WriteWatermarkMark(id_, mark);
  }
  last_mark_ = mark;
}

std::string Task::SaveInputWatermarks() const {
  std::vector<SavedInputWatermark> saved;
  saved.reserve(inputs_.size());
  for (const Input& input : inputs_) {
    saved.push_back({input.from_repartition, input.watermark,
                     input.from_repartition ? input.producer_marks : std::vector<Watermark>()});
  }
  return EncodeInputWatermarks(saved);
}

Status Task::RestoreInputWatermarks(std::string_view saved) {
  Result<std::vector<SavedInputWatermark>> decoded = DecodeInputWatermarks(saved);
  if (!decoded.ok()) return decoded.status().WithContext("task " + id_);
  if (decoded->size() != inputs_.size()) {
    return Status::Corruption("task " + id_ + ": watermarks of " + std::to_string(decoded->size()) +
                              " inputs saved, it has " + std::to_string(inputs_.size()));
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    Input& input = inputs_[i];
    SavedInputWatermark& entry = (*decoded)[i];
    if (entry.from_repartition != input.from_repartition ||
        (input.from_repartition && entry.producer_marks.size() != input.producer_marks.size())) {
      return Status::Corruption("task " + id_ + ": the watermarks saved for input " +
                                std::to_string(i) + " are of another kind of input");
    }
    if (!input.from_repartition) {
      input.watermark = entry.watermark;
      continue;
    }
    input.producer_marks = std::move(entry.producer_marks);
    input.watermark = ProducersWatermark(input);
  }
  return Status::OK();
}

std::string Task::SavePendingMarks() const {
  std::vector<SavedMark> pending;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& input = inputs_[i];
    for (size_t k = input.next_mark; k < input.batch.marks.size(); ++k) {
      const dataflow::SourceBatch::Mark& mark = input.batch.marks[k];
      pending.push_back({static_cast<int32_t>(i), mark.position, mark.producer, mark.watermark});
    }
  }
  return EncodePendingMarks(pending);
}

Status Task::RestorePendingMarks(std::string_view saved) {
  // After RestoreHeld, which put the records read but not merged back into their batches: each
  // mark goes back between them, before the first record read after it.
  Result<std::vector<SavedMark>> marks = DecodePendingMarks(saved);
  if (!marks.ok()) return marks.status().WithContext("task " + id_);
  for (const SavedMark& mark : *marks) {
    if (static_cast<size_t>(mark.input) >= inputs_.size() ||
        static_cast<size_t>(mark.producer) >= inputs_[mark.input].producer_marks.size()) {
      return Status::Corruption("task " + id_ + ": pending watermark mark of an unknown input");
    }
    dataflow::SourceBatch& batch = inputs_[mark.input].batch;
    const auto before = static_cast<size_t>(
        std::lower_bound(batch.positions.begin(), batch.positions.end(), mark.position) -
        batch.positions.begin());
    batch.marks.push_back({before, mark.position, mark.producer, mark.watermark});
  }
  return Status::OK();
}

Status Task::FlushOutputs() {
  for (auto& [name, writer] : topic_writers_) {
    if (Status flushed = writer->Flush(); !flushed.ok()) {
      return flushed.WithContext("writing topic " + name);
    }
  }
  for (auto& [path, writer] : line_writers_) {
    WEIR_RETURN_IF_ERROR(writer->Flush());
  }
  return Status::OK();
}

Status Task::Prepare(int64_t checkpoint) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    store_->PutMeta(SourcePositionMeta(i), inputs_[i].source->SavePosition());
  }
  store_->PutMeta(kMetaHeld, SaveHeld());
  store_->PutMeta(kMetaPendingMarks, SavePendingMarks());
  store_->PutMeta(kMetaInputWatermarks, SaveInputWatermarks());
  store_->PutMeta(kMetaWatermark, EncodeTaskWatermark(watermark_));
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Input& input = inputs_[i];
    if (!input.from_repartition) continue;
    int64_t from = input.source->NextPosition();
    if (input.next < input.batch.positions.size()) {
      from = std::min(from, input.batch.positions[input.next]);
    }
    for (const Redelivery& r : redeliveries_) {
      if (r.input == static_cast<int32_t>(i)) from = std::min(from, r.position);
    }
    for (const auto& [key, held] : held_) {
      if (key.input == static_cast<int32_t>(i)) from = std::min(from, key.position.value());
    }
    retain_from_[i] = from;
  }
  store_->PutMeta(kMetaCheckpoint, EncodeCheckpointNumber(checkpoint));
  return store_->Prepare(CheckpointManifest::TransactionName(checkpoint))
      .WithContext("task " + id_ + " checkpoint");
}

int64_t Task::RetainFrom(size_t input) const { return retain_from_[input]; }

Status Task::Commit() {
  WEIR_RETURN_IF_ERROR(store_->Commit().WithContext("task " + id_ + " commit"));
  for (Input& input : inputs_) {
    WEIR_RETURN_IF_ERROR(input.source->OnCheckpointCommitted().WithContext("task " + id_));
  }
  return Status::OK();
}

Status Task::Rollback() { return store_->Rollback().WithContext("task " + id_ + " rollback"); }

bool Task::HasSelfRedeliveringInput() const {
  for (const Input& input : inputs_) {
    if (input.redelivers_itself) return true;
  }
  return false;
}

int64_t Task::source_records_in() const {
  int64_t n = 0;
  for (const Input& input : inputs_) {
    if (!input.from_repartition) n += input.records_in;
  }
  return n;
}

int64_t Task::records_out() const {
  int64_t n = records_discarded_;
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
    // A repartition topic is read back only by the application's own tasks: binary values.
    const log::ValueEncoding encoding =
        runtime_.IsRepartitionTopic(name) ? log::ValueEncoding::kBinary : log::ValueEncoding::kJson;
    auto writer = std::make_unique<dataflow::TopicWriter>(runtime_.OutputTopic(name),
                                                          runtime_.owner(), encoding);
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
  DeadLetterHeld(reason, record, CurrentDelivery());
}

Delivery Task::CurrentDelivery() const {
  return {current_input_, SourcePosition(current_position_), current_identity_, 1};
}

void Task::DeadLetterHeld(std::string_view reason, const Record& record, const Delivery& delivery) {
  const dataflow::Source& source = *inputs_[delivery.input].source;
  Record dead{record.key,
              dataflow::MakeDeadLetterValue(reason, source.Describe(),
                                            source.PositionValue(delivery.position.value()),
                                            record.value.ToJson()),
              record.timestamp,
              {}};
  TopicOutput(sub_.dead_letter_topic).WriteTo(PartitionId(0), dead);
  ++dead_letters_;
}

void Task::RawDeadLetter(std::string_view reason, Value position, std::string_view raw) {
  Record dead{Key(),
              dataflow::MakeDeadLetterValue(reason, inputs_[current_input_].source->Describe(),
                                            std::move(position), raw),
              EventTime(WallClockMs()),
              {}};
  TopicOutput(sub_.dead_letter_topic).WriteTo(PartitionId(0), dead);
  ++dead_letters_;
}

}  // namespace weir::app
