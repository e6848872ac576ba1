// The topic sink kind: writes every record to a topic of the embedded log, exactly once
// (Stream::ToTopic; YAML `sink: {topic: NAME, partitions: N}`). A record goes to its key's
// partition (Kafka's murmur2). A value no step has changed since its source read it as JSON text
// (a topic's record passed through filters only) is written as that text, not encoded again.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

class TopicSinkOperator : public Operator {
 public:
  explicit TopicSinkOperator(TopicWriter& writer) : writer_(writer) {}
  // A value no step has changed is written as the JSON text it was read from (UnchangedInput).
  void Process(Record&& r) override { writer_.Write(r, UnchangedJson(r.value)); }
  // Nothing to copy: the record is only read.
  void ProcessShared(const Record& r) override { writer_.Write(r, UnchangedJson(r.value)); }

 private:
  TopicWriter& writer_;
};

class TopicSink : public SinkDefinition {
 public:
  explicit TopicSink(TopicSinkOptions options) : options_(std::move(options)) {}
  std::string_view kind() const override { return "to-topic"; }
  Status Validate() const override {
    if (options_.topic.empty()) return Status::InvalidArgument("ToTopic needs a topic name");
    return CheckPartitions(options_.partitions, 0, "ToTopic partitions");
  }
  void Describe(Fingerprint& fingerprint) const override {
    fingerprint.Fixed("topic", options_.topic).Fixed("partitions", options_.partitions);
  }
  void DeclareOutputs(OutputDeclarations& outputs) const override {
    outputs.Topic(options_.topic, options_.partitions, TopicUse::kSink);
  }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(
        new TopicSinkOperator(context.task.TopicOutput(options_.topic)));
  }

 private:
  TopicSinkOptions options_;
};

Result<std::shared_ptr<const SinkDefinition>> ParseTopicSink(const SinkYaml& yaml) {
  TopicSinkOptions options;
  WEIR_ASSIGN_OR_RETURN(options.topic, yaml.body.String());
  if (auto p = yaml.sink.Get("partitions")) {
    WEIR_ASSIGN_OR_RETURN(int64_t partitions, p->Int(1, kMaxPartitions));
    options.partitions = static_cast<int32_t>(partitions);
  }
  return std::make_shared<TopicSink>(std::move(options));
}

}  // namespace

void RegisterTopicSink(KindRegistry& kinds) {
  kinds.Add(SinkKind{"topic", {"partitions"}, ParseTopicSink});
}

}  // namespace weir::dataflow

namespace weir {

void Stream::ToTopic(TopicSinkOptions options) {
  dataflow::GraphAccess::AddStep(*this, std::make_shared<dataflow::TopicSink>(std::move(options)));
}

}  // namespace weir
