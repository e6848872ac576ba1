#include "dataflow/graph.h"

#include <set>

namespace weir::dataflow {

std::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kFileSource:
      return "file-source";
    case StepKind::kTopicSource:
      return "topic-source";
    case StepKind::kGeneratorSource:
      return "generator";
    case StepKind::kNexmarkSource:
      return "nexmark";
    case StepKind::kJetStreamSource:
      return "jetstream-source";
    case StepKind::kMap:
      return "map";
    case StepKind::kFilter:
      return "filter";
    case StepKind::kFlatMap:
      return "flat-map";
    case StepKind::kApply:
      return "apply";
    case StepKind::kUpdate:
      return "update";
    case StepKind::kGroupBy:
      return "group-by";
    case StepKind::kAggregate:
      return "aggregate";
    case StepKind::kWindow:
      return "window";
    case StepKind::kJoin:
      return "join";
    case StepKind::kIntervalJoin:
      return "interval-join";
    case StepKind::kAsOfJoin:
      return "asof-join";
    case StepKind::kTopicSink:
      return "to-topic";
    case StepKind::kFileSink:
      return "to-file";
    case StepKind::kStdoutSink:
      return "to-stdout";
  }
  return "unknown";
}

bool IsSource(StepKind kind) {
  return kind == StepKind::kFileSource || kind == StepKind::kTopicSource ||
         kind == StepKind::kGeneratorSource || kind == StepKind::kNexmarkSource ||
         kind == StepKind::kJetStreamSource;
}

bool IsSink(StepKind kind) {
  return kind == StepKind::kTopicSink || kind == StepKind::kFileSink ||
         kind == StepKind::kStdoutSink;
}

bool IsStateful(StepKind kind) {
  return kind == StepKind::kApply || kind == StepKind::kUpdate || kind == StepKind::kAggregate ||
         kind == StepKind::kWindow || kind == StepKind::kJoin || kind == StepKind::kIntervalJoin ||
         kind == StepKind::kAsOfJoin;
}

bool IsMultiInput(StepKind kind) {
  return kind == StepKind::kJoin || kind == StepKind::kIntervalJoin || kind == StepKind::kAsOfJoin;
}

int64_t OutputLagMs(const Step& step) {
  switch (step.kind) {
    case StepKind::kWindow:
      return step.window->definition.is_count() ? 0 : step.window->definition.grace();
    case StepKind::kIntervalJoin:  // a left-outer left without a match leaves past its upper bound
      return step.interval_join->grace.count() +
             (step.interval_join->left_outer ? step.interval_join->upper.count() : 0);
    case StepKind::kAsOfJoin:
      return step.asof_join->grace.count();
    case StepKind::kJoin:  // a group settles up to its tolerance, or its timeout, after its time
      return std::max(step.join->tolerance.count(), step.join->timeout.count());
    default:
      return 0;
  }
}

