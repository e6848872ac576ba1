// CountIdle: "count + idle timer per key", the function the process benchmarks run natively
// (`weir bench process --handler native`) and in the C++ remote worker (`weir-cpp-worker
// count-idle`), so the two measure the same work and differ only by the protocol.
//
// Per input: state "count" + 1, timer "idle" set (replacing) at the input's time + idle_ms. When
// "idle" fires: emits {"key": K, "count": N} at the timer's time and clears "count".
// Declares state ["count"] and timers ["idle"] (CountIdleOptions).
// Threads: immutable; any number of tasks may call it at once.
#pragma once

#include <cstdint>

#include "weir/process.h"

namespace weir::process {

class CountIdle final : public ProcessFunction {
 public:
  explicit CountIdle(int64_t idle_ms) : idle_ms_(idle_ms) {}
  void OnInput(const ProcessActivation& activation, ProcessResult& result) override;
  void OnTimer(const ProcessActivation& activation, ProcessResult& result) override;

  static constexpr int64_t kDefaultIdleMs = 60'000;

 private:
  int64_t idle_ms_;
};

// The descriptor of a count-idle step: id "count_idle", state "count", timer "idle".
ProcessOptions CountIdleOptions();

}  // namespace weir::process
