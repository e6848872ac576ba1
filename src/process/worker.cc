#include "process/worker.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "core/parse.h"
#include "process/protocol.h"

extern char** environ;

namespace weir::process {

namespace {

using Clock = std::chrono::steady_clock;

std::string ErrnoText(int err) { return std::strerror(err); }

// Writes one whole line to Weir's stderr in a single write, so that lines of several workers
// (and of Weir) do not interleave mid-line.
void LogLine(std::string_view step, std::string_view text) {
  std::string line = "weir: [process " + std::string(step) + "] " + std::string(text) + "\n";
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report it
    written += static_cast<size_t>(n);
  }
}

// Milliseconds from now to `deadline` for poll(2): 0 once it has passed.
int PollTimeout(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// The lines a child writes to its stdout and stderr, copied to Weir's stderr by a thread of its
// own. Lines longer than kMaxLogLine are cut into pieces of that size. Destruction drains what
// the pipes hold (the child should be gone by then) and joins the thread.
class OutputForwarder {
 public:
  OutputForwarder(std::string step, int stdout_fd, int stderr_fd) : step_(std::move(step)) {
    streams_[0].fd = stdout_fd;
    streams_[1].fd = stderr_fd;
    if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    for (Stream& stream : streams_) fcntl(stream.fd, F_SETFL, O_NONBLOCK);
    thread_ = std::thread([this] { Run(); });
  }
  ~OutputForwarder() {
    if (wake_[1] >= 0) {
      char byte = 0;
      (void)!write(wake_[1], &byte, 1);
    }
    thread_.join();
    for (Stream& stream : streams_) CloseFd(stream.fd);
    CloseFd(wake_[0]);
    CloseFd(wake_[1]);
  }
  OutputForwarder(const OutputForwarder&) = delete;
  OutputForwarder& operator=(const OutputForwarder&) = delete;

 private:
  static constexpr size_t kMaxLogLine = 64 << 10;
  struct Stream {
    int fd = -1;
    std::string pending;  // a line not ended yet
  };

  void Run() {
    bool stopping = false;
    while (streams_[0].fd >= 0 || streams_[1].fd >= 0) {
      pollfd fds[3] = {
          {streams_[0].fd, POLLIN, 0}, {streams_[1].fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      // Once told to stop, only what is already in the pipes is read.
      if (poll(fds, 3, stopping ? 0 : -1) < 0 && errno != EINTR) break;
      if (fds[2].revents != 0) stopping = true;
      bool read_any = false;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents != 0) read_any |= Drain(streams_[i]);
      }
      if (stopping && !read_any) break;
    }
    for (Stream& stream : streams_) Flush(stream);
  }

  // Reads what `stream` holds and logs its complete lines; false if there was nothing to read.
  bool Drain(Stream& stream) {
    char chunk[4096];
    ssize_t n = read(stream.fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (n <= 0) {
      Flush(stream);
      CloseFd(stream.fd);
      return false;
    }
    stream.pending.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t end; (end = stream.pending.find('\n', start)) != std::string::npos;
         start = end + 1) {
      LogLine(step_, std::string_view(stream.pending).substr(start, end - start));
    }
    stream.pending.erase(0, start);
    while (stream.pending.size() >= kMaxLogLine) {
      LogLine(step_, std::string_view(stream.pending).substr(0, kMaxLogLine));
      stream.pending.erase(0, kMaxLogLine);
    }
    return true;
  }

  void Flush(Stream& stream) {
    if (!stream.pending.empty()) LogLine(step_, stream.pending);
    stream.pending.clear();
  }

  std::string step_;
  Stream streams_[2];
  int wake_[2] = {-1, -1};
  std::thread thread_;
};

// A child worker process: its pid (also its process group) and the thread copying its output.
class ChildProcess {
 public:
  // Runs `options.command` with `protocol_fd` as its fd 3. kInvalidArgument if it cannot be run
  // (execvp or chdir failed: retrying will not help), kUnavailable for other failures.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const RemoteWorkerOptions& options,
                                                     int protocol_fd);
  ~ChildProcess() { Stop(std::chrono::milliseconds(0)); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // How the child ended, waiting up to `wait` for it to end: "worker exited with code 3",
  // "worker was killed by signal 9 (Killed)"; nullopt if it still runs.
  std::optional<std::string> Exit(std::chrono::milliseconds wait) {
    Clock::time_point deadline = Clock::now() + wait;
    while (true) {
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        return "worker is gone (waitid: " + ErrnoText(errno) + ")";
      }
      if (info.si_pid == pid_) {
        if (info.si_code == CLD_EXITED) {
          return "worker exited with code " + std::to_string(info.si_status);
        }
        return "worker was killed by signal " + std::to_string(info.si_status) + " (" +
               strsignal(info.si_status) + ")";
      }
      if (Clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // SIGTERM to the child's group, SIGKILL after `grace` (at once if 0), then reaps the child and
  // stops the output thread.
  void Stop(std::chrono::milliseconds grace) {
    if (pid_ <= 0) return;
    if (grace.count() > 0) {
      kill(-pid_, SIGTERM);
      (void)Exit(grace);
    }
    kill(-pid_, SIGKILL);  // the group: whatever the worker started goes too
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    output_.reset();
  }

 private:
  ChildProcess(pid_t pid, std::unique_ptr<OutputForwarder> output)
      : pid_(pid), output_(std::move(output)) {}

  pid_t pid_;
  std::unique_ptr<OutputForwarder> output_;
};

// What a child reports through its exec pipe when it could not run the command.
struct ExecFailure {
  int stage;  // 0: chdir, 1: execvp
  int error;
};

[[noreturn]] void ReportAndExit(int report_fd, int stage) {
  ExecFailure failure{stage, errno};
  (void)!write(report_fd, &failure, sizeof failure);
  _exit(127);
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void RunChild(pid_t parent, int protocol_fd, int stdout_fd, int stderr_fd, int null_fd,
                           int report_fd, const char* working_dir, char** argv, char** envp) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // Weir died before the line above
  // Weir's blocked signals and ignored SIGPIPE must not carry over to the worker.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) {
    sigaction(sig, &default_action, nullptr);
  }
  // Every source above 9 first, so that no dup2 below overwrites one still to be copied.
  const int sources[] = {null_fd, stdout_fd, stderr_fd, protocol_fd, report_fd};
  int moved[5];
  for (int i = 0; i < 5; ++i) {
    moved[i] = fcntl(sources[i], F_DUPFD, 10);
    if (moved[i] < 0) ReportAndExit(report_fd, 1);
  }
  for (int target = 0; target < 5; ++target) {
    if (dup2(moved[target], target) < 0) ReportAndExit(moved[4], 1);
  }
  fcntl(4, F_SETFD, FD_CLOEXEC);  // the report pipe closes when exec succeeds
  close_range(5, ~0U, 0);
  if (working_dir != nullptr && chdir(working_dir) != 0) ReportAndExit(4, 0);
  execvpe(argv[0], argv, envp);
  ReportAndExit(4, 1);
}

std::string CommandText(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& arg : command) {
    if (!text.empty()) text += ' ';
    text += arg;
  }
  return text;
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const RemoteWorkerOptions& options,
                                                          int protocol_fd) {
  // Everything the child needs is built before fork: after it, no allocation.
  std::vector<char*> argv;
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  static constexpr std::string_view kFdVariable = "WEIR_WORKER_FD=";
  std::vector<char*> envp;
  for (char** var = environ; *var != nullptr; ++var) {
    if (std::string_view(*var).substr(0, kFdVariable.size()) != kFdVariable) envp.push_back(*var);
  }
  std::string fd_variable = std::string(kFdVariable) + "3";
  envp.push_back(fd_variable.data());
  envp.push_back(nullptr);
  std::string working_dir = options.working_dir.string();

  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto close_all = [&] {
    for (int* fds : {out, err, report}) {
      CloseFd(fds[0]);
      CloseFd(fds[1]);
    }
    CloseFd(null_fd);
  };
  if (null_fd < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      pipe2(report, O_CLOEXEC) != 0) {
    int error = errno;
    close_all();
    return Status::Unavailable("cannot make the worker's pipes: " + ErrnoText(error));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close_all();
    return Status::Unavailable("fork: " + ErrnoText(error));
  }
  if (pid == 0) {
    RunChild(parent, protocol_fd, out[1], err[1], null_fd, report[1],
             working_dir.empty() ? nullptr : working_dir.c_str(), argv.data(), envp.data());
  }
  setpgid(pid, pid);  // also here, so that a kill of the group cannot come before the child's
  CloseFd(out[1]);
  CloseFd(err[1]);
  CloseFd(report[1]);
  CloseFd(null_fd);
  ExecFailure failure{};
  ssize_t n;
  while ((n = read(report[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  CloseFd(report[0]);
  auto child = std::unique_ptr<ChildProcess>(
      new ChildProcess(pid, std::make_unique<OutputForwarder>(options.step, out[0], err[0])));
  if (n == sizeof failure) {
    child->Stop(std::chrono::milliseconds(0));
    if (failure.stage == 0) {
      return Status::InvalidArgument("cannot enter the worker's working directory " + working_dir +
                                     ": " + ErrnoText(failure.error));
    }
    return Status::InvalidArgument("cannot run worker [" + CommandText(options.command) +
                                   "]: " + ErrnoText(failure.error));
  }
  return child;
}

// A connected stream socket carrying lines. Errors are a Status whose code says what happened:
//   kAborted    the deadline passed (the message is left to the caller),
//   kUnavailable the peer closed the connection (closed() is then true),
//   kOutOfRange a line longer than the frame limit,
//   kIOError    anything else.
class LineChannel {
 public:
  LineChannel(int fd, size_t max_line) : fd_(fd), max_line_(max_line) {
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~LineChannel() { CloseFd(fd_); }
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  bool closed() const { return closed_; }

  Status Send(std::string_view bytes, Clock::time_point deadline) {
    while (!bytes.empty()) {
      ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET) {
        closed_ = true;
        return Status::Unavailable("the worker closed the connection");
      }
      if (errno != EAGAIN) return Status::IOError("send: " + ErrnoText(errno));
      WEIR_RETURN_IF_ERROR(Wait(POLLOUT, deadline));
    }
    return Status::OK();
  }

  // The next line without its '\n', valid until the next call.
  Result<std::string_view> ReadLine(Clock::time_point deadline) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
    size_t scanned = 0;
    while (true) {
      size_t end = buffer_.find('\n', scanned);
      if (end != std::string::npos && end <= max_line_) {
        consumed_ = end + 1;
        return std::string_view(buffer_).substr(0, end);
      }
      if (end != std::string::npos || buffer_.size() > max_line_) {
        return Status::OutOfRange("worker sent a line of more than " + std::to_string(max_line_) +
                                  " bytes");
      }
      scanned = buffer_.size();
      WEIR_RETURN_IF_ERROR(Wait(POLLIN, deadline));
      constexpr size_t kChunk = 64 << 10;
      buffer_.resize(scanned + kChunk);
      ssize_t n = recv(fd_, buffer_.data() + scanned, kChunk, 0);
      buffer_.resize(scanned + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        closed_ = true;
        return Status::Unavailable("the worker closed the connection");
      }
      if (n < 0 && errno != EINTR && errno != EAGAIN) {
        return Status::IOError("recv: " + ErrnoText(errno));
      }
    }
  }

 private:
  Status Wait(short events, Clock::time_point deadline) {
    pollfd fd{fd_, events, 0};
    while (true) {
      int ready = poll(&fd, 1, PollTimeout(deadline));
      if (ready > 0) return Status::OK();
      if (ready == 0) return Status::Aborted("deadline");
      if (errno != EINTR) return Status::IOError("poll: " + ErrnoText(errno));
    }
  }

  int fd_;
  size_t max_line_;
  std::string buffer_;
  size_t consumed_ = 0;
  bool closed_ = false;
};

// Where a `connect:` worker listens.
struct Endpoint {
  sockaddr_storage address{};
  socklen_t length = 0;
};

Result<Endpoint> ParseEndpoint(std::string_view text) {
  Endpoint endpoint;
  constexpr std::string_view kUnix = "unix:";
  if (text.substr(0, kUnix.size()) == kUnix) {
    std::string_view path = text.substr(kUnix.size());
    auto* address = reinterpret_cast<sockaddr_un*>(&endpoint.address);
    if (path.empty() || path.size() >= sizeof address->sun_path) {
      return Status::InvalidArgument(
          "connect '" + std::string(text) + "': a unix socket path of 1 to " +
          std::to_string(sizeof address->sun_path - 1) + " bytes is needed");
    }
    address->sun_family = AF_UNIX;
    std::memcpy(address->sun_path, path.data(), path.size());
    endpoint.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
    return endpoint;
  }
  size_t colon = text.rfind(':');
  std::string_view host = text.substr(0, colon);
  if (colon == std::string_view::npos || (host != "127.0.0.1" && host != "localhost")) {
    return Status::InvalidArgument(
        "connect '" + std::string(text) +
        "' is not a loopback address: a worker is reached at unix:PATH, 127.0.0.1:PORT or "
        "localhost:PORT only (the protocol has no authentication)");
  }
  auto port = ParseUnsigned(text.substr(colon + 1), "the port of connect", 65535);
  if (!port.ok()) return port.status();
  auto* address = reinterpret_cast<sockaddr_in*>(&endpoint.address);
  address->sin_family = AF_INET;
  address->sin_port = htons(static_cast<uint16_t>(*port));
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  endpoint.length = sizeof(sockaddr_in);
  return endpoint;
}

Result<int> Connect(const Endpoint& endpoint, Clock::time_point deadline) {
  int fd = socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable("socket: " + ErrnoText(errno));
  int error = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&endpoint.address), endpoint.length) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd pending{fd, POLLOUT, 0};
      int ready;
      while ((ready = poll(&pending, 1, PollTimeout(deadline))) < 0 && errno == EINTR) {
      }
      socklen_t length = sizeof error;
      if (ready <= 0) {
        error = ETIMEDOUT;
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        error = errno;
      }
    }
  }
  if (error != 0) {
    close(fd);
    return Status::Unavailable("cannot connect: " + ErrnoText(error));
  }
  return fd;
}

class RemoteInvoker final : public Invoker {
 public:
  RemoteInvoker(RemoteWorkerOptions options, std::optional<Endpoint> endpoint)
      : options_(std::move(options)), endpoint_(std::move(endpoint)) {
    worker_ = endpoint_ ? "worker at " + options_.connect
                        : "worker [" + CommandText(options_.command) + "]";
  }
  ~RemoteInvoker() override { StopWorker(options_.stop_grace); }

