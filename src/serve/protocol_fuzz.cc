// Fuzz target for everything serve/ decodes from outside bytes: request targets, publish bodies
// and client WebSocket frames; and for what the client decodes from a server: the stream
// protocol's greeting and data frames (stream_protocol/). Built as a libFuzzer target with
// WEIR_FUZZ and, always, as serve_protocol_fuzz_replay (testing/fuzz_replay_main.cc): a ctest that
// runs the target over the seed corpus and deterministic mutations of it, so every compiler
// exercises the invariants.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/masked_frame_for_test.h"
#include "serve/request.h"
#include "serve/websocket_frame.h"
#include "stream_protocol/stream_protocol.h"

namespace weir::serve {
namespace {

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

void CheckTarget(std::string_view input) {
  auto result = ParseTarget(input);
  if (auto* error = std::get_if<TargetError>(&result)) {
    Require(error->kind == TargetError::Kind::kNotFound || !error->detail.empty(), "detail");
    return;
  }
  const Target& t = std::get<Target>(result);
  Require(t.partition >= 0, "partition >= 0");
  Require(t.start.offset >= 0, "offset >= 0");
  Require(t.start.kind != StartOffset::Kind::kAt || t.endpoint == Endpoint::kStreams,
          "offset only for streams");
  const bool has_topic = t.endpoint == Endpoint::kStreams || t.endpoint == Endpoint::kPublish;
  Require(has_topic != t.topic.empty(), "topic iff streams or publish");
  Require(t.topic.size() <= 200, "topic length");
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void CheckBody(std::string_view body) {
  auto result = SplitPublishBody(body);
  if (auto* error = std::get_if<BodyError>(&result)) {
    Require(error->line >= 1, "line >= 1");
    Require(!error->detail.empty(), "detail");
    return;
  }
  const char* previous_end = body.data();
  for (std::string_view value : std::get<std::vector<std::string_view>>(result)) {
    Require(!value.empty(), "value not empty");
    Require(
        value.data() >= previous_end && value.data() + value.size() <= body.data() + body.size(),
        "values are ordered views into the body");
    Require(!IsJsonSpace(value.front()) && !IsJsonSpace(value.back()), "values trimmed");
    previous_end = value.data() + value.size();
    // A value is one JSON value on its own.
    auto again = SplitPublishBody(value);
    auto* values = std::get_if<std::vector<std::string_view>>(&again);
    Require(values != nullptr && values->size() == 1 && values->front() == value,
            "a value is one value");
  }
}

struct Outcome {
  std::vector<ClientMessage> messages;
  std::optional<CloseCode> error_code;
};

// Feeds `parts` one after the other, taking every message as it completes.
Outcome ParseFrames(size_t max, const std::vector<std::string_view>& parts) {
  FrameParser parser(max);
  Outcome outcome;
  ClientMessage message;
  for (std::string_view part : parts) {
    parser.Feed(part);
    FrameParser::Result r;
    while ((r = parser.Next(&message)) == FrameParser::Result::kMessage) {
      outcome.messages.push_back(message);
    }
    if (r == FrameParser::Result::kError) {
      outcome.error_code = parser.error_code();
      Require(parser.Next(&message) == FrameParser::Result::kError, "errors are final");
      break;
    }
  }
  return outcome;
}

void CheckFrames(std::string_view bytes) {
  // The last byte picks the maximum (16 bytes to 32 KiB), so the first, a frame's opcode, is free.
  const uint8_t seed = bytes.empty() ? 0 : static_cast<uint8_t>(bytes.back());
  const size_t max = size_t{16} << (seed % 12);
  const size_t split = (seed * 31u + bytes.size() * 7u) % (bytes.size() + 1);

  const Outcome whole = ParseFrames(max, {bytes});
  const Outcome halves = ParseFrames(max, {bytes.substr(0, split), bytes.substr(split)});
  Require(whole.error_code == halves.error_code, "split does not change the error");
  Require(whole.messages.size() == halves.messages.size(), "split does not change the messages");
  Require(!whole.error_code || whole.error_code == CloseCode::kProtocolError ||
              whole.error_code == CloseCode::kInvalidPayload ||
              whole.error_code == CloseCode::kTooBig,
          "error codes");

  for (size_t i = 0; i < whole.messages.size(); ++i) {
    const ClientMessage& m = whole.messages[i];
    Require(m.opcode == halves.messages[i].opcode && m.payload == halves.messages[i].payload,
            "split does not change a message");
    switch (m.opcode) {
      case Opcode::kText:
        Require(IsValidUtf8(m.payload), "text is UTF-8");
        [[fallthrough]];
      case Opcode::kBinary:
        Require(m.payload.size() <= max, "message within the maximum");
        break;
      case Opcode::kClose:
        Require(m.payload.size() != 1, "close payload is not 1 byte");
        [[fallthrough]];
      case Opcode::kPing:
      case Opcode::kPong:
        Require(m.payload.size() <= 125, "control payload <= 125");
        break;
      case Opcode::kContinuation:
        Require(false, "never a continuation");
    }
    if (m.opcode != Opcode::kText) continue;
    // Re-encoded as a client would (masked, maybe in two fragments), it parses to itself.
    std::string frame;
    const uint32_t mask = seed * 0x01010101u ^ static_cast<uint32_t>(i);
    const size_t cut = m.payload.size() / 2;
    testing::AppendMaskedFrame(frame, 0x1, std::string_view(m.payload).substr(0, cut), mask, 0x00);
    std::string ping;
    testing::AppendMaskedFrame(ping, 0x9, "p", mask);
    frame += ping;
    testing::AppendMaskedFrame(frame, 0x0, std::string_view(m.payload).substr(cut), mask);
    const Outcome again = ParseFrames(max, {frame});
    Require(!again.error_code && again.messages.size() == 2, "re-encoded text parses");
    Require(again.messages[1].opcode == Opcode::kText && again.messages[1].payload == m.payload,
            "re-encoded text is the same");
  }

  // The server's own frames, unmasked, are refused; masked they round-trip.
  std::string server_frame;
  AppendMessageFrame(server_frame, static_cast<int64_t>(bytes.size()), bytes.substr(0, 64));
  Require(ParseFrames(max, {server_frame}).error_code == CloseCode::kProtocolError,
          "unmasked frames are refused");
}

// A greeting or data frame that parses is written back as itself (the greeting as its canonical
// JSON, which parses to the same greeting).
void CheckStreamProtocol(std::string_view payload) {
  if (auto message = stream_protocol::ParseMessagePayload(payload)) {
    Require(message->offset >= 0, "offset >= 0");
    std::string again;
    stream_protocol::AppendMessagePayload(again, message->offset, message->value);
    Require(again.size() == stream_protocol::MessagePayloadSize(message->offset, message->value),
            "payload size");
    Require(again == payload || payload.substr(1).starts_with('0'),
            "a data frame is written back as itself (but for leading zeros)");
  }
  auto greeting = stream_protocol::ParseGreeting(payload);
  if (!greeting.ok()) return;
  Require(greeting->first <= greeting->start && greeting->start <= greeting->next,
          "start within first..next");
  auto again = stream_protocol::ParseGreeting(stream_protocol::GreetingJson(*greeting));
  Require(again.ok() && again->topic == greeting->topic && again->start == greeting->start,
          "a greeting is written back as itself");
}

}  // namespace
}  // namespace weir::serve

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  weir::serve::CheckTarget(bytes);
  weir::serve::CheckBody(bytes);
  weir::serve::CheckFrames(bytes);
  weir::serve::CheckStreamProtocol(bytes);
  return 0;
}
