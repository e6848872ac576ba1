// The checkpoint manifest of an application: the commit point of a checkpoint.
//
// A checkpoint K is committed when manifest.json says K. It records what every output looked
// like at K (the end offset of each partition of each topic the application writes, the
// length of each file it writes) and the definition of the pipeline that wrote it. Task stores
// hold their state prepared under the name "ckpt-K" until the manifest is written; recovery
// commits the prepared transactions of the manifest's checkpoint, rolls back any later one, and
// cuts every output back to the manifest's ends.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "weir/status.h"
#include "weir/types.h"

namespace weir::app {

struct CheckpointManifest {
  int64_t checkpoint = 0;
  std::string definition;
  std::map<std::string, std::vector<Offset>> topic_ends;  // topic -> end offset per partition
  std::map<std::string, int64_t> file_lengths;            // path -> bytes

  static std::string TransactionName(int64_t checkpoint) {
    return "ckpt-" + std::to_string(checkpoint);
  }
  std::string ToJson() const;
  // kCorruption naming the file if it is not a manifest.
  static Result<CheckpointManifest> FromJson(std::string_view json, const std::string& path);
};

// nullopt if the application has no manifest yet.
Result<std::optional<CheckpointManifest>> LoadManifest(const std::filesystem::path& app_dir);
Status SaveManifest(const std::filesystem::path& app_dir, const CheckpointManifest& manifest);

}  // namespace weir::app
