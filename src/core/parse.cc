#include "core/parse.h"

#include <charconv>
#include <string>
#include <system_error>

namespace weir {
namespace {

Status NotA(std::string_view what, std::string_view expected, std::string_view text) {
  return Status::InvalidArgument(std::string(what) + " must be " + std::string(expected) +
                                 ", found '" + std::string(text) + "'");
}

// True if all of `text` is one T (std::from_chars: no space, no '+').
template <typename T>
bool ParseWhole(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, out);
  return r.ec == std::errc() && r.ptr == end;
}

}  // namespace

Result<int64_t> ParseInt64(std::string_view text, std::string_view what) {
  int64_t value;
  if (!ParseWhole(text, value)) return NotA(what, "an integer", text);
  return value;
}

Result<int64_t> ParseInt64(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  int64_t value;
  if (!ParseWhole(text, value) || value < min || value > max) {
    return NotA(what, "an integer from " + std::to_string(min) + " to " + std::to_string(max),
                text);
  }
  return value;
}

Result<uint64_t> ParseUnsigned(std::string_view text, std::string_view what, uint64_t max) {
  uint64_t value;  // an unsigned from_chars takes no sign
  if (!ParseWhole(text, value) || value > max) {
    return NotA(what, "a whole number from 0 to " + std::to_string(max), text);
  }
  return value;
}

Result<double> ParseDouble(std::string_view text, std::string_view what) {
  double value;
  if (!ParseWhole(text, value)) return NotA(what, "a number", text);
  return value;
}

}  // namespace weir
