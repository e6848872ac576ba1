// The logical dataflow graph that the Stream API builds: a forest of steps rooted at sources.
// It is a description only; app/ compiles it into tasks.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "weir/aggregator.h"
#include "weir/status.h"
#include "weir/stream.h"
#include "weir/window.h"

namespace weir::dataflow {

enum class StepKind {
  kFileSource,
  kTopicSource,
  kGeneratorSource,
  kNexmarkSource,
  kJetStreamSource,
  kMap,
  kFilter,
  kFlatMap,
  kApply,
  kUpdate,
  kGroupBy,
  kAggregate,
  kWindow,
  kJoin,
  kIntervalJoin,
  kAsOfJoin,
  kTopicSink,
  kFileSink,
  kStdoutSink,
};

std::string_view StepKindName(StepKind kind);
bool IsSource(StepKind kind);
bool IsSink(StepKind kind);
// Steps with per-key state in the task's store.
bool IsStateful(StepKind kind);
// Steps with several parents (their inputs are numbered in the order of `parents`).
bool IsMultiInput(StepKind kind);

struct Step;
// How far behind the task's watermark the timestamps of what `step` emits may be, in ms: a
// window emits a window (timestamp end - 1) once the watermark is its end + grace; a join emits
// a match or an expiry up to its grace (and bound) behind. 0 for steps that emit what they get.
// A task writing a repartition topic marks it with its watermark less the sum of these over its
// steps, so no record it writes after a mark is behind the mark (watermark_marks.h).
int64_t OutputLagMs(const Step& step);

// A window step: what WindowedStream collected.
struct WindowStep {
  WindowDefinition definition;
  std::vector<std::pair<std::string, AggregatorPtr>> aggregations;
  bool single_unnamed = false;
  Closing closing = Closing::kKey;
  bool final = true;  // .Final(); else .Current()
  std::function<void(const LateRecord&)> on_late;
  std::string late_topic;
  std::string late_file;
  std::function<bool(const Value&)> trigger;
};

struct GroupBySpec {
  std::string field;
  KeySerde type = KeySerde::kString;
  int32_t partitions = 0;
};

struct Step {
  StepKind kind;
  std::string name;  // user-given or "<kind>-<index>"; unique in the graph
  int parent = -1;   // -1 for sources; parents[0] for multi-input steps
  // Multi-input steps: every parent, in input order, and (joins) the name of each input.
  std::vector<int> parents;
  std::vector<std::string> input_names;
  std::vector<int> children;

  // The payload of the kind (only the member matching `kind` is set).
  FileSourceOptions file_source;
  TopicSourceOptions topic_source;
  GeneratorOptions generator;
  NexmarkSourceOptions nexmark;
  JetStreamSourceOptions jetstream_source;
  std::function<Value(const Value&)> map;
  std::function<bool(const Value&)> filter;
  std::function<std::vector<Value>(const Value&)> flat_map;
  std::function<std::optional<Value>(const Value&, State&)> apply;
  std::function<void(Value&, State&)> update;
  GroupBySpec group_by;
  std::vector<std::pair<std::string, AggregatorPtr>> aggregations;
  std::shared_ptr<const WindowStep> window;
  std::shared_ptr<const JoinOptions> join;
  std::shared_ptr<const IntervalJoinOptions> interval_join;
  std::shared_ptr<const AsOfJoinOptions> asof_join;
  TopicSinkOptions topic_sink;
  std::string file_sink_path;

  // A line that identifies what this step does, for the definition fingerprint.
  std::string Describe() const;
};

struct Graph {
  std::vector<Step> steps;
  // The first definition error (a step after a sink, an empty field...), reported by Run().
  Status error;

  int Add(Step step);
  void Fail(std::string message) {
    if (error.ok()) error = Status::InvalidArgument(std::move(message));
  }
  // Checks what can only be checked once the graph is complete: every branch ends in a sink,
  // there is at least one source, names are unique.
  Status Validate() const;
  // Every step's Describe(), one per line, in order: what a restart must match.
  std::string Describe() const;
};

}  // namespace weir::dataflow
