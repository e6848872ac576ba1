// weir demo: a clickstream and sensor readings, pipelines over them, and a look at what came out.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "app/pipeline_yaml.h"
#include "cli/commands.h"
#include "cli/lake_cli.h"
#include "cli/local_log.h"
#include "dataflow/clickstream.h"
#include "dataflow/json_records.h"

namespace weir::cli {
namespace {

constexpr const char* kPageStats = R"(# Page statistics from a clickstream.
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

constexpr const char* kSessions =
    R"(# User sessions: a user's clicks with no pause longer than 30 s.
# Events may arrive up to a gap (plus 5 s of grace) out of order; later ones are late, and go
# to late-clicks.jsonl with the reason.
name: demo-sessions
source:
  file: clicks.jsonl
  key: user
  timestamp: ts
steps:
  - window: {session: {gap_ms: 30000, grace_ms: 5000}}
    agg:
      events: count
      pages: {collect: page}
      revenue: {sum: amount}
    emit: final
    late: late-clicks.jsonl
sinks:
  - file: sessions.jsonl
  - topic: demo.sessions
checkpoint:
  interval_ms: 500
)";

constexpr const char* kFusion =
    R"(# Sensor fusion: a camera and a lidar at 10 Hz on independent clocks, aligned in event time
# within 20 ms; the IMU's 1 kHz samples within 5 ms of each frame are attached, oldest first.
# A frame whose lidar sweep never comes is emitted after 500 ms of event time, lidar null.
name: demo-fusion
streams:
  camera: {source: {file: camera.jsonl, key: sensor, timestamp: ts}}
  lidar: {source: {file: lidar.jsonl, key: sensor, timestamp: ts}}
  imu: {source: {file: imu.jsonl, key: sensor, timestamp: ts}}
join:
  parents: [camera, lidar, imu]
  mode: time
  tolerance_ms: 20
  timeout_ms: 500
  quorum: 1
  collect: {imu: 5}
sinks:
  - file: fused.jsonl
  - topic: demo.fused
)";

// Abandoned carts, by a keyed process function in Python: a worker process Weir starts and
// supervises (examples/workers/python/cart_abandon.py); the engine keeps each user's cart count
// and timer, exactly once.
std::string AbandonedCartsYaml() {
  return std::string(R"(# Abandoned carts: a user who adds to their cart and does not purchase within ten minutes
# of event time. A keyed process function in Python: Weir starts the worker, sends it each
# user's events with the user's state ("cart") and timers ("abandon"), checks what it answers,
# and applies it exactly once.
name: demo-carts
source:
  file: clicks.jsonl
  key: user
  timestamp: ts
steps:
  - process:
      id: cart_abandon
      worker: [python3, )") +
         WEIR_WORKER_EXAMPLES + R"(/python/cart_abandon.py, purchase]
      state: [cart]
      timers: [abandon]
sinks:
  - file: abandoned-carts.jsonl
  - topic: demo.abandoned-carts
checkpoint:
  interval_ms: 500
)";
}