  // The first start: an error only if the command cannot be run.
  Status Start() {
    std::optional<InvokeError> failed = StartWorker();
    if (failed && failed->failure == InvokeFailure::kFatal) {
      return Status::InvalidArgument(failed->reason);
    }
    return Status::OK();
  }

  std::optional<InvokeError> Invoke(const Call& call,
                                    std::vector<ProcessResult>& results) override {
    results.clear();
    if (fatal_) return InvokeError{InvokeFailure::kFatal, *fatal_};
    if (!channel_) {
      std::this_thread::sleep_for(BackoffLeft());
      if (std::optional<InvokeError> failed = StartWorker()) return failed;
    }
    line_.clear();
    AppendInvoke(call, line_);
    if (line_.size() - 1 > options_.max_frame_bytes) {
      return InvokeError{InvokeFailure::kRefused,
                         "call " + std::to_string(call.call) + " is " +
                             std::to_string(line_.size() - 1) + " bytes of JSON, more than " +
                             std::to_string(options_.max_frame_bytes) + " (max_frame_bytes)"};
    }
    const Clock::time_point deadline = Clock::now() + options_.deadline;
    const std::string waiting_for = "call " + std::to_string(call.call);
    auto late = [&] {
      return "worker did not answer " + waiting_for + " within " +
             std::to_string(options_.deadline.count()) + " ms";
    };
    Status sent = channel_->Send(line_, deadline);
    if (!sent.ok()) return Fail(Explain(sent, waiting_for, late()));
    auto line = channel_->ReadLine(deadline);
    if (!line.ok()) return Fail(Explain(line.status(), waiting_for, late()));
    auto reply = ParseReply(*line, results);
    if (!reply.ok()) {
      return Fail("worker broke the protocol answering " + waiting_for + ": " +
                  reply.status().message());
    }
    if (reply->call != call.call) {
      return Fail("worker answered call " + std::to_string(reply->call) + " while " + waiting_for +
                  " was in flight");
    }
    failures_ = 0;
    if (reply->error) {
      return InvokeError{InvokeFailure::kRefused,
                         "worker refused " + waiting_for + ": " + *reply->error};
    }
    return std::nullopt;
  }

