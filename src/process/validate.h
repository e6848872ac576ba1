// Checking a call's results before any of it is applied (the process module's README: "Validation
// before anything is applied"). Pure: it reads the call, the results, what each activation's key
// holds and the step's totals, and says the first rule broken or what the totals become.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "weir/process.h"

namespace weir::process {

// What an activation's key held when the activation was made: for each declared state name (in
// ProcessOptions::state order) its size as JSON when present, and for each declared timer name
// its time when pending (a fired timer is no longer pending).
struct KeyFootprint {
  std::vector<std::optional<int64_t>> state_bytes;
  std::vector<std::optional<int64_t>> timers;
  bool holds_anything() const;
};

// What the step holds across all its keys (limits max_keys, max_timers, max_state_bytes).
struct StepTotals {
  int64_t keys = 0;  // keys holding state or timers
  int64_t timers = 0;
  int64_t state_bytes = 0;
  friend bool operator==(const StepTotals&, const StepTotals&) = default;
};

struct ValidatedCall {
  // result_of[i]: the index in `results` of activations[i]'s result.
  std::vector<size_t> result_of;
  // totals_after[i]: the step's totals once the results of activations[0..i] are applied.
  std::vector<StepTotals> totals_after;
};

// The first rule a call's results break, in the user's words ("result for activation 7: timer
// 'idle' at 1000 is not after the watermark 1000"), or what applying them leads to. `footprints`
// is parallel to `activations`, whose ids ascend (as a call's do). Rules: exactly one result per
// activation (no unknown or duplicate id); declared state and timer names only, each at most once
// per result; a timer set after its activation's watermark (at the end of input, when the watermark
// is +infinity, a set is dropped, as it can never fire); no output before its activation's time;
// limits on output rows and bytes per call, and on the step's keys, timers and state bytes after
// each activation's result in activation order (so that any prefix of a valid call is valid).
struct CallError {
  std::string reason;
};
std::variant<ValidatedCall, CallError> ValidateCall(const ProcessOptions& options,
                                                    std::span<const ProcessActivation> activations,
                                                    std::span<const KeyFootprint* const> footprints,
                                                    const std::vector<ProcessResult>& results,
                                                    const StepTotals& totals);

// The size of a value as compact JSON, as limits count it.
int64_t JsonBytes(const Value& value);

}  // namespace weir::process
