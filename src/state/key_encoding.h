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

#include <cstdint>
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

// The smallest byte string greater than every string that starts with `prefix`; empty when none
// exists (prefix is all 0xff): then the range is unbounded above.
std::string PrefixEnd(std::string_view prefix);

}  // namespace weir::state