  std::chrono::milliseconds RetryDelay(int32_t attempt) const override {
    (void)attempt;  // the backoff follows the worker's failures, not the call's attempts
    return BackoffLeft();
  }

 private:
  // Starts (or connects to) the worker and waits for its ready.
  std::optional<InvokeError> StartWorker() {
    const Clock::time_point deadline = Clock::now() + options_.start_deadline;
    int fd = -1;
    if (endpoint_) {
      auto connected = Connect(*endpoint_, deadline);
      if (!connected.ok()) return Fail(connected.status().message());
      fd = *connected;
    } else {
      int ends[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
        return Fail("socketpair: " + ErrnoText(errno));
      }
      auto child = ChildProcess::Spawn(options_, ends[1]);
      close(ends[1]);
      if (!child.ok()) {
        close(ends[0]);
        if (child.status().IsBadInput()) return Fatal(child.status().message());
        return Fail(child.status().message());
      }
      child_ = std::move(child).value();
      fd = ends[0];
    }
    channel_ = std::make_unique<LineChannel>(fd, options_.max_frame_bytes);
    line_.clear();
    AppendHello(options_.process, line_);
    const std::string late =
        "worker sent no ready within " + std::to_string(options_.start_deadline.count()) + " ms";
    Status sent = channel_->Send(line_, deadline);
    if (!sent.ok()) return Fail(Explain(sent, "its ready", late));
    auto line = channel_->ReadLine(deadline);
    if (!line.ok()) return Fail(Explain(line.status(), "its ready", late));
    Status ready = ParseReady(*line);
    if (!ready.ok()) return Fail("worker broke the protocol at its start: " + ready.message());
    return std::nullopt;
  }

