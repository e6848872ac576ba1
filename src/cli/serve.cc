// `weir serve`, and the --listen flag it shares with `weir run`.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/commands.h"
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

// Serves the data directory's topics while a pipeline runs on it.
class ServeWhileRunning : public RunService {
 public:
  ServeWhileRunning(ServerOptions options, std::function<void(int port)> on_listening)
      : options_(std::move(options)), on_listening_(std::move(on_listening)) {}

  Status Start(log::LogStore& log,
               const std::function<void(const std::string&)>& progress) override {
    WEIR_ASSIGN_OR_RETURN(server_, serve::Server::Start(log, options_));
    const std::string& listen = options_.listen;
    progress("serving the topics on http://" + listen.substr(0, listen.rfind(':')) + ":" +
             std::to_string(server_->port()) + " (ws://.../streams/TOPIC)");
    if (on_listening_) on_listening_(server_->port());
    return Status::OK();
  }
  void Stop() override { server_.reset(); }  // closes every connection

 private:
  ServerOptions options_;
  std::function<void(int port)> on_listening_;
  std::unique_ptr<serve::Server> server_;
};

}  // namespace

std::shared_ptr<RunService> ServeTopicsWhileRunning(ServerOptions options,
                                                    std::function<void(int port)> on_listening) {
  return std::make_shared<ServeWhileRunning>(std::move(options), std::move(on_listening));
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
  auto server = serve::Server::Start(*local->log, **options);
  if (!server.ok()) return Fail(server.status());
  const std::string& listen = (*options)->listen;
  std::fprintf(stderr,
               "weir: serving %s on http://%s:%u (ws://.../streams/TOPIC, /publish/TOPIC)\n",
               args.data_dir.c_str(), listen.substr(0, listen.rfind(':')).c_str(),
               static_cast<unsigned>((*server)->port()));
  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  server->reset();  // closes every connection before the log closes
  std::fprintf(stderr, "weir: stopped serving\n");
  return 0;
}

}  // namespace weir::cli
