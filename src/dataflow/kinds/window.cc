// The window kind: windows of each key's events, aggregated (Stream::Window ... .Final() or
// .Current(); YAML `- window: {tumbling: {size_ms, grace_ms}}` with `agg`, `emit`, `closing` and
// `late` beside it). weir/window.h states the semantics; the operator is window_operator.cc and
// the window rules are src/window/.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/window_operator.h"

namespace weir::dataflow {
namespace {

class WindowStep : public StepDefinition {
 public:
  explicit WindowStep(WindowOptions options) : options_(std::move(options)) {}
  std::string_view kind() const override { return "window"; }

  Status Validate() const override {
    const WindowDefinition& definition = options_.definition;
    const std::string what = definition.Describe();
    WEIR_RETURN_IF_ERROR(definition.Validate());
    if (options_.aggregations.empty()) return Refuse(what + ": no aggregation; add .Agg(...)");
    for (const auto& [name, agg] : options_.aggregations) {
      if (name.empty() || agg == nullptr) {
        return Refuse(what + ": an aggregation needs a name and an aggregator");
      }
      if (name == "start" || name == "end") {
        return Refuse(what + ": '" + name +
                      "' names the window bound in results; choose another name");
      }
      if (definition.kind() == WindowKind::kSession && !agg->mergeable()) {
        return Refuse(what + ": " + agg->Describe() +
                      " cannot merge, and sessions merge when an event bridges two; give it a "
                      "merger");
      }
    }
    if (options_.trigger && definition.kind() == WindowKind::kSession) {
      return Refuse(what +
                    ": triggers are refused on session windows: an event that bridges two "
                    "sessions belongs to both, so there is no single current value to fire on");
    }
    if (options_.trigger && definition.kind() == WindowKind::kSliding) {
      return Refuse(what +
                    ": triggers are refused on sliding windows: every event defines a window "
                    "and updates the ones before it");
    }
    if (definition.is_count() && options_.closing == Closing::kPartition) {
      return Refuse(what +
                    ": count windows close when they are full; closing strategies apply to "
                    "time windows");
    }
    if (!options_.late_topic.empty() && !options_.late_file.empty()) {
      return Refuse(what + ": give a late topic or a late file, not both");
    }
    return Status::OK();
  }

  void Describe(Fingerprint& fingerprint) const override {
    const WindowDefinition& definition = options_.definition;
    fingerprint.Fixed("window", WindowKindName(definition.kind()));
    // Grace and the session gap may change across a restart: the bounds below which events are
    // late only move forward (persisted), so nothing emitted is emitted again (weir/window.h).
    if (definition.kind() == WindowKind::kSession) {
      fingerprint.MayChange("gap_ms", definition.size());
    } else {
      fingerprint.Fixed("size", definition.size()).Fixed("step", definition.step());
    }
    if (!definition.is_count()) fingerprint.MayChange("grace_ms", definition.grace());
    fingerprint.Fixed("closing", options_.closing == Closing::kKey ? "key" : "partition")
        .Fixed("emit", options_.final ? "final" : "current")
        .Fixed("aggregations", DescribeAggregations(options_.aggregations))
        .Fixed("trigger", static_cast<bool>(options_.trigger))
        .Fixed("late_topic", options_.late_topic)
        .Fixed("late_file", options_.late_file);
  }

  bool stateful() const override { return true; }
  bool emits_from_state() const override { return true; }
  std::chrono::milliseconds output_lag() const override {
    const WindowDefinition& definition = options_.definition;
    return std::chrono::milliseconds(definition.is_count() ? 0 : definition.grace());
  }
  void DeclareOutputs(OutputDeclarations& outputs) const override {
    if (!options_.late_topic.empty()) {
      outputs.Topic(options_.late_topic, 0, TopicUse::kSideOutput);
    }
    if (!options_.late_file.empty()) outputs.File(options_.late_file);
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return MakeWindowOperator(options_, context);
  }

