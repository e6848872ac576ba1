// weir-cpp-worker: a remote worker in C++ with built-in functions, to measure what the protocol
// itself costs (the same function native and remote) and to test the invoker against a worker
// that is not Python.
//
//   weir-cpp-worker count-idle [IDLE_MS]   (process/count_idle.h; IDLE_MS default 60000)
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

#include "process/count_idle.h"
#include "process/invoker.h"
#include "process/protocol.h"

namespace weir::process {
namespace {

// The function `name` with its arguments; nullptr for an unknown name or bad arguments.
std::shared_ptr<ProcessFunction> FunctionNamed(std::string_view name, const char* argument) {
  if (name != "count-idle") return nullptr;
  if (argument == nullptr) return std::make_shared<CountIdle>(CountIdle::kDefaultIdleMs);
  char* end = nullptr;
  const long long idle_ms = std::strtoll(argument, &end, 10);
  if (*argument == '\0' || *end != '\0' || idle_ms <= 0) return nullptr;
  return std::make_shared<CountIdle>(idle_ms);
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
  auto function = argc == 2 || argc == 3
                      ? weir::process::FunctionNamed(argv[1], argc == 3 ? argv[2] : nullptr)
                      : nullptr;
  const char* fd_text = std::getenv("WEIR_WORKER_FD");
  if (function == nullptr || fd_text == nullptr) {
    std::fprintf(stderr,
                 "usage: WEIR_WORKER_FD=N weir-cpp-worker count-idle [IDLE_MS]\n"
                 "(run by Weir as a process step's worker command)\n");
    return 2;
  }
  return weir::process::Serve(std::atoi(fd_text), std::move(function));
}
