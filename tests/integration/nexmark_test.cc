// `weir bench nexmark`: every query, run by Weir over the generator, gives DuckDB's answer over
// the same events (the command compares the two and exits non-zero when they differ).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir {
namespace {

using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;

CommandResult BenchNexmark(const TempDir& dir, std::vector<std::string> args,
                           const std::vector<std::string>& env = {}) {
  args.insert(args.begin(),
              {WEIR_BINARY, "bench", "nexmark", "--data-dir", (dir.path() / "data").string()});
  return RunCommand(args, dir.path().string(), "", env);
}

class NexmarkQuery : public ::testing::TestWithParam<std::string> {};

// 300k events are 30 s of event time at the reference's rate: three 10 s windows and their
// hops, sessions that end and restart, auctions that open and expire.
// With no grace at all: whichever task ctest's other tests slow down, a repartition reader's
// watermark is the slowest producer's, so nothing in order at its source is ever late.
TEST_P(NexmarkQuery, WeirsAnswerIsDuckDbsOverTheSameEvents) {
  TempDir dir;
  CommandResult r =
      BenchNexmark(dir, {"--query", GetParam(), "--events", "300000", "--grace-ms", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verified=yes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" late=0"), std::string::npos) << r.out;
  // Scripts read the allocations per event from the same line (a number, or n/a under a
  // sanitizer, which owns malloc).
  EXPECT_NE(r.out.find(" allocs_per_event="), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" allocs_per_event=0.00 "), std::string::npos) << r.out;
}

// One source task starved (it sleeps before each batch, core/fault_injection.h) while the other
// runs ahead: the same answer, nothing late.
TEST_P(NexmarkQuery, OneStarvedTaskChangesNothing) {
  TempDir dir;
  CommandResult r =
      BenchNexmark(dir, {"--query", GetParam(), "--events", "100000", "--grace-ms", "0"},
                   {"WEIR_SLOW_TASKS=0_1:20"});
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

// The discard sink: the same pipelines with their results dropped; the rows discarded are as many
// as DuckDB's rows, and nothing was written to the output topic.
TEST(NexmarkDiscard, TheDiscardSinkDropsAsManyRowsAsDuckDbAnswers) {
  for (const char* query : {"q0", "q2", "q5", "q11"}) {
    TempDir dir;
    CommandResult r = BenchNexmark(
        dir, {"--query", query, "--events", "100000", "--grace-ms", "0", "--sink", "discard"});
    EXPECT_EQ(r.exit_code, 0) << query << r.out << r.err;
    EXPECT_NE(r.out.find("verified=count"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(" rows=0 "), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "data" / "log" / "nexmark.out"))
        << query << ": the discard sink wrote the output topic";
  }
}

TEST(NexmarkDiscard, RefusedWhereRowsCannotBeCountedOrTimed) {
  TempDir dir;
  CommandResult q4 = BenchNexmark(dir, {"--query", "q4", "--events", "1000", "--sink", "discard"});
  EXPECT_NE(q4.exit_code, 0);
  EXPECT_NE(q4.err.find("q4 emits updates per key"), std::string::npos) << q4.err;
  CommandResult live = BenchNexmark(
      dir, {"--query", "q0", "--events", "1000", "--rate", "1000", "--sink", "discard"});
  EXPECT_NE(live.exit_code, 0);
  EXPECT_NE(live.err.find("drop --rate"), std::string::npos) << live.err;
  CommandResult other = BenchNexmark(dir, {"--query", "q0", "--events", "1000", "--sink", "kafka"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("--sink is topic or discard, not 'kafka'"), std::string::npos)
      << other.err;
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
