// weir demo: a clickstream, a pipeline over it, and a look at what came out.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "app/pipeline_yaml.h"
#include "cli/commands.h"
#include "cli/local_log.h"
#include "dataflow/clickstream.h"

namespace weir::cli {
namespace {

constexpr const char* kPipeline = R"(# The demo pipeline: page statistics from a clickstream.
# Records are keyed by user in the input; group_by re-keys them by page through a repartition
# topic, so each page's running aggregates live in one task's state.
name: demo-page-stats
source:
  file: clicks.jsonl
  key: user
  timestamp: ts
steps:
  - group_by: page
  - aggregate:
      events: count
      revenue: {sum: amount}
      largest_order: {max: amount}
sinks:
  - file: page-stats.jsonl
  - topic: demo.page-stats
checkpoint:
  interval_ms: 500
)";

// Lines that are not valid records: the pipeline sends them to its dead-letter topic.
constexpr const char* kBadLines[] = {
    R"({"user": "user-1", "page": "/", "action": "view", "ts": )",
    R"({"user": "user-2", "page": "/cart", "action": "view", "ts": "yesterday"})",
    R"({"user": 12345, "page": "/help", "action": "view", "ts": 1767225600000})",
};

Status WriteClickstream(const std::string& path, int64_t events) {
  GeneratorOptions options;
  options.users = 2000;
  options.events = events;
  options.events_per_second = 100;
  dataflow::ClickstreamModel model(options);
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::IOError("cannot write " + path);
  std::string line;
  int64_t bad_every = std::max<int64_t>(1, events / 4);
  for (int64_t i = 0; i < events; ++i) {
    line.clear();
    model.EventAt(PartitionId(0), i).value.AppendJson(line);
    out << line << '\n';
    if (i % bad_every == bad_every - 1 && i / bad_every < 3)
      out << kBadLines[i / bad_every] << '\n';
  }
  out.close();
  if (!out) return Status::IOError("cannot write " + path);
  return Status::OK();
}

struct PageStats {
  std::string page;
  int64_t events = 0;
  double revenue = 0;
  double largest_order = 0;
};

// The last output per key of a JSON-lines sink file is the key's final running aggregate.
std::vector<PageStats> FinalStats(const std::string& path) {
  std::map<std::string, PageStats> by_page;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto v = Value::Parse(line);
    if (!v.ok() || !v->Find("key") || !v->Find("value")) continue;
    const Value& value = *v->Find("value");
    PageStats& s = by_page[v->Find("key")->as_string()];
    s.page = v->Find("key")->as_string();
    s.events = value.Find("events")->as_int();
    s.revenue = value.Find("revenue")->as_number();
    s.largest_order =
        value.Find("largest_order")->is_number() ? value.Find("largest_order")->as_number() : 0;
  }
  std::vector<PageStats> stats;
  for (auto& [page, s] : by_page) stats.push_back(s);
  std::sort(stats.begin(), stats.end(),
            [](const PageStats& a, const PageStats& b) { return a.events > b.events; });
  return stats;
}

}  // namespace

int Demo(const DemoArgs& args) {
  std::filesystem::path dir = std::filesystem::path(args.data_dir) / "demo";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(Status::FromErrno(ec.value(), "creating " + dir.string()));
  std::string clicks = (dir / "clicks.jsonl").string();
  std::string pipeline = (dir / "pipeline.yaml").string();

  std::printf("Weir demo\n=========\n\n");
  std::printf(
      "1. Generating a clickstream of %lld events (2000 users browsing in sessions; views,\n"
      "   clicks, cart adds, purchases) with 3 malformed lines mixed in:\n   %s\n\n",
      static_cast<long long>(args.events), clicks.c_str());
  Status written = WriteClickstream(clicks, args.events);
  if (!written.ok()) return Fail(written);
  {
    std::ofstream out(pipeline, std::ios::trunc);
    out << kPipeline;
    if (!out) return Fail(Status::IOError("cannot write " + pipeline));
  }
  std::printf("2. The pipeline (%s):\n\n", pipeline.c_str());
  std::printf("%s\n", kPipeline);

  app::PipelineOverrides overrides;
  overrides.data_dir = args.data_dir;
  overrides.on_progress = [](const std::string& line) { std::printf("   %s\n", line.c_str()); };
  auto app = app::LoadPipelineFile(pipeline, overrides);
  if (!app.ok()) return Fail(app.status());
  // The demo starts over each time: its state, and the topics it wrote last time.
  Status reset = (*app)->Reset();
  if (!reset.ok()) return Fail(reset);
  {
    auto local = LocalLog::Open(args.data_dir);
    if (!local.ok()) return Fail(local.status());
    for (const char* topic : {"demo.page-stats", "demo-page-stats.dlq"}) {
      if (local->log->GetTopic(topic).ok()) {
        Status deleted = local->log->DeleteTopic(topic);
        if (!deleted.ok()) return Fail(deleted);
      }
    }
  }
  std::printf("3. Running it on the embedded log in %s (exactly-once checkpoints every 500 ms):\n",
              args.data_dir.c_str());
  auto summary = (*app)->Run();
  if (!summary.ok()) return Fail(summary.status());
  std::printf(
      "   %lld records in, %lld results out, %lld dead letters, %lld checkpoints, "
      "%.2f s (%.0f events/s)\n\n",
      static_cast<long long>(summary->records_in), static_cast<long long>(summary->records_out),
      static_cast<long long>(summary->dead_letters), static_cast<long long>(summary->checkpoints),
      summary->wall_seconds, summary->records_in / std::max(summary->wall_seconds, 1e-9));

  std::string stats_file = (dir / "page-stats.jsonl").string();
  std::printf("4. Final running aggregates per page (the last line per key of %s):\n\n",
              stats_file.c_str());
  std::printf("   %-14s %10s %12s %14s\n", "page", "events", "revenue", "largest order");
  for (const PageStats& s : FinalStats(stats_file)) {
    std::printf("   %-14s %10lld %12.2f %14.2f\n", s.page.c_str(), static_cast<long long>(s.events),
                s.revenue, s.largest_order);
  }

  auto local = LocalLog::Open(args.data_dir);
  if (local.ok()) {
    if (auto dlq = local->log->GetTopic("demo-page-stats.dlq"); dlq.ok()) {
      log::PartitionReader reader((*dlq)->partition(PartitionId(0)), Offset(0));
      auto records = reader.Next(3);
      if (records.ok() && !records->empty()) {
        std::printf(
            "\n5. Malformed lines went to the dead-letter topic demo-page-stats.dlq, e.g.:\n   "
            "%.*s\n",
            static_cast<int>(records->front().value.size()), records->front().value.data());
      }
    }
  }
  std::printf("\nTry next:\n");
  std::printf("  build/src/cli/weir consume demo.page-stats --data-dir %s --max 5\n",
              args.data_dir.c_str());
  std::printf("  build/src/cli/weir topics describe demo.page-stats --data-dir %s\n",
              args.data_dir.c_str());
  std::printf("  build/src/cli/weir consume demo-page-stats.dlq --data-dir %s\n",
              args.data_dir.c_str());
  std::printf("  build/src/cli/weir run %s --data-dir %s   # resumes: nothing new to do\n",
              pipeline.c_str(), args.data_dir.c_str());
  return 0;
}

}  // namespace weir::cli
