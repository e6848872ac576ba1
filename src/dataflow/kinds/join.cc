// The join kind: input-group assembly over several named parents (Application::Join; YAML
// top-level `join: {parents: [...], mode, ...}` over `streams:`). weir/join.h states the rules;
// the operator is join_operator.cc and the assembly is src/join/.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/join_operator.h"
#include "dataflow/kind_registry.h"
#include "join/assembler.h"
#include "weir/application.h"

namespace weir::dataflow {
namespace {

class JoinStep : public StepDefinition {
 public:
  JoinStep(JoinOptions options, std::vector<std::string> inputs)
      : options_(std::move(options)), inputs_(std::move(inputs)) {}
  std::string_view kind() const override { return "join"; }
  Status Validate() const override { return join::Validate(options_, inputs_); }
  void Describe(Fingerprint& fingerprint) const override {
    Value inputs = Value(Value::Array());
    for (const std::string& input : inputs_) inputs.as_array().emplace_back(input);
    Value collect = Value(Value::Object());
    for (const auto& [input, window] : options_.collect) {
      collect.Set(input, Value(static_cast<int64_t>(window.count())));
    }
    fingerprint.Fixed("inputs", inputs)
        .Fixed("mode", options_.mode == JoinMode::kTrace ? "trace" : "time")
        .Fixed("trace_field", options_.trace_field)
        .Fixed("time_field", options_.time_field);
    // Pending groups are held deliveries, assembled again from their sources after a restart, so
    // how groups settle, time out and are capped may change; which inputs collect may not.
    Value collected = Value(Value::Array());
    for (const auto& [input, window] : options_.collect) collected.as_array().emplace_back(input);
    fingerprint.Fixed("collect", collected);
    fingerprint.MayChange("collect_ms", collect)
        .MayChange("tolerance_ms", options_.tolerance)
        .MayChange("timeout_ms", options_.timeout)
        .MayChange("quorum", options_.quorum)
        .MayChange("missing", options_.missing == MissingPolicy::kDrop ? "drop" : "error")
        .MayChange("max_pending", options_.max_pending)
        .MayChange("collect_cap", options_.collect_cap)
        .MayChange("max_deliver", options_.max_deliver)
        .MayChange("dedup_ms", options_.dedup);
  }
  bool stateful() const override { return true; }
  bool multi_input() const override { return true; }
  bool emits_from_state() const override { return true; }
  bool holds_source_records() const override { return true; }
  // A group settles up to its tolerance, or its timeout, after its time.
  std::chrono::milliseconds output_lag() const override {
    return std::max(options_.tolerance, options_.timeout);
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return MakeJoinOperator(options_, inputs_, context);
  }

 private:
  JoinOptions options_;
  std::vector<std::string> inputs_;
};

// `join: {parents: [...], mode: trace|time, ...}` (weir/join.h).
Result<JoinYaml> ParseJoin(const ConfigNode& node, NamedStreams& streams) {
  WEIR_RETURN_IF_ERROR(node.OnlyKeys({"parents", "mode", "trace_field", "time_field",
                                      "tolerance_ms", "timeout_ms", "quorum", "collect", "missing",
                                      "max_pending", "collect_cap", "max_deliver", "dedup_ms"}));
  WEIR_ASSIGN_OR_RETURN(ConfigNode parents, node.Require("parents", "the streams to join"));
  if (!parents.IsSequence()) return parents.Expected("a list of stream names");
  JoinYaml made;
  std::vector<std::string> names;
  for (const ConfigNode& p : parents.Items()) {
    WEIR_ASSIGN_OR_RETURN(Stream s, streams.Use(p));
    made.parents.push_back(s);
    names.push_back(p.Scalar());
  }
  JoinOptions o;
  if (auto m = node.Get("mode")) {
    WEIR_ASSIGN_OR_RETURN(std::string mode, m->String());
    if (mode != "trace" && mode != "time") {
      return m->Error("expected trace or time, found '" + mode + "'");
    }
    o.mode = mode == "trace" ? JoinMode::kTrace : JoinMode::kTime;
  }
  if (auto v = node.Get("trace_field")) {
    WEIR_ASSIGN_OR_RETURN(o.trace_field, v->String());
  }
  if (auto v = node.Get("time_field")) {
    WEIR_ASSIGN_OR_RETURN(o.time_field, v->String());
  }
  if (auto v = node.Get("tolerance_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.tolerance, v->Millis());
  }
  if (auto v = node.Get("timeout_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.timeout, v->Millis());
  }
  if (auto v = node.Get("dedup_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.dedup, v->Millis());
  }
  if (auto v = node.Get("quorum")) {
    WEIR_ASSIGN_OR_RETURN(int64_t q, v->Int(1, 1000));
    o.quorum = static_cast<int>(q);
  }
  if (auto v = node.Get("max_pending")) {
    WEIR_ASSIGN_OR_RETURN(o.max_pending, v->Int(1, INT64_MAX));
  }
  if (auto v = node.Get("collect_cap")) {
    WEIR_ASSIGN_OR_RETURN(o.collect_cap, v->Int(1, INT64_MAX));
  }
  if (auto v = node.Get("max_deliver")) {
    WEIR_ASSIGN_OR_RETURN(int64_t d, v->Int(1, 1000));
    o.max_deliver = static_cast<int>(d);
  }
  if (auto v = node.Get("missing")) {
    WEIR_ASSIGN_OR_RETURN(std::string missing, v->String());
    if (missing != "drop" && missing != "error") {
      return v->Error("expected drop or error, found '" + missing + "'");
    }
    o.missing = missing == "drop" ? MissingPolicy::kDrop : MissingPolicy::kError;
  }
  if (auto c = node.Get("collect")) {
    if (!c->IsMap()) return c->Expected("a map of parent: window_ms");
    WEIR_ASSIGN_OR_RETURN(auto members, c->Members());
    for (const auto& [parent, window] : members) {
      WEIR_ASSIGN_OR_RETURN(o.collect[parent], window.Millis());
    }
  }
  if (Status valid = join::Validate(o, names); !valid.ok()) {
    std::string_view message = valid.message();
    if (message.starts_with("join: ")) message.remove_prefix(6);  // the path says it already
    return node.Error(message);
  }
  made.definition = std::make_shared<JoinStep>(std::move(o), std::move(names));
  return made;
}

}  // namespace

void RegisterJoin(KindRegistry& kinds) { kinds.Add(JoinKind{"join", ParseJoin}); }

}  // namespace weir::dataflow

namespace weir {

Stream Application::Join(std::vector<std::pair<std::string, Stream>> parents, JoinOptions options) {
  std::vector<Stream> streams;
  std::vector<std::string> inputs;
  for (auto& [input, stream] : parents) {
    streams.push_back(stream);
    inputs.push_back(input);
  }
  std::string name = options.name;
  return dataflow::GraphAccess::AddMultiInput(
      dataflow::GraphAccess::Of(*this), streams,
      std::make_shared<dataflow::JoinStep>(std::move(options), std::move(inputs)), std::move(name));
}

}  // namespace weir
