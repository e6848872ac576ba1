// The remote worker protocol: JSON lines between Weir and a worker (README.md, "Wire protocol",
// is normative). One compact JSON object per line, '\n'-terminated.
//
//   engine -> worker  hello, then invoke per call   (Append* below, engine side)
//   worker -> engine  ready, then result or error   (Parse* below, engine side)
//
// Both directions are here, encoders and strict decoders, so that the C++ worker (cpp_worker.cc)
// speaks exactly what the engine reads. A decoder refuses anything it does not know: an unknown
// field anywhere, a wrong type, a timer change that both sets and cancels, a time that is not an
// int64. The error (kInvalidArgument) says where: "result 3: unknown field 'outptus'" (results
// and their items are numbered from 0 by position). Decoders check shape only; whether ids match
// the call, names are declared, timers come after the watermark and limits hold is the engine's
// validation (validate.h).
//
// Keys travel as JSON (Key::AppendJson). A key read back: a string is Key::String, an integer
// Key::Int, null the null key, any other value Key::Json (so a kBytes key comes back a kString).
// Threads: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "process/invoker.h"
#include "weir/key.h"
#include "weir/process.h"
#include "weir/status.h"
#include "weir/value.h"

namespace weir::process {

inline constexpr int64_t kProtocolVersion = 1;

// Engine side. Each Append* appends one line, '\n' included.
void AppendHello(const ProcessOptions& options, std::string& out);
void AppendInvoke(const Call& call, std::string& out);
// OK if `line` is the ready of kProtocolVersion; otherwise what is wrong ("the worker speaks
// protocol 2, Weir speaks 1").
Status ParseReady(std::string_view line);

// A worker's answer to an invoke.
struct WorkerReply {
  int64_t call = 0;
  std::optional<std::string> error;  // set for {"type":"error"}: the worker's message
};
// Decodes a result or error line; a result's activations go to `results` (cleared first).
Result<WorkerReply> ParseReply(std::string_view line, std::vector<ProcessResult>& results);

// Worker side.
Result<ProcessOptions> ParseHello(std::string_view line);
void AppendReady(std::string& out);
// Decodes an invoke into `call`, whose activations point into `document` (which holds the line's
// values and must outlive them).
Status ParseInvoke(std::string_view line, Value& document, Call& call);
void AppendResults(int64_t call, const std::vector<ProcessResult>& results, std::string& out);
void AppendError(int64_t call, std::string_view message, std::string& out);

// A key as the protocol carries it, read back (the rule above).
Key KeyFromJson(const Value& json);

}  // namespace weir::process
