// The physical plan: the graph cut at every group-by into sub-topologies, each run as one task
// per partition of its input (as Kafka Streams does).
//
// A sub-topology has one input, or several when a multi-input step (a join) joins the chains
// that lead to it. An input is a source (the task reads the source's partition) or a re-keying
// step, a group-by (the task reads that step's repartition topic). The re-keying step itself
// runs in the upstream sub-topology, where it writes the repartition topic. The plan knows no
// particular kind: it asks each step's definition (dataflow/kind.h). The inputs of one
// sub-topology are co-partitioned: task p reads partition p of each.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dataflow/graph.h"
#include "log/log.h"
#include "weir/application.h"

namespace weir::app {

// "<sub-topology>_<partition>", as Kafka Streams names tasks.
std::string TaskId(int subtopology, int32_t partition);

struct SubTopologyInput {
  int root_step = 0;          // a source node, or a re-keying node (its repartition topic)
  std::string topic;          // the source's log topic or the repartition topic; empty otherwise
  std::vector<int> upstream;  // sub-topologies writing `topic` (repartition only)
  // The tasks writing `topic` (repartition only): the reader's watermark for this input is the
  // minimum of their watermark marks.
  std::vector<std::string> producers;
  bool from_repartition() const { return !upstream.empty(); }
};

struct SubTopology {
  int index = 0;
  int32_t partitions = 1;
  std::vector<SubTopologyInput> inputs;  // in the order of their root steps
  std::vector<int> steps;                // the steps its tasks run after the roots, in graph order
  std::vector<std::string> stateful_steps;
  std::string dead_letter_topic;
  // The repartition topics its group-by steps write: each task puts its watermark marks there,
  // at its watermark less `mark_lag_ms` (the sum of its steps' dataflow::OutputLagMs).
  std::vector<std::string> repartition_outputs;
  int64_t mark_lag_ms = 0;
};

struct Plan {
  std::vector<SubTopology> subtopologies;
  // Every topic the application writes (sinks, repartition topics, dead letters) and the
  // partitions it gets if it does not exist yet.
  std::map<std::string, int32_t> output_topics;
  std::set<std::string> repartition_topics;
  std::set<std::string> dead_letter_topics;
  std::set<std::string> sink_topics;
  std::set<std::string> files;
  int task_count() const;
};

// Compiles a validated graph. Sources tell their partitions (a topic source looks its topic up in
// `log`: kNotFound for an unknown topic). `workers` is the worker thread count the partitions
// default from. kInvalidArgument if the inputs of a join are not co-partitioned, or a topic is
// both read and written.
Result<Plan> Compile(const dataflow::Graph& graph, const ApplicationOptions& options,
                     log::LogStore& log, int workers);

}  // namespace weir::app
