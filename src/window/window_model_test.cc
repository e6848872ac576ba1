// The brute-force window model against cases computed by hand from include/weir/window.h,
// including the session defects another engine shipped (its session-window change listed them).
#include "window/window_model.h"

#include <gtest/gtest.h>

namespace weir::window::testing {
namespace {

// Events of one key "k" at these times, values 1, 2, 3... and ids 0, 1, 2...
std::vector<ModelEvent> Events(std::vector<int64_t> times, std::string key = "k") {
  std::vector<ModelEvent> events;
  for (size_t i = 0; i < times.size(); ++i) {
    events.push_back({key, times[i], static_cast<int64_t>(i + 1), static_cast<int64_t>(i)});
  }
  return events;
}

ModelDefinition Def(ModelKind kind, int64_t size, int64_t grace = 0, int64_t step = 0,
                    bool partition = false) {
  return {kind, size, step == 0 ? size : step, grace, partition};
}

// [start, end) and count of each result, flattened.
std::vector<std::tuple<int64_t, int64_t, int64_t>> Spans(
    const std::vector<std::vector<ModelResult>>& groups) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> out;
  for (const auto& g : groups) {
    for (const ModelResult& r : g) out.emplace_back(r.start, r.end, r.count);
  }
  return out;
}

using Spans3 = std::vector<std::tuple<int64_t, int64_t, int64_t>>;

TEST(SessionModel, LongSessionDoesNotFragment) {
  std::vector<int64_t> times;
  for (int64_t t = 1000; t <= 1000 + 20 * 50; t += 50) times.push_back(t);  // gap/2 apart
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 100), Events(times));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{1000, 2001, 21}}));
  for (const auto& g : out.current_results["k"]) EXPECT_EQ(g.at(0).start, 1000);
  EXPECT_TRUE(out.late.empty());
}

TEST(SessionModel, OutOfOrderEventInsideTheGapIsAcceptedWithZeroGrace) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 10), Events({100, 95, 90}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{90, 101, 3}}));
  EXPECT_TRUE(out.late.empty());
}

TEST(SessionModel, AnEventMoreThanGapPlusGraceBehindIsLate) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 10, 5), Events({100, 85, 84}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].ts, 84);
  EXPECT_EQ(out.late[0].late_by_ms, 1);  // 100 - 10 - 5 - 84
  // 85 is admitted, more than a gap from 100: its own session.
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{85, 86, 1}, {100, 101, 1}}));
}

TEST(SessionModel, BridgingEventMergesTwoSessions) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 10), Events({0, 18, 9}));
  EXPECT_EQ(Spans(out.current_results["k"]), (Spans3{{0, 1, 1}, {18, 19, 1}, {0, 19, 3}}));
  ASSERT_EQ(out.final_results["k"].size(), 1u);
  const ModelResult& merged = out.final_results["k"][0][0];
  EXPECT_EQ(merged.sum, 6);
  EXPECT_EQ(merged.min, 1);
  EXPECT_EQ(merged.max, 3);
  EXPECT_EQ(merged.ids, (std::vector<int64_t>{0, 2, 1}));  // event-time order
}

TEST(SessionModel, AnEventExactlyOneGapAwayJoins) {
  // Grace 20 admits 40 (40 >= 60 - 10 - 20); it is exactly a gap before 50.
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 10, 20), Events({50, 60, 40, 71}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{40, 61, 3}, {71, 72, 1}}));
}

TEST(SessionModel, SessionStartingAtEpochZeroExtends) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 1000), Events({0, 1000}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{0, 1001, 2}}));
}

TEST(SessionModel, SessionEndIsExclusive) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 4000), Events({1000, 5000}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{1000, 5001, 2}}));
}

