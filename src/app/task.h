// Task: one sub-topology on one input partition: a source, the operators after it, the
// partition's state store and output buffers.
//
// Threads: a task runs on one worker thread. The coordinator calls Prepare/Commit/Rollback
// only while that worker is parked (the park/resume handshake orders the accesses).
// Durability: Prepare puts the source position and the watermark into the store's meta next to
// the state, so they commit together.
#pragma once

#include <map>
#include <memory>
#include <string>
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
  // Opens the store, settles what a crashed run left prepared (commits "ckpt-<checkpoint>",
  // rolls back anything else), restores the source position and watermark, builds operators.
  Status Open(int64_t checkpoint);
  // Polls one batch and pushes it through the operators; hands the outputs over. Returns
  // whether anything happened (records, or the end of input).
  Result<bool> RunBatch();
  bool finished() const { return finished_; }

  Status Prepare(int64_t checkpoint);
  Status Commit();
  Status Rollback();

  int64_t records_in() const { return records_in_; }
  int64_t dead_letters() const { return dead_letters_; }
  int64_t late() const { return late_; }
  int64_t expiry_visits() const { return expiry_visits_; }
  int64_t records_out() const;

  // dataflow::TaskContext
  state::KeyValueStore& Store(std::string_view step_name) override;
  dataflow::TopicWriter& TopicOutput(std::string_view topic) override;
  dataflow::LineWriter& FileOutput(std::string_view path) override;
  dataflow::LineWriter& StdoutOutput() override;
  void DeadLetter(std::string_view reason, const Record& record) override;
  void RawDeadLetter(std::string_view reason, Value position, std::string_view raw) override;
  void CountLate() override { ++late_; }
  void CountExpiryVisits(int64_t visits) override { expiry_visits_ += visits; }
  Watermark watermark() const override { return watermark_; }

 private:
  Result<std::unique_ptr<dataflow::Source>> OpenSource();
  // A quiet partition's watermark follows the wall clock once idle_timeout_ has passed.
  void AdvanceIdleWatermark();
  Status FlushOutputs();

  Runtime& runtime_;
  const SubTopology& sub_;
  PartitionId partition_;
  std::string id_;
  std::unique_ptr<state::TaskStore> store_;
  std::unique_ptr<dataflow::Source> source_;
  // The root forwards source records to the sub-topology's first steps.
  std::unique_ptr<dataflow::Operator> root_;
  std::vector<std::unique_ptr<dataflow::Operator>> operators_;
  std::map<std::string, std::unique_ptr<dataflow::TopicWriter>, std::less<>> topic_writers_;
  std::map<std::string, std::unique_ptr<dataflow::LineWriter>, std::less<>> line_writers_;
  dataflow::SourceBatch batch_;
  Watermark watermark_ = Watermark::Min();
  // Idle close (TopicSourceOptions::idle_timeout): when input last came, and the watermark then.
  std::chrono::milliseconds idle_timeout_{0};
  std::chrono::steady_clock::time_point last_input_ = std::chrono::steady_clock::now();
  Watermark watermark_at_last_input_ = Watermark::Min();
  int64_t current_position_ = 0;
  int64_t records_in_ = 0;
  int64_t dead_letters_ = 0;
  int64_t late_ = 0;
  int64_t expiry_visits_ = 0;
  bool finished_ = false;
};

}  // namespace weir::app
