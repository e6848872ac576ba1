#include "app/pipeline_yaml.h"

#include <filesystem>
#include <map>

#include "core/config_node.h"
#include "core/files.h"
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"

namespace weir::app {
namespace {

using dataflow::GraphAccess;
using dataflow::KindRegistry;
using dataflow::YamlContext;

// A source's stream and the steps listed after it (`steps:` of the file or of a named stream).
Result<Stream> AddSteps(Stream stream, const std::optional<ConfigNode>& steps,
                        const KindRegistry& kinds, const YamlContext& context) {
  if (!steps) return stream;
  if (!steps->IsSequence()) return steps->Expected("a list of steps");
  for (const ConfigNode& step : steps->Items()) {
    WEIR_ASSIGN_OR_RETURN(auto definition, kinds.ParseStep(step, context));
    stream = GraphAccess::AddStep(stream, std::move(definition));
  }
  return stream;
}

Result<Stream> AddSource(Application& app, const ConfigNode& source, const KindRegistry& kinds,
                         const YamlContext& context) {
  WEIR_ASSIGN_OR_RETURN(auto definition, kinds.ParseSource(source, context));
  return GraphAccess::AddSource(app, std::move(definition));
}

// Named streams (`streams: {name: {source, steps}}`), for the inputs of a join.
Result<std::map<std::string, Stream>> AddNamedStreams(Application& app, const ConfigNode& node,
                                                      const KindRegistry& kinds,
                                                      const YamlContext& context) {
  if (!node.IsMap() || node.size() == 0) {
    return node.Expected("a map of named streams, each {source, steps}");
  }
  std::map<std::string, Stream> streams;
  WEIR_ASSIGN_OR_RETURN(auto members, node.Members());
  for (const auto& [name, body] : members) {
    WEIR_RETURN_IF_ERROR(body.OnlyKeys({"source", "steps"}));
    WEIR_ASSIGN_OR_RETURN(ConfigNode source, body.Require("source", "where its records come from"));
    WEIR_ASSIGN_OR_RETURN(Stream stream, AddSource(app, source, kinds, context));
    WEIR_ASSIGN_OR_RETURN(stream, AddSteps(stream, body.Get("steps"), kinds, context));
    streams.emplace(name, stream);
  }
  return streams;
}

// A join kind's node over the file's named streams, every one of which it must use.
Result<Stream> AddJoin(Application& app, const ConfigNode& top, const dataflow::JoinKind& kind,
                       const KindRegistry& kinds, const YamlContext& context) {
  std::optional<ConfigNode> streams_node = top.Get("streams");
  if (!streams_node) return top.Error("missing 'streams' (the named inputs of the join)");
  WEIR_ASSIGN_OR_RETURN(auto named, AddNamedStreams(app, *streams_node, kinds, context));
  dataflow::NamedStreams streams(std::move(named));
  const ConfigNode node = *top.Get(kind.name);
  WEIR_ASSIGN_OR_RETURN(dataflow::JoinYaml join, kind.parse(node, streams));
  if (Status valid = join.definition->Validate(); !valid.ok()) return node.Error(valid.message());
  if (std::string unused = streams.Unused(); !unused.empty()) {
    return streams_node->Get(unused)->Error("stream '" + unused + "' is not used by the join");
  }
  return GraphAccess::AddMultiInput(GraphAccess::Of(app), join.parents, std::move(join.definition),
                                    std::move(join.name));
}

// Where the pipeline's main stream starts: its source, or a join kind over named streams.
Result<Stream> AddStart(Application& app, const ConfigNode& top, const KindRegistry& kinds,
                        const YamlContext& context) {
  std::vector<std::string> starts = {"source"};
  const dataflow::JoinKind* join = nullptr;
  int given = top.Get("source") ? 1 : 0;
  for (const dataflow::JoinKind& kind : kinds.joins()) {
    starts.push_back(kind.name);
    if (top.Get(kind.name)) {
      join = &kind;
      ++given;
    }
  }
  if (given != 1) return top.Error("expected exactly one of " + dataflow::JoinNames(starts, ", "));
  if (join != nullptr) return AddJoin(app, top, *join, kinds, context);
  if (auto streams = top.Get("streams")) {
    return streams->Error("'streams' are the inputs of a join; add one");
  }
  return AddSource(app, *top.Get("source"), kinds, context);
}

Status AddSinks(Stream stream, const ConfigNode& top, const KindRegistry& kinds,
                const YamlContext& context) {
  std::optional<ConfigNode> sink = top.Get("sink");
  std::optional<ConfigNode> sinks = top.Get("sinks");
  if (sink && sinks) return sinks->Error("give either 'sink' or 'sinks', not both");
  if (!sink && !sinks) return top.Error("missing 'sink' (where results go: file, topic or stdout)");
  std::vector<ConfigNode> each;
  if (sink) {
    each.push_back(*sink);
  } else {
    if (!sinks->IsSequence() || sinks->size() == 0) return sinks->Expected("a list of sinks");
    each = sinks->Items();
  }
  for (const ConfigNode& s : each) {
    WEIR_ASSIGN_OR_RETURN(auto definition, kinds.ParseSink(s, context));
    GraphAccess::AddStep(stream, std::move(definition));
  }
  return Status::OK();
}

// The application's own options: name, checkpoints, workers, partitions, fsync.
Result<ApplicationOptions> ParseApplicationOptions(const ConfigNode& top,
                                                   const std::string& file_name,
                                                   const PipelineOverrides& overrides) {
  ApplicationOptions options;
  options.data_dir = overrides.data_dir;
  options.on_progress = overrides.on_progress;
  options.services = overrides.services;
  options.ways_out = overrides.ways_out;
  if (auto name = top.Get("name")) {
    WEIR_ASSIGN_OR_RETURN(options.name, name->String());
  } else {
    options.name = std::filesystem::path(file_name).stem().string();
  }
  if (auto checkpoint = top.Get("checkpoint")) {
    WEIR_RETURN_IF_ERROR(checkpoint->OnlyKeys({"interval_ms", "records"}));
    if (auto i = checkpoint->Get("interval_ms")) {
      WEIR_ASSIGN_OR_RETURN(int64_t ms, i->Int(1, 3'600'000));
      options.checkpoint_interval = std::chrono::milliseconds(ms);
    }
    if (auto r = checkpoint->Get("records")) {
      WEIR_ASSIGN_OR_RETURN(options.checkpoint_records, r->Int(1, INT64_MAX));
    }
  }
  if (auto w = top.Get("workers")) {
    WEIR_ASSIGN_OR_RETURN(int64_t workers, w->Int(1, 1024));
    options.workers = static_cast<int>(workers);
  }
  if (overrides.workers > 0) options.workers = overrides.workers;
  if (auto f = top.Get("fsync")) {
    auto policy = ParseFsyncPolicy(f->Scalar());
    if (!f->IsScalar() || !policy.ok()) return f->Expected(FsyncPolicyChoices());
    options.fsync = *policy;
  }
  if (auto p = top.Get("partitions")) {
    WEIR_ASSIGN_OR_RETURN(int64_t partitions, p->Int(1, kMaxPartitions));
    options.partitions = static_cast<int32_t>(partitions);
  }
  return options;
}

}  // namespace

Result<std::unique_ptr<Application>> LoadPipelineText(const std::string& text,
                                                      const std::string& file_name,
                                                      const std::string& base_dir,
                                                      const PipelineOverrides& overrides) {
  static const KindRegistry kBuiltin = dataflow::BuiltinKinds();
  const KindRegistry& kinds = overrides.kinds != nullptr ? *overrides.kinds : kBuiltin;
  const YamlContext context{base_dir};
  WEIR_ASSIGN_OR_RETURN(ConfigNode top, ConfigNode::Parse(text, file_name));
  // `views:` belongs to the lake (src/lake/view.h): a file may declare its views beside its
  // pipeline, and `weir run` registers them.
  std::vector<std::string_view> keys = {"name",       "source", "streams",    "steps",
                                        "sink",       "sinks",  "checkpoint", "workers",
                                        "partitions", "fsync",  "views"};
  for (const dataflow::JoinKind& kind : kinds.joins()) keys.push_back(kind.name);
  WEIR_RETURN_IF_ERROR(top.OnlyKeys(keys));
  WEIR_ASSIGN_OR_RETURN(ApplicationOptions options,
                        ParseApplicationOptions(top, file_name, overrides));

  auto app = std::make_unique<Application>(std::move(options));
  WEIR_ASSIGN_OR_RETURN(Stream stream, AddStart(*app, top, kinds, context));
  WEIR_ASSIGN_OR_RETURN(stream, AddSteps(stream, top.Get("steps"), kinds, context));
  WEIR_RETURN_IF_ERROR(AddSinks(stream, top, kinds, context));
  return app;
}

Result<std::unique_ptr<Application>> LoadPipelineFile(const std::string& path,
                                                      const PipelineOverrides& overrides) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status().WithContext("cannot read pipeline " + path);
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return LoadPipelineText(*text, path, base_dir, overrides);
}

}  // namespace weir::app
