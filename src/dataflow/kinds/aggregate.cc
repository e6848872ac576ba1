// The aggregate kind: a running aggregation per key (Stream::Aggregate; YAML
// `aggregate: {name: aggregation, ...}`). Each key's accumulators live in the step's store as an
// array, one per aggregation; every record updates them and emits {"<name>": <result>, ...}. A
// value an aggregation cannot take is a dead letter.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/kinds/aggregations_yaml.h"
#include "dataflow/operators.h"
#include "dataflow/user_function.h"
#include "state/key_encoding.h"
#include "window/aggregations.h"

namespace weir::dataflow {
namespace {

class AggregateOperator : public Operator {
 public:
  AggregateOperator(const NamedAggregations& aggregations, const StepContext& context)
      : aggregations_(aggregations, false),
        ctx_(context.task),
        user_(context.task, context.step_name),
        store_(context.task.Store(context.step_name)),
        runs_user_code_(aggregations_.runs_user_code()) {}
  void Process(Record&& r) override {
    Status accepted = aggregations_.Accepts(r.value);
    if (!accepted.ok()) return ctx_.DeadLetter(accepted.message(), r);
    key_.clear();
    state::AppendMessageKey(key_, r.key.bytes());
    auto stored = store_.Mutate(key_);
    if (!stored.ok()) return Fail(stored.status());
    Value::Array& accs = aggregations_.Normalize(**stored);
    if (runs_user_code_) {
      // A reducer that throws must leave the key's accumulators as they were.
      undo_ = **stored;
      if (!user_.Call(r, [&] {
            aggregations_.Add(accs, r.value, r.timestamp);
            WriteResult(accs);
          })) {
        **stored = std::move(undo_);
        return;
      }
    } else {
      aggregations_.Add(accs, r.value, r.timestamp);
      WriteResult(accs);
    }
    ForwardReplacingValueKeepingResult(r, result_);
  }

  void Prefetch(const Record& upcoming, int stage) override {
    store_.PrefetchMessageKey(upcoming.key.bytes(), &upcoming, stage);
  }
  void CollectPrefetching(std::vector<Operator*>& out) override { out.push_back(this); }

 private:
  // The key's results, into result_: {name: result, ...}.
  void WriteResult(std::span<const Value> accs) {
    Value::ObjectWriter fields(result_);
    aggregations_.WriteResults(accs, fields);
  }

  window::Aggregations aggregations_;
  TaskContext& ctx_;
  UserFunctionCaller user_;
  state::KeyValueStore& store_;
  const bool runs_user_code_;
  Value undo_;  // the key's accumulators before a record is added, when user code runs
  std::string key_;
  // The last result forwarded, whose members the next one reuses (given back by
  // ForwardReplacingValueKeepingResult unless a step after this one took it).
  Value result_;
};

class AggregateStep : public StepDefinition {
 public:
  explicit AggregateStep(NamedAggregations aggregations) : aggregations_(std::move(aggregations)) {}
  std::string_view kind() const override { return "aggregate"; }
  Status Validate() const override {
    if (aggregations_.empty()) {
      return Status::InvalidArgument("Aggregate needs at least one aggregation");
    }
    for (const auto& [name, aggregator] : aggregations_) {
      if (name.empty() || aggregator == nullptr) {
        return Status::InvalidArgument("Aggregate needs a name and an aggregator");
      }
    }
    return Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    fingerprint.Fixed("aggregations", DescribeAggregations(aggregations_));
  }
  bool stateful() const override { return true; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new AggregateOperator(aggregations_, context));
  }

 private:
  NamedAggregations aggregations_;
};

Result<std::shared_ptr<const StepDefinition>> ParseAggregate(const StepYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(NamedAggregations aggregations, ParseNamedAggregations(yaml.body));
  return std::make_shared<AggregateStep>(std::move(aggregations));
}

}  // namespace

void RegisterAggregate(KindRegistry& kinds) {
  kinds.Add(StepKind{"aggregate", {}, ParseAggregate});
}

}  // namespace weir::dataflow

namespace weir {

Stream Stream::Aggregate(std::vector<std::pair<std::string, AggregatorPtr>> aggregations,
                         std::string name) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::AggregateStep>(std::move(aggregations)), std::move(name));
}

}  // namespace weir
