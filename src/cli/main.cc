// The `weir` command line. Argument parsing only; the commands live in commands.h.
#include <CLI/CLI.hpp>
#include <csignal>
#include <functional>
#include <vector>

#include "cli/commands.h"
#include "weir/fsync.h"

namespace {

using namespace weir::cli;

// What --fsync accepts: the names of weir/fsync.h's one table.
CLI::IsMember FsyncNames() {
  std::vector<std::string> names;
  for (const auto& [policy, name] : weir::kFsyncPolicies) names.emplace_back(name);
  return CLI::IsMember(names);
}

// The arguments of every command, filled by CLI11 while it parses and read by the command that
// runs. --data-dir is one string shared by the commands that take it, copied into the parsed
// command's arguments when it runs.
struct Arguments {
  std::string data_dir = "./weir-data";
  RunArgs run;
  ServeArgs serve;
  DemoArgs demo;
  ProduceArgs produce;
  ConsumeArgs consume;
  TopicArgs topics;
  BenchArgs bench;
  CatchupBenchArgs catchup;
  ViewsArgs views;
  QueryArgs query;
};

// A (sub)command and what runs when it is the one parsed; main runs the first that was.
struct Command {
  CLI::App* cli;
  std::function<int()> run;
};

// The command that runs `command` on `args` with the shared --data-dir.
template <typename Args>
Command WithDataDir(CLI::App* cli, Arguments& all, Args& args, int (*command)(const Args&)) {
  return {cli, [&all, &args, command] {
            args.data_dir = all.data_dir;
            return command(args);
          }};
}

// `consume` reads the data directory, or a server with --server.
int ConsumeLocalOrRemote(const ConsumeArgs& args) {
  return args.server.empty() ? Consume(args) : ConsumeRemote(args);
}

void AddDataDir(CLI::App* cmd, Arguments& args) {
  cmd->add_option("--data-dir", args.data_dir, "Data directory (log, state, checkpoints)")
      ->capture_default_str();
}

// The server's flags, for `run` and `serve`.
void AddServeFlags(CLI::App* cmd, ServeFlags& flags) {
  weir::ServerOptions& o = flags.options;
  cmd->add_option("--listen", flags.listen,
                  "Serve the topics over HTTP + WebSocket on HOST:PORT (port 0: any free one), "
                  "or 'off'; default $WEIR_LISTEN, else 127.0.0.1:8080");
  cmd->add_option("--max-backlog", o.max_backlog,
                  "Messages queued for a subscriber before it is closed as too_slow")
      ->capture_default_str();
  cmd->add_option("--max-replay", o.max_replay,
                  "How far below the end a subscriber may start (messages)")
      ->capture_default_str();
  cmd->add_option("--max-connections", o.max_connections)->capture_default_str();
  cmd->add_option("--max-subscribers", o.max_subscribers, "Per partition")->capture_default_str();
  cmd->add_option("--max-frame-bytes", o.max_frame_bytes, "Largest publish frame or body")
      ->capture_default_str();
  cmd->add_option("--publish-token", o.publish_token,
                  "Bearer token required to publish (default: none)");
  cmd->add_option("--subscribe-token", o.subscribe_token,
                  "Bearer token required to subscribe (default: none)");
}

// `run`, `serve` and `demo`: pipelines and the server over the data directory.
std::vector<Command> AddPipelineCommands(CLI::App& app, Arguments& args) {
  CLI::App* run =
      app.add_subcommand("run", "Run a YAML pipeline until its sources end (or Ctrl-C)");
  run->add_option("pipeline", args.run.pipeline, "Pipeline file (YAML)")->required();
  run->add_option("--workers", args.run.workers,
                  "Worker threads (default: the pipeline's, or one per core)");
  run->add_flag("--reset", args.run.reset, "Discard the pipeline's state and checkpoint first");
  run->add_flag("--quiet,-q", args.run.quiet, "Print only errors and the final summary");
  AddDataDir(run, args);
  AddServeFlags(run, args.run.serve);

  CLI::App* serve = app.add_subcommand(
      "serve", "Serve the data directory's topics over HTTP + WebSocket until Ctrl-C");
  AddDataDir(serve, args);
  AddServeFlags(serve, args.serve.serve);
  serve
      ->add_option("--fsync", args.serve.fsync,
                   "Log fsync policy for publishes: " + weir::FsyncPolicyChoices())
      ->check(FsyncNames())
      ->capture_default_str();

  CLI::App* demo = app.add_subcommand("demo", "Generate a clickstream and run a pipeline over it");
  demo->add_option("--events", args.demo.events, "Clickstream events to generate")
      ->capture_default_str();
  AddDataDir(demo, args);

  return {WithDataDir(run, args, args.run, Run), WithDataDir(serve, args, args.serve, Serve),
          WithDataDir(demo, args, args.demo, Demo)};
}

// `produce` and `consume`: records in and out of a topic.
std::vector<Command> AddRecordCommands(CLI::App& app, Arguments& args) {
  ProduceArgs& produce = args.produce;
  CLI::App* produce_cmd = app.add_subcommand("produce", "Append JSON lines from stdin to a topic");
  produce_cmd->add_option("topic", produce.topic, "Topic")->required();
  produce_cmd->add_option("--key-field", produce.key_field,
                          "Value field that keys each record (default: no key)");
  produce_cmd->add_option("--key-type", produce.key_type, "Key type: string, int, json, bytes")
      ->capture_default_str();
  produce_cmd->add_option("--timestamp-field", produce.timestamp_field,
                          "Integer field with the event time in ms (default: now)");
  produce_cmd->add_flag("--create", produce.create, "Create the topic if it does not exist");
  produce_cmd->add_option("--fsync", produce.fsync, "Durability: " + weir::FsyncPolicyChoices())
      ->check(FsyncNames())
      ->capture_default_str();
  produce_cmd
      ->add_option("--partitions", produce.partitions, "Partitions of a topic made by --create")
      ->capture_default_str();
  AddDataDir(produce_cmd, args);

  ConsumeArgs& consume = args.consume;
  CLI::App* consume_cmd = app.add_subcommand("consume", "Print a topic's records as JSON lines");
  consume_cmd->add_option("topic", consume.topic, "Topic")->required();
  consume_cmd->add_option("--from", consume.from, "earliest, latest, or an offset")
      ->capture_default_str();
  consume_cmd->add_option("--partition", consume.partition, "Only this partition");
  consume_cmd->add_flag("--follow,-f", consume.follow, "Keep printing new records until Ctrl-C");
  consume_cmd->add_option("--max", consume.max_records, "Stop after this many records");
  AddDataDir(consume_cmd, args);
  CLI::Option* server_opt = consume_cmd->add_option(
      "--server", consume.server, "Read one partition from a Weir server at ws://HOST:PORT");
  consume_cmd
      ->add_option("--cursor", consume.cursor_file,
                   "File keeping the last offset printed: a rerun resumes after it (--from "
                   "applies only while it does not exist)")
      ->needs(server_opt);
  // Not `needs(server_opt)`: $WEIR_TOKEN in the environment must not break a local consume.
  consume_cmd->add_option("--token", consume.token, "Subscribe token for --server")
      ->envname("WEIR_TOKEN");

  return {WithDataDir(produce_cmd, args, produce, Produce),
          WithDataDir(consume_cmd, args, consume, ConsumeLocalOrRemote)};
}

// `topics create|list|describe`.
std::vector<Command> AddTopicsCommands(CLI::App& app, Arguments& args) {
  TopicArgs& topics = args.topics;
  CLI::App* topics_cmd = app.add_subcommand("topics", "Create, list and describe topics");
  topics_cmd->require_subcommand(1);
  CLI::App* create_cmd = topics_cmd->add_subcommand("create", "Create a topic");
  create_cmd->add_option("name", topics.name, "Topic name")->required();
  create_cmd->add_option("--partitions", topics.partitions, "Partitions")->capture_default_str();
  create_cmd->add_option("--retention-bytes", topics.retention_bytes,
                         "Per-partition size limit (-1: none)");
  create_cmd->add_option("--retention-ms", topics.retention_ms,
                         "Age limit by append time (-1: none)");
  create_cmd->add_option("--segment-bytes", topics.segment_bytes, "Segment file size")
      ->capture_default_str();
  AddDataDir(create_cmd, args);
  CLI::App* list_cmd = topics_cmd->add_subcommand("list", "List topics");
  AddDataDir(list_cmd, args);
  CLI::App* describe_cmd =
      topics_cmd->add_subcommand("describe", "Partitions, offsets and sizes of a topic");
  describe_cmd->add_option("name", topics.name, "Topic name")->required();
  AddDataDir(describe_cmd, args);

  return {WithDataDir(create_cmd, args, topics, TopicsCreate),
          WithDataDir(list_cmd, args, topics, TopicsList),
          WithDataDir(describe_cmd, args, topics, TopicsDescribe)};
}

// --- The lake: `views create|list|describe|rebuild|merge` and `query` ---------------------------

// The subscribe token that `views list|describe` and `query` give the server of the process
// holding the data directory, when they ask it.
void AddHolderToken(CLI::App* cmd, std::string& token) {
  cmd->add_option("--token", token,
                  "Subscribe token of the server of the process holding the data directory")
      ->envname("WEIR_TOKEN");
}

// A `views` subcommand that names a view.
CLI::App* AddViewCommand(CLI::App* views_cmd, const std::string& name, const std::string& help,
                         Arguments& args) {
  CLI::App* cmd = views_cmd->add_subcommand(name, help);
  cmd->add_option("name", args.views.name, "View")->required();
  AddDataDir(cmd, args);
  return cmd;
}

std::vector<Command> AddLakeCommands(CLI::App& app, Arguments& args) {
  ViewsArgs& views = args.views;
  CLI::App* views_cmd = app.add_subcommand(
      "views", "Views of topics materialized to Parquet (the lake): create, list, describe, ...");
  views_cmd->require_subcommand(1);
  CLI::App* create_cmd =
      views_cmd->add_subcommand("create", "Register the views of a YAML file's views: map");
  create_cmd->add_option("file", views.file, "YAML file with a views: map")->required();
  AddDataDir(create_cmd, args);
  CLI::App* list_cmd = views_cmd->add_subcommand(
      "list", "One line per view: topic, partitions, rows, bytes, stale partitions");
  AddDataDir(list_cmd, args);
  AddHolderToken(list_cmd, views.token);
  CLI::App* describe_cmd = AddViewCommand(
      views_cmd, "describe", "A view's definition, columns, schema hash and live partitions", args);
  AddHolderToken(describe_cmd, views.token);
  CLI::App* rebuild_cmd = AddViewCommand(
      views_cmd, "rebuild", "Write every partition of a view again from the log", args);
  CLI::App* merge_cmd =
      AddViewCommand(views_cmd, "merge",
                     "Merge a view's sealed partitions into partitions of a longer span", args);
  merge_cmd->add_option("--span", views.span, "Span of a merged partition (30s, 1h, 1d, ...)")
      ->capture_default_str();

  QueryArgs& query = args.query;
  CLI::App* query_cmd = app.add_subcommand(
      "query", "Run one read-only SQL query over the views (brought up to date first)");
  query_cmd->add_option("sql", query.sql, "SELECT ... (views by name)")->required();
  query_cmd->add_option("--format", query.format, "table, jsonl or csv")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}))
      ->capture_default_str();
  query_cmd->add_option("--timeout", query.timeout, "Time limit (30s, 5m, ...)")
      ->capture_default_str();
  AddDataDir(query_cmd, args);
  AddHolderToken(query_cmd, query.token);

  return {WithDataDir(create_cmd, args, views, ViewsCreate),
          WithDataDir(list_cmd, args, views, ViewsList),
          WithDataDir(describe_cmd, args, views, ViewsDescribe),
          WithDataDir(rebuild_cmd, args, views, ViewsRebuild),
          WithDataDir(merge_cmd, args, views, ViewsMerge),
          WithDataDir(query_cmd, args, query, Query)};
}

