// Options of Weir's HTTP + WebSocket server (`weir serve`, `weir run --listen`). The protocol,
// limits and refusals are specified in src/serve/README.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
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
  // Set by the server: whether the client has hung up (any thread may call it). A handler
  // stops its query when it says so.
  std::function<bool()> client_gone{};
};

// One message of a topic's archive: its offset and the record's value, byte for byte.
struct ArchivedMessage {
  int64_t offset = 0;
  std::string value;
};

// What the archive of a topic partition holds: the offsets [first, end).
struct ArchiveExtent {
  int64_t first = 0;
  int64_t end = 0;
};

// A topic's archive (src/lake's archive view): how a subscriber below the log's retention
// catches up (src/serve/README.md, "Catch-up"). The server knows nothing of the lake.
struct ArchiveAccess {
  // What the partition's archive holds, or nullopt (no archive, or nothing in it yet). Called on
  // the server's I/O thread: it must answer from memory, without blocking on I/O.
  std::function<std::optional<ArchiveExtent>(std::string_view topic, int32_t partition)> extent;
  // Reads the archive from `from` in offset order, giving chunks of at most `chunk` consecutive
  // messages to `on_chunk`, until the archive's end (OK) or `on_chunk` returns false (OK). An
  // error if the archive does not hold `from`, or a file is missing or corrupt (never a gap).
  // Called on a catch-up thread of the server's; `on_chunk` blocks while the subscriber is
  // behind (that is the pacing).
  std::function<Status(std::string_view topic, int32_t partition, int64_t from, size_t chunk,
                       const std::function<bool(std::span<const ArchivedMessage>)>& on_chunk)>
      read;
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

  // The topics' archives; absent: a subscriber below the log's retention is refused (evicted).
  ArchiveAccess archive{};
  // Catch-ups read from the archive at once (each on a thread of its own); more wait their turn.
  int max_catchups = 4;
  // Messages per chunk read from the archive; a catch-up holds at most two chunks in memory.
  size_t catchup_chunk = 4096;
};

}  // namespace weir
