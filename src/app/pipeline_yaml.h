// YAML pipelines: the common pipelines with no C++ code (`weir run PIPELINE.yaml`).
//
// The loader knows no particular kind: each source, step, sink and join kind parses its own YAML
// (dataflow/kind_registry.h); the forms below are those of the engine's kinds and of the
// connectors and sources the `weir` binary registers.
//
//   name: purchases                 # optional; default: the file name without .yaml
//   source:                         # one of file / topic / generator / nexmark / jetstream
//     file: events.jsonl            # relative paths are relative to the YAML file
//     key: user                     # or {field: user, type: string|int|json|bytes}
//     timestamp: ts                 # integer milliseconds; optional
//     dead_letter: purchases.dlq    # optional; default <name>.dlq
//     rate: 1000                    # optional throttle, records/s
//     # topic: clicks   (+ bounded: true, start: earliest|latest|OFFSET for a first run)
//     # generator: {partitions, events, users, ...}
//     # nexmark: {partitions, events, events_per_second, first_event_ms, seed,
//     #           out_of_order_group_size, real_time}   (the Nexmark benchmark's events)
//     # jetstream: {url, stream, subject, durable, max_deliver, ack_wait_ms,
//     #             dead_letter_subject}   (+ bounded: true)
//   steps:
//     - filter: {field: action, eq: purchase}  # eq ne gt ge lt le in exists
//     - select: [user, page, amount]
//     - group_by: page                         # or {field, type, partitions}; no type: the
//                                              # field's own (string, integer, else JSON)
//     - aggregate: {sales: count, revenue: {sum: amount}}   # count sum mean min max
//     - process: {id: fraud, worker: [python3, fraud.py], state: [...], timers: [...],
//                 version, connect, files, limits: {...}, deadline_ms, retries, ...}
//                                              # keyed process function (src/process/README.md)
//   sink: {file: out.jsonl}         # or {topic: name, partitions: N}, {stdout: true}; or sinks:
//   views: {...}                    # lake views of topics (src/lake/view.h): `weir run`
//                                   # registers them; the loader leaves them alone
//
// Joins (weir/join.h) start from named streams instead of `source`, each {source, steps}:
//   streams: {camera: {source: {...}}, lidar: {source: {...}, steps: [...]}, imu: {...}}
//   join: {parents: [camera, lidar, imu], mode: trace|time, trace_field, time_field,
//          tolerance_ms, timeout_ms, quorum, collect: {imu: 5}, missing: drop|error,
//          max_pending, collect_cap, max_deliver, dedup_ms}
//   # or interval_join: {left, right, lower_ms, upper_ms, left_outer, grace_ms, late: topic}
//   # or asof_join: {left, right, lookback_ms, grace_ms, late: topic}
//   steps: [...]                    # after the join
//   [...] checkpoint: {interval_ms: 1000, records: 200000} workers: 2 partitions: 4 # repartition
//   topics
//
// Every error names the file, the path of the offending key, what was expected and what was
// found, and the line: "p.yaml: steps[1].filter.eq: expected a scalar, found a map (line 7)".
#pragma once

#include <memory>
#include <string>

#include "dataflow/kind_registry.h"
#include "weir/application.h"
#include "weir/status.h"

namespace weir::app {

struct PipelineOverrides {
  std::string data_dir = "./weir-data";
  int workers = 0;  // 0: keep the file's (or the default)
  std::function<void(const std::string&)> on_progress;
  std::vector<std::shared_ptr<RunService>> services;
  WaysOut ways_out;  // how refusals name their ways out (the CLI's flags from `weir run`)
  // The kinds the file may name; nullptr: the engine's own (dataflow::BuiltinKinds()).
  const dataflow::KindRegistry* kinds = nullptr;
};

// Builds the application a YAML file describes. kInvalidArgument for any error in the file,
// kNotFound/kIOError if it cannot be read.
Result<std::unique_ptr<Application>> LoadPipelineFile(const std::string& path,
                                                      const PipelineOverrides& overrides);
// The same from text; `file_name` names it in errors and gives the default name, `base_dir`
// resolves relative paths.
Result<std::unique_ptr<Application>> LoadPipelineText(const std::string& text,
                                                      const std::string& file_name,
                                                      const std::string& base_dir,
                                                      const PipelineOverrides& overrides);

}  // namespace weir::app