 private:
  static Status Refuse(std::string message) { return Status::InvalidArgument(std::move(message)); }
  WindowOptions options_;
};

// {tumbling: {size_ms, grace_ms}}, {hopping: {size_ms, step_ms, grace_ms}}, {sliding: {size_ms,
// grace_ms}}, {session: {gap_ms, grace_ms}}, or {count: {size, step}} / {count: {size, sliding:
// true}}.
Result<WindowDefinition> ParseWindowDefinition(const ConfigNode& node) {
  WEIR_ASSIGN_OR_RETURN(
      auto member,
      node.OnlyMember("a map with one window kind (tumbling, hopping, sliding, session, count)"));
  const auto& [kind, body] = member;
  auto millis = [&](const char* key, bool required) -> Result<int64_t> {
    std::optional<ConfigNode> v = body.Get(key);
    if (!v) {
      if (required) return body.Error(std::string("missing '") + key + "'");
      return int64_t{0};
    }
    return v->Int(INT64_MIN, INT64_MAX);
  };
  using std::chrono::milliseconds;
  if (kind == "count") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"size", "step", "sliding"}));
    WEIR_ASSIGN_OR_RETURN(int64_t size, millis("size", true));
    bool sliding = false;
    if (auto v = body.Get("sliding")) {
      WEIR_ASSIGN_OR_RETURN(sliding, v->Bool());
    }
    if (sliding && body.Get("step")) return body.Error("a sliding count window takes no step");
    if (sliding) return WindowDefinition::CountSliding(size);
    if (body.Get("step")) {
      WEIR_ASSIGN_OR_RETURN(int64_t step, millis("step", true));
      return WindowDefinition::CountHopping(size, step);
    }
    return WindowDefinition::CountTumbling(size);
  }
  std::optional<WindowDefinition> def;
  if (kind == "session") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"gap_ms", "grace_ms"}));
    WEIR_ASSIGN_OR_RETURN(int64_t gap, millis("gap_ms", true));
    def = WindowDefinition::Session(milliseconds(gap));
  } else if (kind == "tumbling" || kind == "sliding") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"size_ms", "grace_ms"}));
    WEIR_ASSIGN_OR_RETURN(int64_t size, millis("size_ms", true));
    def = kind == "tumbling" ? WindowDefinition::Tumbling(milliseconds(size))
                             : WindowDefinition::Sliding(milliseconds(size));
  } else if (kind == "hopping") {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"size_ms", "step_ms", "grace_ms"}));
    WEIR_ASSIGN_OR_RETURN(int64_t size, millis("size_ms", true));
    WEIR_ASSIGN_OR_RETURN(int64_t step, millis("step_ms", true));
    def = WindowDefinition::Hopping(milliseconds(size), milliseconds(step));
  } else {
    return node.Error("unknown window kind '" + kind +
                      "' (expected tumbling, hopping, sliding, session, count)");
  }
  WEIR_ASSIGN_OR_RETURN(int64_t grace, millis("grace_ms", false));
  def->Grace(milliseconds(grace));
  Status valid = def->Validate();
  if (!valid.ok()) return body.Error(valid.message());
  return *def;
}

