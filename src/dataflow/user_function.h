// Calling the functions users give to steps (Stream::Map, Filter, FlatMap, Apply, Update,
// MapRecord, ..., a ForEach callback). A function that throws, a ValueTypeError from a field
// read as the wrong type or an exception of its own, fails only the record it was called for:
// the record goes to the dead-letter topic with the step's name and the reason, the failure is
// counted (RunSummary::user_function_failures), and the pipeline goes on with the next record.
// Without this the exception would end the process, and the restart would fail again on the
// same record.
//
// Threads: on the task's thread, as the operator that calls it.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "dataflow/task_context.h"
#include "weir/record.h"

namespace weir::dataflow {

// Sends `record` to the dead-letter topic as the input a user function of `step_name` failed on,
// with `what` as the reason, and counts it.
void DeadLetterUserFailure(TaskContext& task, std::string_view step_name, const Record& record,
                           std::string_view what);

// What an operator holds to call its step's user function: the task and the step's name.
class UserFunctionCaller {
 public:
  UserFunctionCaller(TaskContext& task, std::string_view step_name)
      : task_(task), step_name_(step_name) {}

  // Calls `call()`; true if it returned. If it threw, `record` is dead-lettered as above and
  // the result is false: the caller drops the record and undoes what the call began (state
  // writes).
  template <typename Function>
  bool Call(const Record& record, Function&& call) {
    try {
      std::forward<Function>(call)();
      return true;
    } catch (const std::exception& e) {
      DeadLetterUserFailure(task_, step_name_, record, e.what());
    } catch (...) {
      DeadLetterUserFailure(task_, step_name_, record, "an exception that is not a std::exception");
    }
    return false;
  }
  TaskContext& task() const { return task_; }

 private:
  TaskContext& task_;
  std::string step_name_;
};

}  // namespace weir::dataflow
