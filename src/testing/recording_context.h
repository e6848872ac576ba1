// A TaskContext for tests of sources: it records the dead letters a source sends, and fails the
// test if the source calls anything else (a source uses nothing else of its context).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dataflow/task_context.h"

namespace weir::testing {

class RecordingContext : public dataflow::TaskContext {
 public:
  struct RawLetter {
    std::string reason;
    Value position;
    std::string raw;
  };

  state::KeyValueStore& Store(std::string_view) override { Unused("Store"); }
  dataflow::TopicWriter& TopicOutput(std::string_view) override { Unused("TopicOutput"); }
  dataflow::LineWriter& FileOutput(std::string_view) override { Unused("FileOutput"); }
  dataflow::LineWriter& StdoutOutput() override { Unused("StdoutOutput"); }
  void CountDelivered() override { Unused("CountDelivered"); }
  void DeadLetter(std::string_view, const Record&) override { Unused("DeadLetter"); }
  void DeadLetterHeld(std::string_view, const Record&, const Delivery&) override {
    Unused("DeadLetterHeld");
  }
  void RawDeadLetter(std::string_view reason, Value position, std::string_view raw) override {
    raw_letters.push_back({std::string(reason), std::move(position), std::string(raw)});
  }
  void CountLate() override { Unused("CountLate"); }
  void CountUserFunctionFailure() override { Unused("CountUserFunctionFailure"); }
  void CountExpiryVisits(int64_t) override { Unused("CountExpiryVisits"); }
  Watermark watermark() const override { return Watermark::Min(); }
  Delivery HoldCurrent() override { Unused("HoldCurrent"); }
  void Resolve(const Delivery&, dataflow::Resolution) override { Unused("Resolve"); }
  bool HasSelfRedeliveringInput() const override { Unused("HasSelfRedeliveringInput"); }
  void CountEvicted() override { Unused("CountEvicted"); }
  Delivery CurrentDelivery() const override { Unused("CurrentDelivery"); }
  ProcessCounters& process_counters() override { Unused("process_counters"); }

  std::vector<RawLetter> raw_letters;

 private:
  [[noreturn]] static void Unused(const char* what) {
    ADD_FAILURE() << "a source called TaskContext::" << what;
    std::abort();
  }
};

}  // namespace weir::testing
