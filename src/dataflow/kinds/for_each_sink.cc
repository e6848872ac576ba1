// The for-each sink kind: a user callback gets every record that reaches it
// (Stream::ForEach), on the task's thread. At least once: the callback is outside the engine's
// checkpoint, so the records after the last checkpoint are passed again after a crash. A
// callback that throws sends its record to the dead-letter topic (user_function.h). No YAML
// form.
#include <functional>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "dataflow/user_function.h"

namespace weir::dataflow {
namespace {

using Callback = std::function<void(const Record&)>;

class ForEachOperator : public Operator {
 public:
  ForEachOperator(Callback fn, const StepContext& context)
      : fn_(std::move(fn)), user_(context.task, context.step_name) {}
  void Process(Record&& r) override {
    if (user_.Call(r, [&] { fn_(r); })) user_.task().CountDelivered();
  }

 private:
  Callback fn_;
  UserFunctionCaller user_;
};

class ForEachSink : public SinkDefinition {
 public:
  explicit ForEachSink(Callback fn) : fn_(std::move(fn)) {}
  std::string_view kind() const override { return "for-each"; }
  Status Validate() const override {
    return fn_ ? Status::OK() : Status::InvalidArgument("ForEach needs a function");
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new ForEachOperator(fn_, context));
  }

 private:
  Callback fn_;
};

}  // namespace
}  // namespace weir::dataflow

namespace weir {

void Stream::ForEach(std::function<void(const Record&)> fn, std::string name) {
  dataflow::GraphAccess::AddStep(*this, std::make_shared<dataflow::ForEachSink>(std::move(fn)),
                                 std::move(name));
}

}  // namespace weir