// A minute of a camera, a lidar (every 47th sweep lost) and an IMU, as JSON lines.
Status WriteSensors(const std::filesystem::path& dir) {
  constexpr int64_t kStart = 1'767'225'600'000;
  std::ofstream camera(dir / "camera.jsonl", std::ios::trunc);
  std::ofstream lidar(dir / "lidar.jsonl", std::ios::trunc);
  std::ofstream imu(dir / "imu.jsonl", std::ios::trunc);
  for (int64_t frame = 0; frame < 600; ++frame) {
    const int64_t t = kStart + frame * 100;
    camera << R"({"sensor":"cam0","ts":)" << t + frame * 7 % 5 << R"(,"frame":)" << frame
           << R"(,"objects":)" << frame % 4 << "}\n";
    if (frame % 47 != 46) {
      lidar << R"({"sensor":"lidar0","ts":)" << t + 12 + frame % 3 << R"(,"sweep":)" << frame
            << R"(,"points":)" << 30000 + frame % 100 << "}\n";
    }
    for (int64_t ms = 0; ms < 100; ++ms) {
      imu << R"({"sensor":"imu0","ts":)" << t + ms << R"(,"ax":)" << (ms % 7) * 0.01 << "}\n";
    }
  }
  if (!camera || !lidar || !imu) return Status::IOError("cannot write sensors in " + dir.string());
  return Status::OK();
}

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
  // Two clicks that arrive long after their sessions closed: late, not lost.
  for (int64_t late_by : {600'000, 900'000}) {
    Record click = model.EventAt(PartitionId(0), events / 2);
    click.value.Set("ts", Value(click.timestamp.value() - late_by));
    line.clear();
    click.value.AppendJson(line);
    out << line << '\n';
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
    PageStats& s = by_page[std::string(v->Find("key")->as_string())];
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

struct Session {
  std::string user;
  int64_t start = 0;
  int64_t end = 0;
  int64_t events = 0;
  double revenue = 0;
  std::vector<std::string> pages;
};

std::vector<Session> ReadSessions(const std::string& path) {
  std::vector<Session> sessions;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto v = Value::Parse(line);
    if (!v.ok() || !v->Find("value")) continue;
    const Value& value = *v->Find("value");
    Session s{std::string(v->Find("key")->as_string()),       value.Find("start")->as_int(),
              value.Find("end")->as_int(),        value.Find("events")->as_int(),
              value.Find("revenue")->as_number(), {}};
    for (const Value& page : value.Find("pages")->as_array()) s.pages.emplace_back(page.as_string());
    sessions.push_back(std::move(s));
  }
  return sessions;
}

// Writes the pipeline's YAML next to the data, forgets what an earlier demo left (state and
// output topics), and runs it. Prints the YAML and the run's summary.
Result<RunSummary> RunPipeline(const DemoArgs& args, const std::filesystem::path& dir,
                               const std::string& file_name, const char* yaml,
                               std::vector<std::string> topics) {
  std::string path = (dir / file_name).string();
  {
    std::ofstream out(path, std::ios::trunc);
    out << yaml;
    if (!out) return Status::IOError("cannot write " + path);
  }
  std::printf("   %s:\n\n", path.c_str());
  for (std::istringstream lines(yaml); std::getline(lines, path);)
    std::printf("     %s\n", path.c_str());
  app::PipelineOverrides overrides;
  overrides.data_dir = args.data_dir;
  overrides.ways_out = CommandLineWaysOut();
  overrides.kinds = &PipelineKinds();
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<Application> app,
                        app::LoadPipelineFile((dir / file_name).string(), overrides));
  WEIR_RETURN_IF_ERROR(app->Reset());
  {
    WEIR_ASSIGN_OR_RETURN(LocalLog local, LocalLog::Open(args.data_dir));
    topics.push_back(app->options().name + ".dlq");
    for (const std::string& topic : topics) {
      if (local.log->GetTopic(topic).ok()) WEIR_RETURN_IF_ERROR(local.log->DeleteTopic(topic));
    }
  }
  WEIR_ASSIGN_OR_RETURN(RunSummary summary, app->Run());
  std::printf(
      "\n   ran in %.2f s: %lld records in, %lld results out, %lld dead letters, %lld late, "
      "%lld exactly-once checkpoints\n\n",
      summary.wall_seconds, static_cast<long long>(summary.records_in),
      static_cast<long long>(summary.records_out), static_cast<long long>(summary.dead_letters),
      static_cast<long long>(summary.late), static_cast<long long>(summary.checkpoints));
  return summary;
}

