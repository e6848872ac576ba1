// JavaRandom: the 48-bit linear congruential generator of java.util.Random, bit for bit.
//
// The Nexmark reference generator seeds one java.util.Random per event with the event id and
// draws every field from it, so reproducing its streams needs the same generator and the same
// bounded-draw algorithms (nextInt(bound) with its rejection loop, nextDouble from 53 bits).
// Constants and algorithms are those documented in the java.util.Random Javadoc.
// Thread safety: a value type with mutable state; one instance per thread.
#pragma once

#include <cstdint>

namespace weir::nexmark {

class JavaRandom {
 public:
  explicit JavaRandom(int64_t seed) : seed_((static_cast<uint64_t>(seed) ^ kMultiplier) & kMask) {}

  int32_t NextInt() { return Next(32); }

  // Uniform in [0, bound). REQUIRES: bound > 0.
  int32_t NextInt(int32_t bound) {
    int32_t r = Next(31);
    const int32_t m = bound - 1;
    if ((bound & m) == 0) {
      return static_cast<int32_t>((static_cast<int64_t>(bound) * r) >> 31);
    }
    // Java's `u - r + m < 0` detects int overflow: reject the last partial range.
    for (int32_t u = r; static_cast<int64_t>(u) - (r = u % bound) + m > INT32_MAX; u = Next(31)) {
    }
    return r;
  }

  int64_t NextLong() {
    const uint64_t hi = static_cast<uint64_t>(static_cast<int64_t>(Next(32))) << 32;
    return static_cast<int64_t>(hi + static_cast<uint64_t>(static_cast<int64_t>(Next(32))));
  }

  // Uniform in [0, 1) with 53 random bits.
  double NextDouble() {
    const int64_t bits = (static_cast<int64_t>(Next(26)) << 27) + Next(27);
    return static_cast<double>(bits) * 0x1.0p-53;
  }

 private:
  static constexpr uint64_t kMultiplier = 0x5DEECE66DULL;
  static constexpr uint64_t kAddend = 0xBULL;
  static constexpr uint64_t kMask = (uint64_t{1} << 48) - 1;

  int32_t Next(int bits) {
    seed_ = (seed_ * kMultiplier + kAddend) & kMask;
    return static_cast<int32_t>(static_cast<uint32_t>(seed_ >> (48 - bits)));
  }

  uint64_t seed_;
};

}  // namespace weir::nexmark
