// ConfigNode: a node of a YAML configuration (a pipeline file) with the path that leads to it,
// so that every error names the file, the path of the offending key, what was expected and what
// was found, and the line: "p.yaml: steps[1].filter.eq: expected a scalar, found a map (line 7,
// column 9)".
//
// Contract: nothing here throws. yaml-cpp reports malformed input with exceptions; every one of
// them (a parse error, a map key that is a list, a conversion that fails) becomes
// kInvalidArgument naming the path. Values are read with a declared type and range; nothing is
// converted silently.
// Threads: a ConfigNode is a value; copies share the parsed document, which is never modified.
// yaml-cpp stays inside config_node.cc, so including this header is cheap.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/status.h"
#include "weir/value.h"

namespace YAML {
class Node;
}

namespace weir {

class ConfigNode {
 public:
  // Parses a whole document. kInvalidArgument "<file>: not valid YAML: <why> (line L, column C)".
  // An empty document is a null node.
  static Result<ConfigNode> Parse(std::string_view text, std::string file_name);

  // "steps[1].filter", "" for the document itself.
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  bool IsMap() const;
  bool IsSequence() const;
  bool IsScalar() const;
  // Null or absent: `key:` with nothing after it, `~`, `null`.
  bool IsNull() const;
  // Entries of a map or a list; 0 for anything else.
  size_t size() const;
  // The scalar's text; empty for anything that is not a scalar.
  std::string Scalar() const;

  // kInvalidArgument: "<file>: <path>: <message> (line L, column C)".
  Status Error(std::string_view message) const;
  // Error("expected <what>, found <what this is>").
  Status Expected(std::string_view what) const;

  // A map's member; nullopt if this is not a map or has no such key.
  std::optional<ConfigNode> Get(std::string_view key) const;
  // A map's member, or Error("missing '<key>' (<what>)").
  Result<ConfigNode> Require(std::string_view key, std::string_view what) const;
  // A list's items, with paths "<path>[i]"; empty for anything else.
  std::vector<ConfigNode> Items() const;
  // A map's members in order. Expected("a map") for anything else; a key that is not a plain
  // scalar (`? [a, b]`) is an error at that key.
  Result<std::vector<std::pair<std::string, ConfigNode>>> Members() const;
  // The only member of a map of one, as {key, value}; Expected(what) otherwise.
  Result<std::pair<std::string, ConfigNode>> OnlyMember(std::string_view what) const;
  // OK if this is a map whose keys are all among `allowed`; else an error at the first other key:
  // "unknown key 'x' (expected one of: a, b)".
  Status OnlyKeys(const std::vector<std::string_view>& allowed) const;

  // A non-empty scalar.
  Result<std::string> String() const;
  // A decimal integer within [min, max].
  Result<int64_t> Int(int64_t min, int64_t max) const;
  // A number >= min.
  Result<double> Number(double min) const;
  // true/yes/on or false/no/off.
  Result<bool> Bool() const;
  // Milliseconds: an integer from 0 to INT64_MAX / 4 (room for sums of durations).
  Result<std::chrono::milliseconds> Millis() const;
  // A duration: an integer of milliseconds as Millis(), or a positive integer with a unit,
  // `ms`, `s`, `m`, `h` or `d` ("250ms", "30s", "1h", "7d").
  Result<std::chrono::milliseconds> Duration() const;
  // A scalar as the JSON value it reads as: quoted scalars are strings; plain ones may be
  // numbers, booleans or null (as YAML's own null: `null`, `~`, nothing).
  Result<Value> Literal() const;

 private:
  ConfigNode(std::shared_ptr<const YAML::Node> node, std::string path,
             std::shared_ptr<const std::string> file)
      : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {}
  ConfigNode Child(const YAML::Node& node, std::string path) const;
  std::string JoinPath(std::string_view key) const;
  // What this node is, for "found ...": "a map", "a list", "'text'", "nothing".
  std::string Describe() const;

  std::shared_ptr<const YAML::Node> node_;
  std::string path_;
  std::shared_ptr<const std::string> file_;
};

}  // namespace weir
