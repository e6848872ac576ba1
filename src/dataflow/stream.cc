// The Stream API: each method appends a step to the application's graph.
#include "weir/stream.h"

#include "dataflow/graph.h"
#include "dataflow/step_state.h"

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
