// As-of join behaviours (weir/join.h), one test each, through a real application: two files in,
// results to a file, late events to a topic.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "app/join_testing.h"

namespace weir::testing {
namespace {

using std::chrono::milliseconds;

JoinBuilder AsOf(int64_t lookback = 0, int64_t grace = 0, std::string late_topic = "") {
  return [=](Stream left, Stream right) {
    return left.AsOfJoin(right, {.name = "asof",
                                 .lookback = milliseconds(lookback),
                                 .grace = milliseconds(grace),
                                 .late_topic = late_topic});
  };
}

TEST(AsOfJoin, ALeftTakesTheLatestRightAtOrBeforeItsTime) {
  JoinRun run =
      RunJoin({{"u", 100, 1}, {"u", 200, 2}},
              {{"u", 50, 101}, {"u", 100, 102}, {"u", 150, 103}, {"u", 201, 104}}, AsOf());
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@100 left 1 right 102", "u@200 left 2 right 103"}));
}

TEST(AsOfJoin, ALeftWithNoRightBeforeItGetsNull) {
  JoinRun run = RunJoin({{"u", 100, 1}}, {{"u", 101, 101}, {"v", 50, 102}}, AsOf());
  EXPECT_EQ(Results(run), (std::vector<std::string>{"u@100 left 1 right null"}));
}

TEST(AsOfJoin, LookbackBoundsTheAgeOfTheRightInclusively) {
  // lookback 30: a right at 70 is still in range of a left at 100, one at 69 is not.
  JoinRun run = RunJoin({{"u", 100, 1}, {"v", 100, 2}}, {{"u", 70, 101}, {"v", 69, 102}}, AsOf(30));
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@100 left 1 right 101", "v@100 left 2 right null"}));
}

TEST(AsOfJoin, ZeroLookbackIsUnbounded) {
  JoinRun run = RunJoin({{"u", 1'000'000, 1}}, {{"u", 1, 101}}, AsOf(0));
  EXPECT_EQ(Results(run), (std::vector<std::string>{"u@1000000 left 1 right 101"}));
}

TEST(AsOfJoin, AmongRightsOfOneTimeTheLastToArriveWins) {
  JoinRun run = RunJoin({{"u", 100, 1}}, {{"u", 90, 101}, {"u", 90, 102}, {"u", 90, 103}}, AsOf());
  EXPECT_EQ(Results(run), (std::vector<std::string>{"u@100 left 1 right 103"}));
}

TEST(AsOfJoin, ARightAtTheLeftTimeReadAfterItIsSeen) {
  // The inputs are merged in time order, ties to the left: the left at 100 is read before the
  // right at 100, and is held until the watermark has passed 100.
  JoinRun run = RunJoin({{"u", 100, 1}, {"u", 101, 2}}, {{"u", 100, 101}}, AsOf());
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@100 left 1 right 101", "u@101 left 2 right 101"}));
}

TEST(AsOfJoin, AnOutOfOrderRightWithinGraceIsSeen) {
  // The right at 95 is read after the left at 120 has moved the watermark, within grace 30.
  JoinRun run = RunJoin({{"u", 100, 1}, {"u", 120, 2}},
                        {{"u", 90, 101}, {"u", 130, 102}, {"u", 95, 103}}, AsOf(0, 40));
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@100 left 1 right 103", "u@120 left 2 right 103"}));
  EXPECT_EQ(run.summary.late, 0);
}

TEST(AsOfJoin, LeftsAreEmittedOnceTheWatermarkPassesThemInTimeOrder) {
  // Left 1 (100) waits for the watermark to pass 100 + grace 10, and is emitted before left 2,
  // which is read before it but is later in time, and before the end of input.
  JoinRun run =
      RunJoin({{"u", 120, 2}, {"u", 100, 1}, {"u", 300, 3}}, {{"u", 99, 101}}, AsOf(0, 25));
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@100 left 1 right 101", "u@120 left 2 right 101",
                                      "u@300 left 3 right 101"}));
}

TEST(AsOfJoin, LateEventsOfEitherInputGoToTheLateTopicAndAreCounted) {
  // The inputs are read merged in time order: right 101 (300), left 1 (500), left 2 (350),
  // left 3 (450), right 103 (600), right 102 (380). The task's watermark is the smaller of the
  // inputs' (+infinity once one has ended): right 101 holds it at 300 while the lefts come, so
  // left 2 is not late; once the left input has ended, right 103 moves it to 600 and right 102
  // is late by 120 (grace 100). The late right is no one's partner.
  JoinRun run = RunJoin({{"u", 500, 1}, {"u", 350, 2}, {"u", 450, 3}},
                        {{"u", 300, 101}, {"u", 600, 103}, {"u", 380, 102}}, AsOf(0, 100));
  EXPECT_EQ(LateIds(run), (std::vector<int64_t>{102}));
  ASSERT_EQ(run.late.size(), 1u);
  EXPECT_EQ(run.late[0].late_by_ms, 120);
  EXPECT_EQ(run.summary.late, 1);
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@350 left 2 right 101", "u@450 left 3 right 101",
                                      "u@500 left 1 right 101"}));
}