// `bench log` and `bench pipeline`.
void AddBenchLogAndPipeline(CLI::App* bench_cmd, BenchArgs& bench, std::vector<Command>& out) {
  CLI::App* bench_log =
      bench_cmd->add_subcommand("log", "Durable appends with group commit, then replay");
  bench_log->add_option("--records", bench.records, "Records")->capture_default_str();
  bench_log->add_option("--partitions", bench.partitions, "Partitions (one producer thread each)")
      ->capture_default_str();
  bench_log->add_option("--value-bytes", bench.value_bytes, "Record size in bytes")
      ->capture_default_str();
  bench_log->add_option("--fsync", bench.fsync, weir::FsyncPolicyChoices())
      ->check(FsyncNames())
      ->capture_default_str();
  bench_log->add_option("--data-dir", bench.data_dir, "Where (default: a temporary directory)");
  out.push_back({bench_log, [&bench] { return BenchLog(bench); }});

  CLI::App* bench_pipeline = bench_cmd->add_subcommand(
      "pipeline", "Running count per key over the generator, checkpoints on");
  bench_pipeline->add_option("--events", bench.records, "Events")->capture_default_str();
  bench_pipeline->add_option("--users", bench.users, "Distinct keys")->capture_default_str();
  bench_pipeline->add_option("--partitions", bench.partitions, "Generator partitions (tasks)")
      ->capture_default_str();
  bench_pipeline->add_option("--keys", bench.keys, "Key access: uniform or sessions")
      ->check(CLI::IsMember({"uniform", "sessions"}))
      ->capture_default_str();
  bench_pipeline->add_option("--data-dir", bench.data_dir,
                             "Where (default: a temporary directory)");
  out.push_back({bench_pipeline, [&bench] { return BenchPipeline(bench); }});
}

