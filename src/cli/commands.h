// The `weir` commands, independent of argument parsing (main.cc holds CLI11). Each returns the
// process exit code and prints errors as one line on stderr: "weir: <what and where>".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "dataflow/kind_registry.h"
#include "weir/application.h"
#include "weir/serve.h"
#include "weir/status.h"

namespace weir::cli {

// The kinds a pipeline file may name: the engine's, the Nexmark source and the NATS connector.
const dataflow::KindRegistry& PipelineKinds();

class LakeService;  // lake_cli.h

// Serves the data directory's topics over HTTP + WebSocket while an application runs
// (ApplicationOptions::services); `on_listening` is told the port once the server listens.
// With `lake`, also its views (POST /query, GET /views): the lake starts and stops with the
// server, and <data-dir>/server.json says where it listens.
std::shared_ptr<RunService> ServeTopicsWhileRunning(ServerOptions options,
                                                    std::function<void(int port)> on_listening = {},
                                                    std::shared_ptr<LakeService> lake = nullptr);

// How a pipeline's refusals name their ways out on the command line: `weir run --reset`,
// `--data-dir`.
inline WaysOut CommandLineWaysOut() {
  return {.reset = "weir run --reset", .data_dir = "--data-dir"};
}

// Prints "weir: <message>" and returns 1 (2 for bad input or configuration).
int Fail(const Status& status);

// `--listen` and the server's limits, shared by `run` and `serve`.
struct ServeFlags {
  std::string listen;  // HOST:PORT or "off"; empty: $WEIR_LISTEN, else 127.0.0.1:8080
  ServerOptions options;
  // The server's options, or nullopt for "off". kInvalidArgument for a bad address.
  Result<std::optional<ServerOptions>> Resolve() const;
};

struct RunArgs {
  std::string pipeline;
  std::string data_dir;
  int workers = 0;
  bool reset = false;
  bool quiet = false;
  ServeFlags serve;
};
int Run(const RunArgs& args);

struct ServeArgs {
  std::string data_dir;
  std::string fsync = "group";
  ServeFlags serve;
};
// Serves the data directory's topics until Ctrl-C.
int Serve(const ServeArgs& args);

struct DemoArgs {
  std::string data_dir;
  int64_t events = 200'000;
};
int Demo(const DemoArgs& args);

struct ProduceArgs {
  std::string topic;
  std::string data_dir;
  std::string key_field;
  std::string key_type = "string";
  std::string timestamp_field;
  bool create = false;
  int32_t partitions = 1;  // with create, for a new topic
  std::string fsync = "group";
};
int Produce(const ProduceArgs& args);

struct ConsumeArgs {
  std::string topic;
  std::string data_dir;
  std::string from = "earliest";  // earliest, latest or an offset
  int32_t partition = -1;         // -1: every partition
  bool follow = false;
  int64_t max_records = -1;
  std::string server;       // ws://HOST:PORT: read from a Weir server instead of data_dir
  std::string cursor_file;  // with server: the last offset printed, resumed after
  std::string token;        // with server: the subscribe token
};
int Consume(const ConsumeArgs& args);
// Consume through a weir::Subscription (consume_remote.cc): one partition, default 0.
int ConsumeRemote(const ConsumeArgs& args);

struct TopicArgs {
  std::string data_dir;
  std::string name;
  int32_t partitions = 1;
  int64_t retention_bytes = -1;
  int64_t retention_ms = -1;
  int64_t segment_bytes = 128 << 20;
};
int TopicsCreate(const TopicArgs& args);
int TopicsList(const TopicArgs& args);
int TopicsDescribe(const TopicArgs& args);

struct BenchArgs {
  std::string data_dir;  // empty: a fresh temporary directory, removed after
  int64_t records = 5'000'000;
  int32_t partitions = 2;
  int64_t users = 100'000;
  int value_bytes = 100;
  std::string fsync = "group";
  // Pipeline: "uniform" (every key in play all the time) or "sessions" (users come and go, as
  // in a clickstream: a sliding fifth of them active).
  std::string keys = "uniform";
  // Windows: session, tumbling or hopping; closing key or partition.
  std::string window = "session";
  std::string window_keys = "sessions";  // as `keys`, for windows
  std::string closing = "key";
  // Joins: "time" (input-group assembly of sensors) or "interval".
  std::string join = "time";
  int sync_hz = 100;  // the synchronized sensors' rate
  // Nexmark: the query, the wall-clock rate of a live run (0: as fast as possible), the
  // event-time rate of the generator otherwise, and the windows' grace.
  std::string query = "q0";
  double rate = 0;
  double event_rate = 10'000;
  int64_t grace_ms = 4'000;
  int64_t checkpoint_ms = 1'000;   // outputs are visible once checkpointed
  int64_t out_of_order_group = 1;  // the generator's disorder (1: in order)
  // Where the query's results go: "topic" (the durable output topic, checked row by row against
  // DuckDB) or "discard" (dropped, counted; the engine without its output log).
  std::string nexmark_sink = "topic";
  // Process functions: the handler (native, cpp, python or node), its worker (a weir-cpp-worker
  // binary or a count_idle script; empty: looked for beside the weir binary and in
  // examples/workers), the idle timer, the event-time rate (0: a key's mean gap between inputs
  // is the idle time), the sink (discard or topic) and the activations per call.
  std::string handler = "native";
  std::string worker;
  int64_t idle_ms = 60'000;
  double process_event_rate = 0;
  std::string sink = "discard";
  int64_t per_call = 256;
  // Lake (bench_lake.cc): the bids, the view's SQL transform (--sql: the built-in one;
  // --sql-text: any that keeps every bid and its price), the insert-time span of the day's
  // partitions, the runs of each query, the records of a file before the lake merges files (0:
  // the lake's default), and the Nexmark q0 events of the pipeline-cost runs (0: skipped).
  int64_t lake_bids = 2'000'000;
  bool lake_sql = false;
  std::string lake_sql_text;
  int64_t lake_span_ms = 500;
  int lake_query_runs = 5;
  int64_t lake_batch_records = 0;
  int64_t lake_pipeline_events = 0;
};
int BenchLog(const BenchArgs& args);
int BenchPipeline(const BenchArgs& args);
int BenchWindows(const BenchArgs& args);
int BenchJoin(const BenchArgs& args);
int BenchNexmark(const BenchArgs& args);
int BenchProcess(const BenchArgs& args);
int BenchLake(const BenchArgs& args);

// `weir bench catchup` (bench_catchup.cc): a subscriber replaying a topic from offset 0 out of
// the log, then (once retention evicted it) out of its archive, through the server.
struct CatchupBenchArgs {
  std::string data_dir;  // empty: a fresh temporary directory, removed after
  int64_t messages = 1'000'000;
  int value_bytes = 100;
  size_t chunk = 4096;  // messages per archive chunk
  int runs = 3;         // of each replay (the median is printed too)
};
int BenchCatchup(const CatchupBenchArgs& args);

// --- The lake: `weir views ...` and `weir query` (views.cc) --------------------------------------

struct ViewsArgs {
  std::string data_dir;
  std::string file;         // create: a YAML file with a `views:` map
  std::string name;         // describe, rebuild, merge
  std::string span = "1d";  // merge: the span of a merged partition
  std::string token;        // list, describe: the subscribe token of the directory's holder
};
int ViewsCreate(const ViewsArgs& args);
int ViewsList(const ViewsArgs& args);
int ViewsDescribe(const ViewsArgs& args);
int ViewsRebuild(const ViewsArgs& args);
int ViewsMerge(const ViewsArgs& args);

struct QueryArgs {
  std::string sql;
  std::string data_dir;
  std::string format = "table";  // table, jsonl or csv
  std::string timeout = "60s";
  std::string token;  // the subscribe token of the directory's holder
};
// Runs one read-only SQL query over the lake's views; asks the process holding the data
// directory (POST /query) if there is one.
int Query(const QueryArgs& args);

// Ctrl-C / SIGTERM: the first asks `on_stop` to stop cleanly; the second exits at once.
void InstallStopHandler(std::function<void()> on_stop);

}  // namespace weir::cli
