// The cursor file of a Subscription: the last offset a consumer handled, for one topic partition.
// Format: one line of JSON, {"topic":"clicks","partition":0,"last":41}. Replaced atomically.
//
// Thread safety: free functions; one writer per file (nothing locks it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "weir/status.h"
#include "weir/types.h"

namespace weir::client {

struct Cursor {
  std::string topic;
  PartitionId partition;
  Offset last;  // the last handled offset
  friend bool operator==(const Cursor&, const Cursor&) = default;
};

// The cursor in `path`, or nullopt if there is no such file. A file that cannot be read is an
// error from errno naming the path; a file that is not exactly one cursor (empty, truncated,
// not JSON, members missing, extra or of the wrong type, a negative offset) is kCorruption
// naming the path and quoting what is wrong.
Result<std::optional<Cursor>> ReadCursorFile(const std::string& path);

// Writes `cursor` to `path` so that a reader (or a crash at any point) sees the old file or the
// new one whole: PATH.tmp written and fsynced, renamed over PATH, the directory fsynced.
Status WriteCursorFile(const std::string& path, const Cursor& cursor);

// OK if `path` could be written as a cursor file: its directory exists and is writable, and
// `path` is not a directory. Checked at Open so that a typo fails before the first message.
Status CheckCursorFileWritable(const std::string& path);

}  // namespace weir::client
