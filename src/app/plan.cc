#include "app/plan.h"

#include <algorithm>
#include <functional>
#include <set>

namespace weir::app {

using dataflow::Node;

std::string TaskId(int subtopology, int32_t partition) {
  return std::to_string(subtopology) + "_" + std::to_string(partition);
}

int Plan::task_count() const {
  int n = 0;
  for (const SubTopology& s : subtopologies) n += s.partitions;
  return n;
}

namespace {

bool IsInput(const Node& node) { return node.is_source() || node.def().repartitions(); }

// The inputs of the graph (sources and re-keying steps), the steps each reaches (up to and
// including the next re-keying steps), and which inputs share a sub-topology: those that reach
// a common step (a join).
struct Reach {
  std::vector<int> inputs;              // node indexes
  std::vector<std::vector<int>> steps;  // per input: the steps it reaches, in visit order
  std::vector<int> group;               // per input: the input that stands for its group
};

Reach FindReach(const dataflow::Graph& graph) {
  Reach reach;
  const int n = static_cast<int>(graph.nodes.size());
  for (int i = 0; i < n; ++i) {
    if (IsInput(graph.nodes[i])) reach.inputs.push_back(i);
  }
  reach.steps.resize(reach.inputs.size());
  reach.group.resize(reach.inputs.size());
  for (size_t i = 0; i < reach.inputs.size(); ++i) reach.group[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int i) {
    return reach.group[i] == i ? i : reach.group[i] = find(reach.group[i]);
  };
  std::vector<int> owner(n, -1);  // the first input reaching a step
  for (size_t i = 0; i < reach.inputs.size(); ++i) {
    const Node& input = graph.nodes[reach.inputs[i]];
    std::vector<int> stack(input.children.rbegin(), input.children.rend());
    std::set<int> seen;
    while (!stack.empty()) {
      int step = stack.back();
      stack.pop_back();
      if (!seen.insert(step).second) continue;
      reach.steps[i].push_back(step);
      if (owner[step] < 0) {
        owner[step] = static_cast<int>(i);
      } else {
        reach.group[find(static_cast<int>(i))] = find(owner[step]);
      }
      if (graph.nodes[step].def().repartitions()) continue;
      for (int child : graph.nodes[step].children) stack.push_back(child);
    }
  }
  for (size_t i = 0; i < reach.inputs.size(); ++i) reach.group[i] = find(static_cast<int>(i));
  return reach;
}

// The repartition topics' partitions when a re-keying step does not say: the option, or the
// widest source (at least the worker count).
Result<int32_t> DefaultPartitions(const dataflow::Graph& graph, const ApplicationOptions& options,
                                  log::LogStore& log, int workers) {
  if (options.partitions > 0) return options.partitions;
  int32_t widest_source = 1;
  for (const Node& node : graph.nodes) {
    if (!node.is_source()) continue;
    WEIR_ASSIGN_OR_RETURN(int32_t partitions, node.source().Partitions(log));
    widest_source = std::max(widest_source, partitions);
  }
  return std::max<int32_t>(widest_source, workers);
}

// The steps' outputs, as the plan records them.
class PlanOutputs : public dataflow::OutputDeclarations {
 public:
  PlanOutputs(Plan& plan, std::string_view application, int32_t partitions)
      : plan_(plan), application_(application), partitions_(partitions) {}
  void Topic(std::string_view topic, int32_t partitions, dataflow::TopicUse use) override {
    plan_.output_topics.emplace(topic, partitions > 0 ? partitions : partitions_);
    if (use == dataflow::TopicUse::kSink) plan_.sink_topics.emplace(topic);
  }
  void File(std::string_view path) override { plan_.files.emplace(path); }
  std::string_view application() const override { return application_; }

