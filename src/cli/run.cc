#include <csignal>
#include <cstdio>
#include <thread>

#include "app/pipeline_yaml.h"
#include "cli/commands.h"
#include "cli/lake_cli.h"
#include "connectors/nats/jetstream_kind.h"
#include "dataflow/builtin_kinds.h"
#include "nexmark/source.h"
#include "process/process_step.h"

namespace weir::cli {

const dataflow::KindRegistry& PipelineKinds() {
  static const dataflow::KindRegistry kinds = [] {
    dataflow::KindRegistry all = dataflow::BuiltinKinds();
    nexmark::RegisterNexmarkSource(all);
    nats::RegisterJetStreamSource(all);
    process::RegisterProcessStep(all);
    return all;
  }();
  return kinds;
}

int Fail(const Status& status) {
  std::fprintf(stderr, "weir: %s\n", status.message().c_str());
  return status.IsBadInput() ? 2 : 1;
}

void InstallStopHandler(std::function<void()> on_stop) {
  // A thread waits for the signals, so that stopping runs in normal code, not in a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals, on_stop = std::move(on_stop)] {
    int received;
    sigwait(&signals, &received);
    std::fprintf(stderr, "weir: stopping (press Ctrl-C again to quit at once)\n");
    on_stop();
    sigwait(&signals, &received);
    std::_Exit(130);
  }).detach();
}

int Run(const RunArgs& args) {
  app::PipelineOverrides overrides;
  overrides.data_dir = args.data_dir;
  overrides.workers = args.workers;
  overrides.ways_out = CommandLineWaysOut();
  if (!args.quiet) {
    overrides.on_progress = [](const std::string& line) {
      std::fprintf(stderr, "weir: %s\n", line.c_str());
    };
  }
  overrides.kinds = &PipelineKinds();
  auto serve = args.serve.Resolve();
  if (!serve.ok()) return Fail(serve.status());
  // The file's views are registered and, with those registered before, kept up to date while
  // the pipeline runs (and answer queries through the server).
  auto views = ViewsBesideThePipeline(args.pipeline);
  if (!views.ok()) return Fail(views.status());
  auto lake = std::make_shared<LakeService>(args.data_dir, std::move(views).value());
  if (*serve) {
    overrides.services.push_back(ServeTopicsWhileRunning(**serve, {}, std::move(lake)));
  } else {
    overrides.services.push_back(std::move(lake));
  }
  auto app = app::LoadPipelineFile(args.pipeline, overrides);
  if (!app.ok()) return Fail(app.status());
  if (args.reset) {
    Status reset = (*app)->Reset();
    if (!reset.ok()) return Fail(reset);
  }
  Application* running = app->get();
  InstallStopHandler([running] { running->Stop(); });
  auto summary = running->Run();
  if (!summary.ok()) return Fail(summary.status());
  std::fprintf(stderr,
               "weir: %s %s: %lld records in, %lld out, %lld dead letters, %lld late, %lld "
               "checkpoints, %.2f s\n",
               running->options().name.c_str(), summary->completed ? "completed" : "stopped",
               static_cast<long long>(summary->records_in),
               static_cast<long long>(summary->records_out),
               static_cast<long long>(summary->dead_letters), static_cast<long long>(summary->late),
               static_cast<long long>(summary->checkpoints), summary->wall_seconds);
  if (const ProcessCounters& p = summary->process; p.calls > 0 || p.dead_lettered > 0) {
    std::fprintf(stderr,
                 "weir: process steps: %lld activations applied (%lld timers fired) in %lld "
                 "calls; %lld attempts refused, %lld retries, %lld splits, %lld dead-lettered, "
                 "%lld timers set at the end of input dropped\n",
                 static_cast<long long>(p.activations), static_cast<long long>(p.timers_fired),
                 static_cast<long long>(p.calls), static_cast<long long>(p.refused),
                 static_cast<long long>(p.retries), static_cast<long long>(p.splits),
                 static_cast<long long>(p.dead_lettered), static_cast<long long>(p.timers_dropped));
  }
  return 0;
}

}  // namespace weir::cli
