#include "process/invoker.h"

#include <exception>

namespace weir::process {

std::optional<InvokeError> NativeInvoker::Invoke(const Call& call,
                                                 std::vector<ProcessResult>& results) {
  results.resize(call.activations.size());
  for (size_t i = 0; i < call.activations.size(); ++i) {
    const ProcessActivation& activation = call.activations[i];
    ProcessResult& result = results[i];
    result.id = activation.id;
    result.outputs.clear();
    result.state.clear();
    result.timers.clear();
    std::string what;
    try {
      if (activation.is_timer()) {
        function_->OnTimer(activation, result);
      } else {
        function_->OnInput(activation, result);
      }
      continue;
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
    return InvokeError{InvokeFailure::kRefused,
                       "activation " + std::to_string(activation.id) + " threw: " + what};
  }
  return std::nullopt;
}

}  // namespace weir::process