 private:
  Plan& plan_;
  std::string_view application_;
  int32_t partitions_;
};

// Adds input `input` (a source or a re-keying step) to `sub`, which must then have as many
// partitions as it.
Status AddInput(Plan& plan, SubTopology& sub, const dataflow::Graph& graph, int input,
                const ApplicationOptions& options, log::LogStore& log, int32_t default_partitions) {
  const Node& root = graph.nodes[input];
  SubTopologyInput added;
  added.root_step = input;
  int32_t partitions;
  std::string dead_letter_topic;
  if (root.is_source()) {
    const dataflow::SourceDefinition& source = root.source();
    WEIR_ASSIGN_OR_RETURN(partitions, source.Partitions(log));
    partitions = std::max<int32_t>(1, partitions);
    added.topic = source.log_topic();
    dead_letter_topic = source.dead_letter_topic();
  } else {
    const int32_t declared = root.def().repartition_partitions();
    partitions = declared > 0 ? declared : default_partitions;
    added.topic = dataflow::RepartitionTopicName(options.name, root.name);
    plan.repartition_topics.insert(added.topic);
    plan.output_topics[added.topic] = partitions;
  }
  if (!sub.inputs.empty() && partitions != sub.partitions) {
    const Node& first = graph.nodes[sub.inputs.front().root_step];
    return Status::InvalidArgument(
        "the inputs of a join are not co-partitioned: '" + first.name + "' has " +
        std::to_string(sub.partitions) + " and '" + root.name + "' has " +
        std::to_string(partitions) + " partitions" +
        "; group_by the same field before the join (with the same partitions) to align them");
  }
  sub.partitions = partitions;
  if (sub.dead_letter_topic.empty()) sub.dead_letter_topic = dead_letter_topic;
  sub.inputs.push_back(std::move(added));
  return Status::OK();
}

// What a sub-topology's steps need and write: stores, the lag of their outputs, the
// repartition topics they write and the topics and files they declare.
void PlanSteps(Plan& plan, SubTopology& sub, const dataflow::Graph& graph,
               const ApplicationOptions& options) {
  if (sub.dead_letter_topic.empty()) sub.dead_letter_topic = options.name + ".dlq";
  PlanOutputs outputs(plan, options.name, sub.partitions);
  for (int step_id : sub.steps) {
    const Node& node = graph.nodes[step_id];
    const dataflow::StepDefinition& def = node.def();
    if (def.stateful()) sub.stateful_steps.push_back(node.name);
    for (std::string_view suffix : def.more_stores()) {
      sub.stateful_steps.push_back(node.name + "." + std::string(suffix));
    }
    sub.mark_lag_ms += def.output_lag().count();
    if (def.repartitions()) {
      sub.repartition_outputs.push_back(dataflow::RepartitionTopicName(options.name, node.name));
    }
    def.DeclareOutputs(outputs);
  }
  plan.output_topics.emplace(sub.dead_letter_topic, 1);
  plan.dead_letter_topics.insert(sub.dead_letter_topic);
}

// Reading and writing one topic in one application would feed its output back to itself.
Status CheckNoTopicIsReadAndWritten(const Plan& plan) {
  for (const SubTopology& sub : plan.subtopologies) {
    for (const SubTopologyInput& input : sub.inputs) {
      if (!input.from_repartition() && !input.topic.empty() &&
          plan.output_topics.count(input.topic)) {
        return Status::InvalidArgument("topic '" + input.topic +
                                       "' is both a source and an output of the application");
      }
    }
  }
  return Status::OK();
}

}  // namespace

Result<Plan> Compile(const dataflow::Graph& graph, const ApplicationOptions& options,
                     log::LogStore& log, int workers) {
  Plan plan;
  WEIR_ASSIGN_OR_RETURN(const int32_t default_partitions,
                        DefaultPartitions(graph, options, log, workers));
  const Reach reach = FindReach(graph);

  std::map<int, int> subtopology_of_group;  // input group -> sub-topology index
  std::map<int, int> subtopology_of_step;
  for (size_t i = 0; i < reach.inputs.size(); ++i) {
    auto [it, created] =
        subtopology_of_group.emplace(reach.group[i], static_cast<int>(plan.subtopologies.size()));
    if (created) {
      plan.subtopologies.emplace_back();
      plan.subtopologies.back().index = it->second;
    }
    SubTopology& sub = plan.subtopologies[it->second];
    WEIR_RETURN_IF_ERROR(
        AddInput(plan, sub, graph, reach.inputs[i], options, log, default_partitions));
    for (int step : reach.steps[i]) subtopology_of_step[step] = sub.index;
  }
  for (auto& [step, index] : subtopology_of_step) plan.subtopologies[index].steps.push_back(step);

  for (SubTopology& sub : plan.subtopologies) {
    for (SubTopologyInput& input : sub.inputs) {
      if (graph.nodes[input.root_step].is_source()) continue;
      input.upstream.push_back(subtopology_of_step.at(input.root_step));
    }
    PlanSteps(plan, sub, graph, options);
  }
  for (SubTopology& sub : plan.subtopologies) {
    for (SubTopologyInput& input : sub.inputs) {
      for (int upstream : input.upstream) {
        for (int32_t p = 0; p < plan.subtopologies[upstream].partitions; ++p)
          input.producers.push_back(TaskId(upstream, p));
      }
    }
  }
  WEIR_RETURN_IF_ERROR(CheckNoTopicIsReadAndWritten(plan));
  return plan;
}

}  // namespace weir::app
