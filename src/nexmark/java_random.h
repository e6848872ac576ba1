// JavaRandom: the 48-bit linear congruential generator of java.util.Random, bit for bit.
//
// The Nexmark reference generator seeds one java.util.Random per event with the event id and
// draws every field from it, so reproducing its streams needs the same generator and the same
// bounded-draw algorithms (nextInt(bound) with its rejection loop, nextDouble from 53 bits).
// Constants and algorithms are those documented in the java.util.Random Javadoc.
//
// Jumping ahead: k steps of the generator are one multiply-add, state * a_k + c_k mod 2^48, so
// a run of draws whose count is known (nextExactString's) can be computed from one state
// independently, without the chain of dependent steps that calling NextInt() k times is.
// Thread safety: a value type with mutable state; one instance per thread.
#pragma once

#include <array>
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

  // Jumping ahead by up to kJumpBlock steps: the state k + 1 steps after s is
  // (s * kJumps[k].multiplier + kJumps[k].addend) mod 2^48, and NextInt() called in state s
  // returns IntOfState of the state one step after s.
  static constexpr int kJumpBlock = 8;
  struct Jump {
    uint64_t multiplier;
    uint64_t addend;
  };
  static constexpr uint64_t kMultiplier = 0x5DEECE66DULL;
  static constexpr uint64_t kAddend = 0xBULL;
  static constexpr uint64_t kMask = (uint64_t{1} << 48) - 1;
  static constexpr std::array<Jump, kJumpBlock> kJumps = [] {
    std::array<Jump, kJumpBlock> jumps{};
    Jump j{1, 0};
    for (Jump& next : jumps) {
      j = {(j.multiplier * kMultiplier) & kMask, (j.addend * kMultiplier + kAddend) & kMask};
      next = j;
    }
    return jumps;
  }();
  // Only bits 16..47 of a state make NextInt(), so a state may be given mod 2^64.
  static int32_t IntOfState(uint64_t state) {
    return static_cast<int32_t>(static_cast<uint32_t>(state >> 16));
  }
  uint64_t state() const { return seed_; }
  // Continues from `state`, from state() or a jump ahead of it (mod 2^64 is enough).
  void set_state(uint64_t state) { seed_ = state & kMask; }
  // Where `count` calls of NextInt() would leave the generator. REQUIRES: count >= 0.
  void Skip(int count) {
    for (; count > 0; count -= kJumpBlock) {
      const Jump& j = kJumps[(count < kJumpBlock ? count : kJumpBlock) - 1];
      seed_ = (seed_ * j.multiplier + j.addend) & kMask;
    }
  }

  // The next kJumpBlock values of NextInt(), in order, consuming only the first `count` of them
  // (the others are those that would follow), each computed from the current state.
  // REQUIRES: 1 <= count <= kJumpBlock.
  void NextIntBlock(int32_t (&out)[kJumpBlock], int count) {
    for (int k = 0; k < kJumpBlock; ++k) {
      out[k] = IntOfState(seed_ * kJumps[k].multiplier + kJumps[k].addend);
    }
    Skip(count);
  }

 private:
  int32_t Next(int bits) {
    seed_ = (seed_ * kMultiplier + kAddend) & kMask;
    return static_cast<int32_t>(static_cast<uint32_t>(seed_ >> (48 - bits)));
  }

  uint64_t seed_;
};

}  // namespace weir::nexmark
