// `weir bench catchup`: one subscriber (weir::Subscription, over loopback) replays a topic from
// offset 0 through the server, first out of the log, then, once retention has evicted the log's
// records, out of the topic's archive view (Parquet, DuckDB) and the log's tail. Both replays
// are checked: every offset once, in order, each value byte for byte. Figures: messages/s (wall)
// and messages per CPU-second of the process (server, archive reader and client together).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/bench_support.h"
#include "cli/commands.h"
#include "core/process_stats.h"
#include "lake/lake.h"
#include "log/log.h"
#include "serve/server.h"
#include "weir/subscription.h"

namespace weir::cli {
namespace {

std::string ValueOf(int64_t offset, int bytes) {
  std::string v = R"({"offset":)" + std::to_string(offset) + R"(,"pad":")";
  v.append(static_cast<size_t>(std::max<int>(0, bytes - static_cast<int>(v.size()) - 2)), 'x');
  return v + "\"}";
}

struct Replay {
  double seconds = 0;
  double cpu_seconds = 0;
};

// Subscribes from offset 0 and reads `messages` messages, checking each.
Result<Replay> ReplayFromZero(uint16_t port, int64_t messages, int value_bytes,
                              std::optional<Offset>* archive_first) {
  const double cpu0 = ProcessCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  WEIR_ASSIGN_OR_RETURN(
      auto subscription,
      Subscription::Open(
          {.url = "ws://127.0.0.1:" + std::to_string(port) + "/streams/catchup", .start = "0"}));
  *archive_first = subscription->greeting().archive_first;
  for (int64_t i = 0; i < messages; ++i) {
    WEIR_ASSIGN_OR_RETURN(auto message, subscription->Next(std::chrono::seconds(30)));
    if (!message) return Status::Unavailable("no message " + std::to_string(i) + " within 30 s");
    if (message->offset != Offset(i) || message->value != ValueOf(i, value_bytes)) {
      return Status::Corruption("replay: message " + std::to_string(i) + " came as offset " +
                                std::to_string(message->offset.value()) + ", value " +
                                message->value.substr(0, 60));
    }
  }
  Replay r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = ProcessCpuSeconds() - cpu0;
  WEIR_RETURN_IF_ERROR(subscription->Close());
  return r;
}

Status Run(const CatchupBenchArgs& args, const std::string& dir) {
  log::LogOptions log_options;
  log_options.dir = std::filesystem::path(dir) / "log";
  log_options.retention_check_interval = std::chrono::hours(1);  // retention when we say so
  WEIR_ASSIGN_OR_RETURN(auto log, log::LogStore::Open(log_options));
  WEIR_ASSIGN_OR_RETURN(
      log::Topic * topic,
      log->CreateTopic("catchup", {.retention_bytes = 0, .segment_bytes = 1 << 20}));
  log::Partition& partition = topic->partition(PartitionId(0));
  for (int64_t i = 0; i < args.messages; i += 1000) {
    log::RecordBatchBuilder batch;
    for (int64_t j = i; j < std::min(args.messages, i + 1000); ++j) {
      batch.AddRaw(EventTime(j), KeySerde::kNull, {}, ValueOf(j, args.value_bytes));
    }
    WEIR_RETURN_IF_ERROR(partition.Append(batch).status());
  }
  WEIR_RETURN_IF_ERROR(partition.WaitDurable(Offset(args.messages)));

  lake::LakeOptions lake_options;
  lake_options.dir = std::filesystem::path(dir) / "lake";
  WEIR_ASSIGN_OR_RETURN(auto lake, lake::Lake::Open(*log, std::move(lake_options)));
  WEIR_RETURN_IF_ERROR(lake->Register(lake::ArchiveSpec("catchup_archive", "catchup")));
  const double archive_cpu0 = ProcessCpuSeconds();
  const auto archive_t0 = std::chrono::steady_clock::now();
  WEIR_RETURN_IF_ERROR(lake->Update("catchup_archive", /*open_too=*/true));
  const double archive_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - archive_t0).count();
  const double archive_cpu = ProcessCpuSeconds() - archive_cpu0;

  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.max_replay = args.messages + 1;
  options.catchup_chunk = args.chunk;
  options.archive.extent = [&lake](std::string_view t, int32_t p) {
    return lake->ArchiveExtentOf(t, p);
  };
  options.archive.read = [&lake](std::string_view t, int32_t p, int64_t from, size_t chunk,
                                 const auto& on_chunk) {
    return lake->ReadArchive(t, p, from, chunk, on_chunk);
  };
  WEIR_ASSIGN_OR_RETURN(auto server, serve::Server::Start(*log, options));

  std::vector<Replay> from_log, from_archive;
  std::optional<Offset> archive_first;
  for (int run = 0; run < args.runs; ++run) {
    WEIR_ASSIGN_OR_RETURN(
        Replay r, ReplayFromZero(server->port(), args.messages, args.value_bytes, &archive_first));
    from_log.push_back(r);
  }
  WEIR_RETURN_IF_ERROR(partition.EnforceRetention(std::chrono::system_clock::now()).status());
  const int64_t first = partition.FirstOffset().value();
  if (first == 0) return Status::Internal("retention evicted nothing: use more --messages");
  for (int run = 0; run < args.runs; ++run) {
    WEIR_ASSIGN_OR_RETURN(
        Replay r, ReplayFromZero(server->port(), args.messages, args.value_bytes, &archive_first));
    from_archive.push_back(r);
  }
  if (archive_first != Offset(0)) return Status::Internal("the greeting has no archive_first 0");

  auto print = [&](const char* name, std::vector<Replay>& runs) {
    std::vector<double> mps, per_core;
    for (const Replay& r : runs) {
      mps.push_back(static_cast<double>(args.messages) / r.seconds);
      per_core.push_back(static_cast<double>(args.messages) / std::max(r.cpu_seconds, 1e-9));
      std::printf("  %-8s run: %.3f s, %.0f messages/s, %.0f messages/s per core\n", name,
                  r.seconds, mps.back(), per_core.back());
    }
    const double m = Percentile(mps, 0.5);
    const double c = Percentile(per_core, 0.5);
    return std::pair(m, c);
  };
  std::printf(
      "catch-up replay of %lld messages of %d bytes (log first offset after retention: "
      "%lld; archive written in %.2f s, %.0f rows/s per core)\n",
      static_cast<long long>(args.messages), args.value_bytes, static_cast<long long>(first),
      archive_s, static_cast<double>(args.messages) / std::max(archive_cpu, 1e-9));
  auto [log_mps, log_core] = print("log", from_log);
  auto [archive_mps, archive_core] = print("archive", from_archive);
  std::printf(
      "\ncatchup messages=%lld verified=yes log_mps=%.0f log_mps_per_core=%.0f archive_mps=%.0f "
      "archive_mps_per_core=%.0f archived_below=%lld\n",
      static_cast<long long>(args.messages), log_mps, log_core, archive_mps, archive_core,
      static_cast<long long>(first));
  return Status::OK();
}

}  // namespace

int BenchCatchup(const CatchupBenchArgs& args) {
  BenchDir dir(args.data_dir);
  Status s = Run(args, dir.path());
  if (!s.ok()) {
    std::fprintf(stderr, "weir bench catchup: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace weir::cli
