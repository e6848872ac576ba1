// The URL of a subscription (ws://HOST[:PORT]/streams/TOPIC?partition=P) and the start offset,
// parsed and checked before anything touches the network. No I/O.
//
// Thread safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "weir/status.h"

namespace weir::client {

struct StreamUrl {
  std::string host;  // without brackets for IPv6
  uint16_t port = 80;
  std::string topic;
  int32_t partition = 0;
  std::string token;  // from ?token=, percent-decoded; empty if absent

  // "HOST:PORT" as the Host header wants it (IPv6 bracketed).
  std::string HostHeader() const;
  // ws://HOST:PORT/streams/TOPIC?partition=P, for messages (never the token).
  std::string ToString() const;
};

// kInvalidArgument naming the URL and what is wrong with it: another scheme (wss:// included),
// user info, a missing host, a bad port, a path other than /streams/TOPIC, a topic name that
// core/names.h's CheckName refuses (1-200 of [A-Za-z0-9._-], not "." or ".."), a query parameter
// other than partition and token (the start offset is SubscriptionOptions::start), a repeated or
// malformed one, a fragment.
Result<StreamUrl> ParseStreamUrl(std::string_view url);

// Where a subscription starts.
struct StartPosition {
  enum class Kind : uint8_t { kEarliest, kLatest, kAt };
  Kind kind = Kind::kEarliest;
  int64_t offset = 0;  // kAt only

  // The value of the `offset` query parameter: "earliest", "latest" or the decimal offset.
  std::string QueryValue() const;
};

// "earliest", "latest" or a decimal offset 0 <= N < 2^63 (digits only). kInvalidArgument
// otherwise.
Result<StartPosition> ParseStartPosition(std::string_view text);

// The request target for a subscription: /streams/TOPIC?partition=P&offset=O[&token=T].
std::string StreamTarget(const StreamUrl& url, const StartPosition& start);

}  // namespace weir::client
