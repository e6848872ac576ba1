// The topic source kind: one task per partition of a topic of the embedded log
// (Application::FromTopic; YAML `source: {topic: NAME, key, timestamp, dead_letter, rate,
// bounded, idle_timeout_ms, start: earliest | latest | OFFSET}`). Followed until stopped, or read
// up to the end it had when the run started (bounded). The reader itself is in sources.cc: tasks
// read repartition topics with it.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/sources.h"
#include "log/log.h"
#include "weir/application.h"

namespace weir::dataflow {
namespace {

class TopicSourceDefinition : public SourceDefinition {
 public:
  explicit TopicSourceDefinition(TopicSourceOptions options) : options_(std::move(options)) {}
  std::string_view kind() const override { return "topic-source"; }
  Status Validate() const override {
    if (options_.topic.empty()) return Status::InvalidArgument("a topic source needs a topic name");
    if (options_.start_offset < 0) {
      return Status::InvalidArgument("a topic source's start_offset must be >= 0, got " +
                                     std::to_string(options_.start_offset));
    }
    return Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    fingerprint.Fixed("topic", options_.topic);
    DescribeRecordExtraction(fingerprint, options_.key, options_.timestamp_field,
                             options_.dead_letter_topic);
    // Pacing, when a quiet partition's watermark starts following the clock, and whether the run
    // ends at the topic's end (a run may follow it, a later one read to its end; once a bounded
    // run ended, what comes after is late, weir/window.h): none changes what the state means.
    // Where a first run starts: a resume continues from the checkpoint whatever it says.
    fingerprint.MayChange("rate", options_.max_rate)
        .MayChange("idle_timeout_ms", options_.idle_timeout)
        .MayChange("bounded", options_.bounded)
        .MayChange("start", options_.start == TopicStart::kOffset
                                ? std::to_string(options_.start_offset)
                            : options_.start == TopicStart::kLatest ? "latest"
                                                                    : "earliest");
  }
  Result<int32_t> Partitions(log::LogStore& log) const override {
    WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.GetTopic(options_.topic));
    return topic->num_partitions();
  }
  Result<std::unique_ptr<Source>> Open(log::LogStore& log, PartitionId partition) const override {
    return OpenTopicSource(log, options_, partition);
  }
  std::string_view dead_letter_topic() const override { return options_.dead_letter_topic; }
  std::string_view log_topic() const override { return options_.topic; }
  std::chrono::milliseconds idle_timeout() const override { return options_.idle_timeout; }

 private:
  TopicSourceOptions options_;
};

Result<std::shared_ptr<const SourceDefinition>> ParseTopicSource(const SourceYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(CommonSourceOptions common, yaml.Common());
  TopicSourceOptions options;
  WEIR_ASSIGN_OR_RETURN(options.topic, yaml.body().String());
  CopyRecordOptions(common, options);
  options.max_rate = common.rate;
  options.bounded = common.bounded;
  options.idle_timeout = common.idle_timeout;
  options.start = common.start;
  options.start_offset = common.start_offset;
  return std::make_shared<TopicSourceDefinition>(std::move(options));
}

}  // namespace

void RegisterTopicSource(KindRegistry& kinds) {
  kinds.Add(
      SourceKind{"topic",
                 {"key", "timestamp", "dead_letter", "rate", "bounded", "idle_timeout_ms", "start"},
                 ParseTopicSource});
}

}  // namespace weir::dataflow

namespace weir {

Stream Application::FromTopic(TopicSourceOptions options) {
  return dataflow::GraphAccess::AddSource(
      *this, std::make_shared<dataflow::TopicSourceDefinition>(std::move(options)));
}

}  // namespace weir
