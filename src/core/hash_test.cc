#include "core/hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
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

TEST(HashBytes, AWordThatCancelsItsConstantDoesNotEraseTheRestOfTheKey) {
  // Keys laid out so that a word the hash multiplies is zero (the word equals the constant it is
  // xored with): a 12-byte key whose first two 4-byte loads make it, and keys of 32 and 40 bytes
  // whose first or second 16-byte block starts with it. The keys differ only in the bytes that
  // word is multiplied with, which must still count.
  const uint64_t constant = hash_internal::kP1;
  const uint32_t high = static_cast<uint32_t>(constant >> 32);
  const uint32_t low = static_cast<uint32_t>(constant);
  std::mt19937_64 rng(11);
  struct Layout {
    size_t length;
    size_t at;
  };
  for (const Layout layout : {Layout{12, 0}, Layout{32, 0}, Layout{40, 16}}) {
    std::set<uint64_t> hashes;
    for (int i = 0; i < 50; ++i) {
      std::string key(layout.length, 'k');
      // The bytes the zero word is multiplied with: the last 4 of 12, or the block's second 8.
      const size_t varied = layout.length <= 16 ? 8 : layout.at + 8;
      for (size_t b = varied; b < varied + 4; ++b) key[b] = static_cast<char>(rng());
      if (layout.length <= 16) {
        std::memcpy(key.data(), &high, 4);
        std::memcpy(key.data() + 4, &low, 4);
      } else {
        std::memcpy(key.data() + layout.at, &constant, 8);
      }
      hashes.insert(HashBytes(key));
    }
    EXPECT_EQ(hashes.size(), 50u) << "length " << layout.length << ", at " << layout.at;
  }
}

TEST(HashBytes, ReadsNoByteOutsideTheKey) {
  // Keys in buffers of exactly their size, so that ASan sees a read past either end.
  for (size_t n = 1; n <= 64; ++n) {
    std::unique_ptr<char[]> bytes(new char[n]);
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 31);
    EXPECT_NE(HashBytes(std::string_view(bytes.get(), n)),
              HashBytes(std::string_view(bytes.get(), n - 1)));
  }
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
