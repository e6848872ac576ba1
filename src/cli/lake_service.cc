// The lake of `weir run` and `weir serve`, and where their server answers (lake_cli.h).
#include <unistd.h>

#include "cli/lake_cli.h"
#include "core/config_node.h"
#include "core/files.h"

namespace weir::cli {

Status LakeService::Start(log::LogStore& log,
                          const std::function<void(const std::string&)>& progress) {
  progress_ = progress;  // `progress` lives only as long as this call
  // A data directory that never had a view gets no lake.
  std::error_code ec;
  if (views_.empty() && !std::filesystem::exists(LakeDir(data_dir_) / "catalog.duckdb", ec)) {
    return Status::OK();
  }
  lake::LakeOptions options;
  options.dir = LakeDir(data_dir_);
  options.on_progress = progress_;
  WEIR_ASSIGN_OR_RETURN(lake_, lake::Lake::Open(log, std::move(options)));
  for (const lake::ViewSpec& view : views_) {
    if (Status registered = lake_->Register(view); !registered.ok()) {
      lake_.reset();  // Stop is not called after a failed Start
      return registered;
    }
  }
  const size_t registered = lake_->Views().size();
  if (registered > 0) {
    progress_("lake: keeping " + std::to_string(registered) + " view" +
              (registered == 1 ? "" : "s") + " up to date in " + LakeDir(data_dir_).string());
  }
  lake_->StartBackground();
  return Status::OK();
}

void LakeService::Stop() {
  if (!lake_) return;
  // What the run appended last is in the views before it ends.
  for (const lake::CatalogView& view : lake_->Views()) {
    Status updated = lake_->Update(view.spec.name, /*open_too=*/true);
    if (!updated.ok() && progress_) {
      progress_("lake: updating view " + view.spec.name + ": " + updated.message());
    }
  }
  lake_->StopBackground();
  lake_.reset();
}

Result<lake::Lake*> LakeService::lake() const {
  if (!lake_) {
    return Status::FailedPrecondition(
        "data directory " + data_dir_ +
        " has no views: declare them in a views: key of the "
        "pipeline file, or stop this process and register them with `weir views create FILE`");
  }
  return lake_.get();
}

void LakeService::Serve(const std::shared_ptr<LakeService>& service, ServerOptions& options) {
  options.query_handler = [service](const QueryRequest& request, const BodyWriter& write) {
    WEIR_ASSIGN_OR_RETURN(QueryFormat format, ParseQueryFormat(request.format));
    WEIR_ASSIGN_OR_RETURN(lake::Lake * lake, service->lake());
    return WriteQueryResult(*lake, request.sql, format, request.timeout, write,
                            request.client_gone);
  };
  options.views_handler = [service](std::string_view view, const BodyWriter& write) {
    // No lake: no view (and describing one says so, as it would with a lake).
    if (!service->lake_ && view.empty()) {
      write("[]");
      return Status::OK();
    }
    if (!service->lake_) return Status::NotFound("no lake view named '" + std::string(view) + "'");
    WEIR_ASSIGN_OR_RETURN(Value json, ViewsJson(*service->lake_, view));
    write(json.ToJson());
    return Status::OK();
  };
}

void LakeService::ServeArchives(const std::shared_ptr<LakeService>& service,
                                ServerOptions& options) {
  // The lake starts before the server and stops after it: lake_ is set while the server runs.
  options.archive.extent = [service](std::string_view topic,
                                     int32_t partition) -> std::optional<ArchiveExtent> {
    if (!service->lake_) return std::nullopt;
    return service->lake_->ArchiveExtentOf(topic, partition);
  };
  options.archive.read =
      [service](std::string_view topic, int32_t partition, int64_t from, size_t chunk,
                const std::function<bool(std::span<const ArchivedMessage>)>& on_chunk) {
        if (!service->lake_) return Status::NotFound("no lake");
        return service->lake_->ReadArchive(topic, partition, from, chunk, on_chunk);
      };
}

Result<std::vector<lake::ViewSpec>> ViewsBesideThePipeline(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return std::vector<lake::ViewSpec>{};  // the pipeline loader says why
  WEIR_ASSIGN_OR_RETURN(std::vector<lake::ViewSpec> views, lake::ParseViewsFile(*text, path));
  WEIR_ASSIGN_OR_RETURN(ConfigNode top, ConfigNode::Parse(*text, path));
  if (!views.empty() && !top.Get("source") && !top.Get("streams")) {
    return Status::InvalidArgument(path +
                                   " declares views but no pipeline (no source: or "
                                   "streams:): register its views with `weir views create " +
                                   path + "`");
  }
  return views;
}

Status WriteServerFile(const std::string& data_dir, const std::string& host, int port) {
  const Value file = Value::MakeObject(
      {{"listen", host + ":" + std::to_string(port)}, {"pid", static_cast<int64_t>(::getpid())}});
  return ReplaceFileAtomically(std::filesystem::path(data_dir) / "server.json",
                               file.ToJson() + "\n", {.sync = false});
}

void RemoveServerFile(const std::string& data_dir) {
  std::error_code ignored;
  std::filesystem::remove(std::filesystem::path(data_dir) / "server.json", ignored);
}

}  // namespace weir::cli
