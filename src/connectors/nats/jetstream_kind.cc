#include "connectors/nats/jetstream_kind.h"

#include "connectors/nats/jetstream_source.h"
#include "dataflow/graph.h"
#include "dataflow/sources.h"
#include "weir/application.h"

namespace weir::nats {
namespace {

class JetStreamSourceDefinition : public dataflow::SourceDefinition {
 public:
  explicit JetStreamSourceDefinition(JetStreamSourceOptions options)
      : options_(std::move(options)) {}
  std::string_view kind() const override { return "jetstream-source"; }
  Status Validate() const override {
    if (options_.stream.empty() || options_.durable.empty()) {
      return Status::InvalidArgument(
          "a JetStream source needs a stream and a durable consumer name");
    }
    if (options_.max_deliver < 1) {
      return Status::InvalidArgument("JetStream max_deliver must be >= 1");
    }
    return Status::OK();
  }
  void Describe(dataflow::Fingerprint& fingerprint) const override {
    // The durable consumer holds the position: which one, and what its messages mean.
    fingerprint.Fixed("stream", options_.stream)
        .Fixed("subject", options_.subject)
        .Fixed("durable", options_.durable);
    dataflow::DescribeRecordExtraction(fingerprint, options_.key, options_.timestamp_field,
                                       options_.dead_letter_topic);
    // Where the server is, how redelivery is paced and capped, and whether the run ends at the
    // stream's last message: the broker keeps the rest.
    fingerprint.MayChange("bounded", options_.bounded)
        .MayChange("url", options_.url)
        .MayChange("max_deliver", options_.max_deliver)
        .MayChange("ack_wait_ms", options_.ack_wait)
        .MayChange("dead_letter_subject", options_.dead_letter_subject);
  }
  Result<int32_t> Partitions(log::LogStore&) const override { return 1; }
  Result<std::unique_ptr<dataflow::Source>> Open(log::LogStore&, PartitionId) const override {
    return OpenJetStreamSource(options_);
  }
  std::string_view dead_letter_topic() const override { return options_.dead_letter_topic; }

 private:
  JetStreamSourceOptions options_;
};

Result<std::shared_ptr<const dataflow::SourceDefinition>> ParseJetStreamSource(
    const dataflow::SourceYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(dataflow::CommonSourceOptions common, yaml.Common());
  const ConfigNode& js = yaml.body();
  WEIR_RETURN_IF_ERROR(js.OnlyKeys({"url", "stream", "subject", "durable", "max_deliver",
                                    "ack_wait_ms", "dead_letter_subject"}));
  JetStreamSourceOptions o;
  dataflow::CopyRecordOptions(common, o);
  o.bounded = common.bounded;
  WEIR_ASSIGN_OR_RETURN(ConfigNode stream, js.Require("stream", "the JetStream stream"));
  WEIR_ASSIGN_OR_RETURN(o.stream, stream.String());
  WEIR_ASSIGN_OR_RETURN(ConfigNode durable, js.Require("durable", "the consumer's name"));
  WEIR_ASSIGN_OR_RETURN(o.durable, durable.String());
  if (auto v = js.Get("url")) {
    WEIR_ASSIGN_OR_RETURN(o.url, v->String());
  }
  if (auto v = js.Get("subject")) {
    WEIR_ASSIGN_OR_RETURN(o.subject, v->String());
  }
  if (auto v = js.Get("dead_letter_subject")) {
    WEIR_ASSIGN_OR_RETURN(o.dead_letter_subject, v->String());
  }
  if (auto v = js.Get("max_deliver")) {
    WEIR_ASSIGN_OR_RETURN(int64_t n, v->Int(1, 1000));
    o.max_deliver = static_cast<int>(n);
  }
  if (auto v = js.Get("ack_wait_ms")) {
    WEIR_ASSIGN_OR_RETURN(int64_t ms, v->Int(1, INT64_MAX / 4));
    o.ack_wait = std::chrono::milliseconds(ms);
  }
  return std::make_shared<JetStreamSourceDefinition>(std::move(o));
}

}  // namespace

void RegisterJetStreamSource(dataflow::KindRegistry& kinds) {
  kinds.Add(dataflow::SourceKind{
      "jetstream", {"key", "timestamp", "dead_letter", "bounded"}, ParseJetStreamSource});
}

}  // namespace weir::nats

namespace weir {

Stream Application::FromJetStream(JetStreamSourceOptions options) {
  return dataflow::GraphAccess::AddSource(
      *this, std::make_shared<nats::JetStreamSourceDefinition>(std::move(options)));
}

}  // namespace weir
