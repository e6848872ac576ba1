#include "process/count_idle.h"

namespace weir::process {

void CountIdle::OnInput(const ProcessActivation& activation, ProcessResult& result) {
  const Value* count = activation.State("count");
  result.Set("count", (count != nullptr ? count->as_int() : 0) + 1);
  result.SetTimer("idle", activation.time + idle_ms_);
}

void CountIdle::OnTimer(const ProcessActivation& activation, ProcessResult& result) {
  const Value* count = activation.State("count");
  result.Emit(Value::MakeObject({{"key", activation.key.ToValue()},
                                 {"count", count != nullptr ? count->as_int() : 0}}),
              activation.time);
  result.Clear("count");
}

ProcessOptions CountIdleOptions() {
  ProcessOptions options;
  options.id = "count_idle";
  options.state = {"count"};
  options.timers = {"idle"};
  return options;
}

}  // namespace weir::process
