// The names a user gives that become file and directory names: topics, applications (their state
// directory and internal topics), state stores (RocksDB column families). One rule for all, so a
// name accepted in one place is never refused in the next.
//
// Contract: a name is 1 to kMaxNameLength characters of [A-Za-z0-9._-], and not "." or "..".
// kMaxNameLength is 200, the topic limit the log, the server's URLs and clients already use.
// Threads: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

#include "weir/status.h"

namespace weir {

inline constexpr size_t kMaxNameLength = 200;

// True if `c` may appear in a name: [A-Za-z0-9._-]. For callers that word their own refusal
// (naming the character); whether a name is valid is CheckName's to say.
bool IsNameChar(char c);

// OK, or kInvalidArgument "invalid <what> '<name>': <why>" ("invalid topic name 'a b': ...").
Status CheckName(std::string_view name, std::string_view what);

}  // namespace weir
