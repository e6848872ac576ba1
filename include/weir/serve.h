// Options of Weir's HTTP + WebSocket server (`weir serve`, `weir run --listen`). The protocol,
// limits and refusals are specified in src/serve/README.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "weir/status.h"

namespace weir {

// Writes the next part of an answer's body; called on the handler's thread. It waits while the
// client is behind, and drops what it is given once the client is gone.
using BodyWriter = std::function<void(std::string_view chunk)>;

// A POST /query (src/serve/README.md).
struct QueryRequest {
  std::string sql;
  std::string format = "jsonl";               // jsonl, csv or table
  std::chrono::milliseconds timeout{60'000};  // at most ServerOptions::max_query_time
};

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
  std::string subscribe_token{};  // empty: subscribing needs no token (nor querying)

  // SQL over the process's views (src/lake), for POST /query and GET /views. The server knows
  // nothing of them: each handler runs on a thread of its own (at most max_queries at once,
  // 503 beyond), writes its answer through `write` as it goes, and returns how it ended:
  // kNotFound is 404, any other error 400. Absent: /query and /views are 404.
  std::function<Status(const QueryRequest& request, const BodyWriter& write)> query_handler{};
  // One JSON document: every view (`view` empty) or one view.
  std::function<Status(std::string_view view, const BodyWriter& write)> views_handler{};
  int max_queries = 4;
  std::chrono::milliseconds max_query_time{60'000};
};

}  // namespace weir
