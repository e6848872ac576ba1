// Options of Weir's HTTP + WebSocket server (`weir serve`, `weir run --listen`). The protocol,
// limits and refusals are specified in src/serve/README.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace weir {

struct ServerOptions {
  // HOST:PORT. Port 0 picks a free port (Server::port() tells which). A non-loopback host
  // serves the network: set tokens.
  std::string listen = "127.0.0.1:8080";
  size_t max_frame_bytes = 1 << 20;  // a publish frame, message or HTTP body
  int max_connections = 10'000;
  int max_subscribers = 10'000;     // per partition
  int64_t max_replay = 10'000'000;  // messages below the partition's next offset
  int64_t max_backlog = 8'192;      // messages not yet written to a subscriber's socket
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds handshake_timeout{5'000};
  std::string publish_token{};    // empty: publishing needs no token
  std::string subscribe_token{};  // empty: subscribing needs no token
};

}  // namespace weir
