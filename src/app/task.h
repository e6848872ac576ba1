// Task: one sub-topology on one input partition: its sources (one per input; a join's inputs
// are read merged in event-time order), the operators after them, the partition's state store
// and output buffers, and the deliveries its steps hold (docs/architecture.md §7).
//
// Threads: a task runs on one worker thread. The coordinator calls Prepare/Commit/Rollback
// only while that worker is parked (the park/resume handshake orders the accesses).
// Durability: Prepare puts the source positions, the held deliveries, the watermark and each
// input's (per producer, for repartition topics) into the store's meta next to the state, so
// they commit together; all but the sources' own positions in the versioned encodings of
// task_meta.h, so state of another format is refused with a Status. A restarted task delivers
// the held records again (read from their sources) before anything new.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/plan.h"
#include "dataflow/operators.h"
#include "dataflow/sources.h"
#include "dataflow/task_context.h"
#include "state/task_store.h"

namespace weir::app {

class Runtime;

class Task : public dataflow::TaskContext {
 public:
  Task(Runtime& runtime, const SubTopology& sub, PartitionId partition);
  ~Task() override;

  // "<sub-topology>_<partition>", as Kafka Streams names tasks.
  const std::string& id() const { return id_; }
  const SubTopology& subtopology() const { return sub_; }
  PartitionId partition() const { return partition_; }
  // Opens the store, settles what a crashed run left prepared (commits "ckpt-<checkpoint>",
  // rolls back anything else), restores the source position and watermark, builds operators.
  Status Open(int64_t checkpoint);
  // Polls one batch and pushes it through the operators; hands the outputs over. Returns
  // whether anything happened (records, or the end of input).
  Result<bool> RunBatch();
  bool finished() const { return finished_; }

  Status Prepare(int64_t checkpoint);
  // The first offset of repartition input `input`'s partition that the last prepared checkpoint
  // still needs (its position, or an earlier record it holds or has not merged yet), or -1 for
  // an input that is not a repartition topic. Everything below can be purged once it commits.
  int64_t RetainFrom(size_t input) const;
  Status Commit();
  Status Rollback();

  int64_t records_in() const { return records_in_; }
  // Records read from sources, not from repartition topics (counted once per application).
  int64_t source_records_in() const;
  int64_t redelivered() const { return redelivered_; }
  int64_t evicted() const { return evicted_; }
  int64_t dead_letters() const { return dead_letters_; }
  int64_t late() const { return late_; }
  int64_t user_function_failures() const { return user_function_failures_; }
  const ProcessCounters& process() const { return process_counters_; }
  int64_t expiry_visits() const { return expiry_visits_; }
  int64_t records_out() const;

  // dataflow::TaskContext
  state::KeyValueStore& Store(std::string_view step_name) override;
  dataflow::TopicWriter& TopicOutput(std::string_view topic) override;
  dataflow::LineWriter& FileOutput(std::string_view path) override;
  dataflow::LineWriter& StdoutOutput() override;
  void CountDelivered() override { ++records_discarded_; }
  void DeadLetter(std::string_view reason, const Record& record) override;
  void DeadLetterHeld(std::string_view reason, const Record& record,
                      const Delivery& delivery) override;
  void RawDeadLetter(std::string_view reason, Value position, std::string_view raw) override;
  void CountLate() override { ++late_; }
  void CountUserFunctionFailure() override { ++user_function_failures_; }
  void CountExpiryVisits(int64_t visits) override { expiry_visits_ += visits; }
  Watermark watermark() const override { return watermark_; }
  Delivery CurrentDelivery() const override;
  ProcessCounters& process_counters() override { return process_counters_; }
  Delivery HoldCurrent() override;
  void Resolve(const Delivery& delivery, Resolution resolution) override;
  void CountEvicted() override { ++evicted_; }
  bool HasSelfRedeliveringInput() const override;

 private:
  // One input of the sub-topology: its source, the operator its records enter by, and the
  // batch being merged.
  struct Input {
    std::unique_ptr<dataflow::Source> source;
    std::unique_ptr<dataflow::Operator> root;
    std::vector<dataflow::Operator*> prefetching;  // root->CollectPrefetching: called directly
    dataflow::SourceBatch batch;
    size_t next = 0;  // the next record of `batch` to process
    bool ended = false;
    bool from_repartition = false;
    bool redelivers_itself = false;  // source->RedeliversItself(), read once
    int64_t records_in = 0;
    // The input's watermark: a source's is the largest event time read from it (Max once it
    // ended); a repartition topic's is the minimum of its producers' marks, applied in their
    // place between the records (`batch.marks` up to `next_mark`).
    Watermark watermark = Watermark::Min();
    std::vector<Watermark> producer_marks;  // repartition only: per SubTopologyInput::producers
    size_t next_mark = 0;
  };
  // A record to deliver again: where it is, and how many times it was delivered.
  struct Redelivery {
    int32_t input;
    int64_t position;
    int64_t token;
    int32_t deliveries;
  };
  // A held delivery: as many holds as steps hold it (a record reaching two inputs of a join,
  // or one a flat-map made several of); resolved once the last is. Any nak makes it a nak; all
  // terms make it a term; else it is an ack.
  struct Held {
    int64_t token;
    int32_t deliveries;
    int32_t holds = 0;
    bool nak = false;
    bool all_term = true;
  };

