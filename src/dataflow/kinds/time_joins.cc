// The interval-join and asof-join kinds: two keyed streams (input 0 left, 1 right) joined by key
// and event time (Stream::IntervalJoin, Stream::AsOfJoin; YAML top-level `interval_join: {left,
// right, lower_ms, upper_ms, left_outer, grace_ms, late}` and `asof_join: {left, right,
// lookback_ms, grace_ms, late}` over `streams:`). weir/join.h states what they do; the operators
// are interval_join_operator.cc and asof_join_operator.cc on keyed_time_join.h.
#include "dataflow/asof_join_operator.h"
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/interval_join_operator.h"
#include "dataflow/keyed_time_join.h"
#include "dataflow/kind_registry.h"

namespace weir::dataflow {
namespace {

// What the two kinds share: two inputs, state per key, a grace and a late topic.
class TimeJoinStep : public StepDefinition {
 public:
  TimeJoinStep(std::chrono::milliseconds grace, std::string late_topic)
      : grace_(grace), late_topic_(std::move(late_topic)) {}
  void Describe(Fingerprint& fingerprint) const override {
    fingerprint.Fixed("late_topic", late_topic_);
    // The horizon below which events are late; state kept longer or shorter stays valid.
    fingerprint.MayChange("grace_ms", grace_);
  }
  bool stateful() const override { return true; }
  bool multi_input() const override { return true; }
  bool emits_from_state() const override { return true; }
  void DeclareOutputs(OutputDeclarations& outputs) const override {
    outputs.Topic(JoinLateTopic(late_topic_, outputs.application()), 0, TopicUse::kSideOutput);
  }

 protected:
  std::chrono::milliseconds grace_;
  std::string late_topic_;
};

class IntervalJoinStep : public TimeJoinStep {
 public:
  explicit IntervalJoinStep(IntervalJoinOptions options)
      : TimeJoinStep(options.grace, options.late_topic), options_(std::move(options)) {}
  std::string_view kind() const override { return "interval-join"; }
  Status Validate() const override {
    if (options_.lower.count() < 0 || options_.upper.count() < 0) {
      return Status::InvalidArgument(
          "interval join: lower and upper must be >= 0 ms (distances back and forward from the "
          "left time; Between(from, to) needs from <= 0 <= to), got lower " +
          std::to_string(options_.lower.count()) + " ms, upper " +
          std::to_string(options_.upper.count()) + " ms");
    }
    if (options_.grace.count() < 0) {
      return Status::InvalidArgument("interval join: grace must be >= 0 ms");
    }
    return Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    TimeJoinStep::Describe(fingerprint);
    fingerprint.Fixed("lower_ms", options_.lower)
        .Fixed("upper_ms", options_.upper)
        .Fixed("left_outer", options_.left_outer);
  }
  // A left-outer left without a match leaves past its upper bound.
  std::chrono::milliseconds output_lag() const override {
    return options_.grace + (options_.left_outer ? options_.upper : std::chrono::milliseconds(0));
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return MakeIntervalJoinOperator(options_, context);
  }

 private:
  IntervalJoinOptions options_;
};

class AsOfJoinStep : public TimeJoinStep {
 public:
  explicit AsOfJoinStep(AsOfJoinOptions options)
      : TimeJoinStep(options.grace, options.late_topic), options_(std::move(options)) {}
  std::string_view kind() const override { return "asof-join"; }
  Status Validate() const override {
    if (options_.lookback.count() < 0 || options_.grace.count() < 0) {
      return Status::InvalidArgument("as-of join: lookback and grace must be >= 0 ms");
    }
    return Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    TimeJoinStep::Describe(fingerprint);
    fingerprint.Fixed("lookback_ms", options_.lookback);
  }
  std::chrono::milliseconds output_lag() const override { return options_.grace; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return MakeAsOfJoinOperator(options_, context);
  }

 private:
  AsOfJoinOptions options_;
};

// What both YAML forms share: {left, right, grace_ms, late}, and the kind's own keys.
struct TwoStreams {
  std::vector<Stream> parents;  // left, right
  std::chrono::milliseconds grace{0};
  std::string late;
};

Result<TwoStreams> ParseTwoStreams(const ConfigNode& node, NamedStreams& streams,
                                   std::vector<std::string_view> own_keys) {
  own_keys.insert(own_keys.end(), {"left", "right", "grace_ms", "late"});
  WEIR_RETURN_IF_ERROR(node.OnlyKeys(own_keys));
  WEIR_ASSIGN_OR_RETURN(ConfigNode left_name, node.Require("left", "the left stream's name"));
  WEIR_ASSIGN_OR_RETURN(ConfigNode right_name, node.Require("right", "the right stream's name"));
  TwoStreams two;
  WEIR_ASSIGN_OR_RETURN(Stream left, streams.Use(left_name));
  WEIR_ASSIGN_OR_RETURN(Stream right, streams.Use(right_name));
  two.parents = {left, right};
  if (auto v = node.Get("grace_ms")) {
    WEIR_ASSIGN_OR_RETURN(two.grace, v->Millis());
  }
  if (auto v = node.Get("late")) {
    WEIR_ASSIGN_OR_RETURN(two.late, v->String());
  }
  return two;
}

Result<JoinYaml> ParseIntervalJoin(const ConfigNode& node, NamedStreams& streams) {
  WEIR_ASSIGN_OR_RETURN(TwoStreams two,
                        ParseTwoStreams(node, streams, {"lower_ms", "upper_ms", "left_outer"}));
  IntervalJoinOptions o{.grace = two.grace, .late_topic = two.late};
  if (auto v = node.Get("lower_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.lower, v->Millis());
  }
  if (auto v = node.Get("upper_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.upper, v->Millis());
  }
  if (auto v = node.Get("left_outer")) {
    WEIR_ASSIGN_OR_RETURN(o.left_outer, v->Bool());
  }
  return JoinYaml{std::make_shared<IntervalJoinStep>(std::move(o)), std::move(two.parents), ""};
}

Result<JoinYaml> ParseAsOfJoin(const ConfigNode& node, NamedStreams& streams) {
  WEIR_ASSIGN_OR_RETURN(TwoStreams two, ParseTwoStreams(node, streams, {"lookback_ms"}));
  AsOfJoinOptions o{.grace = two.grace, .late_topic = two.late};
  if (auto v = node.Get("lookback_ms")) {
    WEIR_ASSIGN_OR_RETURN(o.lookback, v->Millis());
  }
  return JoinYaml{std::make_shared<AsOfJoinStep>(std::move(o)), std::move(two.parents), ""};
}

}  // namespace

void RegisterIntervalJoin(KindRegistry& kinds) {
  kinds.Add(JoinKind{"interval_join", ParseIntervalJoin});
}
void RegisterAsOfJoin(KindRegistry& kinds) { kinds.Add(JoinKind{"asof_join", ParseAsOfJoin}); }

}  // namespace weir::dataflow

namespace weir {

Stream Stream::IntervalJoin(Stream right, IntervalJoinOptions options) {
  std::string name = options.name;
  return dataflow::GraphAccess::AddMultiInput(
      *graph_, {*this, right}, std::make_shared<dataflow::IntervalJoinStep>(std::move(options)),
      std::move(name));
}

Stream Stream::AsOfJoin(Stream right, AsOfJoinOptions options) {
  std::string name = options.name;
  return dataflow::GraphAccess::AddMultiInput(
      *graph_, {*this, right}, std::make_shared<dataflow::AsOfJoinStep>(std::move(options)),
      std::move(name));
}

}  // namespace weir
