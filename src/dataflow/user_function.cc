#include "dataflow/user_function.h"

namespace weir::dataflow {

void DeadLetterUserFailure(TaskContext& task, std::string_view step_name, const Record& record,
                           std::string_view what) {
  std::string reason = "step '";
  reason.append(step_name).append("' failed: ").append(what);
  task.DeadLetter(reason, record);
  task.CountUserFunctionFailure();
}

}  // namespace weir::dataflow
