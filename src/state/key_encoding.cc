#include "state/key_encoding.h"

#include <limits>

#include "core/coding.h"
#include "weir/status.h"

namespace weir::state {
namespace {

void AppendLengthPrefixed(std::string& out, std::string_view s) {
  // The u32 length is what makes the encoding self-delimiting; a longer key cannot be encoded
  // without silently aliasing another one.
  WEIR_CHECK(s.size() <= std::numeric_limits<uint32_t>::max(), "state key part exceeds 4 GiB");
  coding::PutBigEndian32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

std::optional<std::string_view> ReadLengthPrefixed(std::string_view& in) {
  if (in.size() < 4) return std::nullopt;
  uint32_t n = coding::DecodeBigEndian32(in.data());
  if (n > in.size() - 4) return std::nullopt;
  std::string_view s = in.substr(4, n);
  in.remove_prefix(4 + size_t{n});
  return s;
}

}  // namespace

void AppendMessageKey(std::string& out, std::string_view message_key) {
  AppendLengthPrefixed(out, message_key);
}

void AppendInt64Field(std::string& out, int64_t v) { coding::PutOrderedInt64(out, v); }

void AppendStringField(std::string& out, std::string_view s) { AppendLengthPrefixed(out, s); }

std::string MessageKeyPrefix(std::string_view message_key) {
  std::string out;
  out.reserve(4 + message_key.size());
  AppendMessageKey(out, message_key);
  return out;
}

std::optional<std::string_view> ReadMessageKey(std::string_view& in) {
  return ReadLengthPrefixed(in);
}

std::optional<int64_t> ReadInt64Field(std::string_view& in) {
  if (in.size() < 8) return std::nullopt;
  int64_t v = coding::DecodeOrderedInt64(in.data());
  in.remove_prefix(8);
  return v;
}

std::optional<std::string_view> ReadStringField(std::string_view& in) {
  return ReadLengthPrefixed(in);
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  // Trailing 0xff bytes cannot be incremented: drop them and increment the byte before.
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

}  // namespace weir::state
