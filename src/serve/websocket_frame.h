// WebSocket framing (RFC 6455 §5), without I/O: the server's encoder for what it sends and an
// incremental parser for what clients send. The server encodes each message's frame once and
// writes the same bytes to every subscriber (server frames are never masked).
//
// Thread safety: FrameParser is one connection's; the free functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stream_protocol/stream_protocol.h"
#include "weir/status.h"

namespace weir::serve {

using stream_protocol::CloseCode;

enum class Opcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

// Appends one unmasked, final frame carrying `payload` to `out` (header: 2, 4 or 10 bytes).
void AppendFrame(std::string& out, Opcode opcode, std::string_view payload);
// Appends a text frame whose payload is `[offset,message]` (the subscriber's data frame,
// stream_protocol::AppendMessagePayload) after its header, without building the payload apart.
void AppendMessageFrame(std::string& out, int64_t offset, std::string_view message);
// Appends a close frame: the 2-byte code then `reason`, cut to 123 bytes (at a UTF-8 boundary).
void AppendCloseFrame(std::string& out, CloseCode code, std::string_view reason);

// One complete message from a client: a data message (fragments reassembled) or a control frame.
struct ClientMessage {
  Opcode opcode;        // kText, kBinary, kClose, kPing or kPong (never kContinuation)
  std::string payload;  // unmasked; for kClose: the code (2 bytes, if any) and reason
};

// Incremental parser of client frames. Feed bytes as they arrive; take messages as they complete.
// Enforces RFC 6455 for a server: every client frame masked, reserved bits 0 (no extensions are
// negotiated), known opcodes, control frames final and <= 125 bytes (and may arrive between the
// fragments of a data message), continuation only inside a fragmented message, a close payload
// of 0 or >= 2 bytes with a valid code and a UTF-8 reason, text payloads valid UTF-8 (checked
// once the message is whole), a 64-bit length with its top bit 0, and a data message of at most
// `max_message_bytes` (the sum of its fragments).
class FrameParser {
 public:
  explicit FrameParser(size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  enum class Result : uint8_t {
    kNeedMore,  // nothing complete yet; feed more bytes
    kMessage,   // *out holds a message; call Next again (more may be buffered)
    kError,     // protocol violation: close with error_code() / error_reason()
  };
  // Appends `bytes` to the parser's buffer (does not parse).
  void Feed(std::string_view bytes);
  // Parses what is buffered. After kError every later call returns kError.
  Result Next(ClientMessage* out);

  // kProtocolError, kInvalidPayload (not UTF-8) or kTooBig. Valid after kError.
  CloseCode error_code() const { return error_code_; }
  const std::string& error_reason() const { return error_reason_; }

 private:
  Result Fail(CloseCode code, std::string_view reason);
  std::string_view RefuseHeader(uint8_t byte0, uint8_t byte1) const;
  Result FinishControl(Opcode opcode, const char* payload, size_t n, const uint8_t key[4],
                       ClientMessage* out);
  // `out` holds a whole message of `opcode`: checks text is UTF-8.
  Result Deliver(Opcode opcode, ClientMessage* out);

  size_t max_message_bytes_;
  // Implementation-defined state: the unparsed bytes and the message being reassembled.
  std::string buffer_;
  size_t consumed_ = 0;
  std::string partial_;
  Opcode partial_opcode_ = Opcode::kContinuation;
  bool in_fragmented_ = false;
  bool failed_ = false;
  CloseCode error_code_ = CloseCode::kProtocolError;
  std::string error_reason_;
};

// True if `text` is valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

}  // namespace weir::serve