TEST(SessionModel, ClosesOnlyOnceTheWatermarkPassesLastPlusTwoGapsPlusGrace) {
  // gap 5, grace 0: [100, 106) closes when wm > 105 + 10 = 115.
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 5), Events({100, 105, 115, 116}));
  // 115 joins nothing (115 - 105 > 5) and the old session is still open at wm 115.
  ASSERT_EQ(out.final_results["k"].size(), 2u);
  EXPECT_EQ(Spans({out.final_results["k"][0]}), (Spans3{{100, 106, 2}}));  // closed by 116
  EXPECT_EQ(Spans({out.final_results["k"][1]}), (Spans3{{115, 117, 2}}));  // end of input
}

TEST(SessionModel, AdmissibleEventAfterACloseStartsANonAdjacentSession) {
  // [100, 106) closes at wm 116; 111 is admissible (111 >= 116 - 5) but more than a gap from
  // 105, so it can never extend the emitted session; 110 is late by 1.
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 5), Events({100, 105, 116, 111, 110}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{100, 106, 2}, {111, 117, 2}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].late_by_ms, 1);
}

TEST(SessionModel, PartitionClosingRejectsEventsBeforeThePartitionWatermark) {
  std::vector<ModelEvent> events = {{"b", 1000, 1, 0}, {"a", 10, 1, 1}};
  ModelOutput by_partition = RunWindowModel(Def(ModelKind::kSession, 100, 0, 0, true), events);
  ASSERT_EQ(by_partition.late.size(), 1u);
  EXPECT_EQ(by_partition.late[0].key, "a");
  EXPECT_EQ(by_partition.late[0].late_by_ms, 1000 - 100 - 10);
  ModelOutput by_key = RunWindowModel(Def(ModelKind::kSession, 100), events);
  EXPECT_TRUE(by_key.late.empty());
}

TEST(SessionModel, PartitionClosingClosesAnIdleKeysSession) {
  std::vector<ModelEvent> events = {{"a", 0, 1, 0}, {"b", 500, 1, 1}, {"b", 501, 1, 2}};
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 100, 0, 0, true), events);
  ASSERT_EQ(out.final_results["a"].size(), 1u);
  // Emitted at the first event past 0 + 200 (wm 500), not at the end.
  ASSERT_EQ(out.final_results["b"].size(), 1u);
  EXPECT_EQ(out.final_results["b"][0][0].count, 2);
}

TEST(SessionModel, AFilteredRecordAdvancesThePartitionWatermark) {
  std::vector<ModelEvent> events = {
      {"a", 0, 1, 0}, {"b", 500, 1, 1, ModelEvent::Fate::kFiltered}, {"a", 250, 1, 2}};
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 100, 0, 0, true), events);
  EXPECT_EQ(Spans(out.final_results["a"]), (Spans3{{0, 1, 1}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].late_by_ms, 150);
  EXPECT_TRUE(out.final_order_open.count("a"));
  EXPECT_FALSE(out.final_results.count("b"));
}

TEST(SessionModel, ADeadLetterNeitherJoinsNorMovesTheWatermark) {
  std::vector<ModelEvent> events = {
      {"a", 0, 1, 0}, {"a", 5000, std::nullopt, 1, ModelEvent::Fate::kDeadLetter}, {"a", 10, 2, 2}};
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 100), events);
  EXPECT_EQ(Spans(out.final_results["a"]), (Spans3{{0, 11, 2}}));
  EXPECT_TRUE(out.late.empty());
}

TEST(SessionModel, ADeadLetterStillMovesThePartitionWatermark) {
  std::vector<ModelEvent> events = {
      {"a", 0, 1, 0}, {"b", 5000, std::nullopt, 1, ModelEvent::Fate::kDeadLetter}, {"a", 10, 2, 2}};
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 100, 0, 0, true), events);
  EXPECT_EQ(Spans(out.final_results["a"]), (Spans3{{0, 1, 1}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].late_by_ms, 5000 - 100 - 10);
}

TEST(SessionModel, MissingValuesAreCountedButNotSummed) {
  std::vector<ModelEvent> events = {{"a", 0, std::nullopt, 0}, {"a", 1, std::nullopt, 1}};
  ModelOutput out = RunWindowModel(Def(ModelKind::kSession, 100), events);
  const ModelResult& r = out.final_results["a"].at(0).at(0);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.sum, 0);
  EXPECT_FALSE(r.min.has_value());
  EXPECT_FALSE(r.max.has_value());
}

