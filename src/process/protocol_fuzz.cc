// Fuzz target for the remote worker protocol's decoders (protocol.h), which read what a worker
// (any program) sends, and the worker side's, which read what Weir sends. Built as a libFuzzer
// target with WEIR_FUZZ and, always, as process_protocol_fuzz_replay (testing/fuzz_replay_main.cc)
// over the seed corpus and deterministic mutations of it.
//
// Invariants: no decoder crashes or throws; a result that decodes re-encodes to a line that
// decodes to the same results; a decoded hello or invoke re-encodes to one that decodes the same.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "process/protocol.h"

namespace weir::process {
namespace {

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

void CheckReply(std::string_view line) {
  std::vector<ProcessResult> results;
  auto reply = ParseReply(line, results);
  if (!reply.ok()) {
    Require(!reply.status().message().empty(), "a refusal says why");
    return;
  }
  std::string again;
  if (reply->error) {
    AppendError(reply->call, *reply->error, again);
  } else {
    AppendResults(reply->call, results, again);
  }
  std::vector<ProcessResult> reread;
  auto second = ParseReply(again, reread);
  Require(second.ok(), "a re-encoded reply decodes");
  Require(second->call == reply->call && second->error == reply->error, "same call and error");
  Require(reread == results, "same results");
}

void CheckWorkerSide(std::string_view line) {
  if (auto hello = ParseHello(line); hello.ok()) {
    std::string again;
    AppendHello(*hello, again);
    auto reread = ParseHello(again);
    Require(reread.ok(), "a re-encoded hello decodes");
    Require(reread->id == hello->id && reread->state == hello->state &&
                reread->timers == hello->timers && reread->limits == hello->limits,
            "same hello");
  }
  Value document;
  Call call;
  if (ParseInvoke(line, document, call).ok()) {
    std::string again;
    AppendInvoke(call, again);
    Value document_again;
    Call reread;
    Require(ParseInvoke(again, document_again, reread).ok(), "a re-encoded invoke decodes");
    Require(reread.call == call.call && reread.activations.size() == call.activations.size(),
            "same invoke");
  }
  (void)ParseReady(line);
}

}  // namespace
}  // namespace weir::process

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  weir::process::CheckReply(line);
  weir::process::CheckWorkerSide(line);
  return 0;
}
