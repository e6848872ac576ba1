// Self-delimiting state keys (docs/architecture.md §5).
//
// A state key is the message key, length-prefixed, followed by big-endian fields:
//
//   state_key := len(message_key):u32 big-endian | message_key | field*
//
// Because the length comes first, the range of one message key ([prefix, PrefixEnd(prefix)))
// never contains a key of another message key, whatever bytes either holds and even when one is
// a prefix of the other. Integer fields are big-endian with the sign bit flipped, so byte order
// is numeric order and a range scan over a window start or a fire time is a seek.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace weir::state {

// Appends the length-prefixed message key.
void AppendMessageKey(std::string& out, std::string_view message_key);
// Appends a signed 64-bit field in order-preserving big-endian form.
void AppendInt64Field(std::string& out, int64_t v);
// Appends a string field, self-delimited (length-prefixed like the message key).
void AppendStringField(std::string& out, std::string_view s);

// The encoded prefix of a message key: every state key of that message key starts with it.
std::string MessageKeyPrefix(std::string_view message_key);

// Reads the message key at the front of `in` and advances past it; nullopt if malformed.
std::optional<std::string_view> ReadMessageKey(std::string_view& in);
std::optional<int64_t> ReadInt64Field(std::string_view& in);
std::optional<std::string_view> ReadStringField(std::string_view& in);

// The first 16 bytes of a key as two big-endian words, missing bytes as zeros. Keys whose heads
// differ order as their heads do, so a sort of many keys (a checkpoint's dirty keys, a window
// step's due entries) compares integers and reads the keys' bytes only on a tie: keys that share
// their first 16 bytes, or that differ only by trailing zero bytes.
struct KeyHead {
  explicit KeyHead(std::string_view key) : words{Word(key, 0), Word(key, 8)} {}
  std::array<uint64_t, 2> words;

  // Spelled out: the defaulted == compares the array with a call to memcmp.
  friend bool operator==(const KeyHead& a, const KeyHead& b) {
    return a.words[0] == b.words[0] && a.words[1] == b.words[1];
  }
  friend bool operator<(const KeyHead& a, const KeyHead& b) {
    return a.words[0] != b.words[0] ? a.words[0] < b.words[0] : a.words[1] < b.words[1];
  }

 private:
  // Bytes [from, from + 8) of `key` as a big-endian number, missing bytes as zeros.
  static uint64_t Word(std::string_view key, size_t from) {
    unsigned char bytes[8] = {};
    if (from < key.size()) {
      std::memcpy(bytes, key.data() + from, std::min<size_t>(8, key.size() - from));
    }
    uint64_t word = 0;
    for (unsigned char b : bytes) word = word << 8 | b;
    return word;
  }
};

// The smallest byte string greater than every string that starts with `prefix`; empty when none
// exists (prefix is all 0xff): then the range is unbounded above.
std::string PrefixEnd(std::string_view prefix);

}  // namespace weir::state
