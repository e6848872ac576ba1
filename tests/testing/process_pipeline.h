// Whole-system tests of the process step through the `weir` binary (WEIR_BINARY): a pipeline of a
// file source, one `process:` step with a worker, and a file sink, written as YAML into a scratch
// directory, and `weir run` over it.
#pragma once

#include <string>
#include <vector>

#include "app/testing.h"
#include "testing/subprocess.h"

namespace weir::testing {

// DIR/pipeline.yaml reads DIR/input.jsonl (keyed by "user", timed by "ts"), runs the process
// step, writes DIR/output.jsonl; its dead letters go to the topic NAME.dlq.
struct ProcessPipeline {
  std::string name;
  std::string function_id;
  std::vector<std::string> worker;  // the command, run in DIR
  std::vector<std::string> state;
  std::vector<std::string> timers;
  int rate = 0;                    // the source's records/s; 0: as fast as it reads
  int checkpoint_interval_ms = 0;  // 0: the default
};

inline std::string YamlList(const std::vector<std::string>& items) {
  std::string list;
  for (const std::string& item : items) list += (list.empty() ? "" : ", ") + item;
  return "[" + list + "]";
}

inline void WriteProcessPipeline(const TempDir& dir, const ProcessPipeline& p) {
  std::vector<std::string> lines = {
      "name: " + p.name,
      "source: {file: input.jsonl, key: user, timestamp: ts" +
          (p.rate > 0 ? ", rate: " + std::to_string(p.rate) : std::string()) + "}",
      "steps:",
      "  - process:",
      "      id: " + p.function_id,
      "      worker: " + YamlList(p.worker),
      "      state: " + YamlList(p.state),
      "      timers: " + YamlList(p.timers),
      "sinks:",
      "  - {file: output.jsonl}",
  };
  if (p.checkpoint_interval_ms > 0) {
    lines.push_back("checkpoint: {interval_ms: " + std::to_string(p.checkpoint_interval_ms) + "}");
  }
  WriteLines(dir / "pipeline.yaml", lines);
}

// `weir run DIR/pipeline.yaml --data-dir DIR/data -q` in DIR, not serving its topics (tests run
// side by side), with `env` added to its environment.
inline std::vector<std::string> WeirRun(const TempDir& dir) {
  return {WEIR_BINARY, "run", dir / "pipeline.yaml", "--data-dir", dir / "data", "-q"};
}
inline std::vector<std::string> WeirRunEnvironment(std::vector<std::string> env = {}) {
  env.push_back("WEIR_LISTEN=off");
  return env;
}
inline CommandResult RunPipelineToEnd(const TempDir& dir, std::vector<std::string> env = {}) {
  return RunCommand(WeirRun(dir), dir.path().string(), "", WeirRunEnvironment(std::move(env)));
}

}  // namespace weir::testing
