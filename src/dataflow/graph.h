// The logical dataflow graph that the Stream API and the YAML loader build: a forest of steps
// rooted at sources, each step a node holding its kind's definition (kind.h). It is a
// description only; app/ compiles it into tasks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataflow/kind.h"
#include "weir/status.h"
#include "weir/stream.h"

namespace weir {
class Application;
}  // namespace weir

namespace weir::dataflow {

struct Node {
  std::shared_ptr<const StepDefinition> definition;
  std::string name;          // user-given or "<kind>-<index>"; unique in the graph
  std::vector<int> parents;  // none for sources; a multi-input step's in input order
  std::vector<int> children;

  const StepDefinition& def() const { return *definition; }
  int parent() const { return parents.empty() ? -1 : parents.front(); }
  bool is_source() const { return definition->role() == Role::kSource; }
  bool is_sink() const { return definition->role() == Role::kSink; }
  // REQUIRES is_source().
  const SourceDefinition& source() const {
    return static_cast<const SourceDefinition&>(*definition);
  }
};

struct Graph {
  std::vector<Node> nodes;
  // The first definition error (a step after a sink, an invalid option...), reported by Run().
  Status error;

  // Adds a node after `parents` (none for a source) and returns its index. A definition that
  // does not validate, or a step after a sink, records the first error in `error`.
  int Add(std::shared_ptr<const StepDefinition> definition, std::string name,
          std::vector<int> parents);
  void Fail(std::string message) {
    if (error.ok()) error = Status::InvalidArgument(std::move(message));
  }
  // Checks what can only be checked once the graph is complete: every branch ends in a sink,
  // there is at least one source, names are unique, a step holding source records sees only
  // source records.
  Status Validate() const;
  // The definition a restart must match: every node's kind, name, parents and options, as JSON
  // (Fingerprint: fixed options under "fixed", the others under "may_change").
  std::string Describe() const;
};

// Why the `current` definition (Graph::Describe) cannot resume from state written under
// `recorded`: "step 'window-3' (window): size 10000 -> 5000"; nullopt if it can (only
// MayChange options differ). A `recorded` that is not a definition is reported as such.
std::optional<std::string> DefinitionChange(std::string_view recorded, std::string_view current);

// How kinds and the YAML loader reach the graph behind the public Application and Stream (which
// declare it a friend): adding a node is the only thing it does.
struct GraphAccess {
  static Graph& Of(Application& app);
  // A source of `app`.
  static Stream AddSource(Application& app, std::shared_ptr<const SourceDefinition> definition);
  // A step (or sink) after `parent`. A sink returns the stream of the sink node, which no step
  // may follow.
  static Stream AddStep(const Stream& parent, std::shared_ptr<const StepDefinition> definition,
                        std::string name = "");
  // A step after the node `parent` of `graph` (WindowedStream keeps its parent as a node).
  static Stream AddStep(Graph& graph, int parent, std::shared_ptr<const StepDefinition> definition,
                        std::string name = "");
  // A multi-input step after `parents`, in input order; they must belong to `graph`.
  static Stream AddMultiInput(Graph& graph, const std::vector<Stream>& parents,
                              std::shared_ptr<const StepDefinition> definition, std::string name);
  static Graph& GraphOf(const Stream& stream);
  static int NodeOf(const Stream& stream);
};

}  // namespace weir::dataflow
