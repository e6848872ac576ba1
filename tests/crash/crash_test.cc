// The exactly-once crash test (in the style of RocksDB's db_crashtest.py): a stateful pipeline
// with a repartition step is killed with SIGKILL at random instants and at every phase of the
// checkpoint protocol, restarted each time, and its final outputs are compared record by record
// with those of a run that was never interrupted.
//
// WEIR_CRASH_KILLS sets the number of kills (default 24; the long mode runs hundreds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "app/testing.h"
#include "testing/subprocess.h"

namespace weir {
namespace {

// `weir run` serves its topics, by default on port 8080: tests run side by side, so each run
// takes any free port.
const bool kAnyFreePort = setenv("WEIR_LISTEN", "127.0.0.1:0", 1) == 0;

using testing::ReadLines;
using testing::ReadTopic;
using testing::Subprocess;
using testing::TempDir;

constexpr int kRecords = 100'000;

void WriteInput(const std::string& path) {
  std::mt19937 rng(11);
  std::vector<std::string> lines;
  for (int i = 0; i < kRecords; ++i) {
    if (i % 9973 == 5000) lines.push_back(R"({"user": "broken", "ts": )");  // dead letters too
    lines.push_back(R"({"id":)" + std::to_string(i) + R"(,"user":"u)" +
                    std::to_string(rng() % 500) + R"(","page":"p)" + std::to_string(rng() % 97) +
                    R"(","ts":)" + std::to_string(1'700'000'000'000 + i * 10) + "}");
  }
  testing::WriteLines(path, lines);
}

void WritePipeline(const std::string& path, int rate) {
  testing::WriteLines(path,
                      {
                          "name: crash-count",
                          "source: {file: input.jsonl, key: user, timestamp: ts" +
                              (rate > 0 ? ", rate: " + std::to_string(rate) : std::string()) + "}",
                          "steps:",
                          "  - group_by: {field: page, partitions: 4}",
                          "  - aggregate: {n: count, last_id: {max: id}}",
                          "sinks:",
                          "  - {topic: crash.counts}",
                          "  - {file: counts.jsonl}",
                          "checkpoint: {interval_ms: 40, records: 7000}",
                          "workers: 2",
                      });
}

struct Outputs {
  std::vector<testing::TopicRecord> topic;
  std::multiset<std::string> file_lines;
  std::vector<std::string> dead_letter_reasons;
};

Outputs Collect(const TempDir& dir) {
  Outputs o;
  o.topic = ReadTopic(dir / "data", "crash.counts");
  for (const std::string& line : ReadLines(dir / "counts.jsonl")) o.file_lines.insert(line);
  for (const auto& d : ReadTopic(dir / "data", "crash-count.dlq")) {
    o.dead_letter_reasons.push_back(std::string(d.value.Find("reason")->as_string()) + " @ line " +
                                    d.value.FindPath("position.line")->ToJson());
  }
  return o;
}

testing::CommandResult RunToEnd(const TempDir& dir, const std::vector<std::string>& env = {}) {
  return testing::RunCommand(
      {WEIR_BINARY, "run", dir / "pipeline.yaml", "--data-dir", dir / "data", "-q"},
      dir.path().string(), "", env);
}

TEST(CrashTest, KilledAtRandomAndAtEveryCheckpointPhaseTheOutputsEqualAnUninterruptedRun) {
  const char* env_kills = std::getenv("WEIR_CRASH_KILLS");
  const int kills = env_kills ? std::atoi(env_kills) : 24;

  TempDir reference;
  WriteInput(reference / "input.jsonl");
  WritePipeline(reference / "pipeline.yaml", 0);
  testing::CommandResult ref = RunToEnd(reference);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  Outputs want = Collect(reference);
  ASSERT_EQ(want.topic.size(), static_cast<size_t>(kRecords));

  TempDir crashed;
  WriteInput(crashed / "input.jsonl");
  // Paced so that the input lasts through every kill (a quarter second of input per kill), so that
  // most kills land in a running pipeline rather than in a resumed, finished one.
  WritePipeline(crashed / "pipeline.yaml", std::clamp(4 * kRecords / kills, 1'000, 25'000));
  std::mt19937 rng(std::random_device{}());
  const std::vector<std::string> phases = {
      "checkpoint.before_prepare", "checkpoint.before_manifest", "checkpoint.after_manifest"};
  int killed = 0, killed_at_phase = 0, completed_early = 0, armed = 0;
  for (int k = 0; k < kills; ++k) {
    std::vector<std::string> env;
    bool at_phase = k % 3 == 2;  // every third kill lands inside the checkpoint protocol
    if (at_phase) {
      ++armed;
      env.push_back("WEIR_FAULT=" + phases[(k / 3) % phases.size()] + ":" +
                    std::to_string(1 + rng() % 5));
    }
    Subprocess run(
        {WEIR_BINARY, "run", crashed / "pipeline.yaml", "--data-dir", crashed / "data", "-q"},
        crashed.path().string(), "", env);
    // A round armed with a crash point waits for it to fire; the others die at a random instant.
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(at_phase ? 10'000 : 50 + rng() % 700);
    while (std::chrono::steady_clock::now() < deadline && !run.Done()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const bool ended_by_itself = run.Done();  // completed, or killed itself at a crash point
    run.Kill(SIGKILL);
    testing::CommandResult r = run.Wait();
    if (r.exit_code == 0) {
      ++completed_early;  // it finished before the kill: later rounds resume a completed run
    } else {
      ASSERT_EQ(r.exit_code, -SIGKILL) << "a run failed instead of being killed: " << r.err;
      ++killed;
      if (ended_by_itself) ++killed_at_phase;
    }
  }
  testing::CommandResult last = RunToEnd(crashed);
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_GE(killed, kills / 2) << "most rounds must really kill a running pipeline";
  EXPECT_GE(killed_at_phase, armed * 2 / 3)
      << "crash points inside the checkpoint protocol must fire";

  Outputs got = Collect(crashed);
  // The topic: every partition written by one task in input order, so record by record equal.
  ASSERT_EQ(got.topic.size(), want.topic.size()) << "loss or duplicates in the output topic";
  for (size_t i = 0; i < want.topic.size(); ++i) {
    ASSERT_EQ(got.topic[i].partition, want.topic[i].partition) << i;
    ASSERT_EQ(got.topic[i].offset, want.topic[i].offset) << i;
    ASSERT_EQ(got.topic[i].key_json, want.topic[i].key_json) << i;
    ASSERT_EQ(got.topic[i].timestamp, want.topic[i].timestamp) << i;
    ASSERT_EQ(got.topic[i].value, want.topic[i].value)
        << i << ": " << got.topic[i].value.ToJson() << " vs " << want.topic[i].value.ToJson();
  }
  // The file: four tasks append to it, so lines interleave differently; as a multiset, equal.
  EXPECT_EQ(got.file_lines.size(), want.file_lines.size());
  EXPECT_TRUE(got.file_lines == want.file_lines) << "the file sink differs from the reference";
  EXPECT_EQ(got.dead_letter_reasons, want.dead_letter_reasons);
  std::printf(
      "crash test: %d kills (%d of them inside the checkpoint protocol), %d runs that "
      "completed first\n",
      killed, killed_at_phase, completed_early);
}

}  // namespace
}  // namespace weir
