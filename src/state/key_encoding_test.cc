#include "state/key_encoding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "state/task_store.h"
#include "state/test_util.h"

namespace weir::state {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Message keys drawn from a tiny alphabet that includes 0x00 and 0xff, so that many keys are
// prefixes of others and every boundary byte appears, plus the edge cases named outright.
std::vector<std::string> RandomMessageKeys(std::mt19937_64& rng, size_t n) {
  static constexpr char kAlphabet[] = {'\x00', '\x01', 'a', '\x7f', '\x80', '\xfe', '\xff'};
  std::set<std::string> keys = {"",
                                std::string(1, '\0'),
                                std::string(2, '\0'),
                                "\xff",
                                "\xff\xff",
                                "a",
                                "a\xff",
                                "ab",
                                std::string("a\0", 2),
                                "b"};
  std::uniform_int_distribution<size_t> length(0, 6);
  std::uniform_int_distribution<size_t> letter(0, sizeof(kAlphabet) - 1);
  while (keys.size() < n) {
    std::string key;
    for (size_t i = length(rng); i > 0; --i) key.push_back(kAlphabet[letter(rng)]);
    keys.insert(key);
    // Its extensions too: the case separator-extended encodings get wrong.
    keys.insert(key + kAlphabet[letter(rng)]);
  }
  return {keys.begin(), keys.end()};
}

int64_t RandomInt64(std::mt19937_64& rng) {
  static constexpr int64_t kEdges[] = {kMin, kMin + 1, -1, 0, 1, kMax - 1, kMax};
  switch (rng() % 3) {
    case 0:
      return kEdges[rng() % std::size(kEdges)];
    case 1:
      return static_cast<int64_t>(rng() % 2001) - 1000;
    default:
      return static_cast<int64_t>(rng());
  }
}

TEST(KeyEncoding, MessageKeyRangeHoldsExactlyThatKeysEntries) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> message_keys = RandomMessageKeys(rng, 200);

  TestTempDir dir;
  auto opened = TaskStore::Open(dir.path(), {"windows"});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  KeyValueStore& store = (*opened)->store("windows");

  // Owner of every state key, by construction rather than by range.
  std::map<std::string, size_t> owner;
  for (size_t k = 0; k < message_keys.size(); ++k) {
    for (int field = 0; field < 4; ++field) {
      std::string key = MessageKeyPrefix(message_keys[k]);
      AppendInt64Field(key, RandomInt64(rng));
      if (field % 2 == 1) AppendStringField(key, message_keys[rng() % message_keys.size()]);
      owner[key] = k;
      store.Put(key, Value(static_cast<int64_t>(k)));
    }
    // Half the keys committed, half uncommitted: both sides of the Scan merge are covered.
    if (k == message_keys.size() / 2) {
      ASSERT_TRUE((*opened)->Prepare("half").ok());
      ASSERT_TRUE((*opened)->Commit().ok());
    }
  }

  for (size_t k = 0; k < message_keys.size(); ++k) {
    const std::string prefix = MessageKeyPrefix(message_keys[k]);
    const std::string end = PrefixEnd(prefix);
    std::vector<std::string> expected;
    for (const auto& [key, key_owner] : owner) {
      if (key_owner == k) expected.push_back(key);
    }
    for (bool backwards : {false, true}) {
      std::vector<std::string> seen;
      Status s = store.Scan(prefix, end, backwards, [&](std::string_view key, const Value& v) {
        EXPECT_EQ(v.as_int(), static_cast<int64_t>(k));
        std::string_view rest = key;
        auto decoded = ReadMessageKey(rest);
        EXPECT_TRUE(decoded.has_value());
        EXPECT_EQ(decoded.value_or("<malformed>"), message_keys[k]);
        seen.emplace_back(key);
        return true;
      });
      ASSERT_TRUE(s.ok()) << s.ToString();
      if (backwards) std::reverse(seen.begin(), seen.end());
      EXPECT_EQ(seen, expected) << "message key #" << k << (backwards ? " backwards" : "");
    }
  }
}

TEST(KeyEncoding, Int64FieldsSortNumerically) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> values = {kMin, kMin + 1, -1'000'000'000'000, -256, -255, -1, 0, 1,
                                 255,  256,      kMax - 1,           kMax};
  for (int i = 0; i < 500; ++i) values.push_back(RandomInt64(rng));
  std::vector<std::string> encoded;
  for (int64_t v : values) {
    std::string key = MessageKeyPrefix("k");
    AppendInt64Field(key, v);
    encoded.push_back(key);
  }
  std::sort(values.begin(), values.end());
  std::sort(encoded.begin(), encoded.end());  // std::string compares bytes as unsigned
  ASSERT_EQ(values.size(), encoded.size());
  for (size_t i = 0; i < values.size(); ++i) {
    std::string_view rest = encoded[i];
    ASSERT_EQ(ReadMessageKey(rest), "k");
    EXPECT_EQ(ReadInt64Field(rest), values[i]) << "position " << i;
  }
}

