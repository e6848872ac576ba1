// The flat-map kind: each record becomes zero or more, with its key and timestamp
// (Stream::FlatMap). No YAML form.
#include <functional>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "dataflow/user_function.h"

namespace weir::dataflow {
namespace {

using FlatMapFunction = std::function<std::vector<Value>(const Value&)>;

class FlatMapOperator : public Operator {
 public:
  FlatMapOperator(FlatMapFunction fn, const StepContext& context)
      : fn_(std::move(fn)), user_(context.task, context.step_name) {}
  void Process(Record&& r) override {
    std::vector<Value> values;
    if (!user_.Call(r, [&] { values = fn_(r.value); })) return;
    for (size_t i = 0; i < values.size(); ++i) {
      const bool last = i + 1 == values.size();
      Record out{last ? std::move(r.key) : r.key, std::move(values[i]), r.timestamp,
                 last ? std::move(r.headers) : r.headers};
      Forward(std::move(out));
    }
  }

 private:
  FlatMapFunction fn_;
  UserFunctionCaller user_;
};

class FlatMapStep : public StepDefinition {
 public:
  explicit FlatMapStep(FlatMapFunction fn) : fn_(std::move(fn)) {}
  std::string_view kind() const override { return "flat-map"; }
  Status Validate() const override {
    return fn_ ? Status::OK() : Status::InvalidArgument("FlatMap needs a function");
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new FlatMapOperator(fn_, context));
  }

 private:
  FlatMapFunction fn_;
};

}  // namespace
}  // namespace weir::dataflow

namespace weir {

Stream Stream::FlatMap(std::function<std::vector<Value>(const Value&)> fn, std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::FlatMapStep>(std::move(fn)), std::move(name));
}

}  // namespace weir
