// The graph's definition fingerprint: what a restart must match, built from each kind's own
// declaration of its options (fixed or changeable).
#include "dataflow/graph.h"

#include <gtest/gtest.h>

#include "dataflow/builtin_kinds.h"

namespace weir::dataflow {
namespace {

const KindRegistry& Kinds() {
  static const KindRegistry kinds = BuiltinKinds();
  return kinds;
}

ConfigNode Yaml(std::string_view text) {
  auto node = ConfigNode::Parse(text, "p.yaml");
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return *node;
}

// A generator, the given steps (YAML list items) one after the other, and stdout.
std::string DefinitionOf(const std::vector<std::string>& steps, std::string generator = "{}") {
  Graph graph;
  auto source = Kinds().ParseSource(Yaml("{generator: " + generator + "}"), {});
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  int node = graph.Add(*source, "", {});
  for (const std::string& step : steps) {
    auto parsed = Kinds().ParseStep(Yaml(step), {});
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    node = graph.Add(*parsed, "", {node});
  }
  auto sink = Kinds().ParseSink(Yaml("{stdout: true}"), {});
  graph.Add(*sink, "", {node});
  EXPECT_TRUE(graph.Validate().ok()) << graph.Validate().ToString();
  return graph.Describe();
}

const std::string kTumbling =
    "{window: {tumbling: {size_ms: 10000, grace_ms: 0}}, agg: {n: count}}";

TEST(Definition, AFixedOptionThatChangedIsNamedWithBothValues) {
  auto change =
      DefinitionChange(DefinitionOf({kTumbling}),
                       DefinitionOf({"{window: {tumbling: {size_ms: 5000}}, agg: {n: count}}"}));
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(*change, "step 'window-1' (window): size 10000 -> 5000");
}

TEST(Definition, OptionsThatMayChangeDoNotRefuseARestart) {
  const std::string grace =
      "{window: {tumbling: {size_ms: 10000, grace_ms: 3000}}, agg: {n: count}}";
  EXPECT_EQ(DefinitionChange(DefinitionOf({kTumbling}), DefinitionOf({grace})), std::nullopt);
  // The generator's count and pacing too, but not its seed.
  EXPECT_EQ(DefinitionChange(DefinitionOf({}, "{events: 10}"), DefinitionOf({}, "{events: 99}")),
            std::nullopt);
  EXPECT_EQ(*DefinitionChange(DefinitionOf({}, "{seed: 1}"), DefinitionOf({}, "{seed: 2}")),
            "step 'generator-0' (generator): seed 1 -> 2");
}

TEST(Definition, AStepAddedOrRemovedIsNamed) {
  const std::string filter = "{filter: {field: action, eq: buy}}";
  EXPECT_EQ(*DefinitionChange(DefinitionOf({filter}), DefinitionOf({filter, kTumbling})),
            "step 2 was 'to-stdout-2' (to-stdout) after [1], now 'window-2' (window) after [1]");
  EXPECT_EQ(*DefinitionChange(DefinitionOf({}), DefinitionOf({filter})),
            "step 1 was 'to-stdout-1' (to-stdout) after [0], now 'filter-1' (filter) after [0]");
}

TEST(Definition, AYamlFilterDescribesItsCondition) {
  auto change = DefinitionChange(DefinitionOf({"{filter: {field: action, eq: buy}}"}),
                                 DefinitionOf({"{filter: {field: action, eq: sell}}"}));
  ASSERT_TRUE(change.has_value());
  EXPECT_NE(change->find("condition"), std::string::npos) << *change;
}

TEST(Definition, ADefinitionFromAnEarlierFormatIsRefusedSayingSo) {
  auto change = DefinitionChange("{\"source\":{\"file\":\"in.jsonl\"}}", DefinitionOf({}));
  ASSERT_TRUE(change.has_value());
  EXPECT_NE(change->find("does not read"), std::string::npos) << *change;
}

TEST(Definition, TheSameDefinitionResumes) {
  EXPECT_EQ(DefinitionChange(DefinitionOf({kTumbling}), DefinitionOf({kTumbling})), std::nullopt);
}

}  // namespace
}  // namespace weir::dataflow
