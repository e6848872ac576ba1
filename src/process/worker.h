// RemoteInvoker: a process step's handler in a worker process of any language, reached over a
// socket and spoken to in JSON lines (protocol.h; README.md is normative).
//
// The worker is either a child this invoker runs and supervises (`command`) or a server that is
// already listening (`connect`, loopback or a unix socket only: the protocol has no
// authentication). A child gets its end of a socketpair as fd 3 (WEIR_WORKER_FD=3 in its
// environment), /dev/null as stdin, and pipes as stdout and stderr whose lines a thread copies to
// Weir's stderr as "weir: [process STEP] <line>", so a stray print never reaches the protocol.
// It is in a process group of its own and is killed (SIGKILL) if the thread that started it dies.
//
// Supervision: a crash, a hang past `deadline`, garbage, a line over `max_frame_bytes`, an answer
// to another call, no ready within `start_deadline`: each refuses the call (kRefused, the reason
// says which), stops the worker (kill, or close the connection) and makes the next Invoke start
// it again, after a backoff that doubles from `first_backoff` to `max_backoff` (RetryDelay says
// what is left of it, so the step can sleep it; Invoke waits out the rest itself). A worker's
// {"type":"error"} refuses the call and keeps the worker. A reply resets the count of failures;
// the failure after `restart_budget` restarts in a row is kFatal, and every Invoke after it too.
// A command that cannot be run (execvp fails) is an error at start, and kFatal at a restart.
//
// Lifecycle: StartRemoteInvoker starts the worker (a failure other than a command that cannot be
// run counts as the first failure). Destruction closes the socket, sends the child's group
// SIGTERM, SIGKILL after `stop_grace`, reaps it and stops the output thread.
// Threads: Invoke and RetryDelay on one thread at a time (the task's); the output thread only
// writes to stderr. One call is in flight at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "process/invoker.h"
#include "weir/process.h"
#include "weir/status.h"

namespace weir::process {

struct RemoteWorkerOptions {
  std::string step;        // the step's name, in log lines and errors
  ProcessOptions process;  // what hello tells the worker
  // Exactly one of these two.
  std::vector<std::string> command;          // argv, run with execvp (PATH is searched)
  std::string connect;                       // "unix:PATH", "127.0.0.1:PORT" or "localhost:PORT"
  std::filesystem::path working_dir;         // the child's; empty: Weir's
  std::chrono::milliseconds deadline{5000};  // per call, from sending it to its answer
  std::chrono::milliseconds start_deadline{10000};  // from starting to ready
  size_t max_frame_bytes = size_t{64} << 20;        // longest line either way, '\n' excluded
  int32_t restart_budget = 5;                       // restarts in a row before kFatal
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds stop_grace{1000};  // SIGTERM to SIGKILL when stopping at the end
};

// Checks `options` (kInvalidArgument naming the step: no command nor connect, both, a
// non-loopback address, a deadline that is not positive) and starts the worker.
Result<std::unique_ptr<Invoker>> StartRemoteInvoker(const RemoteWorkerOptions& options);

}  // namespace weir::process
