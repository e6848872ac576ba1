#include "app/manifest.h"

#include "core/files.h"
#include "weir/value.h"

namespace weir::app {
namespace {
constexpr const char* kManifestFile = "manifest.json";
}

std::string CheckpointManifest::ToJson() const {
  Value topics = Value(Value::Object());
  for (const auto& [name, ends] : topic_ends) {
    Value::Array a;
    for (Offset e : ends) a.push_back(Value(e.value()));
    topics.Set(name, Value(std::move(a)));
  }
  Value files = Value(Value::Object());
  for (const auto& [path, length] : file_lengths) files.Set(path, Value(length));
  Value v = Value::MakeObject({{"checkpoint", Value(checkpoint)},
                               {"definition", Value(definition)},
                               {"topic_ends", std::move(topics)},
                               {"file_lengths", std::move(files)}});
  return v.ToJson() + "\n";
}

Result<CheckpointManifest> CheckpointManifest::FromJson(std::string_view json,
                                                        const std::string& path) {
  auto corrupt = [&](const std::string& what) {
    return Status::Corruption("checkpoint manifest " + path + " is damaged: " + what);
  };
  auto parsed = Value::Parse(json);
  if (!parsed.ok()) return corrupt(parsed.status().message());
  const Value& v = *parsed;
  const Value* checkpoint = v.Find("checkpoint");
  const Value* definition = v.Find("definition");
  const Value* topics = v.Find("topic_ends");
  const Value* files = v.Find("file_lengths");
  if (!checkpoint || !checkpoint->is_int() || !definition || !definition->is_string() || !topics ||
      !topics->is_object() || !files || !files->is_object()) {
    return corrupt("missing or mistyped fields");
  }
  CheckpointManifest m;
  m.checkpoint = checkpoint->as_int();
  m.definition = definition->as_string();
  for (const auto& [name, ends] : topics->as_object()) {
    if (!ends.is_array()) return corrupt("topic_ends." + name);
    for (const Value& e : ends.as_array()) {
      if (!e.is_int()) return corrupt("topic_ends." + name);
      m.topic_ends[name].emplace_back(e.as_int());
    }
  }
  for (const auto& [file, length] : files->as_object()) {
    if (!length.is_int()) return corrupt("file_lengths." + file);
    m.file_lengths[file] = length.as_int();
  }
  return m;
}

Result<std::optional<CheckpointManifest>> LoadManifest(const std::filesystem::path& app_dir) {
  std::filesystem::path path = app_dir / kManifestFile;
  auto text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<CheckpointManifest>();
    return text.status();
  }
  WEIR_ASSIGN_OR_RETURN(CheckpointManifest m, CheckpointManifest::FromJson(*text, path.string()));
  return std::optional<CheckpointManifest>(std::move(m));
}

Status SaveManifest(const std::filesystem::path& app_dir, const CheckpointManifest& manifest) {
  return ReplaceFileAtomically(app_dir / kManifestFile, manifest.ToJson());
}

}  // namespace weir::app
