// The YAML form of a process step: what it refuses at start (naming the YAML path), and the
// implementation digest of the worker's files that a restart must match. Real worker processes
// (python3 with examples/workers/python), the real engine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app/pipeline_yaml.h"
#include "app/testing.h"
#include "dataflow/builtin_kinds.h"
#include "process/process_step.h"

namespace weir::process {
namespace {

using testing::ReadLines;
using testing::TempDir;
using testing::WriteLines;

const dataflow::KindRegistry& Kinds() {
  static const dataflow::KindRegistry kinds = [] {
    dataflow::KindRegistry all = dataflow::BuiltinKinds();
    RegisterProcessStep(all);
    return all;
  }();
  return kinds;
}

Result<std::unique_ptr<Application>> Load(const TempDir& dir, const std::string& process) {
  app::PipelineOverrides overrides;
  overrides.kinds = &Kinds();
  overrides.data_dir = dir / "data";
  return app::LoadPipelineText(
      "source: {file: in.jsonl, key: user, timestamp: ts}\n"
      "steps:\n"
      "  - process: " +
          process +
          "\n"
          "sink: {file: out.jsonl}\n",
      "p.yaml", std::string(dir.path()), overrides);
}

TEST(ProcessYaml, BadDefinitionsFailAtStartNamingThePath) {
  TempDir dir;
  for (const auto& [process, error] : std::vector<std::pair<std::string, std::string>>{
           {"{worker: [python3, w.py]}", "steps[0].process: missing 'id'"},
           {"{id: f}", "steps[0].process: needs exactly one of worker"},
           {"{id: f, worker: [python3], connect: 'unix:/tmp/s'}", "needs exactly one of worker"},
           {"{id: f, worker: []}", "steps[0].process.worker: is an empty command"},
           {"{id: f, worker: [python3], limits: {max_keyz: 1}}", "steps[0].process.limits"},
           {"{id: f, worker: [python3], limits: {max_keys: 0}}",
            "steps[0].process.limits.max_keys"},
           {"{id: f, worker: [python3], retries: -1}", "steps[0].process.retries"},
           {"{id: f, worker: [python3], timers: [a, a]}", "timer 'a' is declared twice"},
           {"{id: f, worker: [python3], state: x}", "steps[0].process.state"},
           {"{id: f, worker: [python3], files: [missing.py]}", "missing.py"},
           {"{id: f, worker: [python3], colour: red}", "colour"}}) {
    auto loaded = Load(dir, process);
    ASSERT_FALSE(loaded.ok()) << process;
    EXPECT_NE(loaded.status().message().find(error), std::string::npos)
        << process << "\n" << loaded.status().message();
  }
}

// A step that loads but cannot start its worker: the run stops, naming `named`.
void ExpectTheRunRefused(const std::string& process, const std::string& named) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {R"({"user":"a","ts":1})"});
  auto app = Load(dir, process);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  auto run = (*app)->Run();
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find(named), std::string::npos) << run.status().message();
}

TEST(ProcessYaml, AWorkerThatCannotRunStopsTheRunWithTheReason) {
  ExpectTheRunRefused("{id: f, worker: [no-such-weir-worker-program]}",
                      "no-such-weir-worker-program");
}

TEST(ProcessYaml, ANonLoopbackConnectIsRefused) {
  ExpectTheRunRefused("{id: f, connect: '10.1.2.3:7000'}", "10.1.2.3");
}

// A Python worker counting each user's events, emitting the count when the user has been idle
// for a second of event time.
void WriteCountWorker(const TempDir& dir, std::string_view comment) {
  std::ofstream out(dir / "count.py");
  out << "# " << comment << "\n"
      << "import sys\n"
      << "sys.path.insert(0, '" << WEIR_WORKER_EXAMPLES << "/python')\n"
      << "import weir_worker\n"
      << "def on_input(a, r):\n"
      << "    r.set('n', a.state.get('n', 0) + 1)\n"
      << "    r.set_timer('idle', a.time + 1000)\n"
      << "def on_timer(a, r):\n"
      << "    r.emit({'user': a.key, 'n': a.state['n']}, a.time)\n"
      << "    r.clear('n')\n"
      << "weir_worker.run(on_input, on_timer)\n";
}

TEST(ProcessYaml, APythonWorkerRunsAndAChangedScriptIsRefusedOnRestart) {
  TempDir dir;
  // b at 4000 moves the watermark past a's timer (2800) after b's own event moved b's timer to
  // 5000; a at 5000 comes before b's timer fires at that watermark; a's last fires at the end.
  WriteLines(dir / "in.jsonl", {R"({"user":"a","ts":1000})", R"({"user":"b","ts":1500})",
                                R"({"user":"a","ts":1800})", R"({"user":"b","ts":4000})",
                                R"({"user":"a","ts":5000})"});
  WriteCountWorker(dir, "version one");
  const std::string step = "{id: count, worker: [python3, count.py], state: [n], timers: [idle]}";
  auto app = Load(dir, step);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  auto run = (*app)->Run();
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::vector<std::string> values;
  for (const std::string& line : ReadLines(dir / "out.jsonl")) {
    values.push_back(Value::Parse(line)->Find("value")->ToJson());
  }
  EXPECT_EQ(values, (std::vector<std::string>{R"({"user":"a","n":2})", R"({"user":"b","n":2})",
                                              R"({"user":"a","n":1})"}));

  WriteCountWorker(dir, "version two");
  auto changed = Load(dir, step);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  auto refused = (*changed)->Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("implementation_digest"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace weir::process
