// The operator of a join step (weir/join.h states what it does): feeds each input's records to
// the assembler (src/join/), holds their deliveries, and emits each ready group once.
#pragma once

#include <memory>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "dataflow/task_context.h"

namespace weir::dataflow {

// Dedup state lives in the step's store (group id -> group time), so an emitted group that a
// broker redelivers after a crash is recognised. kCorruption/kIOError from the store.
Result<std::unique_ptr<Operator>> MakeJoinOperator(const Step& step, TaskContext& ctx);

}  // namespace weir::dataflow
