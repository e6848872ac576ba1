// The map kind: each record's value becomes what a function of the value (Stream::Map) or of the
// whole record (Stream::MapRecord) returns, or is changed in place by one (Stream::Update
// without state; select.cc is the map that keeps some fields). And
// the with-timestamp kind: each record's event time becomes what a function of it returns
// (Stream::WithTimestamp).
#include <functional>

#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"
#include "dataflow/user_function.h"

namespace weir::dataflow {
namespace {

// A step of one function run by an operator `Op(fn, context)`: kind() names it in a checkpoint's
// fingerprint; `api` names the call in Validate's refusal of an empty function.
template <typename Op, typename Fn>
class FunctionStep : public StepDefinition {
 public:
  FunctionStep(std::string_view kind, std::string_view api, Fn fn)
      : kind_(kind), api_(api), fn_(std::move(fn)) {}
  std::string_view kind() const override { return kind_; }
  Status Validate() const override {
    return fn_ ? Status::OK() : Status::InvalidArgument(std::string(api_) + " needs a function");
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new Op(fn_, context));
  }

 private:
  std::string_view kind_;
  std::string_view api_;
  Fn fn_;
};

using MapFunction = std::function<Value(const Record&)>;

class MapOperator : public Operator {
 public:
  MapOperator(MapFunction fn, const StepContext& context)
      : fn_(std::move(fn)), user_(context.task, context.step_name) {}
  void Process(Record&& r) override {
    Value result;
    if (Apply(r, result)) ForwardReplacingValue(r, std::move(result));
  }
  // A fan-out's record: the result goes down with a copy of the key, time and headers, never
  // of the input's value.
  void ProcessShared(const Record& r) override {
    Value result;
    if (Apply(r, result)) Forward(Record{r.key, std::move(result), r.timestamp, r.headers});
  }

 private:
  // The function's result for `r`; false if it threw (the record is dead-lettered).
  bool Apply(const Record& r, Value& result) {
    return user_.Call(r, [&] { result = fn_(r); });
  }

  MapFunction fn_;
  UserFunctionCaller user_;
};

using UpdateFunction = std::function<void(Value&)>;

// The value changed in place (Stream::Update without state): what a map that returns the value
// with some fields changed does, without building a new value. A fan-out's shared record is
// copied first (Operator::ProcessShared), so that the other branches see it unchanged.
class UpdateOperator : public Operator {
 public:
  UpdateOperator(UpdateFunction fn, const StepContext& context)
      : fn_(std::move(fn)), user_(context.task, context.step_name) {}
  void Process(Record&& r) override {
    if (user_.Call(r, [&] { fn_(r.value); })) Forward(std::move(r));
  }

 private:
  UpdateFunction fn_;
  UserFunctionCaller user_;
};

using TimestampFunction = std::function<EventTime(const Record&)>;

class WithTimestampOperator : public Operator {
 public:
  WithTimestampOperator(TimestampFunction fn, const StepContext& context)
      : fn_(std::move(fn)), user_(context.task, context.step_name) {}
  void Process(Record&& r) override {
    EventTime timestamp = r.timestamp;
    if (!user_.Call(r, [&] { timestamp = fn_(r); })) return;
    r.timestamp = timestamp;
    Forward(std::move(r));
  }

 private:
  TimestampFunction fn_;
  UserFunctionCaller user_;
};

}  // namespace

}  // namespace weir::dataflow

namespace weir {

Stream Stream::Map(std::function<Value(const Value&)> fn, std::string name) {
  dataflow::MapFunction on_value;
  if (fn) on_value = [fn = std::move(fn)](const Record& r) { return fn(r.value); };
  return MapRecord(std::move(on_value), std::move(name));
}

Stream Stream::MapRecord(std::function<Value(const Record&)> fn, std::string name) {
  using Step = dataflow::FunctionStep<dataflow::MapOperator, dataflow::MapFunction>;
  return dataflow::GraphAccess::AddStep(*this, std::make_shared<Step>("map", "Map", std::move(fn)),
                                        std::move(name));
}

Stream Stream::Update(std::function<void(Value&)> fn, std::string name) {
  // "map": a stateless function of the value, as a Map is (stateful Update is "update").
  using Step = dataflow::FunctionStep<dataflow::UpdateOperator, dataflow::UpdateFunction>;
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<Step>("map", "Update", std::move(fn)), std::move(name));
}

Stream Stream::WithTimestamp(std::function<EventTime(const Record&)> fn, std::string name) {
  using Step = dataflow::FunctionStep<dataflow::WithTimestampOperator, dataflow::TimestampFunction>;
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<Step>("with-timestamp", "WithTimestamp", std::move(fn)),
      std::move(name));
}

}  // namespace weir
