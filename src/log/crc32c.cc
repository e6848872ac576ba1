#include "log/crc32c.h"

#include <array>
#include <cstring>

#include "log/record_format.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace weir::log {
namespace internal {
namespace {

// Reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82F63B78;

// Slicing-by-8 tables: the fallback still has to keep up with replay on CPUs without SSE4.2.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][i] = c;
  }
  for (int s = 1; s < 8; ++s) {
    for (uint32_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}
constexpr auto kTables = MakeTables();

}  // namespace

uint32_t Crc32cPortable(uint32_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t c = ~crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian hosts only, as coding.h
    word ^= c;
    c = kTables[7][word & 0xff] ^ kTables[6][(word >> 8) & 0xff] ^ kTables[5][(word >> 16) & 0xff] ^
        kTables[4][(word >> 24) & 0xff] ^ kTables[3][(word >> 32) & 0xff] ^
        kTables[2][(word >> 40) & 0xff] ^ kTables[1][(word >> 48) & 0xff] ^ kTables[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
bool HardwareCrc32cAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p++));
  return ~c32;
}
#else
bool HardwareCrc32cAvailable() { return false; }
uint32_t Crc32cHardware(uint32_t crc, std::string_view data) { return Crc32cPortable(crc, data); }
#endif

}  // namespace internal

uint32_t Crc32c(uint32_t crc, std::string_view data) {
  return internal::HardwareCrc32cAvailable() ? internal::Crc32cHardware(crc, data)
                                             : internal::Crc32cPortable(crc, data);
}

}  // namespace weir::log
