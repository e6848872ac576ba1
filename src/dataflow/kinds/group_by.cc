// The group-by kind: re-keys every record by a field of its value and writes it to the step's
// repartition topic, which the sub-topology after it reads (Stream::GroupBy; YAML
// `group_by: FIELD` or `group_by: {field, type, partitions}`). A missing field, or one that
// cannot be a key of the type, sends the record to the dead-letter topic.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

class GroupByOperator : public Operator {
 public:
  GroupByOperator(std::string field, KeySerde type, TaskContext& ctx, TopicWriter& writer)
      : field_(std::move(field)), type_(type), ctx_(ctx), writer_(writer) {}
  void Process(Record&& r) override {
    const Value* field = r.value.FindPath(field_);
    if (field == nullptr) return ctx_.DeadLetter("group_by field '" + field_ + "' is missing", r);
    auto key = Key::FromField(*field, type_, field_);
    if (!key.ok()) return ctx_.DeadLetter(key.status().message(), r);
    r.key = std::move(key).value();
    writer_.Write(r);
  }

 private:
  std::string field_;
  KeySerde type_;
  TaskContext& ctx_;
  TopicWriter& writer_;
};

class GroupByStep : public StepDefinition {
 public:
  GroupByStep(std::string field, KeySerde type, int32_t partitions)
      : field_(std::move(field)), type_(type), partitions_(partitions) {}
  std::string_view kind() const override { return "group-by"; }
  Status Validate() const override {
    if (field_.empty()) return Status::InvalidArgument("GroupBy needs a field name");
    if (type_ == KeySerde::kNull) {
      return Status::InvalidArgument("GroupBy cannot re-key to the null key");
    }
    return CheckPartitions(partitions_, 0, "GroupBy partitions");
  }
  void Describe(Fingerprint& fingerprint) const override {
    // The repartition topic's partitions decide which task holds a key's state downstream.
    fingerprint.Fixed("field", field_).Fixed("type", type_).Fixed("partitions", partitions_);
  }
  bool repartitions() const override { return true; }
  int32_t repartition_partitions() const override { return partitions_; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    TopicWriter& writer =
        context.task.TopicOutput(RepartitionTopicName(context.application, context.step_name));
    return std::unique_ptr<Operator>(new GroupByOperator(field_, type_, context.task, writer));
  }

 private:
  std::string field_;
  KeySerde type_;
  int32_t partitions_;
};

Result<std::shared_ptr<const StepDefinition>> ParseGroupBy(const StepYaml& yaml) {
  const ConfigNode& body = yaml.body;
  if (body.IsScalar()) {
    WEIR_ASSIGN_OR_RETURN(std::string field, body.String());
    return std::make_shared<GroupByStep>(std::move(field), KeySerde::kString, 0);
  }
  WEIR_RETURN_IF_ERROR(body.OnlyKeys({"field", "type", "partitions"}));
  WEIR_ASSIGN_OR_RETURN(KeySpec key, ParseKeySpec(body));
  int64_t partitions = 0;
  if (auto p = body.Get("partitions")) {
    WEIR_ASSIGN_OR_RETURN(partitions, p->Int(1, kMaxPartitions));
  }
  return std::make_shared<GroupByStep>(key.field, key.type, static_cast<int32_t>(partitions));
}

}  // namespace

void RegisterGroupBy(KindRegistry& kinds) { kinds.Add(StepKind{"group_by", {}, ParseGroupBy}); }

}  // namespace weir::dataflow

namespace weir {

Stream Stream::GroupBy(std::string field, KeySerde type, int32_t partitions) {
  return dataflow::GraphAccess::AddStep(
      *this, std::make_shared<dataflow::GroupByStep>(std::move(field), type, partitions));
}

}  // namespace weir
