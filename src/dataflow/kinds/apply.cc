// The apply and update kinds: user functions with the record key's State in the step's store
// (Stream::Apply returns a new value or drops the record; Stream::Update changes the value in
// place). No YAML form.
#include <functional>
#include <optional>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "dataflow/step_state.h"
#include "dataflow/user_function.h"

namespace weir::dataflow {
namespace {

using ApplyFunction = std::function<std::optional<Value>(const Value&, State&)>;
using UpdateFunction = std::function<void(Value&, State&)>;

// Exactly one of `apply` and `update` is set. A call that throws changes no state (StepState
// stages its writes) and sends its record to the dead-letter topic (user_function.h).
class StatefulFunctionOperator : public Operator {
 public:
  StatefulFunctionOperator(ApplyFunction apply, UpdateFunction update, const StepContext& context)
      : apply_(std::move(apply)),
        update_(std::move(update)),
        user_(context.task, context.step_name),
        state_(&context.task.Store(context.step_name)) {}
  void Process(Record&& r) override {
    State& state = state_.ForKey(r.key.bytes());
    std::optional<Value> out;
    const bool returned = user_.Call(r, [&] {
      if (update_) {
        update_(r.value, state);
      } else {
        out = apply_(r.value, state);
      }
    });
    if (!returned) {
      state_.Discard();
      return;
    }
    state_.Commit();
    Status s = state_.TakeError();
    if (!s.ok()) return Fail(std::move(s));
    if (update_) return Forward(std::move(r));
    if (out) ForwardReplacingValue(r, std::move(*out));
  }

 private:
  ApplyFunction apply_;
  UpdateFunction update_;
  UserFunctionCaller user_;
  StepState state_;
};

class StatefulFunctionStep : public StepDefinition {
 public:
  explicit StatefulFunctionStep(ApplyFunction apply) : kind_("apply"), apply_(std::move(apply)) {}
  explicit StatefulFunctionStep(UpdateFunction update)
      : kind_("update"), update_(std::move(update)) {}
  std::string_view kind() const override { return kind_; }
  Status Validate() const override {
    if (apply_ || update_) return Status::OK();
    return Status::InvalidArgument(kind_ == "update" ? "Update needs a function"
                                                     : "Apply needs a function");
  }
  bool stateful() const override { return true; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new StatefulFunctionOperator(apply_, update_, context));
  }

 private:
  std::string_view kind_;
  ApplyFunction apply_;
  UpdateFunction update_;
};

}  // namespace
}  // namespace weir::dataflow

namespace weir {

const Value* State::Get(std::string_view name) { return impl_->Get(name); }
void State::Set(std::string_view name, Value value) { impl_->Set(name, std::move(value)); }
void State::Delete(std::string_view name) { impl_->Delete(name); }

Stream Stream::Apply(std::function<std::optional<Value>(const Value&, State&)> fn,
                     std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this,
      std::make_shared<dataflow::StatefulFunctionStep>(dataflow::ApplyFunction(std::move(fn))),
      std::move(name));
}

Stream Stream::Update(std::function<void(Value&, State&)> fn, std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this,
      std::make_shared<dataflow::StatefulFunctionStep>(dataflow::UpdateFunction(std::move(fn))),
      std::move(name));
}

}  // namespace weir
