#include "app/plan.h"

#include <algorithm>
#include <functional>
#include <set>

#include "dataflow/operators.h"

namespace weir::app {

using dataflow::Step;
using dataflow::StepKind;

std::string TaskId(int subtopology, int32_t partition) {
  return std::to_string(subtopology) + "_" + std::to_string(partition);
}

int Plan::task_count() const {
  int n = 0;
  for (const SubTopology& s : subtopologies) n += s.partitions;
  return n;
}

Result<Plan> Compile(const dataflow::Graph& graph, const ApplicationOptions& options,
                     log::LogStore& log, int workers) {
  Plan plan;
  const std::string default_dlq = options.name + ".dlq";

  // Source partitions first: the default repartition count is the largest of them.
  int32_t widest_source = 1;
  for (const Step& s : graph.steps) {
    if (s.kind == StepKind::kGeneratorSource)
      widest_source = std::max(widest_source, s.generator.partitions);
    if (s.kind == StepKind::kNexmarkSource)
      widest_source = std::max(widest_source, s.nexmark.partitions);
    if (s.kind == StepKind::kTopicSource) {
      WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.GetTopic(s.topic_source.topic));
      widest_source = std::max(widest_source, topic->num_partitions());
    }
  }
  int32_t default_partitions =
      options.partitions > 0 ? options.partitions : std::max<int32_t>(widest_source, workers);

  // Every input: each source, and each group-by (whose repartition topic feeds what follows it).
  // An input reaches the steps after it up to and including the next group-bys.
  const int n = static_cast<int>(graph.steps.size());
  std::vector<int> inputs;
  for (int i = 0; i < n; ++i) {
    const StepKind kind = graph.steps[i].kind;
    if (dataflow::IsSource(kind) || kind == StepKind::kGroupBy) inputs.push_back(i);
  }
  std::vector<std::vector<int>> reach(inputs.size());
  std::vector<int> owner(n, -1);  // the first input reaching a step
  std::vector<int> group(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) group[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int i) {
    return group[i] == i ? i : group[i] = find(group[i]);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int> stack(graph.steps[inputs[i]].children.rbegin(),
                           graph.steps[inputs[i]].children.rend());
    std::set<int> seen;
    while (!stack.empty()) {
      int step = stack.back();
      stack.pop_back();
      if (!seen.insert(step).second) continue;
      reach[i].push_back(step);
      // Inputs that reach a common step (a join) run in one sub-topology.
      if (owner[step] < 0)
        owner[step] = static_cast<int>(i);
      else
        group[find(static_cast<int>(i))] = find(owner[step]);
      if (graph.steps[step].kind == StepKind::kGroupBy) continue;
      for (int child : graph.steps[step].children) stack.push_back(child);
    }
  }