TEST(AsOfJoin, TheLateTopicOptionNamesWhereLateEventsGo) {
  JoinRun run = RunJoin({{"u", 500, 1}}, {{"u", 600, 102}, {"u", 100, 101}},
                        AsOf(0, 0, "asof-late"), "asof-late");
  EXPECT_EQ(LateIds(run), (std::vector<int64_t>{101}));
  EXPECT_EQ(run.summary.late, 1);
}

TEST(AsOfJoin, KeysNeverMix) {
  std::vector<std::string> keys = {"k", "k1", "k1|", "k1\x01", "", "k\"1"};
  std::vector<ModelEvent> left, right;
  for (size_t i = 0; i < keys.size(); ++i) {
    right.push_back({keys[i], static_cast<int64_t>(10 * i), static_cast<int64_t>(100 + i)});
    left.push_back({keys[i], 100, static_cast<int64_t>(i)});
  }
  JoinRun run = RunJoin(left, right, AsOf());
  EXPECT_TRUE(run.status.ok()) << run.status.ToString();
  ASSERT_EQ(run.joined.size(), keys.size());
  for (const ModelJoined& j : run.joined) {
    EXPECT_EQ(j.right_id, j.left_id + 100) << j.ToString();
    EXPECT_EQ(j.key, keys[j.left_id]);
  }
}

// A long run over few keys, stopped at a checkpoint in the middle: each key keeps its latest
// right at or before the watermark - grace and the newer ones, and the lefts not yet emitted.
TEST(AsOfJoin, StateIsPrunedByWatermark) {
  StoredJoinState stored = StateAfterALongRun(AsOf(0, 10), "asof", 6000, /*left_flags=*/false);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  ASSERT_GT(stored.records_in, 6000);
  EXPECT_LE(stored.keys, 10u);
  // Per key: the lefts within grace of the watermark, one right before that and those after.
  EXPECT_LE(stored.events, 50u) << "of " << stored.records_in << " read";
}

// An as-of join keeps no flags: a state with a flag byte is refused when the task opens.
TEST(AsOfJoin, AStateWithLeftFlagsIsRefusedOnResume) {
  auto resumed = ResumeFromRewrittenState(AsOf(0, 10), "asof", [](const Value& v) {
    Value flagged = v;
    Value::Array& slots = flagged.as_array();
    slots[4].AssignString(std::string(1, '\0'));
    return flagged;
  });
  ASSERT_FALSE(resumed.ok());
  EXPECT_NE(resumed.status().message().find("wrong shape"), std::string::npos)
      << resumed.status().ToString();
  EXPECT_NE(resumed.status().message().find("join step asof"), std::string::npos)
      << resumed.status().ToString();
}

TEST(AsOfJoin, HeldLeftsAreEmittedAtTheEndOfInput) {
  JoinRun run = RunJoin({{"u", 100, 1}, {"v", 100, 2}}, {{"u", 100, 101}}, AsOf(0, 1000));
  std::vector<std::string> results = Results(run);
  std::sort(results.begin(), results.end());
  EXPECT_EQ(results,
            (std::vector<std::string>{"u@100 left 1 right 101", "v@100 left 2 right null"}));
}

// Stops twice at a checkpoint with lefts held, resumes, and compares with one uninterrupted
// run: the same results in the same order, the same late events, none twice.
TEST(AsOfJoin, ARestartInTheMiddleGivesTheOutputOfOneRun) {
  std::vector<ModelEvent> left, right;
  RestartInputs(left, right);
  auto join = AsOf(45, kRestartGrace);
  JoinRun once = RunJoin(left, right, join);
  JoinRun resumed = RunJoin(left, right, join, "joins.late", /*stops=*/2, /*stop_after=*/700);
  EXPECT_EQ(ResultsDifference(Results(once), Results(resumed)), "");
  ASSERT_GT(once.late.size(), 0u);
  EXPECT_EQ(LateIds(resumed, true), LateIds(once, true));
}

}  // namespace
}  // namespace weir::testing
