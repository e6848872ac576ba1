// The HTTP + WebSocket server over a LogStore: subscriptions that replay then go live, durable
// publishing, explicit refusals (src/serve/README.md is the protocol).
//
// Threads: one I/O thread runs every connection (Asio), so nothing in the delivery path locks.
// A watcher thread turns the LogStore's change notifications into work on the I/O thread: read
// the new records of each subscribed partition once, encode each message's frame once into a
// shared batch, and let every live subscriber write that batch from the same bytes; acknowledge
// publishes whose records became durable.
//
// Start/Stop/port are for one owner thread; the LogStore must outlive the Server.
#pragma once

#include <cstdint>
#include <memory>

#include "log/log.h"
#include "weir/serve.h"
#include "weir/status.h"

namespace weir::serve {

struct ServerStats {
  int64_t connections = 0;  // open now
  int64_t subscribers = 0;  // open now
  int64_t delivered = 0;    // messages written to subscribers' sockets, replay included
  int64_t published = 0;    // records appended through the server
  int64_t refused = 0;      // subscriptions and publishes refused (close frames and HTTP errors)
  int64_t too_slow = 0;     // subscribers closed for their backlog
};

class Server {
 public:
  // Binds (kInvalidArgument for a malformed address, kUnavailable naming it if it is in use)
  // and starts serving.
  static Result<std::unique_ptr<Server>> Start(log::LogStore& log, ServerOptions options);
  // Closes every connection (1001 shutdown), waits up to a second for the close frames to go
  // out, and stops the threads.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  // Thread-safe; a snapshot taken on the I/O thread.
  ServerStats stats() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::serve
