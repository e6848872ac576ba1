#include "weir/application.h"

#include <mutex>

#include "app/data_dir.h"
#include "app/runtime.h"
#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "join/assembler.h"
#include "log/log.h"

namespace weir {
namespace {

std::mutex running_mu;  // orders Stop() against the end of Run()

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 100 || name == "." || name == "..") return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

}  // namespace

Application::Application(ApplicationOptions options)
    : options_(std::move(options)), graph_(std::make_unique<dataflow::Graph>()) {}

Application::~Application() = default;

Stream Application::FromFile(FileSourceOptions options) {
  if (options.path.empty()) graph_->Fail("a file source needs a path");
  if (options.key.field.empty()) {
    graph_->Fail("file source " + options.path + " needs a key field");
  }
  dataflow::Step s;
  s.kind = dataflow::StepKind::kFileSource;
  s.file_source = std::move(options);
  return Stream(graph_.get(), graph_->Add(std::move(s)));
}

Stream Application::FromTopic(TopicSourceOptions options) {
  if (options.topic.empty()) graph_->Fail("a topic source needs a topic name");
  dataflow::Step s;
  s.kind = dataflow::StepKind::kTopicSource;
  s.topic_source = std::move(options);
  return Stream(graph_.get(), graph_->Add(std::move(s)));
}

Stream Application::FromGenerator(GeneratorOptions options) {
  if (options.partitions < 1) graph_->Fail("generator partitions must be >= 1");
  if (options.users < 1 || options.users > INT32_MAX) {
    graph_->Fail("generator users must be from 1 to " + std::to_string(INT32_MAX));
  }
  if (options.events_per_second <= 0) graph_->Fail("generator events_per_second must be > 0");
  if (options.max_out_of_order_ms < 0) graph_->Fail("generator max_out_of_order_ms must be >= 0");
  if (!(options.active_fraction > 0 && options.active_fraction <= 1)) {
    graph_->Fail("generator active_fraction must be in (0, 1]");
  }
  dataflow::Step s;
  s.kind = dataflow::StepKind::kGeneratorSource;
  s.generator = std::move(options);
  return Stream(graph_.get(), graph_->Add(std::move(s)));
}

Stream Application::FromNexmark(NexmarkSourceOptions options) {
  if (options.partitions < 1) graph_->Fail("nexmark partitions must be >= 1");
  if (options.events < -1) graph_->Fail("nexmark events must be >= 0 (or -1: unbounded)");
  Status config = dataflow::NexmarkConfigOf(options).Validate();
  if (!config.ok()) graph_->Fail("nexmark " + config.message());
  dataflow::Step s;
  s.kind = dataflow::StepKind::kNexmarkSource;
  s.nexmark = std::move(options);
  return Stream(graph_.get(), graph_->Add(std::move(s)));
}

Stream Application::FromJetStream(JetStreamSourceOptions options) {
  if (options.stream.empty() || options.durable.empty()) {
    graph_->Fail("a JetStream source needs a stream and a durable consumer name");
  }
  if (options.max_deliver < 1) graph_->Fail("JetStream max_deliver must be >= 1");
  dataflow::Step s;
  s.kind = dataflow::StepKind::kJetStreamSource;
  s.jetstream_source = std::move(options);
  return Stream(graph_.get(), graph_->Add(std::move(s)));
}

Stream Application::Join(std::vector<std::pair<std::string, Stream>> parents, JoinOptions options) {
  dataflow::Step s;
  s.kind = dataflow::StepKind::kJoin;
  s.name = options.name;
  for (const auto& [input, stream] : parents) {
    if (stream.graph_ != graph_.get())
      graph_->Fail("join: a parent belongs to another application");
    s.parents.push_back(stream.node_);
    s.input_names.push_back(input);
  }
  Status valid = join::Validate(options, s.input_names);
  if (!valid.ok()) graph_->Fail(valid.message());
  if (!s.parents.empty()) s.parent = s.parents.front();
  s.join = std::make_shared<const JoinOptions>(std::move(options));
  return Stream(graph_.get(), graph_->Add(std::move(s)));
}

Result<RunSummary> Application::Run() {
  if (!IsValidName(options_.name)) {
    return Status::InvalidArgument("application name '" + options_.name +
                                   "' must be 1-100 characters of [A-Za-z0-9._-]");
  }
  if (options_.checkpoint_interval.count() <= 0 || options_.checkpoint_records <= 0) {
    return Status::InvalidArgument("checkpoint interval and records must be > 0");
  }
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
  if (!IsValidName(options_.name)) {
    return Status::InvalidArgument("application name '" + options_.name + "' is not valid");
  }
  std::filesystem::path data_dir(options_.data_dir);
  WEIR_ASSIGN_OR_RETURN(auto lock, app::DataDirLock::Acquire(data_dir));
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
