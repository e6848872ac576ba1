#include "weir/application.h"

#include <mutex>

#include "app/data_dir.h"
#include "app/runtime.h"
#include "core/names.h"
#include "dataflow/graph.h"
#include "dataflow/kind.h"
#include "log/log.h"

namespace weir {
namespace {

std::mutex running_mu;  // orders Stop() against the end of Run()

}  // namespace

Application::Application(ApplicationOptions options)
    : options_(std::move(options)), graph_(std::make_unique<dataflow::Graph>()) {}

Application::~Application() = default;

std::string Application::Definition() const { return graph_->Describe(); }

Result<RunSummary> Application::Run() {
  WEIR_RETURN_IF_ERROR(CheckName(options_.name, "application name"));
  if (options_.checkpoint_interval.count() <= 0 || options_.checkpoint_records <= 0) {
    return Status::InvalidArgument("checkpoint interval and records must be > 0");
  }
  WEIR_RETURN_IF_ERROR(dataflow::CheckPartitions(options_.partitions, 0, "partitions"));
  WEIR_RETURN_IF_ERROR(graph_->Validate());
  app::Runtime runtime(options_, *graph_);
  {
    std::lock_guard lock(running_mu);
    running_ = &runtime;
    if (stop_requested_) runtime.Stop();
  }
  Result<RunSummary> result = runtime.Run();
  std::lock_guard lock(running_mu);
  running_ = nullptr;
  return result;
}

void Application::Stop() {
  std::lock_guard lock(running_mu);
  stop_requested_ = true;
  if (app::Runtime* runtime = running_.load()) runtime->Stop();
}

Status Application::Reset() {
  WEIR_RETURN_IF_ERROR(CheckName(options_.name, "application name"));
  std::filesystem::path data_dir(options_.data_dir);
  WEIR_ASSIGN_OR_RETURN(auto lock, app::DataDirLock::Acquire(data_dir, options_.ways_out.data_dir));
  std::error_code ec;
  std::filesystem::remove_all(data_dir / "apps" / options_.name, ec);
  if (ec) return Status::FromErrno(ec.value(), "removing the state of " + options_.name);
  log::LogOptions log_options;
  log_options.dir = data_dir / "log";
  WEIR_ASSIGN_OR_RETURN(auto log, log::LogStore::Open(log_options));
  const std::string internal_prefix = dataflow::RepartitionTopicName(options_.name, "");
  for (const std::string& topic : log->ListTopics()) {
    if (topic.starts_with(internal_prefix)) WEIR_RETURN_IF_ERROR(log->DeleteTopic(topic));
  }
  return Status::OK();
}

}  // namespace weir