  // The reason for a failed send or read while waiting for `waiting_for` ("call 7"); `late` is
  // the reason when the deadline passed.
  std::string Explain(const Status& status, std::string_view waiting_for, std::string late) {
    if (status.code() == StatusCode::kAborted) return late;
    std::string waiting = " (waiting for " + std::string(waiting_for) + ")";
    if (channel_->closed() && child_) {
      if (std::optional<std::string> exit = child_->Exit(std::chrono::seconds(1))) {
        return *exit + waiting;
      }
      return "worker closed its protocol socket" + waiting;
    }
    return status.message() + waiting;
  }

  // A failure of the worker: stops it, and refuses the call, or ends it all once the budget is
  // spent.
  InvokeError Fail(std::string reason) {
    StopWorker(std::chrono::milliseconds(0));
    ++failures_;
    last_failure_ = Clock::now();
    if (failures_ > options_.restart_budget) {
      return Fatal(worker_ + " failed " + std::to_string(failures_) +
                   " times in a row; last: " + reason);
    }
    LogLine(options_.step, reason + "; restarting in " + std::to_string(Backoff().count()) +
                               " ms (failure " + std::to_string(failures_) + ", budget " +
                               std::to_string(options_.restart_budget) + ")");
    return InvokeError{InvokeFailure::kRefused, std::move(reason)};
  }

