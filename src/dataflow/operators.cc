#include "dataflow/operators.h"

#include <utility>

#include "dataflow/asof_join_operator.h"
#include "dataflow/interval_join_operator.h"
#include "dataflow/join_operator.h"
#include "dataflow/window_operator.h"
#include "state/key_encoding.h"
#include "window/aggregations.h"

namespace weir::dataflow {

void Operator::OnWatermark(Watermark watermark) {
  for (Operator* child : children_) child->OnWatermark(watermark);
}

void Operator::Prefetch(const Record& upcoming, int stage) {
  for (Operator* child : children_) child->Prefetch(upcoming, stage);
}

void Operator::OnInputEnd() {
  for (Operator* child : children_) child->OnInputEnd();
}

namespace {
class InputPort : public Operator {
 public:
  InputPort(MultiInputOperator& step, int input) : step_(step), input_(input) {
    AddChild(&step);
  }
  void Process(Record&& record) override { step_.ProcessInput(input_, std::move(record)); }
  void OnWatermark(Watermark watermark) override {
    if (input_ == 0) step_.OnWatermark(watermark);
  }
  void Prefetch(const Record&, int) override {}
  void OnInputEnd() override { step_.OnInputEnded(input_); }

 private:
  MultiInputOperator& step_;
  int input_;
};
}  // namespace

std::unique_ptr<Operator> MakeInputPort(MultiInputOperator& step, int input) {
  return std::make_unique<InputPort>(step, input);
}

Status Operator::TakeError() {
  Status s = std::exchange(error_, Status::OK());
  for (Operator* child : children_) {
    Status c = child->TakeError();
    if (s.ok()) s = std::move(c);
  }
  return s;
}

void Operator::Forward(Record&& record) {
  if (children_.empty()) return;
  for (size_t i = 0; i + 1 < children_.size(); ++i) children_[i]->Process(Record(record));
  children_.back()->Process(std::move(record));
}

std::string RepartitionTopicName(std::string_view application, std::string_view step_name) {
  return std::string(application) + ".repartition." + std::string(step_name);
}

const Value* StepState::Get(std::string_view name) {
  auto v = store_->Get(StateKey(name));
  if (!v.ok()) {
    if (error_.ok()) error_ = v.status();
    return nullptr;
  }
  return *v;
}

void StepState::Set(std::string_view name, Value value) {
  store_->Put(StateKey(name), std::move(value));
}

void StepState::Delete(std::string_view name) { store_->Delete(StateKey(name)); }

namespace {

class MapOperator : public Operator {
 public:
  explicit MapOperator(const Step& step) : fn_(step.map) {}
  void Process(Record&& r) override {
    r.value = fn_(r.value);
    Forward(std::move(r));
  }

 private:
  std::function<Value(const Value&)> fn_;
};

class FilterOperator : public Operator {
 public:
  explicit FilterOperator(const Step& step) : pred_(step.filter) {}
  void Process(Record&& r) override {
    if (pred_(r.value)) Forward(std::move(r));
  }

 private:
  std::function<bool(const Value&)> pred_;
};

class FlatMapOperator : public Operator {
 public:
  explicit FlatMapOperator(const Step& step) : fn_(step.flat_map) {}
  void Process(Record&& r) override {
    std::vector<Value> values = fn_(r.value);
    for (size_t i = 0; i < values.size(); ++i) {
      Record out{i + 1 < values.size() ? r.key : std::move(r.key), std::move(values[i]),
                 r.timestamp, i + 1 < values.size() ? r.headers : std::move(r.headers)};
      Forward(std::move(out));
    }
  }

 private:
  std::function<std::vector<Value>(const Value&)> fn_;
};

// Apply and Update: user functions with the key's state.
class StatefulFunctionOperator : public Operator {
 public:
  StatefulFunctionOperator(const Step& step, TaskContext& ctx)
      : apply_(step.apply), update_(step.update), state_(&ctx.Store(step.name)) {}
  void Process(Record&& r) override {
    State& state = state_.ForKey(r.key.bytes());
    if (update_) {
      update_(r.value, state);
    } else {
      std::optional<Value> out = apply_(r.value, state);
      if (!out) return;
      r.value = std::move(*out);
    }
    Status s = state_.TakeError();
    if (!s.ok()) return Fail(std::move(s));
    Forward(std::move(r));
  }

 private:
  std::function<std::optional<Value>(const Value&, State&)> apply_;
  std::function<void(Value&, State&)> update_;
  StepState state_;
};

// Re-keys by a value field and writes to the repartition topic; the sub-topology after it
// reads that topic.
class GroupByOperator : public Operator {
 public:
  GroupByOperator(const Step& step, TaskContext& ctx, TopicWriter& writer)
      : spec_(step.group_by), ctx_(ctx), writer_(writer) {}
  void Process(Record&& r) override {
    const Value* field = r.value.FindPath(spec_.field);
    if (field == nullptr) {
      return ctx_.DeadLetter("group_by field '" + spec_.field + "' is missing", r);
    }
    auto key = Key::FromField(*field, spec_.type, spec_.field);
    if (!key.ok()) return ctx_.DeadLetter(key.status().message(), r);
    r.key = std::move(key).value();
    writer_.Write(r);
  }

