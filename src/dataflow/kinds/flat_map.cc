// The flat-map kind: each record becomes zero or more, with its key and timestamp
// (Stream::FlatMap). No YAML form.
#include <functional>

#include "dataflow/graph.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

using FlatMapFunction = std::function<std::vector<Value>(const Value&)>;

class FlatMapOperator : public Operator {
 public:
  explicit FlatMapOperator(FlatMapFunction fn) : fn_(std::move(fn)) {}
  void Process(Record&& r) override {
    std::vector<Value> values = fn_(r.value);
    for (size_t i = 0; i < values.size(); ++i) {
      const bool last = i + 1 == values.size();
      Record out{last ? std::move(r.key) : r.key, std::move(values[i]), r.timestamp,
                 last ? std::move(r.headers) : r.headers};
      Forward(std::move(out));
    }
  }

 private:
  FlatMapFunction fn_;
};

class FlatMapStep : public StepDefinition {
 public:
  explicit FlatMapStep(FlatMapFunction fn) : fn_(std::move(fn)) {}
  std::string_view kind() const override { return "flat-map"; }
  Status Validate() const override {
    return fn_ ? Status::OK() : Status::InvalidArgument("FlatMap needs a function");
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext&) const override {
    return std::unique_ptr<Operator>(new FlatMapOperator(fn_));
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
