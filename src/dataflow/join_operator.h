// The operator of a join step (weir/join.h states what it does): feeds each input's records to
// the assembler (src/join/), holds their deliveries, and emits each ready group once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dataflow/kind.h"
#include "dataflow/operators.h"
#include "weir/join.h"

namespace weir::dataflow {

// Dedup state lives in the step's store (group id -> group time), so an emitted group that a
// broker redelivers after a crash is recognised. kCorruption/kIOError from the store.
// `inputs`: the name of each input, in input order. `options` and `inputs` outlive the operator.
Result<std::unique_ptr<Operator>> MakeJoinOperator(const JoinOptions& options,
                                                   const std::vector<std::string>& inputs,
                                                   const StepContext& context);

}  // namespace weir::dataflow