TEST(SessionModel, TheLatenessBoundNeverMovesBackWhenARestartRaisesTheGrace) {
  // gap 10, grace 0: 100 sets the bound to 90. Grace 50 after a restart would give 40, but 85
  // stays late (by 90 - 85).
  ModelOutput out =
      RunWindowModel(Def(ModelKind::kSession, 10), Events({100, 85}), /*restart_at=*/1, 50);
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].late_by_ms, 5);
}

TEST(SessionModel, AGrownGraceDoesNotStrandAnOpenSession) {
  // [95, 96) is open at the restart (bound 95 - 10 = 85); with grace 20 the event at 200 sets
  // the bound to 170 > 95 + 10, which closes it there, not at the end of the input.
  ModelOutput out =
      RunWindowModel(Def(ModelKind::kSession, 10), Events({95, 200, 201}), /*restart_at=*/1, 20);
  ASSERT_EQ(out.final_results["k"].size(), 2u);
  EXPECT_EQ(Spans({out.final_results["k"][0]}), (Spans3{{95, 96, 1}}));
}

TEST(TumblingModel, AnEmittedWindowIsNotReopenedWhenARestartRaisesTheGrace) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kTumbling, 10), Events({1, 15, 5, 12}),
                                   /*restart_at=*/2, 20);
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{0, 10, 1}, {10, 20, 2}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].ts, 5);
}

TEST(TumblingModel, WindowsAreAlignedHalfOpenAndCloseAtEndPlusGrace) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kTumbling, 10), Events({0, 9, 10, 5, 19}));
  // 10 closes [0, 10) (wm 10 >= 10 + 0), so 5 is late by 10 - 10 - 0 = 0.
  ASSERT_EQ(out.final_results["k"].size(), 2u);
  EXPECT_EQ(Spans({out.final_results["k"][0]}), (Spans3{{0, 10, 2}}));
  EXPECT_EQ(Spans({out.final_results["k"][1]}), (Spans3{{10, 20, 2}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].late_by_ms, 0);
  EXPECT_EQ(Spans(out.current_results["k"]),
            (Spans3{{0, 10, 1}, {0, 10, 2}, {10, 20, 1}, {10, 20, 2}}));
}

TEST(TumblingModel, GraceKeepsAWindowOpen) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kTumbling, 10, 3), Events({0, 12, 5, 13, 6}));
  // wm 12 < 10 + 3: 5 joins [0, 10); wm 13 closes it; 6 is late by 13 - 10 - 3 = 0.
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{0, 10, 2}, {10, 20, 2}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].ts, 6);
}

TEST(HoppingModel, AnEventBelongsToEveryWindowContainingItIncludingNegativeStarts) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kHopping, 10, 0, 5), Events({2, 7}));
  EXPECT_EQ(Spans(out.current_results["k"]),
            (Spans3{{-5, 5, 1}, {0, 10, 1}, {0, 10, 2}, {5, 15, 1}}));
  // wm 7 closes [-5, 5) (7 >= 5) at the second event.
  ASSERT_EQ(out.final_results["k"].size(), 2u);
  EXPECT_EQ(Spans({out.final_results["k"][0]}), (Spans3{{-5, 5, 1}}));
  EXPECT_EQ(Spans({out.final_results["k"][1]}), (Spans3{{0, 10, 2}, {5, 15, 1}}));
}

TEST(HoppingModel, AnEventJoinsOnlyItsOpenWindows) {
  // size 10 step 5: 12 closes [0, 10); 8 is in [0, 10) (closed) and [5, 15) (open): joins one.
  ModelOutput out = RunWindowModel(Def(ModelKind::kHopping, 10, 0, 5), Events({1, 12, 8, 3}));
  EXPECT_EQ(Spans(out.final_results["k"]),
            (Spans3{{-5, 5, 1}, {0, 10, 1}, {5, 15, 2}, {10, 20, 1}}));
  ASSERT_EQ(out.late.size(), 1u);  // 3: [-5, 5) and [0, 10) closed; 12 - 10 - 0 = 2
  EXPECT_EQ(out.late[0].late_by_ms, 2);
}

