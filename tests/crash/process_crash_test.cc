// The exactly-once crash test of a process step with a remote worker: a pipeline whose handler is
// a Python worker (process_crash_worker.py, on examples/workers/python/weir_worker.py) is killed
// with SIGKILL at random instants, and in every other round its worker kills itself too (at an
// activation picked at random), then `weir run` goes on over the same data directory; in the end
// its output file must equal, line by line, that of a run that was never interrupted, and so must
// its dead letters.
//
// WEIR_CRASH_KILLS sets the number of rounds (default 24), each a kill of Weir.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "testing/process_pipeline.h"

namespace weir {
namespace {

using testing::Subprocess;
using testing::TempDir;

constexpr int kRecords = 3000;
constexpr int kUsers = 50;

// Events 10 ms apart, one in eight up to half a second behind the watermark. A call holds one
// activation per user, so it spans up to 50 inputs, about 0.5 s of event time: longer than the
// worker's 200 ms timer, so timers set in a call come due inside it too.
void WriteInput(const TempDir& dir) {
  std::mt19937 rng(16);
  std::vector<std::string> lines;
  for (int i = 0; i < kRecords; ++i) {
    const int64_t ts = 1'700'000'000'000 + i * 10 - (rng() % 8 == 0 ? rng() % 500 : 0);
    lines.push_back(R"({"user":"u)" + std::to_string(rng() % kUsers) + R"(","ts":)" +
                    std::to_string(ts) + R"(,"amount":)" + std::to_string(rng() % 100) +
                    (i % 997 == 500 ? R"(,"poison":true})" : "}"));
  }
  testing::WriteLines(dir / "input.jsonl", lines);
}

// The input, the worker and its library in `dir`, and a pipeline reading at `rate` records/s.
void Prepare(const TempDir& dir, int rate) {
  WriteInput(dir);
  for (const std::string& file : {std::string(WEIR_WORKER_EXAMPLES) + "/python/weir_worker.py",
                                  std::string(WEIR_CRASH_TESTS) + "/process_crash_worker.py"}) {
    std::filesystem::copy_file(file, dir / std::filesystem::path(file).filename().string());
  }
  testing::WriteProcessPipeline(dir, {.name = "crash-process",
                                      .function_id = "totals",
                                      .worker = {"python3", "process_crash_worker.py"},
                                      .state = {"n", "sum"},
                                      .timers = {"idle"},
                                      .rate = rate,
                                      .checkpoint_interval_ms = 40});
}

struct Outputs {
  std::vector<std::string> lines;
  // The activation each names and its raw record. (The rest of a reason names the call, whose
  // number depends on how calls were cut, which the timing of reads decides.)
  std::vector<std::string> dead_letters;
};

Outputs Collect(const TempDir& dir) {
  Outputs o{testing::ReadLines(dir / "output.jsonl"), {}};
  for (const testing::TopicRecord& d : testing::ReadTopic(dir / "data", "crash-process.dlq")) {
    const std::string_view reason = d.value.Find("reason")->as_string();
    o.dead_letters.push_back(std::string(reason.substr(0, reason.find(": "))) + " @ " +
                             std::string(d.value.Find("raw")->as_string()));
  }
  return o;
}

// Waits until `run` ends or `limit` has passed, or `until` holds (checked every 5 ms).
void WaitAtMost(
    Subprocess& run, std::chrono::milliseconds limit,
    const std::function<bool()>& until = [] { return false; }) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline && !run.Done() && !until()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(ProcessCrashTest, WeirAndItsWorkerKilledAtRandomTheOutputsEqualAnUninterruptedRun) {
  const char* env_kills = std::getenv("WEIR_CRASH_KILLS");
  const int rounds = env_kills ? std::atoi(env_kills) : 24;

  TempDir reference;
  Prepare(reference, 0);
  testing::CommandResult ref = testing::RunPipelineToEnd(reference);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const Outputs want = Collect(reference);
  ASSERT_GT(want.lines.size(), static_cast<size_t>(kRecords) / 3);
  ASSERT_EQ(want.dead_letters.size(), 3u);  // the poisoned inputs

  TempDir crashed;
  // Paced so that the input lasts through most rounds (each lives 0.1 to 0.9 s, a worker's start
  // included), so that most kills land in a running pipeline.
  Prepare(crashed, std::clamp(3 * kRecords / rounds, 100, 5000));
  std::mt19937 rng(std::random_device{}());
  int weir_killed = 0, worker_killed = 0, completed_early = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string marker = crashed / ("worker-killed-" + std::to_string(round));
    std::vector<std::string> env;
    const bool kill_worker = round % 2 == 1;
    if (kill_worker) {
      env.push_back("WEIR_CRASH_WORKER=" + marker + ":" + std::to_string(1 + rng() % 150));
    }
    Subprocess run(testing::WeirRun(crashed), crashed.path().string(), "",
                   testing::WeirRunEnvironment(env));
    if (kill_worker) {
      // Weir dies at a random instant after its worker did: while it restarts the worker, retries
      // the call, or later.
      WaitAtMost(run, std::chrono::milliseconds(10'000),
                 [&] { return std::filesystem::exists(marker); });
      WaitAtMost(run, std::chrono::milliseconds(rng() % 500));
    } else {
      WaitAtMost(run, std::chrono::milliseconds(100 + rng() % 800));
    }
    run.Kill(SIGKILL);
    testing::CommandResult r = run.Wait();
    if (std::filesystem::exists(marker)) ++worker_killed;
    if (r.exit_code == 0) {
      ++completed_early;  // it finished first: later rounds resume a completed run
    } else {
      ASSERT_EQ(r.exit_code, -SIGKILL) << "a run failed instead of being killed: " << r.err;
      ++weir_killed;
    }
  }
  testing::CommandResult last = testing::RunPipelineToEnd(crashed);
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_GE(weir_killed, rounds * 2 / 3) << "most rounds must kill a running pipeline";
  EXPECT_GE(worker_killed, rounds / 4) << "workers must be killed in the middle of runs";

  const Outputs got = Collect(crashed);
  ASSERT_EQ(got.lines.size(), want.lines.size()) << "loss or duplicates in the output file";
  for (size_t i = 0; i < want.lines.size(); ++i) ASSERT_EQ(got.lines[i], want.lines[i]) << i;
  EXPECT_EQ(got.dead_letters, want.dead_letters);
  std::printf(
      "process crash test: %d kills of Weir, %d of its worker, %d runs that completed "
      "first\n",
      weir_killed, worker_killed, completed_early);
}

}  // namespace
}  // namespace weir
