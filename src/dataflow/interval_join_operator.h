// The operator of an interval join step (weir/join.h states what it does).
#pragma once

#include <memory>
#include <string_view>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "dataflow/task_context.h"

namespace weir::dataflow {

// Builds the operator and restores its expiry index from the task's store. kCorruption/kIOError
// from the store.
Result<std::unique_ptr<Operator>> MakeIntervalJoinOperator(const Step& step,
                                                           std::string_view application,
                                                           TaskContext& ctx);

}  // namespace weir::dataflow