  InvokeError Fatal(std::string reason) {
    StopWorker(std::chrono::milliseconds(0));
    fatal_ = "process step '" + options_.step + "': " + reason;
    return InvokeError{InvokeFailure::kFatal, *fatal_};
  }

  void StopWorker(std::chrono::milliseconds grace) {
    channel_.reset();  // closing the socket first lets a worker see EOF and leave by itself
    if (child_) child_->Stop(grace);
    child_.reset();
  }

  std::chrono::milliseconds Backoff() const {
    if (failures_ == 0) return {};
    auto backoff = options_.first_backoff;
    for (int32_t i = 1; i < failures_ && backoff < options_.max_backoff; ++i) backoff *= 2;
    return std::min(backoff, options_.max_backoff);
  }

  std::chrono::milliseconds BackoffLeft() const {
    if (channel_ || failures_ == 0) return {};
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(last_failure_ + Backoff() - Clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }

  const RemoteWorkerOptions options_;
  const std::optional<Endpoint> endpoint_;
  std::string worker_;  // "worker [python3 cart.py]", "worker at unix:/run/w.sock"
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<LineChannel> channel_;  // null: the worker is to be (re)started
  int32_t failures_ = 0;                  // in a row
  Clock::time_point last_failure_;
  std::optional<std::string> fatal_;
  std::string line_;  // the line being sent, reused
};

}  // namespace

Result<std::unique_ptr<Invoker>> StartRemoteInvoker(const RemoteWorkerOptions& options) {
  auto invalid = [&](const std::string& problem) {
    return Status::InvalidArgument("process step '" + options.step + "': " + problem);
  };
  if (options.command.empty() == options.connect.empty()) {
    return invalid("give a worker either a command or connect, not both nor neither");
  }
  if (options.deadline.count() <= 0 || options.start_deadline.count() <= 0) {
    return invalid("deadline and start_deadline must be positive");
  }
  if (options.max_frame_bytes == 0 || options.restart_budget < 0) {
    return invalid("max_frame_bytes must be positive and restart_budget not negative");
  }
  std::optional<Endpoint> endpoint;
  if (!options.connect.empty()) {
    auto parsed = ParseEndpoint(options.connect);
    if (!parsed.ok()) return invalid(parsed.status().message());
    endpoint = *parsed;
  }
  auto invoker = std::make_unique<RemoteInvoker>(options, endpoint);
  WEIR_RETURN_IF_ERROR(invoker->Start());
  return std::unique_ptr<Invoker>(std::move(invoker));
}

}  // namespace weir::process
