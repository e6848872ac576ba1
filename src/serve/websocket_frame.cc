#include "serve/websocket_frame.h"

#include <cstring>

#include "simdjson.h"

namespace weir::serve {

namespace {

constexpr size_t kMaxControlPayload = 125;
constexpr size_t kMaxCloseReason = kMaxControlPayload - 2;
constexpr size_t kMaxHeaderBytes = 10;

// Writes an unmasked, final frame header for `length` payload bytes; returns its size.
size_t EncodeHeader(char* h, Opcode opcode, uint64_t length) {
  h[0] = static_cast<char>(0x80 | static_cast<uint8_t>(opcode));
  if (length <= kMaxControlPayload) {
    h[1] = static_cast<char>(length);
    return 2;
  }
  if (length <= 0xFFFF) {
    h[1] = 126;
    h[2] = static_cast<char>(length >> 8);
    h[3] = static_cast<char>(length);
    return 4;
  }
  h[1] = 127;
  for (int i = 0; i < 8; ++i) h[2 + i] = static_cast<char>(length >> (56 - 8 * i));
  return 10;
}

void AppendHeader(std::string& out, Opcode opcode, uint64_t length) {
  char h[kMaxHeaderBytes];
  out.append(h, EncodeHeader(h, opcode, length));
}

// dst[i] = src[i] ^ key[i % 4]; dst may equal src. Eight bytes at a time: the mask repeats every
// four bytes, so a 64-bit word of it lines up with every 8-byte step.
void Unmask(char* dst, const char* src, size_t n, const uint8_t key[4]) {
  uint64_t key64;
  uint8_t key8[8] = {key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]};
  std::memcpy(&key64, key8, 8);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, src + i, 8);
    word ^= key64;
    std::memcpy(dst + i, &word, 8);
  }
  for (; i < n; ++i) dst[i] = static_cast<char>(src[i] ^ key[i & 3]);
}

bool IsControl(uint8_t opcode) { return opcode & 0x8; }

bool IsKnownOpcode(uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kContinuation:
    case Opcode::kText:
    case Opcode::kBinary:
    case Opcode::kClose:
    case Opcode::kPing:
    case Opcode::kPong:
      return true;
  }
  return false;
}

// RFC 6455 §7.4: codes a peer may send. 1004-1006 and 1015 are reserved (never on the wire),
// 1016-2999 unassigned, 3000-4999 for libraries and applications.
bool IsValidCloseCode(uint16_t code) {
  if (code >= 3000 && code <= 4999) return true;
  if (code < 1000 || code > 1014) return false;
  return code != 1004 && code != 1005 && code != 1006;
}

}  // namespace

void AppendFrame(std::string& out, Opcode opcode, std::string_view payload) {
  out.reserve(out.size() + kMaxHeaderBytes + payload.size());
  AppendHeader(out, opcode, payload.size());
  out.append(payload);
}

void AppendMessageFrame(std::string& out, int64_t offset, std::string_view message) {
  const size_t length = stream_protocol::MessagePayloadSize(offset, message);
  out.reserve(out.size() + kMaxHeaderBytes + length);
  AppendHeader(out, Opcode::kText, length);
  stream_protocol::AppendMessagePayload(out, offset, message);
}

void AppendCloseFrame(std::string& out, CloseCode close_code, std::string_view reason) {
  const auto code = static_cast<uint16_t>(close_code);
  if (reason.size() > kMaxCloseReason) {
    size_t n = kMaxCloseReason;
    // Back off while the first byte left out is a continuation byte (10xxxxxx).
    while (n > 0 && (static_cast<uint8_t>(reason[n]) & 0xC0) == 0x80) --n;
    reason = reason.substr(0, n);
  }
  char h[kMaxHeaderBytes];
  const size_t header = EncodeHeader(h, Opcode::kClose, 2 + reason.size());
  out.reserve(out.size() + header + 2 + reason.size());
  out.append(h, header);
  out.push_back(static_cast<char>(code >> 8));
  out.push_back(static_cast<char>(code));
  out.append(reason);
}

bool IsValidUtf8(std::string_view text) {
  return simdjson::validate_utf8(text.data(), text.size());
}

