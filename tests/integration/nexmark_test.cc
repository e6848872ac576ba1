// `weir bench nexmark`: every query, run by Weir over the generator, gives DuckDB's answer over
// the same events (the command compares the two and exits non-zero when they differ).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir {
namespace {

using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;

CommandResult BenchNexmark(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(),
              {WEIR_BINARY, "bench", "nexmark", "--data-dir", (dir.path() / "data").string()});
  return RunCommand(args, dir.path().string());
}

class NexmarkQuery : public ::testing::TestWithParam<std::string> {};

// 300k events are 30 s of event time at the reference's rate: three 10 s windows and their
// hops, sessions that end and restart, auctions that open and expire.
TEST_P(NexmarkQuery, WeirsAnswerIsDuckDbsOverTheSameEvents) {
  TempDir dir;
  // ctest runs other heavy tests beside this one: a task may wait for a core long enough to
  // fall seconds of event time behind its sibling, so the grace here is generous.
  CommandResult r =
      BenchNexmark(dir, {"--query", GetParam(), "--events", "300000", "--grace-ms", "20000"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verified=yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" late=0"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(EveryQuery, NexmarkQuery,
                         ::testing::Values("q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q11",
                                           "q12"),
                         [](const auto& info) { return info.param; });

// The reference's disorder: events shuffled within groups of 5000 numbers (half a second of
// event time), within the windows' grace, so nothing is late and the answer is the same.
TEST(NexmarkDisorder, OutOfOrderEventsWithinGraceGiveDuckDbsAnswer) {
  TempDir dir;
  CommandResult r = BenchNexmark(dir, {"--query", "q5", "--events", "300000",
                                       "--out-of-order-group", "5000", "--grace-ms", "20000"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verified=yes"), std::string::npos) << r.out;
}

// Live: events come at their event time, and the rows' latency is measured as they are served.
TEST(NexmarkLive, ALiveRunMeasuresLatencyAndStillGivesTheRightAnswer) {
  TempDir dir;
  CommandResult r = BenchNexmark(dir, {"--query", "q1", "--events", "40000", "--rate", "20000"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verified=yes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("p99_ms=-"), std::string::npos) << "no latency measured: " << r.out;
}

TEST(NexmarkBench, AnUnknownQueryIsRefusedNamingTheKnownOnes) {
  TempDir dir;
  CommandResult r = BenchNexmark(dir, {"--query", "q6"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown Nexmark query 'q6'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("q11"), std::string::npos) << r.err;
}

// -1 would be an unbounded source, a benchmark that never ends.
TEST(NexmarkBench, ANegativeEventCountIsRefused) {
  TempDir dir;
  CommandResult r = BenchNexmark(dir, {"--query", "q0", "--events", "-1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--events"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace weir