std::string Clock(int64_t ms) {
  char buf[16];
  int64_t s = (ms / 1000) % 86400;
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

// 3. The last line per page of the running aggregates.
void PrintPageStats(const std::filesystem::path& dir) {
  std::string stats_file = (dir / "page-stats.jsonl").string();
  std::printf("3. Running aggregates per page (the last line per key of %s):\n\n",
              stats_file.c_str());
  std::printf("   %-14s %10s %12s %14s\n", "page", "events", "revenue", "largest order");
  for (const PageStats& s : FinalStats(stats_file)) {
    std::printf("   %-14s %10lld %12.2f %14.2f\n", s.page.c_str(), static_cast<long long>(s.events),
                s.revenue, s.largest_order);
  }
}

// 4. The sessions, the five longest, and the first late click.
void PrintSessions(const std::filesystem::path& dir) {
  std::string sessions_file = (dir / "sessions.jsonl").string();
  std::vector<Session> all = ReadSessions(sessions_file);
  int64_t events = 0;
  for (const Session& s : all) events += s.events;
  std::printf("\n4. %zu user sessions (%s), %.1f events each on average; the longest:\n\n",
              all.size(), sessions_file.c_str(),
              all.empty() ? 0.0 : static_cast<double>(events) / static_cast<double>(all.size()));
  std::sort(all.begin(), all.end(),
            [](const Session& a, const Session& b) { return a.end - a.start > b.end - b.start; });
  std::printf("   %-11s %-19s %7s %9s  %s\n", "user", "from - to", "events", "revenue",
              "first pages");
  for (size_t i = 0; i < std::min<size_t>(5, all.size()); ++i) {
    const Session& s = all[i];
    std::string first_pages;
    for (size_t p = 0; p < std::min<size_t>(3, s.pages.size()); ++p) {
      first_pages += (p ? " " : "") + s.pages[p];
    }
    std::printf("   %-11s %s-%s %7lld %9.2f  %s ...\n", s.user.c_str(), Clock(s.start).c_str(),
                Clock(s.end - 1).c_str(), static_cast<long long>(s.events), s.revenue,
                first_pages.c_str());
  }
  std::ifstream late((dir / "late-clicks.jsonl").string());
  if (std::string first_late; std::getline(late, first_late)) {
    std::printf("\n   Late clicks are never dropped silently (%s):\n   %s\n",
                (dir / "late-clicks.jsonl").string().c_str(), first_late.c_str());
  }
}

// 5. The fused sensor frames, and one whose lidar sweep was lost.
void PrintFusedFrames(const std::filesystem::path& dir) {
  std::ifstream fused((dir / "fused.jsonl").string());
  int64_t frames = 0, without_lidar = 0;
  std::string example, example_missing;
  for (std::string line; std::getline(fused, line); ++frames) {
    const bool missing = line.find(R"("lidar":null)") != std::string::npos;
    without_lidar += missing;
    if (frames == 1) example = line;
    if (missing && example_missing.empty()) example_missing = line;
  }
  auto shorten = [](const std::string& line) {
    return line.size() > 260 ? line.substr(0, 260) + " ..." : line;
  };
  std::printf(
      "\n5. %lld fused frames (%s); %lld without their lost lidar sweep, e.g.:\n   %s\n   %s\n",
      static_cast<long long>(frames), (dir / "fused.jsonl").string().c_str(),
      static_cast<long long>(without_lidar), shorten(example).c_str(),
      shorten(example_missing).c_str());
}

// 6. The abandoned carts the Python worker found, and what the process step did.
void PrintAbandonedCarts(const std::filesystem::path& dir, const RunSummary& run) {
  const std::string path = (dir / "abandoned-carts.jsonl").string();
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const ProcessCounters& p = run.process;
  std::printf(
      "\n6. %zu abandoned carts (%s), found by the Python worker:\n"
      "   %lld activations (%lld of them timers) in %lld calls; %lld refused, %lld "
      "dead-lettered. The first:\n",
      lines.size(), path.c_str(), static_cast<long long>(p.activations),
      static_cast<long long>(p.timers_fired), static_cast<long long>(p.calls),
      static_cast<long long>(p.refused), static_cast<long long>(p.dead_lettered));
  for (size_t i = 0; i < std::min<size_t>(3, lines.size()); ++i) {
    std::printf("   %s\n", lines[i].c_str());
  }
}

// 7. A malformed line from the dead-letter topic.
void PrintDeadLetter(const DemoArgs& args) {
  auto local = LocalLog::Open(args.data_dir);
  if (local.ok()) {
    if (auto dlq = local->log->GetTopic("demo-page-stats.dlq"); dlq.ok()) {
      log::PartitionReader reader((*dlq)->partition(PartitionId(0)), Offset(0));
      auto records = reader.Next(3);
      if (records.ok() && !records->empty()) {
        std::printf(
            "\n7. Malformed lines went to the dead-letter topic demo-page-stats.dlq, e.g.:\n   "
            "%.*s\n",
            static_cast<int>(records->front().value.size()), records->front().value.data());
      }
    }
  }
}

constexpr const char* kClickViews =
    R"(# The clickstream as a lake view: the topic demo.clicks materialized to Parquet partitions
# (one per hour of appends), queried with SQL by DuckDB.
views:
  demo_clicks:
    topic: demo.clicks
    columns: {user: varchar, page: varchar, action: varchar, device: varchar, country: varchar,
              ts: bigint, amount: double}
    partition: 1h
)";

