// HashBytes: the hash of in-memory tables keyed by byte strings (the state cache's NodeMap).
//
// Built for the keys those tables hold, a state key of 10-30 bytes: a key of up to 16 bytes is
// read as two words (four 4-byte loads, overlapping where it is shorter than 16, no loop), longer
// keys 16 bytes a step; each 16 bytes are mixed by a 64x64->128-bit multiplication, folded, and a
// last multiplication by a constant finishes. It is wyhash's construction, with its "condom": the
// operands are xored back into each folded product, so a word that happens to cancel its
// constant (a zero operand) does not erase the other. Every bit of the result depends on every
// byte of the key, the low bits too (tables index by them). Inline, where
// std::hash<std::string_view> (libstdc++'s murmur2) is a call: 7.8% of the tumbling bench's task
// threads hashing, 5.0% with this.
//
// Not stable: it may change with any build, so a hash is never stored or sent anywhere (the
// partitioner has its own, fixed hash). Not keyed: a table of adversarial keys degrades as it
// would with std::hash.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace weir {

namespace hash_internal {

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// The 128-bit product of a and b, its halves and the operands xored.
inline uint64_t MultiplyFold(uint64_t a, uint64_t b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64) ^ a ^ b;
}
// Odd constants with about half their bits set (wyhash's).
inline constexpr uint64_t kP0 = 0xa0761d6478bd642full;
inline constexpr uint64_t kP1 = 0xe7037ed1a0b428dbull;
inline constexpr uint64_t kP2 = 0x8ebc6af09c88c6e3ull;

}  // namespace hash_internal

inline uint64_t HashBytes(std::string_view bytes) {
  using namespace hash_internal;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  uint64_t seed = kP0 ^ n;
  uint64_t a = 0;
  uint64_t b = 0;
  if (n <= 16) {
    if (n >= 4) {
      // Two 4-byte loads from each end, the inner ones (n / 8) * 4 bytes in: together they read
      // every byte.
      const size_t in = (n >> 3) << 2;
      a = Load32(p) << 32 | Load32(p + in);
      b = Load32(p + n - 4) << 32 | Load32(p + n - 4 - in);
    } else if (n > 0) {
      a = uint64_t{p[0]} << 16 | uint64_t{p[n >> 1]} << 8 | p[n - 1];
    }
  } else {
    size_t left = n;
    for (; left > 16; left -= 16, p += 16) {
      seed = MultiplyFold(Load64(p) ^ kP1, Load64(p + 8) ^ seed);
    }
    // The last 16 bytes of the key, some of them hashed by the loop already.
    a = Load64(p + left - 16);
    b = Load64(p + left - 8);
  }
  return MultiplyFold(kP1 ^ n, MultiplyFold(a ^ kP1, b ^ seed) ^ kP2);
}

}  // namespace weir
