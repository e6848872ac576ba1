// Delivery handles (docs/architecture.md §7): a record a step holds stays unresolved until the step
// resolves it, so its source neither commits past it nor acknowledges it to a broker.
#pragma once

#include <cstdint>

#include "weir/types.h"

namespace weir {

// Where a record is in its source, numbered as the source numbers its records (a log offset, a
// file's line, a JetStream delivery): what the source rereads and resolves it by. Distinct from
// the message's identity, which stays the same across redeliveries.
using SourcePosition = NamedType<int64_t, struct SourcePositionTag>;

// What becomes of a delivery a step held: processed (may commit), deliver it again, or never
// deliver it again.
enum class Resolution { kAck, kNak, kTerm };

// A record a step holds (docs/architecture.md §7): which task input it came from, the delivery's
// position there, the message's identity across redeliveries, and how many times it has been
// delivered.
struct Delivery {
  int32_t input = 0;
  SourcePosition position;
  int64_t identity = 0;
  int32_t deliveries = 1;
};

}  // namespace weir
