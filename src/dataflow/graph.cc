#include "dataflow/graph.h"

#include <set>

#include "dataflow/operators.h"
#include "weir/application.h"
#include "weir/stream.h"

namespace weir::dataflow {

int Graph::Add(std::shared_ptr<const StepDefinition> definition, std::string name,
               std::vector<int> parents) {
  const int id = static_cast<int>(nodes.size());
  if (name.empty()) name = std::string(definition->kind()) + "-" + std::to_string(id);
  if (Status valid = definition->Validate(); !valid.ok()) Fail(std::string(valid.message()));
  for (int parent : parents) {
    if (nodes[parent].is_sink()) {
      Fail("step '" + name + "' follows sink '" + nodes[parent].name + "': a sink ends its stream");
    }
    nodes[parent].children.push_back(id);
  }
  nodes.push_back(Node{std::move(definition), std::move(name), std::move(parents), {}});
  return id;
}

Status Graph::Validate() const {
  if (!error.ok()) return error;
  bool has_source = false;
  std::set<std::string> names;
  for (const Node& n : nodes) {
    has_source |= n.is_source();
    if (!names.insert(n.name).second) {
      return Status::InvalidArgument("two steps are named '" + n.name + "'");
    }
    for (std::string_view suffix : n.def().more_stores()) {
      // A store of its own, named like a step: the name is taken.
      if (!names.insert(n.name + "." + std::string(suffix)).second) {
        return Status::InvalidArgument("two steps are named '" + n.name + "." +
                                       std::string(suffix) + "' (one is the store of step '" +
                                       n.name + "')");
      }
    }
    if (!n.is_sink() && n.children.empty()) {
      return Status::InvalidArgument("step '" + n.name +
                                     "' has no sink after it: end the stream with ToTopic, "
                                     "ToFile or ToStdout");
    }
  }
  if (!has_source) return Status::InvalidArgument("the application has no source");
  // A step holding the source record being processed (a join) needs source records; a record a
  // stateful step emits from its state (a window closing, a pair) has no source record of its
  // own to hold, so it must reach the join through a durable topic.
  for (const Node& n : nodes) {
    if (!n.def().holds_source_records()) continue;
    std::vector<int> up(n.parents);
    while (!up.empty()) {
      const Node& u = nodes[up.back()];
      up.pop_back();
      if (u.is_source() || u.def().repartitions()) continue;
      if (u.def().emits_from_state()) {
        return Status::InvalidArgument(std::string(n.def().kind()) + " '" + n.name +
                                       "' reads what '" + u.name +
                                       "' emits from its state; put a group_by between them "
                                       "(through a topic)");
      }
      up.insert(up.end(), u.parents.begin(), u.parents.end());
    }
  }
  return Status::OK();
}

std::string Graph::Describe() const {
  Value::Array steps;
  for (const Node& n : nodes) {
    Fingerprint fingerprint;
    n.def().Describe(fingerprint);
    Value::Array parents;
    for (int p : n.parents) parents.emplace_back(int64_t{p});
    steps.push_back(Value::MakeObject({{"name", Value(n.name)},
                                       {"kind", Value(n.def().kind())},
                                       {"parents", Value(std::move(parents))},
                                       {"fixed", fingerprint.fixed()},
                                       {"may_change", fingerprint.may_change()}}));
  }
  return Value(std::move(steps)).ToJson();
}

namespace {

// "'window-3' (window)".
std::string StepTitle(const Value& step) {
  const Value* name = step.Find("name");
  const Value* kind = step.Find("kind");
  return "'" + std::string(name && name->is_string() ? name->as_string() : "?") + "' (" +
         std::string(kind && kind->is_string() ? kind->as_string() : "?") + ")";
}

std::string Shown(const Value* v) { return v == nullptr ? "(none)" : v->ToJson(); }

// The first fixed option that differs between two steps' "fixed" objects, as "name a -> b".
std::optional<std::string> FixedOptionChange(const Value& recorded, const Value& current) {
  std::vector<std::string> names;
  for (const Value* side : {&recorded, &current}) {
    if (!side->is_object()) continue;
    for (const auto& [name, value] : side->as_object()) names.push_back(name);
  }
  for (const std::string& name : names) {
    const Value* a = recorded.Find(name);
    const Value* b = current.Find(name);
    if (a == nullptr || b == nullptr || !(*a == *b))
      return name + " " + Shown(a) + " -> " + Shown(b);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> DefinitionChange(std::string_view recorded, std::string_view current) {
  if (recorded == current) return std::nullopt;
  auto old_steps = Value::Parse(recorded);
  auto new_steps = Value::Parse(current);
  if (!old_steps.ok() || !old_steps->is_array() || !new_steps.ok() || !new_steps->is_array()) {
    return "its checkpoint records the definition in a form this version of Weir does not read";
  }
  const Value::Array& was = old_steps->as_array();
  const Value::Array& now = new_steps->as_array();
  for (size_t i = 0; i < std::min(was.size(), now.size()); ++i) {
    for (const char* field : {"name", "kind", "parents"}) {
      const Value* a = was[i].Find(field);
      const Value* b = now[i].Find(field);
      if (a == nullptr || b == nullptr || !(*a == *b)) {
        return "step " + std::to_string(i) + " was " + StepTitle(was[i]) + " after " +
               Shown(was[i].Find("parents")) + ", now " + StepTitle(now[i]) + " after " +
               Shown(now[i].Find("parents"));
      }
    }
    const Value* a = was[i].Find("fixed");
    const Value* b = now[i].Find("fixed");
    if (a == nullptr || b == nullptr) {
      return "step " + StepTitle(now[i]) + ": its options are unreadable";
    }
    if (auto change = FixedOptionChange(*a, *b))
      return "step " + StepTitle(now[i]) + ": " + *change;
  }
  if (now.size() > was.size()) return "step " + StepTitle(now[was.size()]) + " was added";
  if (was.size() > now.size()) return "step " + StepTitle(was[now.size()]) + " was removed";
  return std::nullopt;
}

Graph& GraphAccess::Of(Application& app) { return *app.graph_; }

Stream GraphAccess::AddSource(Application& app,
                              std::shared_ptr<const SourceDefinition> definition) {
  Graph& graph = Of(app);
  return Stream(&graph, graph.Add(std::move(definition), "", {}));
}

Stream GraphAccess::AddStep(const Stream& parent, std::shared_ptr<const StepDefinition> definition,
                            std::string name) {
  return AddStep(*parent.graph_, parent.node_, std::move(definition), std::move(name));
}

Stream GraphAccess::AddStep(Graph& graph, int parent,
                            std::shared_ptr<const StepDefinition> definition, std::string name) {
  return Stream(&graph, graph.Add(std::move(definition), std::move(name), {parent}));
}

Stream GraphAccess::AddMultiInput(Graph& graph, const std::vector<Stream>& parents,
                                  std::shared_ptr<const StepDefinition> definition,
                                  std::string name) {
  std::vector<int> nodes;
  for (const Stream& parent : parents) {
    if (parent.graph_ != &graph) {
      graph.Fail(std::string(definition->kind()) + ": a parent belongs to another application");
      continue;
    }
    nodes.push_back(parent.node_);
  }
  return Stream(&graph, graph.Add(std::move(definition), std::move(name), std::move(nodes)));
}

Graph& GraphAccess::GraphOf(const Stream& stream) { return *stream.graph_; }
int GraphAccess::NodeOf(const Stream& stream) { return stream.node_; }

Result<std::unique_ptr<Operator>> SourceDefinition::MakeOperator(const StepContext&) const {
  return Status::Internal("source kind " + std::string(kind()) + " has no operator");
}

std::string RepartitionTopicName(std::string_view application, std::string_view step_name) {
  return std::string(application) + ".repartition." + std::string(step_name);
}

}  // namespace weir::dataflow
