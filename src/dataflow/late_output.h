// Where a stateful step (windows, joins) sends the events it found late.
#pragma once

#include <cstdint>
#include <string_view>

#include "dataflow/outputs.h"
#include "dataflow/task_context.h"
#include "weir/record.h"

namespace weir::dataflow {

// Counts each late event and writes it, under its own key and time, as
// {"reason", "late_by_ms", "value": <the event's value>} to the step's late topic and late file
// (either may be absent). Threads: the task's. REQUIRES: the topic and file are outputs of the
// compiled plan.
// Why an event is late when it arrives after the input ended in an earlier run (the task's
// watermark is Watermark::Max()): that run closed every window and join state, for every key,
// so whatever comes after is late (window.h).
inline constexpr std::string_view kInputEndedReason =
    "input ended in an earlier run, which closed every window";

class LateOutput {
 public:
  // Empty `topic` or `file`: none.
  LateOutput(TaskContext& ctx, std::string_view topic, std::string_view file);

  void Write(const Record& event, std::string_view reason, int64_t late_by_ms);

 private:
  TaskContext& ctx_;
  TopicWriter* topic_ = nullptr;
  LineWriter* file_ = nullptr;
};

}  // namespace weir::dataflow
