#include "dataflow/kind_registry.h"

#include <algorithm>
#include <filesystem>

namespace weir::dataflow {
namespace {

// The keys CommonSourceOptions reads, in the order they are checked.
const std::vector<std::string> kCommonSourceOptions = {
    "key", "timestamp", "dead_letter", "rate", "bounded", "idle_timeout_ms", "start"};

bool Contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <typename Kind>
const Kind* Find(const std::vector<Kind>& kinds, std::string_view name) {
  for (const Kind& kind : kinds) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

template <typename Kind>
std::vector<std::string> NamesOf(const std::vector<Kind>& kinds) {
  std::vector<std::string> names;
  for (const Kind& kind : kinds) names.push_back(kind.name);
  return names;
}

// Refuses `option` of a `family` map whose kind `kind` does not take it, naming the kinds that
// do (or, when most do, the one that does not).
template <typename Kind>
Status RefuseOption(const ConfigNode& node, std::string_view option, std::string_view kind,
                    const std::vector<Kind>& kinds, std::string_view family) {
  std::vector<std::string> takers;
  for (const Kind& k : kinds) {
    if (Contains(k.takes, option)) takers.push_back(k.name);
  }
  const std::string quoted = "'" + std::string(option) + "'";
  if (takers.size() * 2 <= kinds.size()) {
    return node.Error(quoted + " applies to " + JoinNames(takers, " and ") + " " +
                      std::string(family) + " only");
  }
  return node.Error(quoted + " does not apply to " + std::string(kind) + " " + std::string(family));
}

// The one key of `node` that names a kind of `kinds`, or an error listing them.
template <typename Kind>
Result<const Kind*> OneKind(const ConfigNode& node, const std::vector<Kind>& kinds) {
  const Kind* found = nullptr;
  int count = 0;
  for (const Kind& kind : kinds) {
    if (node.Get(kind.name)) {
      found = &kind;
      ++count;
    }
  }
  if (count != 1) return node.Error("expected exactly one of " + JoinNames(NamesOf(kinds), ", "));
  return found;
}

// `what` made at `node`: its own validation, reported there.
template <typename Definition>
Result<std::shared_ptr<const Definition>> Validated(
    const ConfigNode& node, Result<std::shared_ptr<const Definition>> made) {
  if (!made.ok()) return made;
  if (Status valid = (*made)->Validate(); !valid.ok()) return node.Error(valid.message());
  return made;
}

}  // namespace

std::string YamlContext::ResolvePath(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

std::string JoinNames(const std::vector<std::string>& names, std::string_view last_separator) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? std::string(last_separator) : ", ";
    out += names[i];
  }
  return out;
}

Result<KeySpec> ParseKeySpec(const ConfigNode& node) {
  KeySpec spec;
  if (node.IsScalar()) {
    WEIR_ASSIGN_OR_RETURN(spec.field, node.String());
    return spec;
  }
  if (!node.IsMap()) return node.Expected("a field name or {field, type}");
  WEIR_ASSIGN_OR_RETURN(ConfigNode field, node.Require("field", "the key's value field"));
  WEIR_ASSIGN_OR_RETURN(spec.field, field.String());
  if (auto type = node.Get("type")) {
    WEIR_ASSIGN_OR_RETURN(std::string name, type->String());
    auto serde = ParseKeySerde(name);
    if (!serde.ok()) return type->Error(serde.status().message());
    spec.type = *serde;
  }
  return spec;
}

Result<CommonSourceOptions> SourceYaml::Common() const {
  const SourceKind* kind = Find(kinds_.sources_, kind_);
  for (const std::string& option : kCommonSourceOptions) {
    std::optional<ConfigNode> node = source_.Get(option);
    if (node && !Contains(kind->takes, option)) {
      return RefuseOption(*node, option, kind_, kinds_.sources_, "sources");
    }
  }
  CommonSourceOptions common;
  if (auto k = source_.Get("key")) {
    if (k->IsMap()) WEIR_RETURN_IF_ERROR(k->OnlyKeys({"field", "type"}));
    WEIR_ASSIGN_OR_RETURN(common.key, ParseKeySpec(*k));
  }
  if (auto t = source_.Get("timestamp")) {
    WEIR_ASSIGN_OR_RETURN(common.timestamp_field, t->String());
  }
  if (auto d = source_.Get("dead_letter")) {
    WEIR_ASSIGN_OR_RETURN(common.dead_letter_topic, d->String());
  }
  if (auto r = source_.Get("rate")) {
    WEIR_ASSIGN_OR_RETURN(common.rate, r->Number(0));
  }
  if (auto b = source_.Get("bounded")) {
    WEIR_ASSIGN_OR_RETURN(common.bounded, b->Bool());
  }
  if (auto idle = source_.Get("idle_timeout_ms")) {
    WEIR_ASSIGN_OR_RETURN(common.idle_timeout, idle->Millis());
  }
  if (auto start = source_.Get("start")) {
    Result<std::string> word = start->String();
    if (word.ok() && *word == "earliest") {
      common.start = TopicStart::kEarliest;
    } else if (word.ok() && *word == "latest") {
      common.start = TopicStart::kLatest;
    } else {
      Result<int64_t> offset = start->Int(0, INT64_MAX);
      if (!offset.ok()) return start->Expected("earliest, latest or an offset (an integer >= 0)");
      common.start = TopicStart::kOffset;
      common.start_offset = *offset;
    }
  }
  return common;
}

Result<Stream> NamedStreams::Use(const ConfigNode& node) {
  WEIR_ASSIGN_OR_RETURN(std::string name, node.String());
  auto it = streams_.find(name);
  if (it == streams_.end()) {
    std::vector<std::string> known;
    for (const auto& [n, s] : streams_) known.push_back(n);
    return node.Error("unknown stream '" + name + "' (streams: " + JoinNames(known, ", ") + ")");
  }
  if (Contains(used_, name)) return node.Error("stream '" + name + "' is used twice");
  used_.push_back(name);
  return it->second;
}

std::string NamedStreams::Unused() const {
  for (const auto& [name, stream] : streams_) {
    if (!Contains(used_, name)) return name;
  }
  return "";
}

namespace {
template <typename Kind>
void AddOnce(std::vector<Kind>& kinds, Kind kind) {
  WEIR_CHECK(Find(kinds, kind.name) == nullptr, "kind '" + kind.name + "' registered twice");
  kinds.push_back(std::move(kind));
}
}  // namespace

void KindRegistry::Add(SourceKind kind) { AddOnce(sources_, std::move(kind)); }
void KindRegistry::Add(StepKind kind) { AddOnce(steps_, std::move(kind)); }
void KindRegistry::Add(SinkKind kind) { AddOnce(sinks_, std::move(kind)); }
void KindRegistry::Add(JoinKind kind) { AddOnce(joins_, std::move(kind)); }

const JoinKind* KindRegistry::FindJoin(std::string_view name) const { return Find(joins_, name); }

Result<std::shared_ptr<const SourceDefinition>> KindRegistry::ParseSource(
    const ConfigNode& source, const YamlContext& context) const {
  std::vector<std::string_view> allowed(kCommonSourceOptions.begin(), kCommonSourceOptions.end());
  for (const SourceKind& kind : sources_) allowed.push_back(kind.name);
  WEIR_RETURN_IF_ERROR(source.OnlyKeys(allowed));
  WEIR_ASSIGN_OR_RETURN(const SourceKind* kind, OneKind(source, sources_));
  const ConfigNode body = *source.Get(kind->name);
  return Validated(source, kind->parse(SourceYaml(source, body, kind->name, *this, context)));
}

Result<std::shared_ptr<const StepDefinition>> KindRegistry::ParseStep(
    const ConfigNode& step, const YamlContext& context) const {
  const std::string one_step = "a map with one step (" + JoinNames(NamesOf(steps_), ", ") + ")";
  if (!step.IsMap()) return step.Expected(one_step);
  WEIR_ASSIGN_OR_RETURN(auto members, step.Members());
  const StepKind* kind = nullptr;
  for (const auto& [key, value] : members) {
    const StepKind* named = Find(steps_, key);
    if (named == nullptr) continue;
    if (kind != nullptr) return step.Expected(one_step);
    kind = named;
  }
  if (kind == nullptr) {
    if (members.size() != 1) return step.Expected(one_step);
    return step.Error("unknown step '" + members.front().first + "' (expected " +
                      JoinNames(NamesOf(steps_), ", ") + ")");
  }
  if (kind->siblings.empty() && members.size() != 1) return step.Expected(one_step);
  std::vector<std::string_view> allowed(kind->siblings.begin(), kind->siblings.end());
  allowed.push_back(kind->name);
  WEIR_RETURN_IF_ERROR(step.OnlyKeys(allowed));
  const ConfigNode body = *step.Get(kind->name);
  return Validated(step, kind->parse(StepYaml{step, body, context}));
}

Result<std::shared_ptr<const SinkDefinition>> KindRegistry::ParseSink(
    const ConfigNode& sink, const YamlContext& context) const {
  std::vector<std::string_view> allowed;
  for (const SinkKind& kind : sinks_) {
    allowed.push_back(kind.name);
    allowed.insert(allowed.end(), kind.takes.begin(), kind.takes.end());
  }
  WEIR_RETURN_IF_ERROR(sink.OnlyKeys(allowed));
  WEIR_ASSIGN_OR_RETURN(const SinkKind* kind, OneKind(sink, sinks_));
  WEIR_ASSIGN_OR_RETURN(auto members, sink.Members());
  for (const auto& [key, value] : members) {
    if (key != kind->name && !Contains(kind->takes, key)) {
      return RefuseOption(value, key, kind->name, sinks_, "sinks");
    }
  }
  const ConfigNode body = *sink.Get(kind->name);
  return Validated(sink, kind->parse(SinkYaml{sink, body, context}));
}

}  // namespace weir::dataflow