// `bench windows` and `bench join`.
void AddBenchWindowsAndJoin(CLI::App* bench_cmd, BenchArgs& bench, std::vector<Command>& out) {
  CLI::App* bench_windows = bench_cmd->add_subcommand(
      "windows", "Windowed count and sum over the generator (out of order), checkpoints on");
  bench_windows
      ->add_option("--window", bench.window,
                   "session (30 s gap), tumbling (10 s) or hopping (10 s / 2 s)")
      ->check(CLI::IsMember({"session", "tumbling", "hopping"}))
      ->capture_default_str();
  bench_windows->add_option("--closing", bench.closing, "key or partition")
      ->check(CLI::IsMember({"key", "partition"}))
      ->capture_default_str();
  bench_windows->add_option("--events", bench.records, "Events")->capture_default_str();
  bench_windows->add_option("--users", bench.users, "Distinct keys")->capture_default_str();
  bench_windows->add_option("--partitions", bench.partitions, "Generator partitions (tasks)")
      ->capture_default_str();
  bench_windows
      ->add_option("--keys", bench.window_keys,
                   "sessions (users come and go) or uniform (every key always, one event "
                   "per key per second: as many open windows as keys)")
      ->check(CLI::IsMember({"uniform", "sessions"}))
      ->capture_default_str();
  bench_windows->add_option("--data-dir", bench.data_dir, "Where (default: a temporary directory)");
  out.push_back({bench_windows, [&bench] { return BenchWindows(bench); }});

  CLI::App* bench_join = bench_cmd->add_subcommand(
      "join", "Joins from the embedded log: sensor assembly in time mode, or an interval join");
  bench_join
      ->add_option("--join", bench.join,
                   "time (throughput), pending (memory per pending group) or interval")
      ->check(CLI::IsMember({"time", "pending", "interval"}))
      ->capture_default_str();
  bench_join->add_option("--events", bench.records, "Input messages, all inputs together")
      ->capture_default_str();
  bench_join
      ->add_option(
          "--sync-hz", bench.sync_hz,
          "Time mode: the synchronized sensors' rate (at most 200 Hz: timestamps are in ms, "
          "and the tolerance must stay below half a period)")
      ->check(CLI::Range(1, 200))
      ->capture_default_str();
  bench_join->add_option("--keys", bench.users, "Interval join: distinct keys")
      ->capture_default_str();
  bench_join->add_option("--partitions", bench.partitions, "Partitions (tasks)")
      ->capture_default_str();
  bench_join->add_option("--data-dir", bench.data_dir, "Where (default: a temporary directory)");
  out.push_back({bench_join, [&bench] { return BenchJoin(bench); }});
}

