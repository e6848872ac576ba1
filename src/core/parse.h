// Integers and numbers read from text written by people or by an older Weir (YAML scalars,
// command-line flags, URLs, saved source positions): the whole text must be the number, with no
// space, '+', or trailing junk, and it must fit. Every error names what was being read.
//
// Contract: nothing here throws or allocates on success; errors are kInvalidArgument whose
// message starts with `what` and quotes the text ("--from must be an integer, found 'x'").
// Callers that keep their own wording test ok() and discard the message.
// Threads: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "weir/status.h"

namespace weir {

// A decimal integer with an optional leading '-' ("-12"; not "12x", " 12", "+12", "").
Result<int64_t> ParseInt64(std::string_view text, std::string_view what);
// As ParseInt64, and within [min, max] ("... must be an integer from MIN to MAX, found '...'").
Result<int64_t> ParseInt64(std::string_view text, std::string_view what, int64_t min, int64_t max);
// Digits only (no sign), at most `max`: ports, offsets and counts in URLs and wire frames.
Result<uint64_t> ParseUnsigned(std::string_view text, std::string_view what,
                               uint64_t max = UINT64_MAX);
// A number as std::from_chars reads one ("1.5", "-2e3", "7", "inf"; not "1.5s", "+1").
Result<double> ParseDouble(std::string_view text, std::string_view what);

}  // namespace weir
