#include "app/plan.h"

#include <algorithm>
#include <functional>

#include "dataflow/operators.h"

namespace weir::app {

using dataflow::Step;
using dataflow::StepKind;

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
    if (s.kind == StepKind::kTopicSource) {
      WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.GetTopic(s.topic_source.topic));
      widest_source = std::max(widest_source, topic->num_partitions());
    }
  }
  int32_t default_partitions =
      options.partitions > 0 ? options.partitions : std::max<int32_t>(widest_source, workers);

  // Walks the steps reachable from `root` without crossing a group-by into its downstream.
  std::function<void(SubTopology&, int)> collect = [&](SubTopology& sub, int step_id) {
    for (int child : graph.steps[step_id].children) {
      const Step& c = graph.steps[child];
      sub.steps.push_back(child);
      if (dataflow::IsStateful(c.kind)) sub.stateful_steps.push_back(c.name);
      if (c.kind == StepKind::kGroupBy) continue;  // its children form another sub-topology
      collect(sub, child);
    }
  };

  std::vector<int> roots;
  for (size_t i = 0; i < graph.steps.size(); ++i) {
    if (dataflow::IsSource(graph.steps[i].kind)) roots.push_back(static_cast<int>(i));
  }
  std::map<int, int> subtopology_of_group_by;
  for (size_t r = 0; r < roots.size(); ++r) {  // roots grows as group-bys are found
    SubTopology sub;
    sub.index = static_cast<int>(plan.subtopologies.size());
    sub.root_step = roots[r];
    const Step& root = graph.steps[roots[r]];
    switch (root.kind) {
      case StepKind::kFileSource:
        sub.partitions = 1;
        sub.dead_letter_topic = root.file_source.dead_letter_topic;
        break;
      case StepKind::kGeneratorSource:
        sub.partitions = std::max<int32_t>(1, root.generator.partitions);
        break;
      case StepKind::kTopicSource: {
        WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.GetTopic(root.topic_source.topic));
        sub.partitions = topic->num_partitions();
        sub.input_topic = root.topic_source.topic;
        sub.dead_letter_topic = root.topic_source.dead_letter_topic;
        break;
      }
      case StepKind::kGroupBy:
        sub.partitions =
            root.group_by.partitions > 0 ? root.group_by.partitions : default_partitions;
        sub.input_topic = dataflow::RepartitionTopicName(options.name, root.name);
        sub.upstream.push_back(subtopology_of_group_by.at(roots[r]));
        plan.repartition_topics.insert(sub.input_topic);
        plan.output_topics[sub.input_topic] = sub.partitions;
        break;
      default:
        return Status::Internal("sub-topology rooted at " + root.name);
    }
    if (sub.dead_letter_topic.empty()) sub.dead_letter_topic = default_dlq;
    collect(sub, roots[r]);
    for (int step_id : sub.steps) {
      const Step& s = graph.steps[step_id];
      if (s.kind == StepKind::kGroupBy) {
        subtopology_of_group_by[step_id] = sub.index;
        roots.push_back(step_id);
      } else if (s.kind == StepKind::kTopicSink) {
        int32_t partitions = s.topic_sink.partitions > 0 ? s.topic_sink.partitions : sub.partitions;
        plan.output_topics.emplace(s.topic_sink.topic, partitions);
        plan.sink_topics.insert(s.topic_sink.topic);
      } else if (s.kind == StepKind::kFileSink) {
        plan.files.insert(s.file_sink_path);
      } else if (s.kind == StepKind::kWindow) {
        if (!s.window->late_topic.empty())
          plan.output_topics.emplace(s.window->late_topic, sub.partitions);
        if (!s.window->late_file.empty()) plan.files.insert(s.window->late_file);
      }
    }
    plan.output_topics.emplace(sub.dead_letter_topic, 1);
    plan.dead_letter_topics.insert(sub.dead_letter_topic);
    plan.subtopologies.push_back(std::move(sub));
  }

  // Reading and writing one topic in one application would feed its output back to itself.
  for (const SubTopology& sub : plan.subtopologies) {
    if (!sub.from_repartition() && !sub.input_topic.empty() &&
        plan.output_topics.count(sub.input_topic)) {
      return Status::InvalidArgument("topic '" + sub.input_topic +
                                     "' is both a source and an output of the application");
    }
  }
  return plan;
}

}  // namespace weir::app
