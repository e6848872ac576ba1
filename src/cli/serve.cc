// `weir serve`, and the --listen flag it shares with `weir run`.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/commands.h"
#include "cli/lake_cli.h"
#include "cli/local_log.h"
#include "serve/server.h"

namespace weir::cli {

Result<std::optional<ServerOptions>> ServeFlags::Resolve() const {
  std::string address = listen;
  if (address.empty()) {
    const char* env = std::getenv("WEIR_LISTEN");
    address = env && *env ? env : "127.0.0.1:8080";
  }
  if (address == "off") return std::optional<ServerOptions>();
  ServerOptions resolved = options;
  resolved.listen = address;
  if (resolved.max_backlog <= 0 || resolved.max_replay < 0 || resolved.max_connections <= 0 ||
      resolved.max_subscribers <= 0 || resolved.max_frame_bytes == 0) {
    return Status::InvalidArgument(
        "--max-backlog, --max-connections, --max-subscribers and --max-frame-bytes must be "
        "positive, --max-replay not negative");
  }
  return std::optional<ServerOptions>(resolved);
}

namespace {

// Serves the data directory's topics while a pipeline runs on it (or while `weir serve` does),
// and with a lake, its views: the lake starts before the server and stops after it, so that no
// query outlives it.
class ServeWhileRunning : public RunService {
 public:
  ServeWhileRunning(ServerOptions options, std::function<void(int port)> on_listening,
                    std::shared_ptr<LakeService> lake)
      : options_(std::move(options)),
        on_listening_(std::move(on_listening)),
        lake_(std::move(lake)) {}

  Status Start(log::LogStore& log,
               const std::function<void(const std::string&)>& progress) override {
    if (lake_) {
      WEIR_RETURN_IF_ERROR(lake_->Start(log, progress));
      LakeService::Serve(lake_, options_);
      LakeService::ServeArchives(lake_, options_);
    }
    auto server = serve::Server::Start(log, options_);
    if (!server.ok()) {
      if (lake_) lake_->Stop();
      return server.status();
    }
    server_ = std::move(server).value();
    const std::string& listen = options_.listen;
    const std::string host = listen.substr(0, listen.rfind(':'));
    progress("serving the topics" + (lake_ ? " of " + lake_->data_dir() : std::string()) +
             " on http://" + host + ":" + std::to_string(server_->port()) +
             " (ws://.../streams/TOPIC, /publish/TOPIC" + (lake_ ? ", POST /query)" : ")"));
    if (lake_) {
      if (Status written = WriteServerFile(lake_->data_dir(), host, server_->port());
          !written.ok()) {
        progress("`weir query` will not find this server: " + written.message());
      }
    }
    if (on_listening_) on_listening_(server_->port());
    return Status::OK();
  }

  void Stop() override {
    if (lake_) RemoveServerFile(lake_->data_dir());
    server_.reset();  // closes every connection; running queries end
    if (lake_) lake_->Stop();
  }

 private:
  ServerOptions options_;
  std::function<void(int port)> on_listening_;
  std::shared_ptr<LakeService> lake_;
  std::unique_ptr<serve::Server> server_;
};

}  // namespace

std::shared_ptr<RunService> ServeTopicsWhileRunning(ServerOptions options,
                                                    std::function<void(int port)> on_listening,
                                                    std::shared_ptr<LakeService> lake) {
  return std::make_shared<ServeWhileRunning>(std::move(options), std::move(on_listening),
                                             std::move(lake));
}

int Serve(const ServeArgs& args) {
  // Before any thread starts: the threads inherit the blocked signals, so that SIGINT and SIGTERM
  // reach the handler's thread rather than ending the process in the log's or the server's.
  static std::atomic<bool> stop{false};
  InstallStopHandler([] { stop = true; });
  auto options = args.serve.Resolve();
  if (!options.ok()) return Fail(options.status());
  if (!*options)
    return Fail(Status::InvalidArgument("weir serve needs an address, not --listen off"));
  auto local = LocalLog::Open(args.data_dir, args.fsync);
  if (!local.ok()) return Fail(local.status());
  // The views registered in the data directory are kept up to date and answer queries.
  auto service = ServeTopicsWhileRunning(
      **options, {}, std::make_shared<LakeService>(args.data_dir, std::vector<lake::ViewSpec>{}));
  Status started = service->Start(*local->log, [](const std::string& line) {
    std::fprintf(stderr, "weir: %s\n", line.c_str());
  });
  if (!started.ok()) return Fail(started);
  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  service->Stop();  // closes every connection before the log closes
  std::fprintf(stderr, "weir: stopped serving\n");
  return 0;
}

}  // namespace weir::cli