 private:
  GroupBySpec spec_;
  TaskContext& ctx_;
  TopicWriter& writer_;
};

// A running aggregation per key: the accumulators live in state as an array, one per
// aggregation; every record emits {"<name>": <result>, ...}.
class AggregateOperator : public Operator {
 public:
  AggregateOperator(const Step& step, TaskContext& ctx)
      : aggregations_(step.aggregations, false), ctx_(ctx), store_(ctx.Store(step.name)) {}
  void Process(Record&& r) override {
    Status accepted = aggregations_.Accepts(r.value);
    if (!accepted.ok()) return ctx_.DeadLetter(accepted.message(), r);
    key_.clear();
    state::AppendMessageKey(key_, r.key.bytes());
    auto stored = store_.Mutate(key_);
    if (!stored.ok()) return Fail(stored.status());
    Value::Array& accs = aggregations_.Normalize(**stored);
    aggregations_.Add(accs, r.value, r.timestamp);
    Value::Object fields;
    fields.reserve(aggregations_.size());
    aggregations_.AppendResults(accs, fields);
    r.value = Value(std::move(fields));
    Forward(std::move(r));
  }

  void Prefetch(const Record& upcoming, int stage) override {
    store_.PrefetchMessageKey(upcoming.key.bytes(), stage);
  }

 private:
  window::Aggregations aggregations_;
  TaskContext& ctx_;
  state::KeyValueStore& store_;
  std::string key_;
};

class TopicSinkOperator : public Operator {
 public:
  explicit TopicSinkOperator(TopicWriter& writer) : writer_(writer) {}
  void Process(Record&& r) override { writer_.Write(r); }

 private:
  TopicWriter& writer_;
};

class LineSinkOperator : public Operator {
 public:
  explicit LineSinkOperator(LineWriter& writer) : writer_(writer) {}
  void Process(Record&& r) override { writer_.Write(r); }

 private:
  LineWriter& writer_;
};

}  // namespace

namespace {

// The operators whose construction cannot fail.
std::unique_ptr<Operator> MakeStatelessOrKeyedOperator(const Step& step,
                                                       std::string_view application,
                                                       TaskContext& ctx) {
  switch (step.kind) {
    case StepKind::kMap:
      return std::make_unique<MapOperator>(step);
    case StepKind::kFilter:
      return std::make_unique<FilterOperator>(step);
    case StepKind::kFlatMap:
      return std::make_unique<FlatMapOperator>(step);
    case StepKind::kApply:
    case StepKind::kUpdate:
      return std::make_unique<StatefulFunctionOperator>(step, ctx);
    case StepKind::kGroupBy:
      return std::make_unique<GroupByOperator>(
          step, ctx, ctx.TopicOutput(RepartitionTopicName(application, step.name)));
    case StepKind::kAggregate:
      return std::make_unique<AggregateOperator>(step, ctx);
    case StepKind::kWindow:
    case StepKind::kTopicSink:
      return std::make_unique<TopicSinkOperator>(ctx.TopicOutput(step.topic_sink.topic));
    case StepKind::kFileSink:
      return std::make_unique<LineSinkOperator>(ctx.FileOutput(step.file_sink_path));
    case StepKind::kStdoutSink:
      return std::make_unique<LineSinkOperator>(ctx.StdoutOutput());
    case StepKind::kFileSource:
    case StepKind::kTopicSource:
    case StepKind::kGeneratorSource:
    case StepKind::kNexmarkSource:
    case StepKind::kJetStreamSource:
    case StepKind::kJoin:
    case StepKind::kIntervalJoin:
    case StepKind::kAsOfJoin:
      break;
  }
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<Operator>> MakeOperator(const Step& step, std::string_view application,
                                               TaskContext& ctx) {
  if (step.kind == StepKind::kWindow) return MakeWindowOperator(step, ctx);
  if (step.kind == StepKind::kJoin) return MakeJoinOperator(step, ctx);
  if (step.kind == StepKind::kIntervalJoin) return MakeIntervalJoinOperator(step, application, ctx);
  if (step.kind == StepKind::kAsOfJoin) return MakeAsOfJoinOperator(step, application, ctx);
  std::unique_ptr<Operator> op = MakeStatelessOrKeyedOperator(step, application, ctx);
  if (op == nullptr) return Status::Internal("no operator for step " + step.name);
  return op;
}

}  // namespace weir::dataflow