// - window: {...}
//   agg: count | {sum: amount} | {name: aggregation, ...}
//   emit: final | current
//   closing: key | partition
//   late: FILE.jsonl | TOPIC | {topic: NAME} | {file: PATH}
Result<std::shared_ptr<const StepDefinition>> ParseWindow(const StepYaml& yaml) {
  const ConfigNode& step = yaml.step;
  WEIR_ASSIGN_OR_RETURN(WindowDefinition definition, ParseWindowDefinition(yaml.body));
  WindowOptions options{.definition = definition};
  WEIR_ASSIGN_OR_RETURN(ConfigNode agg_node, step.Require("agg", "what to compute per window"));
  // One aggregation unnamed (`count`, `{sum: amount}`) or several under names.
  bool single = agg_node.IsScalar();
  if (agg_node.IsMap() && agg_node.size() == 1) {
    WEIR_ASSIGN_OR_RETURN(auto member, agg_node.OnlyMember("an aggregation"));
    const auto& [kind, value] = member;
    single = IsAggregationName(kind) && value.IsScalar() && !IsAggregationName(value.Scalar());
  }
  if (single) {
    WEIR_ASSIGN_OR_RETURN(AggregatorPtr a, ParseAggregator(agg_node));
    options.aggregations = {{"value", std::move(a)}};
    options.single_unnamed = true;
  } else {
    WEIR_ASSIGN_OR_RETURN(options.aggregations, ParseNamedAggregations(agg_node));
  }
  if (auto closing = step.Get("closing")) {
    WEIR_ASSIGN_OR_RETURN(std::string c, closing->String());
    if (c != "key" && c != "partition") {
      return closing->Error("expected key or partition, found '" + c + "'");
    }
    options.closing = c == "key" ? Closing::kKey : Closing::kPartition;
  }
  if (auto late = step.Get("late")) {
    if (late->IsScalar()) {
      WEIR_ASSIGN_OR_RETURN(std::string target, late->String());
      // A path of JSON lines (as a file sink), else a topic name.
      if (target.ends_with(".jsonl") || target.ends_with(".json") ||
          target.find('/') != std::string::npos) {
        options.late_file = yaml.context.ResolvePath(target);
      } else {
        options.late_topic = target;
      }
    } else {
      WEIR_RETURN_IF_ERROR(late->OnlyKeys({"topic", "file"}));
      if (auto t = late->Get("topic")) {
        WEIR_ASSIGN_OR_RETURN(options.late_topic, t->String());
      }
      if (auto f = late->Get("file")) {
        WEIR_ASSIGN_OR_RETURN(std::string path, f->String());
        options.late_file = yaml.context.ResolvePath(path);
      }
    }
  }
  if (auto e = step.Get("emit")) {
    WEIR_ASSIGN_OR_RETURN(std::string emit, e->String());
    if (emit != "final" && emit != "current") {
      return e->Error("expected final or current, found '" + emit + "'");
    }
    options.final = emit == "final";
  }
  return std::make_shared<WindowStep>(std::move(options));
}

}  // namespace

void RegisterWindow(KindRegistry& kinds) {
  kinds.Add(StepKind{"window", {"agg", "emit", "closing", "late"}, ParseWindow});
}

}  // namespace weir::dataflow

namespace weir {

WindowedStream Stream::Window(WindowDefinition definition) {
  return WindowedStream(graph_, node_, std::move(definition));
}

WindowedStream& WindowedStream::Agg(
    std::vector<std::pair<std::string, AggregatorPtr>> aggregations) {
  aggregations_ = std::move(aggregations);
  single_unnamed_ = false;
  return *this;
}

WindowedStream& WindowedStream::Agg(AggregatorPtr aggregation) {
  aggregations_ = {{"value", std::move(aggregation)}};
  single_unnamed_ = true;
  return *this;
}

WindowedStream& WindowedStream::Closing(weir::Closing closing) {
  closing_ = closing;
  return *this;
}

WindowedStream& WindowedStream::OnLate(std::function<void(const LateRecord&)> on_late) {
  on_late_ = std::move(on_late);
  return *this;
}

WindowedStream& WindowedStream::LateTopic(std::string topic) {
  late_topic_ = std::move(topic);
  return *this;
}

WindowedStream& WindowedStream::LateFile(std::string path) {
  late_file_ = std::move(path);
  return *this;
}

WindowedStream& WindowedStream::Trigger(std::function<bool(const Value& result)> fire) {
  trigger_ = std::move(fire);
  return *this;
}

Stream WindowedStream::Final() { return Emit(true); }
Stream WindowedStream::Current() { return Emit(false); }

Stream WindowedStream::Emit(bool final) {
  dataflow::WindowOptions options{definition_, aggregations_, single_unnamed_, closing_, final,
                                  on_late_,    late_topic_,   late_file_,      trigger_};
  return dataflow::GraphAccess::AddStep(*graph_, parent_,
                                        std::make_shared<dataflow::WindowStep>(std::move(options)));
}

}  // namespace weir
