#include "core/hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/coding.h"

namespace weir {
namespace {

TEST(HashBytes, EveryByteOfTheKeyCounts) {
  // For every length to 100 (each load pattern, the loop, its tail), changing any one byte, or
  // any one bit of it, changes the hash; so does the length alone (keys of zero bytes).
  std::mt19937_64 rng(7);
  std::set<uint64_t> zeros;
  for (size_t n = 0; n <= 100; ++n) {
    zeros.insert(HashBytes(std::string(n, '\0')));
    std::string key(n, '\0');
    for (char& c : key) c = static_cast<char>(rng());
    const uint64_t original = HashBytes(key);
    for (size_t i = 0; i < n; ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string changed = key;
        changed[i] = static_cast<char>(changed[i] ^ (1 << bit));
        EXPECT_NE(HashBytes(changed), original)
            << "length " << n << " byte " << i << " bit " << bit;
      }
    }
  }
  EXPECT_EQ(zeros.size(), 101u);
}

TEST(HashBytes, LowBitsSpreadStateKeysOfConsecutiveInts) {
  // A table indexes by the low bits: 64k state keys of consecutive ints (the length prefix, then
  // 8 big-endian bytes) fill 4096 slots about evenly: none empty, none with three times its share.
  constexpr int kKeys = 1 << 16;
  constexpr int kSlots = 1 << 12;
  std::vector<int> count(kSlots);
  for (int i = 0; i < kKeys; ++i) {
    std::string key;
    coding::PutBigEndian32(key, 8);
    coding::PutBigEndian64(key, static_cast<uint64_t>(i));
    ++count[HashBytes(key) & (kSlots - 1)];
  }
  for (int c : count) EXPECT_LT(c, 3 * kKeys / kSlots);
  for (int c : count) EXPECT_GT(c, 0);
}

}  // namespace
}  // namespace weir
