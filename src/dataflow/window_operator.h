// The operator of a window step (weir/window.h states what it does).
#pragma once

#include <memory>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "dataflow/task_context.h"

namespace weir::dataflow {

// Builds the operator and restores what the task's store holds for it. kCorruption/kIOError
// from the store.
Result<std::unique_ptr<Operator>> MakeWindowOperator(const Step& step, TaskContext& ctx);

}  // namespace weir::dataflow
