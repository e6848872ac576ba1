// The Stream API: each method appends a step to the application's graph.
#include "weir/stream.h"

#include "dataflow/graph.h"
#include "dataflow/step_state.h"
#include "weir/window.h"

namespace weir {

namespace {
dataflow::Step StepAfter(int parent, dataflow::StepKind kind, std::string name) {
  dataflow::Step s;
  s.kind = kind;
  s.parent = parent;
  s.name = std::move(name);
  return s;
}
}  // namespace

const Value* State::Get(std::string_view name) { return impl_->Get(name); }
void State::Set(std::string_view name, Value value) { impl_->Set(name, std::move(value)); }
void State::Delete(std::string_view name) { impl_->Delete(name); }

Stream Stream::Map(std::function<Value(const Value&)> fn, std::string name) {
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kMap, std::move(name));
  s.map = std::move(fn);
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::Filter(std::function<bool(const Value&)> pred, std::string name) {
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kFilter, std::move(name));
  s.filter = std::move(pred);
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::FlatMap(std::function<std::vector<Value>(const Value&)> fn, std::string name) {
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kFlatMap, std::move(name));
  s.flat_map = std::move(fn);
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::Apply(std::function<std::optional<Value>(const Value&, State&)> fn,
                     std::string name) {
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kApply, std::move(name));
  s.apply = std::move(fn);
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::Update(std::function<void(Value&, State&)> fn, std::string name) {
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kUpdate, std::move(name));
  s.update = std::move(fn);
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::GroupBy(std::string field, KeySerde type, int32_t partitions) {
  if (field.empty()) graph_->Fail("GroupBy needs a field name");
  if (type == KeySerde::kNull) graph_->Fail("GroupBy cannot re-key to the null key");
  if (partitions < 0) graph_->Fail("GroupBy partitions must be >= 0 (0: the default)");
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kGroupBy, "");
  s.group_by = {std::move(field), type, partitions};
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::Aggregate(std::vector<std::pair<std::string, AggregatorPtr>> aggregations,
                         std::string name) {
  if (aggregations.empty()) graph_->Fail("Aggregate needs at least one aggregation");
  for (const auto& [agg_name, agg] : aggregations) {
    if (agg_name.empty() || agg == nullptr)
      graph_->Fail("Aggregate needs a name and an aggregator");
  }
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kAggregate, std::move(name));
  s.aggregations = std::move(aggregations);
  return Stream(graph_, graph_->Add(std::move(s)));
}

void Stream::ToTopic(TopicSinkOptions options) {
  if (options.topic.empty()) graph_->Fail("ToTopic needs a topic name");
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kTopicSink, "");
  s.topic_sink = std::move(options);
  graph_->Add(std::move(s));
}

void Stream::ToFile(std::string path) {
  if (path.empty()) graph_->Fail("ToFile needs a path");
  dataflow::Step s = StepAfter(node_, dataflow::StepKind::kFileSink, "");
  s.file_sink_path = std::move(path);
  graph_->Add(std::move(s));
}

void Stream::ToStdout() { graph_->Add(StepAfter(node_, dataflow::StepKind::kStdoutSink, "")); }

}  // namespace weir

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
  const std::string what = definition_.Describe();
  Status valid = definition_.Validate();
  if (!valid.ok()) graph_->Fail(valid.message());
  if (aggregations_.empty()) graph_->Fail(what + ": no aggregation; add .Agg(...)");
  for (const auto& [name, agg] : aggregations_) {
    if (name.empty() || agg == nullptr)
      graph_->Fail(what + ": an aggregation needs a name and an aggregator");
    if (name == "start" || name == "end") {
      graph_->Fail(what + ": '" + name +
                   "' names the window bound in results; choose another name");
    }
    if (definition_.kind() == WindowKind::kSession && agg && !agg->mergeable()) {
      graph_->Fail(what + ": " + agg->Describe() +
                   " cannot merge, and sessions merge when an event bridges two; give it a merger");
    }
  }
  if (trigger_ && definition_.kind() == WindowKind::kSession) {
    graph_->Fail(what +
                 ": triggers are refused on session windows: an event that bridges two "
                 "sessions belongs to both, so there is no single current value to fire on");
  }
  if (trigger_ && definition_.kind() == WindowKind::kSliding) {
    graph_->Fail(what +
                 ": triggers are refused on sliding windows: every event defines a window "
                 "and updates the ones before it");
  }
  if (definition_.is_count() && closing_ == weir::Closing::kPartition) {
    graph_->Fail(what +
                 ": count windows close when they are full; closing strategies apply to "
                 "time windows");
  }
  if (!late_topic_.empty() && !late_file_.empty()) {
    graph_->Fail(what + ": give a late topic or a late file, not both");
  }
  dataflow::Step s = StepAfter(parent_, dataflow::StepKind::kWindow, "");
  auto step = std::make_shared<dataflow::WindowStep>(
      dataflow::WindowStep{definition_, aggregations_, single_unnamed_, closing_, final, on_late_,
                           late_topic_, late_file_, trigger_});
  s.window = std::move(step);
  return Stream(graph_, graph_->Add(std::move(s)));
}

}  // namespace weir

namespace weir {

namespace {
dataflow::Step TwoInputStep(dataflow::Graph* graph, int left, dataflow::Graph* right_graph,
                            int right, dataflow::StepKind kind, std::string name) {
  if (right_graph != graph) graph->Fail("a join's two streams must belong to one application");
  dataflow::Step s = StepAfter(left, kind, std::move(name));
  s.parents = {left, right};
  s.input_names = {"left", "right"};
  return s;
}
}  // namespace

Stream Stream::IntervalJoin(Stream right, IntervalJoinOptions options) {
  if (options.lower.count() < 0 || options.upper.count() < 0 || options.grace.count() < 0) {
    graph_->Fail("interval join: lower, upper and grace must be >= 0 ms");
  }
  dataflow::Step s = TwoInputStep(graph_, node_, right.graph_, right.node_,
                                  dataflow::StepKind::kIntervalJoin, options.name);
  s.interval_join = std::make_shared<const IntervalJoinOptions>(std::move(options));
  return Stream(graph_, graph_->Add(std::move(s)));
}

Stream Stream::AsOfJoin(Stream right, AsOfJoinOptions options) {
  if (options.lookback.count() < 0 || options.grace.count() < 0) {
    graph_->Fail("as-of join: lookback and grace must be >= 0 ms");
  }
  dataflow::Step s = TwoInputStep(graph_, node_, right.graph_, right.node_,
                                  dataflow::StepKind::kAsOfJoin, options.name);
  s.asof_join = std::make_shared<const AsOfJoinOptions>(std::move(options));
  return Stream(graph_, graph_->Add(std::move(s)));
}

}  // namespace weir
