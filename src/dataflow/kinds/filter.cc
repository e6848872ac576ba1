// The filter kind: keeps the records for which a predicate holds (Stream::Filter). Its YAML form
// is a condition on one field: `filter: {field: action, eq: purchase}` with one of eq, ne, gt,
// ge, lt, le (numbers with numbers, strings with strings), in (a list), exists (true/false).
#include <functional>
#include <map>
#include <optional>

#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"
#include "dataflow/user_function.h"

namespace weir::dataflow {
namespace {

using Predicate = std::function<bool(const Record&)>;

class FilterOperator : public Operator {
 public:
  FilterOperator(Predicate pred, const StepContext& context)
      : pred_(std::move(pred)), user_(context.task, context.step_name) {}
  void Process(Record&& r) override {
    if (Keeps(r)) ForwardUnchanged(std::move(r));
  }
  // A fan-out's record is copied only if it passes. The copy is not the task's record, so no
  // sink takes it for unchanged (UnchangedInput), and the branches after this one still can.
  void ProcessShared(const Record& r) override {
    if (Keeps(r)) ForwardUnchanged(Record(r));
  }

 private:
  bool Keeps(const Record& r) {
    bool keep = false;
    return user_.Call(r, [&] { keep = pred_(r); }) && keep;
  }

  Predicate pred_;
  UserFunctionCaller user_;
};

class FilterStep : public StepDefinition {
 public:
  // `condition`: the YAML condition (null for a C++ predicate, which has no description).
  FilterStep(Predicate pred, Value condition)
      : pred_(std::move(pred)), condition_(std::move(condition)) {}
  std::string_view kind() const override { return "filter"; }
  Status Validate() const override {
    return pred_ ? Status::OK() : Status::InvalidArgument("Filter needs a predicate");
  }
  void Describe(Fingerprint& fingerprint) const override {
    if (!condition_.is_null()) fingerprint.Fixed("condition", condition_);
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new FilterOperator(pred_, context));
  }

 private:
  Predicate pred_;
  Value condition_;
};

enum class CompareOp { kEq, kNe, kGt, kGe, kLt, kLe, kIn, kExists };

struct Condition {
  std::string field;
  CompareOp op;
  Value operand;           // eq..le; exists: a bool
  std::vector<Value> set;  // in
};

// <0, 0, >0 for comparable values (numbers with numbers, strings with strings); nullopt else.
std::optional<int> Compare(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
  if (a.is_number() && b.is_number()) {
    return a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number();
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string());
  if (a.is_bool() && b.is_bool()) return int(a.as_bool()) - int(b.as_bool());
  if (a.is_null() && b.is_null()) return 0;
  return std::nullopt;
}

bool Matches(const Condition& c, const Value& value) {
  const Value* field = value.FindPath(c.field);
  if (c.op == CompareOp::kExists) return (field != nullptr) == c.operand.as_bool();
  if (field == nullptr) return c.op == CompareOp::kNe;
  if (c.op == CompareOp::kIn) {
    for (const Value& candidate : c.set) {
      if (Compare(*field, candidate) == 0) return true;
    }
    return false;
  }
  std::optional<int> cmp = Compare(*field, c.operand);
  switch (c.op) {
    case CompareOp::kEq:
      return cmp == 0;
    case CompareOp::kNe:
      return cmp != 0;
    case CompareOp::kGt:
      return cmp && *cmp > 0;
    case CompareOp::kGe:
      return cmp && *cmp >= 0;
    case CompareOp::kLt:
      return cmp && *cmp < 0;
    case CompareOp::kLe:
      return cmp && *cmp <= 0;
    default:
      return false;
  }
}

Result<std::shared_ptr<const StepDefinition>> ParseFilter(const StepYaml& yaml) {
  static const std::map<std::string, CompareOp> kOps = {
      {"eq", CompareOp::kEq}, {"ne", CompareOp::kNe},        {"gt", CompareOp::kGt},
      {"ge", CompareOp::kGe}, {"lt", CompareOp::kLt},        {"le", CompareOp::kLe},
      {"in", CompareOp::kIn}, {"exists", CompareOp::kExists}};
  const ConfigNode& node = yaml.body;
  WEIR_RETURN_IF_ERROR(
      node.OnlyKeys({"field", "eq", "ne", "gt", "ge", "lt", "le", "in", "exists"}));
  Condition c;
  WEIR_ASSIGN_OR_RETURN(ConfigNode field, node.Require("field", "the value field to test"));
  WEIR_ASSIGN_OR_RETURN(c.field, field.String());
  Value described = Value::MakeObject({{"field", Value(c.field)}});
  int ops = 0;
  for (const auto& [name, op] : kOps) {
    std::optional<ConfigNode> operand = node.Get(name);
    if (!operand) continue;
    ++ops;
    c.op = op;
    if (op == CompareOp::kIn) {
      if (!operand->IsSequence()) return operand->Expected("a list of values");
      for (const ConfigNode& item : operand->Items()) {
        WEIR_ASSIGN_OR_RETURN(Value v, item.Literal());
        c.set.push_back(std::move(v));
      }
      described.Set(name, Value(Value::Array(c.set.begin(), c.set.end())));
    } else if (op == CompareOp::kExists) {
      WEIR_ASSIGN_OR_RETURN(bool exists, operand->Bool());
      c.operand = Value(exists);
      described.Set(name, c.operand);
    } else {
      WEIR_ASSIGN_OR_RETURN(c.operand, operand->Literal());
      described.Set(name, c.operand);
    }
  }
  if (ops != 1) return node.Error("expected exactly one of eq, ne, gt, ge, lt, le, in, exists");
  return std::make_shared<FilterStep>([c](const Record& r) { return Matches(c, r.value); },
                                      std::move(described));
}

}  // namespace

void RegisterFilter(KindRegistry& kinds) { kinds.Add(StepKind{"filter", {}, ParseFilter}); }

}  // namespace weir::dataflow

namespace weir {

Stream Stream::Filter(std::function<bool(const Value&)> pred, std::string name) {
  dataflow::Predicate on_value;
  if (pred) on_value = [pred = std::move(pred)](const Record& r) { return pred(r.value); };
  return FilterRecord(std::move(on_value), std::move(name));
}

Stream Stream::FilterRecord(std::function<bool(const Record&)> pred, std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::FilterStep>(std::move(pred), Value()), std::move(name));
}

}  // namespace weir
