// What a task gives the operators it runs: state, outputs, dead letters, the watermark.
// Implemented by app::Task. Every call is made on the task's thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/delivery.h"
#include "dataflow/outputs.h"
#include "state/task_store.h"
#include "weir/process.h"
#include "weir/record.h"
#include "weir/types.h"

namespace weir::dataflow {

using weir::Delivery;
using weir::Resolution;

class TaskContext {
 public:
  virtual ~TaskContext() = default;
  // The store of a stateful step (named after the step). REQUIRES: the step is stateful.
  virtual state::KeyValueStore& Store(std::string_view step_name) = 0;
  // REQUIRES: the topic / path is an output of the compiled plan.
  virtual TopicWriter& TopicOutput(std::string_view topic) = 0;
  virtual LineWriter& FileOutput(std::string_view path) = 0;
  virtual LineWriter& StdoutOutput() = 0;
  // Counts a result a sink delivered without an output buffer (discard, ForEach): it is out, as
  // if written.
  virtual void CountDelivered() = 0;
  // Sends the record being processed to the dead-letter topic, with the reason and the input
  // position it came from, and counts it.
  virtual void DeadLetter(std::string_view reason, const Record& record) = 0;
  // Where the record being processed came from, for a DeadLetterHeld later in the batch (a step
  // that gathers records before handling them). Does not hold the record.
  virtual Delivery CurrentDelivery() const = 0;
  // The same for a record a step held, with the position it was delivered from.
  virtual void DeadLetterHeld(std::string_view reason, const Record& record,
                              const Delivery& delivery) = 0;
  // Sends input that never became a record (a malformed line) to the dead-letter topic: the
  // reason, where it was (`position`, e.g. {"line": 12}) and its raw bytes.
  virtual void RawDeadLetter(std::string_view reason, Value position, std::string_view raw) = 0;
  // Counts a record a user function failed on (user_function.h); it has been dead-lettered.
  virtual void CountUserFunctionFailure() = 0;
  // Counts an event a window step found late (it has already gone where late events go).
  virtual void CountLate() = 0;
  // Counts what closing windows looked at (windows and index entries, closed ones included), so
  // that expiry's cost per record can be seen to stay flat as stored windows grow.
  virtual void CountExpiryVisits(int64_t visits) = 0;
  virtual Watermark watermark() const = 0;
  // What process steps count (weir/process.h), summed into RunSummary::process.
  virtual ProcessCounters& process_counters() = 0;

  // Keeps the record being processed unresolved (its position does not commit, a broker does
  // not get its acknowledgement) until Resolve is called with the returned delivery.
  virtual Delivery HoldCurrent() = 0;
  // kAck: processed (commits with the next checkpoint); kNak: deliver it again (the task feeds
  // it to the same input again, or the broker redelivers it); kTerm: never deliver it again.
  // REQUIRES: `delivery` came from HoldCurrent and was not resolved yet.
  virtual void Resolve(const Delivery& delivery, Resolution resolution) = 0;
  // Whether an input of the task is a broker that redelivers by itself (JetStream): what was
  // processed may come again after a crash, so steps that emit once must deduplicate.
  virtual bool HasSelfRedeliveringInput() const = 0;
  // Counts a join group evicted (timeout below quorum, max_pending).
  virtual void CountEvicted() = 0;
};

}  // namespace weir::dataflow
