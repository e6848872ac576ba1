// Test support for a kind's YAML form: what a registry says of a pipeline file's `source:`,
// parsed the way the loader parses it (dataflow/kind_registry.h), with no application around it.
#pragma once

#include <string>
#include <string_view>

#include "core/config_node.h"
#include "dataflow/kind_registry.h"

namespace weir::testing {

// The error `kinds` reports for the `source:` of `yaml` (a file named p.yaml), or "" if it parses.
inline std::string SourceYamlError(const dataflow::KindRegistry& kinds, std::string_view yaml) {
  auto top = ConfigNode::Parse(yaml, "p.yaml");
  if (!top.ok()) return std::string(top.status().message());
  std::optional<ConfigNode> source = top->Get("source");
  if (!source) return "no source";
  auto parsed = kinds.ParseSource(*source, dataflow::YamlContext{});
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

}  // namespace weir::testing