// `bench nexmark`.
Command AddBenchNexmark(CLI::App* bench_cmd, BenchArgs& bench) {
  CLI::App* bench_nexmark = bench_cmd->add_subcommand(
      "nexmark", "A Nexmark query over the in-process generator, checked against DuckDB");
  bench_nexmark->add_option("--query", bench.query, "q0 q1 q2 q3 q4 q5 q7 q8 q11 q12")
      ->capture_default_str();
  bench_nexmark->add_option("--events", bench.records, "Events generated")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench_nexmark
      ->add_option("--rate", bench.rate,
                   "Events/s, live (event time = wall clock), with latency measured; 0: as fast "
                   "as possible")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench_nexmark
      ->add_option("--event-rate", bench.event_rate,
                   "Events per second of event time when not live (the reference's default)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_nexmark->add_option("--grace-ms", bench.grace_ms, "Out-of-orderness windows accept")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bench_nexmark
      ->add_option("--checkpoint-ms", bench.checkpoint_ms,
                   "Checkpoint interval: outputs are served once checkpointed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_nexmark
      ->add_option("--out-of-order-group", bench.out_of_order_group,
                   "The reference's disorder: events shuffled within groups of this many")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_nexmark->add_option("--partitions", bench.partitions, "Source partitions (tasks)")
      ->capture_default_str();
  bench_nexmark
      ->add_option("--sink", bench.nexmark_sink,
                   "topic (the output log, every row checked against DuckDB) or discard "
                   "(dropped: rows counted against DuckDB's)")
      ->capture_default_str();
  bench_nexmark->add_option("--data-dir", bench.data_dir, "Where (default: a temporary directory)");
  return {bench_nexmark, [&bench] { return BenchNexmark(bench); }};
}

// `bench process`.
Command AddBenchProcess(CLI::App* bench_cmd, BenchArgs& bench) {
  CLI::App* cmd = bench_cmd->add_subcommand(
      "process", "Keyed process function: count + idle timer per key, native or remote worker");
  cmd->add_option("--handler", bench.handler, "native, cpp, python or node")->capture_default_str();
  cmd->add_option("--worker", bench.worker,
                  "weir-cpp-worker binary or count_idle script (default: beside the weir binary, "
                  "or examples/workers/)");
  cmd->add_option("--events", bench.records, "Events")->capture_default_str();
  cmd->add_option("--keys", bench.users, "Distinct keys")->capture_default_str();
  cmd->add_option("--idle-ms", bench.idle_ms, "The idle timer, ms after a key's last input")
      ->capture_default_str();
  cmd->add_option("--event-rate", bench.process_event_rate,
                  "Event-time events/s (0: a key's mean gap between inputs is the idle time)")
      ->capture_default_str();
  cmd->add_option("--sink", bench.sink, "discard (checked in memory) or topic (read back)")
      ->capture_default_str();
  cmd->add_option("--per-call", bench.per_call, "Activations per call at most")
      ->capture_default_str();
  cmd->add_option("--partitions", bench.partitions, "Generator partitions (tasks)")
      ->capture_default_str();
  cmd->add_option("--data-dir", bench.data_dir, "Where (default: a temporary directory)");
  return {cmd, [&bench] { return BenchProcess(bench); }};
}

// `bench lake`.
Command AddBenchLake(CLI::App* bench_cmd, BenchArgs& bench) {
  CLI::App* cmd = bench_cmd->add_subcommand(
      "lake", "Nexmark bids materialized to Parquet by a lake view, and queried (checked)");
  cmd->add_option("--bids", bench.lake_bids, "Bids")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--sql", bench.lake_sql,
                "Materialize through a SQL transform (Nexmark q1's currency conversion)");
  cmd->add_option("--sql-text", bench.lake_sql_text,
                  "Materialize through this SQL over `records` (it must keep every bid and price)");
  cmd->add_option("--span-ms", bench.lake_span_ms,
                  "Insert-time span of the day's partitions: each of the 24 bursts starts one")
      ->capture_default_str();
  cmd->add_option("--query-runs", bench.lake_query_runs, "Runs of each query (the median)")
      ->capture_default_str();
  cmd->add_option("--batch-records", bench.lake_batch_records,
                  "Records the lake holds in memory at once while it writes a range (0: default)")
      ->capture_default_str();
  cmd->add_option("--pipeline-events", bench.lake_pipeline_events,
                  "Also run Nexmark q0 over this many events with and without a view of its "
                  "output refreshed in the background (0: not)")
      ->capture_default_str();
  cmd->add_option("--data-dir", bench.data_dir, "Where (default: a temporary directory)");
  return {cmd, [&bench] { return BenchLake(bench); }};
}

// `bench catchup`.
Command AddBenchCatchup(CLI::App* bench_cmd, CatchupBenchArgs& args) {
  CLI::App* cmd = bench_cmd->add_subcommand(
      "catchup", "A subscriber's replay from the log, then from the archive past retention");
  cmd->add_option("--messages", args.messages, "Messages")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--value-bytes", args.value_bytes, "Message size in bytes")
      ->check(CLI::Range(40, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--chunk", args.chunk, "Messages per archive chunk")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--runs", args.runs, "Runs of each replay")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--data-dir", args.data_dir, "Where (default: a temporary directory)");
  return {cmd, [&args] { return BenchCatchup(args); }};
}

// `bench log|pipeline|windows|join|nexmark|process|lake|catchup`: each takes its own --data-dir
// (default: a temporary directory), not the shared one.
std::vector<Command> AddBenchCommands(CLI::App& app, Arguments& args) {
  CLI::App* bench_cmd =
      app.add_subcommand("bench", "Benchmarks (figures, checked for correctness)");
  bench_cmd->require_subcommand(1);
  std::vector<Command> commands;
  AddBenchLogAndPipeline(bench_cmd, args.bench, commands);
  AddBenchWindowsAndJoin(bench_cmd, args.bench, commands);
  commands.push_back(AddBenchNexmark(bench_cmd, args.bench));
  commands.push_back(AddBenchProcess(bench_cmd, args.bench));
  commands.push_back(AddBenchLake(bench_cmd, args.bench));
  commands.push_back(AddBenchCatchup(bench_cmd, args.catchup));
  return commands;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must fail writes with EFBIG, reported as an error, rather than
  // kill the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{
      "Weir: a stream-processing engine. Durable partitioned logs, stateful dataflows, "
      "exactly-once checkpoints, one binary."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Every command's help");

  Arguments args;
  std::vector<Command> commands;
  // In this order: it is the order of `weir --help`.
  for (auto add : {AddPipelineCommands, AddRecordCommands, AddTopicsCommands, AddLakeCommands,
                   AddBenchCommands}) {
    for (Command& command : add(app, args)) commands.push_back(std::move(command));
  }

  CLI11_PARSE(app, argc, argv);

  for (const Command& command : commands) {
    if (command.cli->parsed()) return command.run();
  }
  return 2;
}