void FrameParser::Feed(std::string_view bytes) {
  if (failed_) return;
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  } else if (consumed_ >= 4096 && consumed_ * 2 >= buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

FrameParser::Result FrameParser::Fail(CloseCode code, std::string_view reason) {
  failed_ = true;
  error_code_ = code;
  error_reason_.assign(reason);
  buffer_.clear();
  buffer_.shrink_to_fit();
  consumed_ = 0;
  partial_.clear();
  partial_.shrink_to_fit();
  return Result::kError;
}

// The first two bytes of a frame against RFC 6455 and the fragmentation state: the reason it is
// refused, or an empty view.
std::string_view FrameParser::RefuseHeader(uint8_t byte0, uint8_t byte1) const {
  const bool fin = byte0 & 0x80;
  const uint8_t opcode = byte0 & 0x0F;
  if (byte0 & 0x70) return "reserved bits set";
  if (!IsKnownOpcode(opcode)) return "unknown opcode";
  if (!(byte1 & 0x80)) return "client frame not masked";
  if (IsControl(opcode)) {
    if (!fin) return "fragmented control frame";
    if ((byte1 & 0x7F) > kMaxControlPayload) return "control frame above 125 bytes";
  } else if (opcode == static_cast<uint8_t>(Opcode::kContinuation)) {
    if (!in_fragmented_) return "continuation without a message";
  } else if (in_fragmented_) {
    return "new data frame inside a fragmented message";
  }
  return {};
}

FrameParser::Result FrameParser::FinishControl(Opcode opcode, const char* payload, size_t n,
                                               const uint8_t key[4], ClientMessage* out) {
  out->opcode = opcode;
  out->payload.resize(n);
  Unmask(out->payload.data(), payload, n, key);
  if (opcode != Opcode::kClose || n == 0) return Result::kMessage;
  if (n == 1) return Fail(CloseCode::kProtocolError, "close payload of 1 byte");
  const auto code = static_cast<uint16_t>((static_cast<uint8_t>(out->payload[0]) << 8) |
                                          static_cast<uint8_t>(out->payload[1]));
  if (!IsValidCloseCode(code)) return Fail(CloseCode::kProtocolError, "invalid close code");
  if (!IsValidUtf8(std::string_view(out->payload).substr(2))) {
    return Fail(CloseCode::kInvalidPayload, "close reason not UTF-8");
  }
  return Result::kMessage;
}

FrameParser::Result FrameParser::Deliver(Opcode opcode, ClientMessage* out) {
  out->opcode = opcode;
  if (opcode == Opcode::kText && !IsValidUtf8(out->payload)) {
    return Fail(CloseCode::kInvalidPayload, "text not UTF-8");
  }
  return Result::kMessage;
}

FrameParser::Result FrameParser::Next(ClientMessage* out) {
  if (failed_) return Result::kError;
  for (;;) {
    const size_t available = buffer_.size() - consumed_;
    if (available < 2) return Result::kNeedMore;
    const auto* p = reinterpret_cast<const uint8_t*>(buffer_.data() + consumed_);
    if (std::string_view refused = RefuseHeader(p[0], p[1]); !refused.empty()) {
      return Fail(CloseCode::kProtocolError, refused);
    }
    const bool fin = p[0] & 0x80;
    const uint8_t opcode = p[0] & 0x0F;
    const bool control = IsControl(opcode);
    const uint8_t length7 = p[1] & 0x7F;

    const size_t length_bytes = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
    if (available < 2 + length_bytes) return Result::kNeedMore;
    uint64_t length = length7;
    if (length_bytes != 0) {
      length = 0;
      for (size_t i = 0; i < length_bytes; ++i) length = (length << 8) | p[2 + i];
      if (length >> 63) return Fail(CloseCode::kProtocolError, "frame length with the top bit set");
    }
    // The length is known: refuse an oversize message before any of its payload is buffered.
    if (!control) {
      const uint64_t so_far = in_fragmented_ ? partial_.size() : 0;
      if (length > max_message_bytes_ || so_far > max_message_bytes_ - length) {
        return Fail(CloseCode::kTooBig, "message too big");
      }
    }
    const size_t header = 2 + length_bytes + 4;
    if (available < header || available - header < length) return Result::kNeedMore;

    uint8_t key[4];
    std::memcpy(key, p + 2 + length_bytes, 4);
    const char* payload = reinterpret_cast<const char*>(p + header);
    const size_t n = static_cast<size_t>(length);
    consumed_ += header + n;

    if (control) return FinishControl(static_cast<Opcode>(opcode), payload, n, key, out);
    if (opcode != static_cast<uint8_t>(Opcode::kContinuation)) {
      if (fin) {  // a whole message in one frame
        out->payload.resize(n);
        Unmask(out->payload.data(), payload, n, key);
        return Deliver(static_cast<Opcode>(opcode), out);
      }
      in_fragmented_ = true;
      partial_opcode_ = static_cast<Opcode>(opcode);
      partial_.clear();
    }
    const size_t start = partial_.size();
    partial_.resize(start + n);
    Unmask(partial_.data() + start, payload, n, key);
    if (!fin) continue;

    in_fragmented_ = false;
    out->payload.swap(partial_);
    partial_.clear();
    return Deliver(partial_opcode_, out);
  }
}

}  // namespace weir::serve