TEST(KeyEncoding, DecodingRoundTrips) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> strings = RandomMessageKeys(rng, 50);
  for (int round = 0; round < 1000; ++round) {
    const std::string& message_key = strings[rng() % strings.size()];
    std::vector<std::variant<int64_t, std::string>> fields;
    std::string key;
    AppendMessageKey(key, message_key);
    for (size_t i = rng() % 5; i > 0; --i) {
      if (rng() % 2 == 0) {
        int64_t v = RandomInt64(rng);
        AppendInt64Field(key, v);
        fields.emplace_back(v);
      } else {
        const std::string& s = strings[rng() % strings.size()];
        AppendStringField(key, s);
        fields.emplace_back(s);
      }
    }
    std::string_view in = key;
    ASSERT_EQ(ReadMessageKey(in), message_key);
    for (const auto& field : fields) {
      if (const int64_t* v = std::get_if<int64_t>(&field)) {
        ASSERT_EQ(ReadInt64Field(in), *v);
      } else {
        ASSERT_EQ(ReadStringField(in), std::get<std::string>(field));
      }
    }
    EXPECT_TRUE(in.empty());
  }
}

TEST(KeyEncoding, TruncatedKeysAreRejectedNotOverread) {
  std::string key = MessageKeyPrefix("user-42");
  AppendStringField(key, "clicks");
  AppendInt64Field(key, -5);
  for (size_t n = 0; n < key.size(); ++n) {
    // A copy of exactly n bytes, so that ASan catches a read past the end.
    const std::string truncated = key.substr(0, n);
    std::string_view in = truncated;
    bool complete = ReadMessageKey(in).has_value() && ReadStringField(in).has_value() &&
                    ReadInt64Field(in).has_value();
    EXPECT_FALSE(complete) << "length " << n;
  }
}

TEST(KeyEncoding, KeyHeadsOrderAsTheKeysDoWhereTheyDiffer) {
  // Keys of 0-40 bytes over few byte values (0, 1, 0x7f, 0x80, 0xff), so that pairs often share
  // their first 16 bytes or differ only by trailing zeros, and encoded message keys of ints.
  std::mt19937_64 rng(14);
  const char kBytes[] = {'\0', '\1', '\x7f', '\x80', '\xff'};
  std::vector<std::string> keys = {"", std::string(1, '\0'), std::string(16, '\0'),
                                   std::string(17, '\0')};
  for (int i = 0; i < 400; ++i) {
    std::string key(rng() % 41, '\0');
    for (char& c : key) c = kBytes[rng() % 5];
    keys.push_back(key);
    key.clear();
    AppendMessageKey(key, std::to_string(static_cast<int64_t>(rng() % 2000) - 1000));
    keys.push_back(key);
  }
  int ties = 0;
  for (const std::string& a : keys) {
    for (const std::string& b : keys) {
      const KeyHead ha(a), hb(b);
      if (ha == hb) {
        ++ties;
        // A tie only where the first 16 bytes, zero-padded, are the same.
        std::string pa = a.substr(0, 16), pb = b.substr(0, 16);
        pa.resize(16, '\0');
        pb.resize(16, '\0');
        EXPECT_EQ(pa, pb);
      } else {
        EXPECT_EQ(ha < hb, a < b) << ::testing::PrintToString(a) << " "
                                  << ::testing::PrintToString(b);
      }
    }
  }
  EXPECT_GT(ties, static_cast<int>(keys.size()));  // ties beyond a key with itself were tried
}

TEST(KeyEncoding, PrefixEndIsTheSmallestStringAboveThePrefixRange) {
  EXPECT_EQ(PrefixEnd("a"), "b");
  EXPECT_EQ(PrefixEnd("a\xff\xff"), "b");
  EXPECT_EQ(PrefixEnd(std::string("a\0", 2)), std::string("a\x01", 2));
  EXPECT_EQ(PrefixEnd("\xfe"), "\xff");
  // No string is above every string starting with all-0xff bytes: unbounded.
  EXPECT_EQ(PrefixEnd("\xff\xff"), "");
  EXPECT_EQ(PrefixEnd(""), "");
}

TEST(KeyEncoding, LongerKeysDoNotFallInsideAPrefixKeysRange) {
  // "a" is a prefix of "ab": with a separator-based encoding ("a|..." vs "ab|...") or with none,
  // the range of "a" could hold "ab"'s entries. The length prefix rules that out.
  const std::string a = MessageKeyPrefix("a");
  const std::string ab = MessageKeyPrefix("ab");
  const std::string a_end = PrefixEnd(a);
  EXPECT_FALSE(ab >= a && ab < a_end);
  std::string a_window = a;
  AppendInt64Field(a_window, kMax);
  EXPECT_TRUE(a_window >= a && a_window < a_end);
}

}  // namespace
}  // namespace weir::state
