// How a process step calls its handler: one call holds activations of distinct keys and gets one
// result per activation back (or is refused whole). The step validates what comes back before it
// applies anything (validate.h); an invoker only delivers.
//
// Implementations: NativeInvoker (a ProcessFunction on the task thread, below) and
// RemoteInvoker (worker.h: a supervised child process or a socket, JSON lines).
//
// Threads: an invoker belongs to one task; Invoke is called on its thread, one call at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weir/process.h"
#include "weir/status.h"

namespace weir::process {

struct Call {
  int64_t call = 0;     // from the task's checkpointed sequence; a retry keeps it
  int32_t attempt = 1;  // 1, then 2, ... for the same call
  int64_t watermark = 0;
  std::vector<ProcessActivation> activations;
};

// Why an invoker gave no results, and what the step does about it.
//   kRefused: the call failed (a handler error, a crash, a hang, a protocol violation: the reason
//             says which); the step retries it, then splits it.
//   kFatal:   the handler cannot be reached any more (a remote worker's restart budget is spent):
//             the task stops with the reason.
enum class InvokeFailure { kRefused, kFatal };

struct InvokeError {
  InvokeFailure failure = InvokeFailure::kRefused;
  std::string reason;
};

class Invoker {
 public:
  virtual ~Invoker() = default;
  // Fills `results` (cleared first) with what the handler returned for `call`, in any order; the
  // step checks them against the call. On failure returns the error and `results` is unspecified.
  virtual std::optional<InvokeError> Invoke(const Call& call,
                                            std::vector<ProcessResult>& results) = 0;
  // Waited for before a retry (remote: a restart's backoff); 0 for a native handler.
  virtual std::chrono::milliseconds RetryDelay(int32_t attempt) const {
    (void)attempt;
    return {};
  }
};

// A native ProcessFunction: each activation's OnInput or OnTimer in order; an exception refuses
// the call, naming the activation and what it threw.
class NativeInvoker final : public Invoker {
 public:
  explicit NativeInvoker(std::shared_ptr<ProcessFunction> function)
      : function_(std::move(function)) {}
  std::optional<InvokeError> Invoke(const Call& call, std::vector<ProcessResult>& results) override;

 private:
  std::shared_ptr<ProcessFunction> function_;
};

}  // namespace weir::process