constexpr const char* kRevenueSql =
    "SELECT page, count(*) AS purchases, round(sum(amount), 2) AS revenue FROM demo_clicks "
    "WHERE action = 'purchase' GROUP BY page ORDER BY revenue DESC LIMIT 5";

// The clickstream file's records (its malformed lines left out), appended to a fresh
// demo.clicks keyed by user.
Status AppendClicks(log::LogStore& log, const std::string& clicks) {
  if (log.GetTopic("demo.clicks").ok()) WEIR_RETURN_IF_ERROR(log.DeleteTopic("demo.clicks"));
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.CreateTopic("demo.clicks", log::TopicConfig{}));
  dataflow::RecordExtraction extraction;
  extraction.key.field = "user";
  extraction.timestamp_field = "ts";
  log::RecordBatchBuilder batch;
  std::ifstream in(clicks);
  for (std::string line; std::getline(in, line);) {
    auto record = dataflow::DecodeJsonRecord(line, extraction, Key(), EventTime(0));
    if (!record.ok()) continue;
    batch.AddRaw(record->timestamp, record->key.serde(), record->key.bytes(), line);
  }
  WEIR_RETURN_IF_ERROR(topic->partition(PartitionId(0)).Append(batch).status());
  return log.FlushAll();
}

// 8. The clickstream as a lake view, and a SQL answer over it.
Status PrintLakeView(const DemoArgs& args, const std::filesystem::path& dir) {
  const std::string views_file = (dir / "views.yaml").string();
  {
    std::ofstream out(views_file, std::ios::trunc);
    out << kClickViews;
    if (!out) return Status::IOError("cannot write " + views_file);
  }
  WEIR_ASSIGN_OR_RETURN(std::vector<lake::ViewSpec> views,
                        lake::ParseViewsFile(kClickViews, views_file));
  WEIR_ASSIGN_OR_RETURN(LocalLog local, LocalLog::Open(args.data_dir));
  WEIR_RETURN_IF_ERROR(AppendClicks(*local.log, (dir / "clicks.jsonl").string()));
  lake::LakeOptions options;
  options.dir = LakeDir(args.data_dir);
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<lake::Lake> lake, lake::Lake::Open(*local.log, options));
  // An earlier demo's partitions cover the topic it wrote, not this one's: a lake of the demo's
  // view alone starts over; beside views of the user's, the view is written again (which needs
  // this clickstream to be as long as the earlier one).
  const std::vector<lake::CatalogView> before = lake->Views();
  if (!before.empty() && std::all_of(before.begin(), before.end(), [](const lake::CatalogView& v) {
        return v.spec.name == "demo_clicks";
      })) {
    lake.reset();
    std::error_code ec;
    std::filesystem::remove_all(options.dir, ec);
    if (ec) return Status::FromErrno(ec.value(), "removing " + options.dir.string());
    WEIR_ASSIGN_OR_RETURN(lake, lake::Lake::Open(*local.log, options));
  }
  WEIR_RETURN_IF_ERROR(lake->Register(views[0]));
  WEIR_ASSIGN_OR_RETURN(lake::ViewStatus earlier, lake->Describe("demo_clicks"));
  if (!earlier.partitions.empty()) {
    WEIR_RETURN_IF_ERROR(lake->Rebuild("demo_clicks")
                             .WithContext("the view demo_clicks of an earlier demo beside other "
                                          "views (use another --data-dir)"));
  }
  std::string table;
  WEIR_RETURN_IF_ERROR(WriteQueryResult(*lake, kRevenueSql, QueryFormat::kTable,
                                        std::chrono::seconds(60),
                                        [&](std::string_view text) { table.append(text); }));
  WEIR_ASSIGN_OR_RETURN(lake::ViewStatus view, lake->Describe("demo_clicks"));
  std::printf(
      "\n8. The clickstream as a lake view: demo.clicks materialized to Parquet (%lld rows in "
      "%zu partition%s under %s), as %s declares it:\n\n",
      static_cast<long long>(view.rows), view.partitions.size(),
      view.partitions.size() == 1 ? "" : "s", LakeDir(args.data_dir).string().c_str(),
      views_file.c_str());
  std::istringstream yaml(kClickViews);
  for (std::string line; std::getline(yaml, line);) std::printf("     %s\n", line.c_str());
  std::printf(
      "\n   The five pages that sold most, by SQL over the view (the revenue agrees with the\n"
      "   running aggregates of 3.):\n   %s\n\n",
      kRevenueSql);
  std::istringstream rows(table);
  for (std::string line; std::getline(rows, line);) std::printf("   %s\n", line.c_str());
  return Status::OK();
}

