// weir-cpp-worker: a remote worker in C++ with built-in functions, to measure what the protocol
// itself costs (the same function native and remote) and to test the invoker against a worker
// that is not Python.
//
//   weir-cpp-worker count-idle
//
// It speaks on the fd WEIR_WORKER_FD names (README.md, "Wire protocol"): hello -> ready, then
// invoke -> result, a handler's exception -> error. It exits 0 when Weir closes the socket and
// 2 on anything it cannot read.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "process/invoker.h"
#include "process/protocol.h"

namespace weir::process {
namespace {

// Counts inputs per key in state "count"; a key idle for a minute of event time emits
// {"key": K, "count": N} and forgets its count.
class CountIdle final : public ProcessFunction {
 public:
  void OnInput(const ProcessActivation& activation, ProcessResult& result) override {
    const Value* count = activation.State("count");
    result.Set("count", (count != nullptr ? count->as_int() : 0) + 1);
    result.SetTimer("idle", activation.time + kIdleMs);
  }
  void OnTimer(const ProcessActivation& activation, ProcessResult& result) override {
    const Value* count = activation.State("count");
    result.Emit(Value::MakeObject({{"key", activation.key.ToValue()},
                                   {"count", count != nullptr ? count->as_int() : 0}}),
                activation.time);
    result.Clear("count");
  }

 private:
  static constexpr int64_t kIdleMs = 60'000;
};

std::shared_ptr<ProcessFunction> FunctionNamed(std::string_view name) {
  if (name == "count-idle") return std::make_shared<CountIdle>();
  return nullptr;
}

// Lines from a blocking fd.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // False at the end of input (a partial last line is dropped: Weir always ends its lines).
  bool Next(std::string_view& line) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
    size_t scanned = 0;
    while (true) {
      size_t end = buffer_.find('\n', scanned);
      if (end != std::string::npos) {
        consumed_ = end + 1;
        line = std::string_view(buffer_).substr(0, end);
        return true;
      }
      scanned = buffer_.size();
      char chunk[64 << 10];
      ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
  size_t consumed_ = 0;
};

bool WriteLine(int fd, std::string_view line) {
  while (!line.empty()) {
    ssize_t n = write(fd, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    line.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

int Serve(int fd, std::shared_ptr<ProcessFunction> function) {
  NativeInvoker invoker(std::move(function));
  LineReader reader(fd);
  std::string_view line;
  if (!reader.Next(line)) return 0;
  auto hello = ParseHello(line);
  if (!hello.ok()) {
    std::fprintf(stderr, "weir-cpp-worker: %s\n", hello.status().message().c_str());
    return 2;
  }
  std::string out;
  AppendReady(out);
  if (!WriteLine(fd, out)) return 0;
  Value document;
  Call call;
  std::vector<ProcessResult> results;
  while (reader.Next(line)) {
    Status read = ParseInvoke(line, document, call);
    if (!read.ok()) {
      std::fprintf(stderr, "weir-cpp-worker: %s\n", read.message().c_str());
      return 2;
    }
    out.clear();
    if (std::optional<InvokeError> error = invoker.Invoke(call, results)) {
      AppendError(call.call, error->reason, out);
    } else {
      AppendResults(call.call, results, out);
    }
    if (!WriteLine(fd, out)) return 0;
  }
  return 0;
}

}  // namespace
}  // namespace weir::process

int main(int argc, char** argv) {
  auto function = argc == 2 ? weir::process::FunctionNamed(argv[1]) : nullptr;
  const char* fd_text = std::getenv("WEIR_WORKER_FD");
  if (function == nullptr || fd_text == nullptr) {
    std::fprintf(stderr,
                 "usage: WEIR_WORKER_FD=N weir-cpp-worker count-idle\n"
                 "(run by Weir as a process step's worker command)\n");
    return 2;
  }
  return weir::process::Serve(std::atoi(fd_text), std::move(function));
}
