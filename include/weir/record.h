// Record: what flows through a pipeline: {key, value, timestamp, headers}.
#pragma once

#include <string>
#include <vector>

#include "weir/key.h"
#include "weir/types.h"
#include "weir/value.h"

namespace weir {

struct Header {
  std::string name;
  std::string value;
  friend bool operator==(const Header&, const Header&) = default;
};

struct Record {
  Key key;
  Value value;
  EventTime timestamp;
  std::vector<Header> headers;
  friend bool operator==(const Record&, const Record&) = default;
};

}  // namespace weir
