// Keyed process functions: user code per key with engine-owned state and event-time timers
// (Stream::Process; YAML `process:` for a worker in any language, src/process/README.md).
//
// The engine owns every value and timer. A handler sees immutable activations (an input record,
// or a timer that fired) with the key's declared state, and returns proposed changes: outputs,
// state sets and clears, timer sets and cancels. The engine validates every result of a call
// before it applies any of it, and applies them, with the input positions, exactly once (they
// commit with the checkpoint).
//
// Semantics (the process module's README is normative):
//   - An activation's `time` is its input's event time, or its timer's time. `state` holds the
//     key's declared values that are present (a present JSON null is present).
//   - A timer is one per (key, name): setting it again replaces it. It fires once the task's
//     watermark reaches its time (watermark >= at), in (time, key, name) order, right after the
//     input that moved the watermark and before the next input. A timer must be set after the
//     activation's watermark, so a timer set by an activation fires in a later round. At the end
//     of a bounded input the watermark is +infinity and every pending timer fires; a timer set
//     then can never fire and is dropped (counted).
//   - An output's time may not be before its activation's time; its key defaults to the
//     activation's key.
//   - A result that breaks a rule or a limit refuses its whole call, which is retried, then split
//     until the activations that fail alone are found: those go to the dead-letter topic, the
//     rest are applied. A native handler that throws fails its call the same way.
//
// Example: alert when a user has been idle for a minute of event time.
//
//   struct IdleAlert : weir::ProcessFunction {
//     void OnInput(const weir::ProcessActivation& a, weir::ProcessResult& r) override {
//       const weir::Value* n = a.State("n");
//       r.Set("n", weir::Value((n ? n->as_int() : 0) + 1));
//       r.SetTimer("idle", a.time + 60'000);  // replaces the pending one
//     }
//     void OnTimer(const weir::ProcessActivation& a, weir::ProcessResult& r) override {
//       r.Emit(weir::Value::MakeObject({{"user", a.key.ToValue()}, {"events", *a.State("n")}}),
//              a.time);
//       r.Clear("n");
//     }
//   };
//   stream.Process({.id = "idle-alert", .state = {"n"}, .timers = {"idle"}},
//                  std::make_shared<IdleAlert>())
//       .ToTopic("idle-users");
//
// Threads: a native ProcessFunction is called on the task threads, one call at a time per task
// but from several tasks at once: it must not keep mutable state of its own (that is what the
// engine's state is for) or must guard it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weir/key.h"
#include "weir/value.h"

namespace weir {

// What one activation sees. Pointers stay valid for the call only.
struct ProcessActivation {
  int64_t id = 0;  // from a checkpointed per-task sequence: a replay reproduces it
  Key key;
  int64_t time = 0;
  int64_t watermark = 0;         // the task's watermark when the activation was made
  const Value* input = nullptr;  // an input's value; nullptr for a timer
  std::string_view timer;        // the timer's name; empty for an input
  const Value* state = nullptr;  // an object: the key's declared values that are present

  bool is_timer() const { return input == nullptr; }
  // The state value `name`, or nullptr when absent.
  const Value* State(std::string_view name) const { return state->Find(name); }
};

struct ProcessOutput {
  Value value;
  int64_t time = 0;
  std::optional<Key> key;  // nullopt: the activation's key
  friend bool operator==(const ProcessOutput&, const ProcessOutput&) = default;
};

struct ProcessStateChange {
  std::string name;
  std::optional<Value> set;  // nullopt: clear
  friend bool operator==(const ProcessStateChange&, const ProcessStateChange&) = default;
};

struct ProcessTimerChange {
  std::string name;
  std::optional<int64_t> at;  // nullopt: cancel
  friend bool operator==(const ProcessTimerChange&, const ProcessTimerChange&) = default;
};

// What a handler proposes for one activation. Nothing here is applied until the engine has
// validated the whole call.
struct ProcessResult {
  int64_t id = 0;
  std::vector<ProcessOutput> outputs;
  std::vector<ProcessStateChange> state;  // names not listed stay as they are
  std::vector<ProcessTimerChange> timers;

  void Emit(Value value, int64_t time) { outputs.push_back({std::move(value), time, {}}); }
  void Emit(Value value, int64_t time, Key key) {
    outputs.push_back({std::move(value), time, std::move(key)});
  }
  void Set(std::string_view name, Value value) {
    state.push_back({std::string(name), std::move(value)});
  }
  void Clear(std::string_view name) { state.push_back({std::string(name), std::nullopt}); }
  void SetTimer(std::string_view name, int64_t at) { timers.push_back({std::string(name), at}); }
  void CancelTimer(std::string_view name) { timers.push_back({std::string(name), std::nullopt}); }
  friend bool operator==(const ProcessResult&, const ProcessResult&) = default;
};

// A native handler. `result.id` is set by the engine before the call.
class ProcessFunction {
 public:
  virtual ~ProcessFunction() = default;
  virtual void OnInput(const ProcessActivation& activation, ProcessResult& result) = 0;
  virtual void OnTimer(const ProcessActivation& activation, ProcessResult& result) {
    (void)activation;
    (void)result;
  }
};

// Per step; LaminarDB's defaults. A result that would go past one refuses its call.
struct ProcessLimits {
  int64_t max_keys = 100'000;                    // keys holding state or timers
  int64_t max_timers = 100'000;                  // pending timers
  int64_t max_state_bytes = 64 << 20;            // state values, as JSON
  int64_t max_activations_per_call = 256;        // the engine cuts calls to this
  int64_t max_input_rows = 4096;                 // per call (the engine cuts calls to it)
  int64_t max_input_bytes = 16 << 20;            // per call, input values as JSON
  int64_t max_output_rows = 4096;                // per call
  int64_t max_output_bytes = 16 << 20;           // per call, output values as JSON
  int64_t max_timer_callbacks_per_step = 256;    // timers fired per round; the rest wait
  friend bool operator==(const ProcessLimits&, const ProcessLimits&) = default;
};

// What the process steps of a run did (RunSummary::process).
struct ProcessCounters {
  int64_t activations = 0;       // applied: inputs and timers whose results took effect
  int64_t timers_fired = 0;      // timer activations applied
  int64_t calls = 0;             // calls whose results were applied
  int64_t refused = 0;           // attempts refused (handler error, crash, hang, invalid result)
  int64_t retries = 0;           // attempts after a refusal of the same call
  int64_t splits = 0;            // calls split in two after their retries were spent
  int64_t dead_lettered = 0;     // activations that failed alone: inputs and timers
  int64_t timers_dropped = 0;    // timers set at the end of input, which can never fire
  ProcessCounters& operator+=(const ProcessCounters& o) {
    activations += o.activations;
    timers_fired += o.timers_fired;
    calls += o.calls;
    refused += o.refused;
    retries += o.retries;
    splits += o.splits;
    dead_lettered += o.dead_lettered;
    timers_dropped += o.timers_dropped;
    return *this;
  }
};

// The descriptor of a process step: bound into the checkpoint, so a restart under another
// function id, version, state or timer names, limits or implementation digest is refused.
struct ProcessOptions {
  std::string id;                   // the function's name
  int64_t version = 1;
  std::vector<std::string> state;   // declared state names
  std::vector<std::string> timers;  // declared timer names
  ProcessLimits limits = {};
  // A refused call is tried this many more times before it is split.
  int32_t retries = 2;
  // Supplied by the application for a native function (say, a build id): a restart with another
  // digest is refused. Empty: not checked.
  std::string implementation_digest = {};
};

}  // namespace weir
