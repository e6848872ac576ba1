// Weir's WebSocket stream protocol (src/serve/README.md), in one place for the server that speaks
// it and the client that reads it: the close codes, the close reason, the greeting and the
// subscriber's data frame `[OFFSET,MESSAGE]`, each built and parsed here and nowhere else.
// Framing (RFC 6455) is not here: the server's is serve/websocket_frame.h, the client's Beast.
//
// Thread safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "weir/status.h"
#include "weir/value.h"

namespace weir::stream_protocol {

// The close codes the server sends (README.md "Subscribing", "Publishing", "Closing"), and the
// RFC 6455 §7.4.1 codes a client may see. Weir's refusals are 4xxx: 4000 + an HTTP status that
// says the same.
enum class CloseCode : uint16_t {
  kNormal = 1000,
  kGoingAway = 1001,  // server shutdown
  kProtocolError = 1002,
  kUnsupportedData = 1003,  // a subscriber sent data, or a publisher a binary frame
  kAbnormal = 1006,         // never sent: the connection was lost without a close frame
  kInvalidPayload = 1007,   // text or a close reason that is not UTF-8
  kTooBig = 1009,
  kServerError = 1011,  // the log failed while replaying
  kServiceRestart = 1012,
  kTryAgainLater = 1013,
  kBadGateway = 1014,
  kEmpty = 4204,
  kBadRequest = 4400,
  kUnauthorized = 4401,
  kCrossOrigin = 4403,
  kNotFound = 4404,
  kTooSlow = 4408,
  kNotWritable = 4409,
  kEvicted = 4410,
  kTooOld = 4413,
  kAhead = 4416,
  kTooManySubscribers = 4429,
  kArchiveUnreadable = 4500,  // a catch-up's archive file is missing or corrupt
};

// A close reason: `{"reason":REASON,...members}`, the reason first and the numbers after it, as
// compact JSON (the frame cuts it to 123 bytes; the server's reasons always fit).
std::string CloseReason(std::string_view reason, std::initializer_list<Value::Member> members = {});

// The text frame a subscription starts with.
struct Greeting {
  std::string topic;
  int64_t partition = 0;
  int64_t first = 0;  // the partition's first retained offset then
  int64_t next = 0;   // the partition's next offset then
  int64_t start = 0;  // the first message this connection delivers
  int64_t max_replay = 0;
  int64_t max_backlog = 0;
  // The first offset the partition's archive holds, when it has one (a catch-up below `first`
  // starts at or above it).
  std::optional<int64_t> archive_first;
};

// {"type":"greeting","topic":T,"partition":P,"first":F,"next":X,"start":S,"max_replay":R,
// "max_backlog":B[,"archive_first":A]}
std::string GreetingJson(const Greeting& greeting);
// The greeting in `text`, or kCorruption whose message says what is wrong with it ("is not JSON:
// ...", "is not {"type":"greeting",...}", "lacks topic, partition, first, next or start", "has
// start outside first..next"), to follow the quoted text. topic, partition, first, next and start
// are required (numbers >= 0); max_replay and max_backlog are 0 when absent. With archive_first,
// start may be below first down to it (a catch-up through the archive).
Result<Greeting> ParseGreeting(std::string_view text);

// A subscriber's data frame: `[OFFSET,MESSAGE]`, MESSAGE being the record's value byte for byte.
struct StreamMessage {
  int64_t offset;
  std::string_view value;  // a view into the parsed payload
};

// The payload's size, for a frame header written before it.
size_t MessagePayloadSize(int64_t offset, std::string_view value);
// Appends `[offset,value]` to `out` (MessagePayloadSize bytes).
void AppendMessagePayload(std::string& out, int64_t offset, std::string_view value);
// The message in `payload`, or nullopt if it is not `[OFFSET,MESSAGE]` with OFFSET 1 to 19
// decimal digits that fit int64 (MESSAGE is whatever lies between the first comma and the
// closing bracket).
std::optional<StreamMessage> ParseMessagePayload(std::string_view payload);

// The query values of a stream URL (ws://HOST:PORT/topics/T/partitions/P?from=...), as the server
// and the client read them: decodes %XX escapes ('+' stays '+') into `out`. False on a '%' not
// followed by two hex digits.
bool PercentDecode(std::string_view in, std::string& out);

}  // namespace weir::stream_protocol
