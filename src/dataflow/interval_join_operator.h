// The operator of an interval join step (weir/join.h states what it does).
#pragma once

#include <memory>

#include "dataflow/kind.h"
#include "dataflow/operators.h"
#include "weir/join.h"

namespace weir::dataflow {

// Builds the operator and restores its expiry index from the task's store. kCorruption/kIOError
// from the store.
Result<std::unique_ptr<Operator>> MakeIntervalJoinOperator(const IntervalJoinOptions& options,
                                                           const StepContext& context);

}  // namespace weir::dataflow