TEST(HoppingModel, AWindowALoweredGraceClosesAtTheRestartDoesNotTakeTheNextEvent) {
  // size 10 step 5, grace 5: 12 sets the bound to 7, so [0, 10) is open at the restart; grace 0
  // makes the bound 12 there, which closes it before 8 arrives. 8 joins [5, 15) alone.
  for (bool partition : {false, true}) {
    ModelOutput out = RunWindowModel(Def(ModelKind::kHopping, 10, 5, 5, partition),
                                     Events({1, 12, 8}), /*restart_at=*/2, 0);
    EXPECT_EQ(Spans(out.final_results["k"]),
              (Spans3{{-5, 5, 1}, {0, 10, 1}, {5, 15, 2}, {10, 20, 1}}))
        << "partition closing " << partition;
    EXPECT_TRUE(out.late.empty());
  }
}

TEST(SlidingModel, EachEventDefinesItsWindowOverTheKeysEventsInIt) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSliding, 10), Events({5, 12, 14}));
  // W5 = [-4, 6) {5}; W12 = [3, 13) {5, 12}; W14 = [5, 15) {5, 12, 14}; 14 is not in W12.
  EXPECT_EQ(Spans(out.current_results["k"]), (Spans3{{-4, 6, 1}, {3, 13, 2}, {5, 15, 3}}));
  // wm 12 closes W5 (12 >= 6 + 0); wm 14 closes W12 (14 >= 13).
  ASSERT_EQ(out.final_results["k"].size(), 3u);
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{-4, 6, 1}, {3, 13, 2}, {5, 15, 3}}));
}

TEST(SlidingModel, AnAdmissibleEventWhoseWindowClosedJoinsOpenOnesAndIsEmittedAtOnce) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kSliding, 10), Events({20, 12, 10}));
  // 12: not late (20 < 22); W12 = [3, 13) is closed (20 >= 13): emitted at once with {12};
  // it joins W20 = [11, 21). 10: late (20 >= 20), by 0.
  EXPECT_EQ(Spans(out.current_results["k"]), (Spans3{{11, 21, 1}, {3, 13, 1}, {11, 21, 2}}));
  ASSERT_EQ(out.final_results["k"].size(), 2u);
  EXPECT_EQ(Spans({out.final_results["k"][0]}), (Spans3{{3, 13, 1}}));
  EXPECT_EQ(Spans({out.final_results["k"][1]}), (Spans3{{11, 21, 2}}));
  ASSERT_EQ(out.late.size(), 1u);
  EXPECT_EQ(out.late[0].late_by_ms, 0);
}

TEST(CountModel, TumblingEmitsFullWindowsOnly) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kCountTumbling, 3), Events({5, 1, 9, 4, 4}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{1, 10, 3}}));
  EXPECT_EQ(Spans(out.current_results["k"]),
            (Spans3{{5, 6, 1}, {1, 6, 2}, {1, 10, 3}, {4, 5, 1}, {4, 5, 2}}));
}

TEST(CountModel, HoppingStartsAWindowAtEveryStepthEvent) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kCountHopping, 3, 0, 2), Events({0, 1, 2, 3, 4}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{0, 3, 3}, {2, 5, 3}}));
  // Event #2 is in the windows starting at #0 and #2.
  EXPECT_EQ(out.current_results["k"][2].size(), 2u);
}

TEST(CountModel, SlidingIsHoppingByOne) {
  ModelOutput out = RunWindowModel(Def(ModelKind::kCountSliding, 2), Events({7, 3, 5}));
  EXPECT_EQ(Spans(out.final_results["k"]), (Spans3{{3, 8, 2}, {3, 6, 2}}));
}

}  // namespace
}  // namespace weir::window::testing
