// `weir bench process`: each handler, run small, gives the outputs of the model the command
// computes (it exits non-zero when they differ). No timing is asserted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir {
namespace {

using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;

const std::string kExamples = WEIR_WORKER_EXAMPLES;

// 2000 events over 200 keys: timers fire during the run and at the end of input.
CommandResult BenchProcess(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {WEIR_BINARY, "bench", "process", "--data-dir",
                             (dir.path() / "data").string(), "--events", "2000", "--keys", "200"});
  return RunCommand(args, dir.path().string());
}

void ExpectVerified(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" verified=yes "), std::string::npos) << r.out;
}

TEST(BenchProcess, NativeHandlerGivesTheModelsOutputs) {
  TempDir dir;
  ExpectVerified(BenchProcess(dir, {"--handler", "native"}));
}

TEST(BenchProcess, OutputsReadBackFromATopicAreTheModels) {
  TempDir dir;
  ExpectVerified(BenchProcess(dir, {"--handler", "native", "--sink", "topic"}));
}

// Every timer pending until the end of input: the firing phase is measured.
TEST(BenchProcess, TimersPendingUntilTheEndAllFireThere) {
  TempDir dir;
  CommandResult r =
      BenchProcess(dir, {"--handler", "native", "--idle-ms", "3600000", "--event-rate", "100000"});
  ExpectVerified(r);
  EXPECT_EQ(r.out.find(" end_firings_per_cpu_s=-"), std::string::npos) << r.out;
}

TEST(BenchProcess, CppWorkerGivesTheModelsOutputs) {
  TempDir dir;
  ExpectVerified(BenchProcess(dir, {"--handler", "cpp", "--worker", WEIR_CPP_WORKER}));
}

TEST(BenchProcess, PythonWorkerGivesTheModelsOutputs) {
  if (std::system("python3 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  TempDir dir;
  ExpectVerified(
      BenchProcess(dir, {"--handler", "python", "--worker", kExamples + "/python/count_idle.py"}));
}

TEST(BenchProcess, NodeWorkerGivesTheModelsOutputs) {
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no node";
  TempDir dir;
  ExpectVerified(
      BenchProcess(dir, {"--handler", "node", "--worker", kExamples + "/node/count_idle.js"}));
}

}  // namespace
}  // namespace weir