  std::map<int, int> subtopology_of_group;  // input group -> sub-topology index
  std::map<int, int> subtopology_of_step;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int g = find(static_cast<int>(i));
    if (!subtopology_of_group.count(g)) {
      subtopology_of_group[g] = static_cast<int>(plan.subtopologies.size());
      plan.subtopologies.emplace_back();
      plan.subtopologies.back().index = subtopology_of_group[g];
    }
    SubTopology& sub = plan.subtopologies[subtopology_of_group[g]];
    const Step& root = graph.steps[inputs[i]];
    SubTopologyInput input;
    input.root_step = inputs[i];
    int32_t partitions = 1;
    std::string dead_letter_topic;
    switch (root.kind) {
      case StepKind::kFileSource:
      case StepKind::kJetStreamSource:
        dead_letter_topic = root.kind == StepKind::kFileSource
                                ? root.file_source.dead_letter_topic
                                : root.jetstream_source.dead_letter_topic;
        break;
      case StepKind::kGeneratorSource:
        partitions = std::max<int32_t>(1, root.generator.partitions);
        break;
      case StepKind::kNexmarkSource:
        partitions = std::max<int32_t>(1, root.nexmark.partitions);
        break;
      case StepKind::kTopicSource: {
        WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.GetTopic(root.topic_source.topic));
        partitions = topic->num_partitions();
        input.topic = root.topic_source.topic;
        dead_letter_topic = root.topic_source.dead_letter_topic;
        break;
      }
      case StepKind::kGroupBy:
        partitions = root.group_by.partitions > 0 ? root.group_by.partitions : default_partitions;
        input.topic = dataflow::RepartitionTopicName(options.name, root.name);
        plan.repartition_topics.insert(input.topic);
        plan.output_topics[input.topic] = partitions;
        break;
      default:
        return Status::Internal("sub-topology rooted at " + root.name);
    }
    if (!sub.inputs.empty() && partitions != sub.partitions) {
      const Step& first = graph.steps[sub.inputs.front().root_step];
      return Status::InvalidArgument(
          "the inputs of a join are not co-partitioned: '" + first.name + "' has " +
          std::to_string(sub.partitions) + " and '" + root.name + "' has " +
          std::to_string(partitions) + " partitions" +
          "; group_by the same field before the join (with the same partitions) to align them");
    }
    sub.partitions = partitions;
    if (sub.dead_letter_topic.empty()) sub.dead_letter_topic = dead_letter_topic;
    sub.inputs.push_back(std::move(input));
    for (int step : reach[i]) subtopology_of_step[step] = sub.index;
  }
  for (auto& [step, index] : subtopology_of_step) plan.subtopologies[index].steps.push_back(step);

  for (SubTopology& sub : plan.subtopologies) {
    if (sub.dead_letter_topic.empty()) sub.dead_letter_topic = default_dlq;
    for (SubTopologyInput& input : sub.inputs) {
      if (graph.steps[input.root_step].kind == StepKind::kGroupBy)
        input.upstream.push_back(subtopology_of_step.at(input.root_step));
    }
    for (int step_id : sub.steps) {
      const Step& s = graph.steps[step_id];
      if (dataflow::IsStateful(s.kind)) sub.stateful_steps.push_back(s.name);
      sub.mark_lag_ms += dataflow::OutputLagMs(s);
      if (s.kind == StepKind::kGroupBy)
        sub.repartition_outputs.push_back(dataflow::RepartitionTopicName(options.name, s.name));
      if (s.kind == StepKind::kTopicSink) {
        int32_t partitions = s.topic_sink.partitions > 0 ? s.topic_sink.partitions : sub.partitions;
        plan.output_topics.emplace(s.topic_sink.topic, partitions);
        plan.sink_topics.insert(s.topic_sink.topic);
      } else if (s.kind == StepKind::kFileSink) {
        plan.files.insert(s.file_sink_path);
      } else if (s.kind == StepKind::kWindow) {
        if (!s.window->late_topic.empty())
          plan.output_topics.emplace(s.window->late_topic, sub.partitions);
        if (!s.window->late_file.empty()) plan.files.insert(s.window->late_file);
      } else if (s.kind == StepKind::kIntervalJoin || s.kind == StepKind::kAsOfJoin) {
        const std::string& late = s.kind == StepKind::kIntervalJoin ? s.interval_join->late_topic
                                                                    : s.asof_join->late_topic;
        plan.output_topics.emplace(late.empty() ? options.name + ".late" : late, sub.partitions);
      }
    }
    plan.output_topics.emplace(sub.dead_letter_topic, 1);
    plan.dead_letter_topics.insert(sub.dead_letter_topic);
  }

  for (SubTopology& sub : plan.subtopologies) {
    for (SubTopologyInput& input : sub.inputs) {
      for (int upstream : input.upstream) {
        for (int32_t p = 0; p < plan.subtopologies[upstream].partitions; ++p)
          input.producers.push_back(TaskId(upstream, p));
      }
    }
  }

  // Reading and writing one topic in one application would feed its output back to itself.
  for (const SubTopology& sub : plan.subtopologies) {
    for (const SubTopologyInput& input : sub.inputs) {
      if (!input.from_repartition() && !input.topic.empty() &&
          plan.output_topics.count(input.topic)) {
        return Status::InvalidArgument("topic '" + input.topic +
                                       "' is both a source and an output of the application");
      }
    }
  }
  return plan;
}

}  // namespace weir::app