std::string Step::Describe() const {
  std::string d =
      std::string(StepKindName(kind)) + " " + name + " parent=" + std::to_string(parent);
  for (size_t i = 1; i < parents.size(); ++i) d += "," + std::to_string(parents[i]);
  for (const std::string& input : input_names) d += " input=" + input;
  switch (kind) {
    case StepKind::kFileSource:
      d += " key=" + file_source.key.field + ":" + std::string(KeySerdeName(file_source.key.type)) +
           " ts=" + file_source.timestamp_field;
      break;
    case StepKind::kTopicSource:
      d += " topic=" + topic_source.topic + " key=" + topic_source.key.field +
           " ts=" + topic_source.timestamp_field;
      break;
    case StepKind::kGeneratorSource:
      d += " partitions=" + std::to_string(generator.partitions) +
           " users=" + std::to_string(generator.users) + " seed=" + std::to_string(generator.seed) +
           " rate=" + std::to_string(generator.events_per_second) +
           " active=" + std::to_string(generator.active_fraction) +
           " disorder=" + std::to_string(generator.max_out_of_order_ms) +
           " start=" + std::to_string(generator.start_time_ms);
      break;
    case StepKind::kNexmarkSource:
      d += " partitions=" + std::to_string(nexmark.partitions) +
           " first=" + std::to_string(nexmark.first_event_ms) +
           " rate=" + std::to_string(nexmark.events_per_second) +
           " seed=" + std::to_string(nexmark.seed) +
           " disorder=" + std::to_string(nexmark.out_of_order_group_size);
      break;
    case StepKind::kJetStreamSource:
      d += " stream=" + jetstream_source.stream + " subject=" + jetstream_source.subject +
           " durable=" + jetstream_source.durable + " key=" + jetstream_source.key.field +
           " ts=" + jetstream_source.timestamp_field;
      break;
    case StepKind::kJoin:
      // Tolerance, timeouts, quorum and caps may change across a restart (pending groups are
      // held deliveries, reassembled from their sources); the mode and the inputs may not.
      d += std::string(" mode=") + (join->mode == JoinMode::kTrace ? "trace" : "time") +
           " trace_field=" + join->trace_field;
      for (const auto& [input, window] : join->collect) d += " collect=" + input;
      break;
    case StepKind::kIntervalJoin:
      d += " lower=" + std::to_string(interval_join->lower.count()) +
           " upper=" + std::to_string(interval_join->upper.count()) +
           (interval_join->left_outer ? " left" : " inner");
      break;
    case StepKind::kGroupBy:
      d += " field=" + group_by.field + ":" + std::string(KeySerdeName(group_by.type));
      break;
    case StepKind::kAggregate:
      for (const auto& [n, a] : aggregations) d += " " + n + "=" + a->Describe();
      break;
    case StepKind::kWindow: {
      // Grace and the session gap may change across a restart (the window state stays valid);
      // the kind, the size and step, the closing and the aggregations may not.
      const WindowDefinition& def = window->definition;
      d += " kind=" + std::to_string(static_cast<int>(def.kind()));
      if (def.kind() != WindowKind::kSession) {
        d += " size=" + std::to_string(def.size()) + " step=" + std::to_string(def.step());
      }
      d += std::string(" closing=") + (window->closing == Closing::kKey ? "key" : "partition") +
           (window->final ? " final" : " current");
      for (const auto& [n, a] : window->aggregations) d += " " + n + "=" + a->Describe();
      if (!window->late_topic.empty()) d += " late_topic=" + window->late_topic;
      if (!window->late_file.empty()) d += " late_file=" + window->late_file;
      break;
    }
    case StepKind::kTopicSink:
      d += " topic=" + topic_sink.topic;
      break;
    case StepKind::kFileSink:
      d += " path=" + file_sink_path;
      break;
    default:
      break;
  }
  return d;
}

int Graph::Add(Step step) {
  int id = static_cast<int>(steps.size());
  if (step.name.empty())
    step.name = std::string(StepKindName(step.kind)) + "-" + std::to_string(id);
  if (step.parents.empty() && step.parent >= 0) step.parents.push_back(step.parent);
  for (int parent : step.parents) {
    if (IsSink(steps[parent].kind)) {
      Fail("step '" + step.name + "' follows sink '" + steps[parent].name +
           "': a sink ends its stream");
    }
    steps[parent].children.push_back(id);
  }
  steps.push_back(std::move(step));
  return id;
}

Status Graph::Validate() const {
  if (!error.ok()) return error;
  bool has_source = false;
  std::set<std::string> names;
  for (const Step& s : steps) {
    has_source |= IsSource(s.kind);
    if (!names.insert(s.name).second) {
      return Status::InvalidArgument("two steps are named '" + s.name + "'");
    }
    if (!IsSink(s.kind) && s.children.empty()) {
      return Status::InvalidArgument("step '" + s.name +
                                     "' has no sink after it: end the stream with ToTopic, "
                                     "ToFile or ToStdout");
    }
  }
  if (!has_source) return Status::InvalidArgument("the application has no source");
  // A join holds the source record being processed; a record a stateful step emits from its
  // state (a window closing, a group, a pair) has no source record of its own to hold, so it
  // must reach the join through a durable topic.
  for (const Step& s : steps) {
    if (s.kind != StepKind::kJoin) continue;
    std::vector<int> up(s.parents);
    while (!up.empty()) {
      const Step& u = steps[up.back()];
      up.pop_back();
      if (IsSource(u.kind) || u.kind == StepKind::kGroupBy) continue;
      if (u.kind == StepKind::kWindow || IsMultiInput(u.kind)) {
        return Status::InvalidArgument(
            "join '" + s.name + "' reads what '" + u.name +
            "' emits from its state; put a group_by between them (through a topic)");
      }
      up.insert(up.end(), u.parents.begin(), u.parents.end());
    }
  }
  return Status::OK();
}

std::string Graph::Describe() const {
  std::string d;
  for (const Step& s : steps) d += s.Describe() + "\n";
  return d;
}

}  // namespace weir::dataflow