  // Open, in its order: the store at `checkpoint` (prepared checkpoints committed or rolled
  // back); each input's source at its saved position, with a root operator in `by_step`; the
  // saved watermarks, held deliveries and pending marks; the steps' operators, linked.
  Status OpenStore(int64_t checkpoint);
  Status OpenInputs(std::map<int, dataflow::Operator*>& by_step);
  Status RestoreProgress();
  Status MakeOperators(std::map<int, dataflow::Operator*>& by_step);
  Result<std::unique_ptr<dataflow::Source>> OpenSource(const SubTopologyInput& input);
  // Merges the inputs' batches in event-time order, up to kBatchRecords records; returns
  // whether any came.
  Result<bool> ProcessInputs(bool& all_ended);
  // Processes record `index` of `batch`, which came from input `input`.
  void ProcessRecord(int32_t input, dataflow::SourceBatch& batch, size_t index, int32_t deliveries);
  // Feeds the records to deliver again (after a nak, or held when the last run stopped).
  Status ProcessRedeliveries();
  // The held deliveries, those waiting to be delivered again, and the records read but not
  // merged yet (task_meta.h SavedDelivery).
  std::string SaveHeld() const;
  Status RestoreHeld(std::string_view saved);
  // A quiet partition's watermark follows the wall clock once idle_timeout_ has passed.
  void AdvanceIdleWatermark();
  // Applies `input`'s marks that come before its record `upto` (all of them: the batch's size).
  void ApplyMarks(Input& input, size_t upto);
  // The minimum of the input's producers' marks, leaving out idle ones (kIdleMark); the input's
  // watermark as it is when every producer is idle.
  static Watermark ProducersWatermark(const Input& input);
  // The task's watermark: the minimum over its inputs (sources raised to the idle floor); never
  // goes back.
  void RefreshWatermark();
  // Writes the watermark into every repartition topic the task writes, if it moved since the
  // last mark.
  void WriteWatermarkMarks();
  std::string SaveInputWatermarks() const;
  Status RestoreInputWatermarks(std::string_view saved);
  // Marks of records read but not merged yet, saved beside them (SaveHeld).
  std::string SavePendingMarks() const;
  Status RestorePendingMarks(std::string_view saved);
  Status FlushOutputs();

  Runtime& runtime_;
  const SubTopology& sub_;
  PartitionId partition_;
  std::string id_;
  const std::chrono::milliseconds injected_delay_;  // WEIR_SLOW_TASKS (core/fault_injection.h)
  std::unique_ptr<state::TaskStore> store_;
  std::vector<Input> inputs_;
  // ProcessInputs' per-input flags, kept so that a batch allocates nothing.
  std::vector<bool> polled_inputs_;
  std::vector<bool> idle_inputs_;
  std::vector<std::unique_ptr<dataflow::Operator>> operators_;
  // The record being processed while no step has changed its value (ProcessRecord).
  dataflow::UnchangedInput unchanged_input_;
  // The record being processed.
  int32_t current_input_ = 0;
  int64_t current_position_ = 0;
  int64_t current_token_ = 0;
  int64_t current_identity_ = 0;
  int32_t current_deliveries_ = 1;
  bool current_held_ = false;
  // Held deliveries by where they are, (input, position); and those to deliver again (inputs
  // the task redelivers; the others get the final resolution through Source::Resolve).
  struct HeldKey {
    int32_t input;
    SourcePosition position;
    friend bool operator==(const HeldKey&, const HeldKey&) = default;
  };
  struct HeldKeyHash {
    size_t operator()(const HeldKey& key) const {
      return std::hash<int64_t>()(key.position.value()) ^
             (std::hash<int32_t>()(key.input) * 0x9e3779b97f4a7c15ULL);
    }
  };
  std::unordered_map<HeldKey, Held, HeldKeyHash> held_;
  std::vector<Redelivery> redeliveries_;
  std::map<std::string, std::unique_ptr<dataflow::TopicWriter>, std::less<>> topic_writers_;
  std::map<std::string, std::unique_ptr<dataflow::LineWriter>, std::less<>> line_writers_;
  int64_t records_discarded_ = 0;  // by discard and ForEach sinks, this run
  Watermark watermark_ = Watermark::Min();
  Watermark last_mark_ = Watermark::Min();  // the last watermark mark written
  // Idle close (TopicSourceOptions::idle_timeout): when input last came, the watermark then,
  // and how far the wall clock has moved source inputs' watermarks since.
  std::chrono::milliseconds idle_timeout_{0};
  std::chrono::steady_clock::time_point last_input_ = std::chrono::steady_clock::now();
  Watermark watermark_at_last_input_ = Watermark::Min();
  Watermark idle_floor_ = Watermark::Min();
  bool idle_without_input_ = false;   // idle for idle_timeout_ without ever reading an event
  std::vector<int64_t> retain_from_;  // per input, as of the last Prepare (RetainFrom)
  int64_t records_in_ = 0;
  int64_t redelivered_ = 0;
  int64_t evicted_ = 0;
  int64_t dead_letters_ = 0;
  int64_t late_ = 0;
  int64_t user_function_failures_ = 0;
  ProcessCounters process_counters_;
  int64_t expiry_visits_ = 0;
  bool finished_ = false;
};

}  // namespace weir::app
