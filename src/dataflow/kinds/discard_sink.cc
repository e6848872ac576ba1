// The discard sink kind (Flink's blackhole): every record that reaches it is dropped, so a
// benchmark measures the engine without the cost of its output. The pipeline still runs,
// checkpoints and resumes as with any other sink. YAML `sink: {discard: true}`,
// Stream::ToDiscard().
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

class DiscardOperator : public Operator {
 public:
  explicit DiscardOperator(TaskContext& task) : task_(task) {}
  void Process(Record&&) override { task_.CountDelivered(); }

 private:
  TaskContext& task_;
};

class DiscardSink : public SinkDefinition {
 public:
  std::string_view kind() const override { return "to-discard"; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new DiscardOperator(context.task));
  }
};

Result<std::shared_ptr<const SinkDefinition>> ParseDiscardSink(const SinkYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(bool on, yaml.body.Bool());
  if (!on) return yaml.body.Error("discard: false means nothing; remove the sink");
  return std::make_shared<DiscardSink>();
}

}  // namespace

void RegisterDiscardSink(KindRegistry& kinds) {
  kinds.Add(SinkKind{"discard", {}, ParseDiscardSink});
}

}  // namespace weir::dataflow

namespace weir {

void Stream::ToDiscard() {
  dataflow::GraphAccess::AddStep(*this, std::make_shared<dataflow::DiscardSink>());
}

}  // namespace weir
