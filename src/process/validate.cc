#include "process/validate.h"

#include <algorithm>

#include "weir/types.h"

namespace weir::process {
namespace {

std::optional<size_t> IndexOf(const std::vector<std::string>& names, std::string_view name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

std::string Quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string Over(std::string_view what, int64_t value, int64_t limit) {
  return std::string(what) + " would be " + std::to_string(value) + ", over the limit " +
         std::to_string(limit);
}

}  // namespace

bool KeyFootprint::holds_anything() const {
  for (const auto& s : state_bytes) {
    if (s) return true;
  }
  for (const auto& t : timers) {
    if (t) return true;
  }
  return false;
}

int64_t JsonBytes(const Value& value) {
  thread_local std::string buffer;
  buffer.clear();
  value.AppendJson(buffer);
  return static_cast<int64_t>(buffer.size());
}

std::variant<ValidatedCall, CallError> ValidateCall(const ProcessOptions& options,
                                                    std::span<const ProcessActivation> activations,
                                                    std::span<const KeyFootprint* const> footprints,
                                                    const std::vector<ProcessResult>& results,
                                                    const StepTotals& totals) {
  const ProcessLimits& limits = options.limits;
  auto refuse = [](std::string reason) { return CallError{std::move(reason)}; };
  if (results.size() != activations.size()) {
    return refuse(std::to_string(results.size()) + " results for " +
                  std::to_string(activations.size()) + " activations");
  }
  ValidatedCall validated{std::vector<size_t>(activations.size(), results.size()), {}};
  for (size_t r = 0; r < results.size(); ++r) {
    // Activation ids ascend along a call: a binary search finds the result's.
    auto found = std::lower_bound(activations.begin(), activations.end(), results[r].id,
                                  [](const ProcessActivation& a, int64_t id) { return a.id < id; });
    if (found == activations.end() || found->id != results[r].id) {
      return refuse("a result for activation " + std::to_string(results[r].id) +
                    ", which is not in the call");
    }
    const size_t a = static_cast<size_t>(found - activations.begin());
    if (validated.result_of[a] != results.size()) {
      return refuse("two results for activation " + std::to_string(results[r].id));
    }
    validated.result_of[a] = r;
  }

  validated.totals_after.reserve(activations.size());
  StepTotals running = totals;
  int64_t output_rows = 0;
  int64_t output_bytes = 0;
  for (size_t a = 0; a < activations.size(); ++a) {
    const ProcessResult& result = results[validated.result_of[a]];
    const ProcessActivation& activation = activations[a];
    const KeyFootprint& before = *footprints[a];
    auto where = [&] { return "result for activation " + std::to_string(result.id) + ": "; };

    for (const ProcessOutput& output : result.outputs) {
      if (output.time < activation.time) {
        return refuse(where() + "an output at " + std::to_string(output.time) +
                      " is before the activation's time " + std::to_string(activation.time));
      }
      ++output_rows;
      output_bytes += JsonBytes(output.value);
    }

    KeyFootprint after = before;
    for (size_t i = 0; i < result.state.size(); ++i) {
      const ProcessStateChange& change = result.state[i];
      const std::optional<size_t> name = IndexOf(options.state, change.name);
      if (!name) return refuse(where() + "state " + Quoted(change.name) + " is not declared");
      for (size_t j = 0; j < i; ++j) {
        if (result.state[j].name == change.name) {
          return refuse(where() + "state " + Quoted(change.name) + " is changed twice");
        }
      }
      after.state_bytes[*name] =
          change.set ? std::optional<int64_t>(JsonBytes(*change.set)) : std::nullopt;
      running.state_bytes +=
          after.state_bytes[*name].value_or(0) - before.state_bytes[*name].value_or(0);
    }
    for (size_t i = 0; i < result.timers.size(); ++i) {
      const ProcessTimerChange& change = result.timers[i];
      const std::optional<size_t> name = IndexOf(options.timers, change.name);
      if (!name) return refuse(where() + "timer " + Quoted(change.name) + " is not declared");
      for (size_t j = 0; j < i; ++j) {
        if (result.timers[j].name == change.name) {
          return refuse(where() + "timer " + Quoted(change.name) + " is changed twice");
        }
      }
      std::optional<int64_t> at = change.at;
      if (at && *at <= activation.watermark) {
        if (activation.watermark != Watermark::Max().value()) {
          return refuse(where() + "timer " + Quoted(change.name) + " at " + std::to_string(*at) +
                        " is not after the watermark " + std::to_string(activation.watermark));
        }
        at.reset();  // dropped: it could never fire
      }
      after.timers[*name] = at;
      running.timers += (at ? 1 : 0) - (before.timers[*name] ? 1 : 0);
    }
    running.keys += (after.holds_anything() ? 1 : 0) - (before.holds_anything() ? 1 : 0);

    if (running.keys > limits.max_keys) {
      return refuse(where() + Over("keys with state or timers", running.keys, limits.max_keys));
    }
    if (running.timers > limits.max_timers) {
      return refuse(where() + Over("pending timers", running.timers, limits.max_timers));
    }
    if (running.state_bytes > limits.max_state_bytes) {
      return refuse(where() + Over("state bytes", running.state_bytes, limits.max_state_bytes));
    }
    validated.totals_after.push_back(running);
  }
  if (output_rows > limits.max_output_rows) {
    return refuse(Over("outputs in the call", output_rows, limits.max_output_rows));
  }
  if (output_bytes > limits.max_output_bytes) {
    return refuse(Over("output bytes in the call", output_bytes, limits.max_output_bytes));
  }
  return validated;
}

}  // namespace weir::process
