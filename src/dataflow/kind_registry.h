// KindRegistry: the kinds a YAML pipeline may name, each with its YAML form. A kind registers
// itself with one line (builtin_kinds.cc for the engine's own; a connector or the Nexmark source
// in the program that links it), and the loader (app/pipeline_yaml.cc) knows nothing of any
// particular kind: it finds the kind a YAML key names here, lets the kind parse its own options
// (through ConfigNode, so every error carries its path), validates the definition it returns at
// that path, and adds it to the graph.
//
//   source: {<source kind>: ..., key, timestamp, dead_letter, rate, bounded, idle_timeout_ms}
//   steps:  [{<step kind>: ..., <its sibling keys>}]
//   sink:   {<sink kind>: ..., <its options>}
//   <join kind>: {...}   with  streams: {name: {source, steps}}
//
// Threads: built once, then read-only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_node.h"
#include "dataflow/kind.h"
#include "weir/stream.h"

namespace weir::dataflow {

class KindRegistry;

// Relative paths in a pipeline file are relative to the file.
struct YamlContext {
  std::string base_dir;
  std::string ResolvePath(const std::string& path) const;
};

// The options every source kind may take besides its own, each meaning the same for all; a kind
// says which of them it takes (SourceKind::takes).
struct CommonSourceOptions {
  KeySpec key;                                // key: FIELD | {field, type}
  std::string timestamp_field;                // timestamp: FIELD
  std::string dead_letter_topic;              // dead_letter: TOPIC
  double rate = 0;                            // rate: records/s
  bool bounded = false;                       // bounded: true
  std::chrono::milliseconds idle_timeout{0};  // idle_timeout_ms: N
  TopicStart start = TopicStart::kEarliest;   // start: earliest | latest | OFFSET
  int64_t start_offset = 0;
};

// Copies what every kind that makes records of JSON values takes alike (the key, the timestamp
// field, the dead-letter topic) into its options.
template <typename Options>
void CopyRecordOptions(const CommonSourceOptions& common, Options& options) {
  options.key = common.key;
  options.timestamp_field = common.timestamp_field;
  options.dead_letter_topic = common.dead_letter_topic;
}

// A `source:` map being parsed by the kind it names.
class SourceYaml {
 public:
  SourceYaml(const ConfigNode& source, const ConfigNode& body, std::string_view kind,
             const KindRegistry& kinds, const YamlContext& context)
      : source_(source), body_(body), kind_(kind), kinds_(kinds), context_(context) {}
  const ConfigNode& source() const { return source_; }  // the whole map
  const ConfigNode& body() const { return body_; }      // the kind's own value
  const YamlContext& context() const { return context_; }
  bool Has(std::string_view common_option) const { return source_.Get(common_option).has_value(); }
  // The common options present. One this kind does not take is refused at its path, naming the
  // kinds that take it.
  Result<CommonSourceOptions> Common() const;

 private:
  const ConfigNode& source_;
  const ConfigNode& body_;
  std::string_view kind_;
  const KindRegistry& kinds_;
  const YamlContext& context_;
};

// One entry of `steps:` being parsed by the kind it names.
struct StepYaml {
  const ConfigNode& step;  // the whole map (with a kind's sibling keys)
  const ConfigNode& body;  // the kind's own value
  const YamlContext& context;
};

// A `sink:` map being parsed by the kind it names.
struct SinkYaml {
  const ConfigNode& sink;
  const ConfigNode& body;
  const YamlContext& context;
};

// The named streams of a pipeline file, as the inputs of a join kind.
class NamedStreams {
 public:
  explicit NamedStreams(std::map<std::string, Stream> streams) : streams_(std::move(streams)) {}
  // The stream `node` names; each stream is used exactly once ("unknown stream 'x' (streams:
  // ...)", "stream 'x' is used twice").
  Result<Stream> Use(const ConfigNode& node);
  // A stream nobody used, or "".
  std::string Unused() const;

 private:
  std::map<std::string, Stream> streams_;
  std::vector<std::string> used_;
};

// What a join kind's YAML makes: the step and its inputs, in input order.
struct JoinYaml {
  std::shared_ptr<const StepDefinition> definition;
  std::vector<Stream> parents;
  std::string name;  // empty: "<kind>-<index>"
};

struct SourceKind {
  std::string name;                // source: {<name>: ...}
  std::vector<std::string> takes;  // which CommonSourceOptions keys it takes
  std::function<Result<std::shared_ptr<const SourceDefinition>>(const SourceYaml&)> parse;
};
struct StepKind {
  std::string name;                   // steps: [{<name>: ...}]
  std::vector<std::string> siblings;  // other keys its entry may have (a window's agg, emit...)
  std::function<Result<std::shared_ptr<const StepDefinition>>(const StepYaml&)> parse;
};
struct SinkKind {
  std::string name;                // sink: {<name>: ...}
  std::vector<std::string> takes;  // other keys of the sink map it takes (a topic's partitions)
  std::function<Result<std::shared_ptr<const SinkDefinition>>(const SinkYaml&)> parse;
};
struct JoinKind {
  std::string name;  // a top-level key, beside `streams:`
  std::function<Result<JoinYaml>(const ConfigNode& node, NamedStreams& streams)> parse;
};

class KindRegistry {
 public:
  // REQUIRES: the name is not registered yet in its family.
  void Add(SourceKind kind);
  void Add(StepKind kind);
  void Add(SinkKind kind);
  void Add(JoinKind kind);

  // Each parses the YAML the kind names, or says which kinds there are, and validates what the
  // kind made at its path.
  Result<std::shared_ptr<const SourceDefinition>> ParseSource(const ConfigNode& source,
                                                              const YamlContext& context) const;
  Result<std::shared_ptr<const StepDefinition>> ParseStep(const ConfigNode& step,
                                                          const YamlContext& context) const;
  Result<std::shared_ptr<const SinkDefinition>> ParseSink(const ConfigNode& sink,
                                                          const YamlContext& context) const;
  // The join kind `name` (a top-level key), or nullptr.
  const JoinKind* FindJoin(std::string_view name) const;
  const std::vector<JoinKind>& joins() const { return joins_; }

 private:
  friend class SourceYaml;
  std::vector<SourceKind> sources_;
  std::vector<StepKind> steps_;
  std::vector<SinkKind> sinks_;
  std::vector<JoinKind> joins_;
};

// Shared YAML forms of kinds' options.
// A key: FIELD or {field, type: string|int|json|bytes}.
Result<KeySpec> ParseKeySpec(const ConfigNode& node);
// "a, b and c" of the names.
std::string JoinNames(const std::vector<std::string>& names, std::string_view last_separator);

}  // namespace weir::dataflow
