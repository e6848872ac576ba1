// AssignWholeBinary: a stored buffer read as exactly one value in the binary form
// (Value::AppendBinary's): the one place that checks no bytes follow the value, for every reader
// of stored values (log records, state values, join entries).
#pragma once

#include <string_view>

#include "weir/status.h"
#include "weir/value.h"

namespace weir {

// Makes `into` the value that `bytes` hold whole. Value::AssignBinary's error if they do not
// begin with one, kCorruption "bytes after the value" if more follow it; `into` is null then.
Status AssignWholeBinary(std::string_view bytes, Value& into);

}  // namespace weir
