// Tests and the fuzz target only: encodes a frame as a client does (masked), which the server
// never needs to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "serve/websocket_frame.h"

namespace weir::serve::testing {

// Appends one masked frame. `opcode_bits` is the low nibble of the first byte (any value, so
// tests can send unknown opcodes); `first_bits` are ORed into the first byte (0x80 = FIN).
inline void AppendMaskedFrame(std::string& out, uint8_t opcode_bits, std::string_view payload,
                              uint32_t mask = 0x37FA213D, uint8_t first_bits = 0x80) {
  out.push_back(static_cast<char>(first_bits | (opcode_bits & 0x0F)));
  const uint64_t n = payload.size();
  if (n <= 125) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(n >> (56 - 8 * i)));
  }
  const char key[4] = {static_cast<char>(mask >> 24), static_cast<char>(mask >> 16),
                       static_cast<char>(mask >> 8), static_cast<char>(mask)};
  out.append(key, 4);
  for (size_t i = 0; i < payload.size(); ++i)
    out.push_back(static_cast<char>(payload[i] ^ key[i & 3]));
}

inline std::string MaskedFrame(Opcode opcode, std::string_view payload, bool fin = true) {
  std::string out;
  AppendMaskedFrame(out, static_cast<uint8_t>(opcode), payload, 0x37FA213D, fin ? 0x80 : 0x00);
  return out;
}

}  // namespace weir::serve::testing
