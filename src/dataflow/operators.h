// Physical operators: one instance per step per task, pushing records down the step tree.
//
// Contract: Process takes a record by rvalue and either drops it, changes it and forwards it,
// or forwards copies. A step with several children hands every child but the last the record
// through ProcessShared (it keeps using it), the last one through Process.
// Operators never block and never lock; a storage failure is recorded and makes the task stop
// at the end of the batch (Task::RunBatch checks TakeError).
// Threads: a task's operators run on its thread only.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataflow/task_context.h"
#include "weir/record.h"

namespace weir::dataflow {

// Operator::Prefetch's stages, and how many records ahead of the one being processed each runs:
// the key's cache slot, then its node, then the node's value (state/task_store.h). 24/12/6 and
// 12/6/3 measured the same as these (tumbling windows, 100k keys).
inline constexpr int kPrefetchStages = 3;
inline constexpr std::array<size_t, kPrefetchStages> kPrefetchAhead = {16, 8, 4};

// The task's record being processed, while its value is still exactly what its source parsed
// from JSON text: a JSON sink then writes that text instead of encoding the value again. The
// task sets it before it hands a record to its steps and resets it after; every forward resets
// it (Operator::Forward), except those of the steps that pass a record on without touching its
// value (Operator::ForwardUnchanged). One per task: a Forward in one branch of a fan-out resets
// it for the branches after it too (they then encode: never wrong, only slower).
struct UnchangedInput {
  const Value* value = nullptr;  // the source's record's value; nullptr: none (any more)
  std::string_view json;         // its text, valid while `value` is set
};

class Operator {
 public:
  virtual ~Operator() = default;
  // A record to process. The caller may reuse `record` once this returns (a source's slot, a
  // join's pair): what a step keeps it moves or copies out before returning, never a reference.
  virtual void Process(Record&& record) = 0;
  // The same for a record the caller still needs afterwards (a fan-out's children but the
  // last). The default processes a copy; a step that reads the record before deciding what to
  // forward (a filter, a map) overrides it to copy only what it forwards, a sink to copy nothing.
  virtual void ProcessShared(const Record& record) { Process(Record(record)); }
  // The task's watermark moved forward (Watermark::Max() at the end of input). Operators that
  // hold records back (windows) release them here; the default passes it on.
  virtual void OnWatermark(Watermark watermark);
  // A record this task will process soon: a stateful step touches its key's state now so that
  // the cache misses of several records overlap (stage 0 furthest ahead, then 1, then 2, the
  // nearest: each stage reads what the one before brought into cache). A hint: it changes nothing.
  // The default does nothing; a step that overrides it adds itself in CollectPrefetching, and the
  // task calls it directly, not through the steps before it. The task calls stage s for the record
  // kPrefetchAhead[s] places ahead of the one it processes.
  virtual void Prefetch(const Record&, int) {}
  // Appends the steps from this one down whose Prefetch does something, stopping at steps that
  // do not see the task's input records as they are (a multi-input step's port, a stateful step
  // itself). The default appends its children's.
  virtual void CollectPrefetching(std::vector<Operator*>& out);
  // The first error a step hit in this batch (a state read, a failed output), or OK.
  Status TakeError();
  // An input of the task has ended while others go on (its watermark is final). The default
  // passes it on; a multi-input step learns which of its inputs it was.
  virtual void OnInputEnd();
  // The task has processed a batch (after OnWatermark, if the watermark moved). Steps that
  // gather records to hand them over together (process functions) finish with them here, so
  // nothing is in flight between batches, where checkpoints are taken. The default passes it on.
  virtual void OnBatchEnd();

  void AddChild(Operator* child) { children_.push_back(child); }
  // The task's UnchangedInput, which this step's forwards reset and its sink reads; a step of no
  // task's (a test's) has none.
  void set_unchanged_input(UnchangedInput* unchanged) { unchanged_ = unchanged; }

 protected:
  void Forward(Record&& record);
  // Forward for a step that passes `record` on with its value untouched (a filter).
  void ForwardUnchanged(Record&& record);
  // The JSON text `value` was parsed from if it is the task's unchanged input (UnchangedInput),
  // else empty.
  std::string_view UnchangedJson(const Value& value) const {
    return unchanged_ != nullptr && unchanged_->value == &value ? unchanged_->json
                                                                : std::string_view();
  }
  // Forwards `record` with its value replaced by `result`, then gives it its input value back.
  // The record is usually its source's slot (RecordSlots), handed down by reference: keeping
  // the input's shape there lets the source's next in-place write reuse that memory instead of
  // rebuilding the value field by field. What the steps after this one keep they have moved or
  // copied out of `record` already.
  void ForwardReplacingValue(Record& record, Value result);
  // The same, then gives `result` back as the steps after this one left it: a step that keeps
  // its result to write the next one into reuses its memory, unless a later step took it.
  void ForwardReplacingValueKeepingResult(Record& record, Value& result);
  void Fail(Status status) {
    if (error_.ok()) error_ = std::move(status);
  }

 private:
  std::vector<Operator*> children_;
  Status error_;
  UnchangedInput* unchanged_ = nullptr;
};

// A step with several inputs (joins): each parent's records reach it through a port.
class MultiInputOperator : public Operator {
 public:
  virtual void ProcessInput(int input, Record&& record) = 0;
  // Every record of `input` has been processed and no more will come.
  virtual void OnInputEnded(int input) { (void)input; }
  void Process(Record&& record) override { ProcessInput(0, std::move(record)); }
};

// The child a multi-input step's parent `input` forwards to. The task sends watermarks down
// every input's chain; only input 0's port passes them on, so the step sees each once.
std::unique_ptr<Operator> MakeInputPort(MultiInputOperator& step, int input);

}  // namespace weir::dataflow
