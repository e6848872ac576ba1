// The fields of ProcessLimits by name, in one table: the names the YAML form, the wire
// protocol's hello and the step's fingerprint use, and what each checks against.
#pragma once

#include <cstdint>
#include <string_view>

#include "weir/process.h"

namespace weir::process {

struct LimitField {
  std::string_view name;  // the C++ member's name
  int64_t ProcessLimits::*member;
};

inline constexpr LimitField kLimitFields[] = {
    {"max_keys", &ProcessLimits::max_keys},
    {"max_timers", &ProcessLimits::max_timers},
    {"max_state_bytes", &ProcessLimits::max_state_bytes},
    {"max_activations_per_call", &ProcessLimits::max_activations_per_call},
    {"max_input_rows", &ProcessLimits::max_input_rows},
    {"max_input_bytes", &ProcessLimits::max_input_bytes},
    {"max_output_rows", &ProcessLimits::max_output_rows},
    {"max_output_bytes", &ProcessLimits::max_output_bytes},
    {"max_timer_callbacks_per_step", &ProcessLimits::max_timer_callbacks_per_step},
};

}  // namespace weir::process