void PrintNextSteps(const DemoArgs& args, const std::filesystem::path& dir) {
  std::printf("\nTry next:\n");
  std::printf("  build/src/cli/weir consume demo.sessions --data-dir %s --max 3\n",
              args.data_dir.c_str());
  std::printf("  build/src/cli/weir topics describe demo.page-stats --data-dir %s\n",
              args.data_dir.c_str());
  std::printf("  build/src/cli/weir consume demo-page-stats.dlq --data-dir %s\n",
              args.data_dir.c_str());
  std::printf(
      "  build/src/cli/weir query \"SELECT device, count(*) AS clicks FROM demo_clicks GROUP BY "
      "ALL\" --data-dir %s\n",
      args.data_dir.c_str());
  std::printf("  build/src/cli/weir views describe demo_clicks --data-dir %s\n",
              args.data_dir.c_str());
  std::printf("  build/src/cli/weir run %s --data-dir %s   # resumes: nothing new to do\n",
              (dir / "sessions.yaml").string().c_str(), args.data_dir.c_str());
  std::printf(
      "  build/src/cli/weir serve --data-dir %s &   # then any WebSocket client:\n"
      "  wsdump 'ws://127.0.0.1:8080/streams/demo.sessions?offset=earliest'\n",
      args.data_dir.c_str());
}

}  // namespace

int Demo(const DemoArgs& args) {
  std::filesystem::path dir = std::filesystem::path(args.data_dir) / "demo";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(Status::FromErrno(ec.value(), "creating " + dir.string()));
  std::string clicks = (dir / "clicks.jsonl").string();

  std::printf("Weir demo\n=========\n\n");
  std::printf(
      "1. A clickstream of %lld events: 2000 users browsing in sessions (views, clicks, cart\n"
      "   adds, purchases), some events out of order, 3 malformed lines and 2 clicks that\n"
      "   arrive long after their sessions ended:\n   %s\n\n",
      static_cast<long long>(args.events), clicks.c_str());
  Status written = WriteClickstream(clicks, args.events);
  if (!written.ok()) return Fail(written);

  Status sensors = WriteSensors(dir);
  if (!sensors.ok()) return Fail(sensors);
  std::printf(
      "2. Four pipelines over it and over a minute of camera, lidar and IMU readings, on\n"
      "   the embedded log in %s:\n\n",
      args.data_dir.c_str());
  auto pages = RunPipeline(args, dir, "page-stats.yaml", kPageStats, {"demo.page-stats"});
  if (!pages.ok()) return Fail(pages.status());
  auto sessions = RunPipeline(args, dir, "sessions.yaml", kSessions, {"demo.sessions"});
  if (!sessions.ok()) return Fail(sessions.status());
  auto fusion = RunPipeline(args, dir, "fusion.yaml", kFusion, {"demo.fused"});
  if (!fusion.ok()) return Fail(fusion.status());
  const std::string carts_yaml = AbandonedCartsYaml();
  auto carts = RunPipeline(args, dir, "carts.yaml", carts_yaml.c_str(), {"demo.abandoned-carts"});
  if (!carts.ok()) return Fail(carts.status());

  PrintPageStats(dir);
  PrintSessions(dir);
  PrintFusedFrames(dir);
  PrintAbandonedCarts(dir, *carts);
  PrintDeadLetter(args);
  Status lake = PrintLakeView(args, dir);
  if (!lake.ok()) return Fail(lake);
  PrintNextSteps(args, dir);
  return 0;
}

}  // namespace weir::cli
