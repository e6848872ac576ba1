// The map kind: each record's value becomes what a function returns (Stream::Map). Its YAML form
// is `select: [field, ...]`, a map that keeps those fields of the value.
#include <functional>

#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

using MapFunction = std::function<Value(const Value&)>;

class MapOperator : public Operator {
 public:
  explicit MapOperator(MapFunction fn) : fn_(std::move(fn)) {}
  void Process(Record&& r) override { ForwardReplacingValue(r, fn_(r.value)); }

 private:
  MapFunction fn_;
};

class MapStep : public StepDefinition {
 public:
  // `selected`: the fields a YAML select keeps (null for a C++ function, which has no
  // description).
  MapStep(MapFunction fn, Value selected) : fn_(std::move(fn)), selected_(std::move(selected)) {}
  std::string_view kind() const override { return "map"; }
  Status Validate() const override {
    return fn_ ? Status::OK() : Status::InvalidArgument("Map needs a function");
  }
  void Describe(Fingerprint& fingerprint) const override {
    if (!selected_.is_null()) fingerprint.Fixed("select", selected_);
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext&) const override {
    return std::unique_ptr<Operator>(new MapOperator(fn_));
  }

 private:
  MapFunction fn_;
  Value selected_;
};

// select: [user, page]: keeps those fields (dotted paths) of the value, in that order.
Result<std::shared_ptr<const StepDefinition>> ParseSelect(const StepYaml& yaml) {
  if (!yaml.body.IsSequence() || yaml.body.size() == 0) {
    return yaml.body.Expected("a list of field names");
  }
  std::vector<std::string> fields;
  Value::Array described;
  for (const ConfigNode& item : yaml.body.Items()) {
    WEIR_ASSIGN_OR_RETURN(std::string f, item.String());
    described.emplace_back(f);
    fields.push_back(std::move(f));
  }
  MapFunction select = [fields](const Value& v) {
    Value out = Value(Value::Object());
    for (const std::string& f : fields) {
      if (const Value* field = v.FindPath(f)) out.Set(f, *field);
    }
    return out;
  };
  return std::make_shared<MapStep>(std::move(select), Value(std::move(described)));
}

}  // namespace

void RegisterMap(KindRegistry& kinds) { kinds.Add(StepKind{"select", {}, ParseSelect}); }

}  // namespace weir::dataflow

namespace weir {

Stream Stream::Map(std::function<Value(const Value&)> fn, std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::MapStep>(std::move(fn), Value()), std::move(name));
}

}  // namespace weir
