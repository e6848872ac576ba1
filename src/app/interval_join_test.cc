// Interval join behaviours (weir/join.h), one test each, through a real application: two files
// in, results to a file, late events to a topic.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "app/join_testing.h"

namespace weir::testing {
namespace {

using std::chrono::milliseconds;

JoinBuilder Interval(int64_t lower, int64_t upper, int64_t grace = 0, bool left_outer = false,
                     std::string late_topic = "") {
  return [=](Stream left, Stream right) {
    return left.IntervalJoin(right, {.name = "ij",
                                     .lower = milliseconds(lower),
                                     .upper = milliseconds(upper),
                                     .left_outer = left_outer,
                                     .grace = milliseconds(grace),
                                     .late_topic = late_topic});
  };
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(IntervalJoin, BoundsAreInclusiveAtBothEnds) {
  // Left at 100, lower 10, upper 20: rights at 90 and 120 match, 89 and 121 do not.
  JoinRun run =
      RunJoin({{"u", 100, 1}}, {{"u", 89, 101}, {"u", 90, 102}, {"u", 120, 103}, {"u", 121, 104}},
              Interval(10, 20, 50));
  EXPECT_EQ(Sorted(Results(run)),
            (std::vector<std::string>{"u@100 left 1 right 102", "u@120 left 1 right 103"}));
}

TEST(IntervalJoin, LowerAndUpperBoundEachSideSeparately) {
  // lower 0: no right before the left; upper 30: up to 30 after it.
  JoinRun run = RunJoin({{"u", 100, 1}}, {{"u", 99, 101}, {"u", 100, 102}, {"u", 130, 103}},
                        Interval(0, 30, 50));
  EXPECT_EQ(Sorted(Results(run)),
            (std::vector<std::string>{"u@100 left 1 right 102", "u@130 left 1 right 103"}));
  // lower 30, upper 0: the mirror image.
  run = RunJoin({{"u", 100, 1}}, {{"u", 70, 101}, {"u", 100, 102}, {"u", 101, 103}},
                Interval(30, 0, 50));
  EXPECT_EQ(Sorted(Results(run)),
            (std::vector<std::string>{"u@100 left 1 right 101", "u@100 left 1 right 102"}));
}

TEST(IntervalJoin, EachPairIsEmittedOnceAtTheLaterTime) {
  // Two lefts and two rights all within the interval of each other: four pairs, each once, at
  // the later of its two times, whichever side arrived second.
  JoinRun run =
      RunJoin({{"u", 100, 1}, {"u", 112, 2}}, {{"u", 105, 101}, {"u", 110, 102}}, Interval(20, 20));
  EXPECT_EQ(Sorted(Results(run)),
            (std::vector<std::string>{"u@105 left 1 right 101", "u@110 left 1 right 102",
                                      "u@112 left 2 right 101", "u@112 left 2 right 102"}));
  EXPECT_EQ(run.summary.late, 0);
}

TEST(IntervalJoin, OutputValueHoldsBothEventsAndTheKey) {
  TempDir dir;
  WriteLines(dir / "left.jsonl", {R"({"key":"u","ts":100,"id":1,"price":7})"});
  WriteLines(dir / "right.jsonl", {R"({"key":"u","ts":101,"id":2,"qty":3})"});
  Application app(JoinAppOptions(dir));
  BuildJoinPipeline(app, dir, Interval(0, 5));
  ASSERT_TRUE(app.Run().ok());
  EXPECT_EQ(
      ReadLines(dir / "out.jsonl"),
      (std::vector<std::string>{
          R"({"key":"u","timestamp":101,"value":{"left":{"key":"u","ts":100,"id":1,"price":7},"right":{"key":"u","ts":101,"id":2,"qty":3}}})"}));
}

TEST(IntervalJoin, EachPairHoldsItsOwnEventsWhateverTheStepsAfterDidWithTheLastOne) {
  // The join builds each pair where it built the last one. One left matches rights of other
  // shapes in turn (more fields, a long string, fewer fields), and the step after
  // the join swaps parts of each pair out and back (a select): every output holds its own events.
  TempDir dir;
  WriteLines(dir / "left.jsonl",
             {R"({"key":"u","ts":100,"id":1,"tags":["a","b"]})", R"({"key":"u","ts":102,"id":2})"});
  const std::string long_note(100, 'n');
  WriteLines(dir / "right.jsonl", {R"({"key":"u","ts":101,"id":11,"qty":3,"extra":{"x":1}})",
                                   R"({"key":"u","ts":103,"id":12,"note":")" + long_note + R"("})",
                                   R"({"key":"u","ts":104,"id":13})"});
  Application app(JoinAppOptions(dir));
  auto from = [&](const std::string& file) {
    return app.FromFile({.path = dir / file, .key = {"key"}, .timestamp_field = "ts"});
  };
  Interval(0, 5)(from("left.jsonl"), from("right.jsonl"))
      .Select({"left.id", "right"})
      .ToFile(dir / "out.jsonl");
  ASSERT_TRUE(app.Run().ok());
  const std::string note = R"("note":")" + long_note + R"(")";
  EXPECT_EQ(
      Sorted(ReadLines(dir / "out.jsonl")),
      Sorted({
          R"({"key":"u","timestamp":101,"value":{"left.id":1,"right":{"key":"u","ts":101,"id":11,"qty":3,"extra":{"x":1}}}})",
          R"({"key":"u","timestamp":103,"value":{"left.id":1,"right":{"key":"u","ts":103,"id":12,)" +
              note + "}}}",
          R"({"key":"u","timestamp":104,"value":{"left.id":1,"right":{"key":"u","ts":104,"id":13}}})",
          R"({"key":"u","timestamp":103,"value":{"left.id":2,"right":{"key":"u","ts":103,"id":12,)" +
              note + "}}}",
          R"({"key":"u","timestamp":104,"value":{"left.id":2,"right":{"key":"u","ts":104,"id":13}}})",
      }));
}

TEST(IntervalJoin, LeftOuterEmitsAnUnmatchedLeftWhenItExpires) {
  // Left 1 at 100 can match rights up to 110; once the watermark passes 110 + grace 5 it is
  // emitted with a null right, before the pair that the later events make.
  JoinRun run =
      RunJoin({{"u", 100, 1}, {"u", 200, 2}}, {{"u", 200, 101}}, Interval(0, 10, 5, true));
  EXPECT_EQ(Results(run),
            (std::vector<std::string>{"u@100 left 1 right null", "u@200 left 2 right 101"}));
}

TEST(IntervalJoin, LeftOuterEmitsUnmatchedLeftsAtTheEndOfInput) {
  JoinRun run = RunJoin({{"u", 100, 1}, {"v", 105, 2}, {"u", 106, 3}}, {{"u", 108, 101}},
                        Interval(0, 1000, 0, true));
  EXPECT_EQ(Sorted(Results(run)),
            (std::vector<std::string>{"u@108 left 1 right 101", "u@108 left 3 right 101",
                                      "v@105 left 2 right null"}));
}

TEST(IntervalJoin, InnerJoinDropsUnmatchedLefts) {
  JoinRun run = RunJoin({{"u", 100, 1}, {"u", 300, 2}}, {{"u", 301, 101}}, Interval(0, 10));
  EXPECT_EQ(Results(run), (std::vector<std::string>{"u@301 left 2 right 101"}));
}

TEST(IntervalJoin, LateEventsGoToTheLateTopicAndAreCounted) {
  // The inputs are read merged in time order, and the task's watermark is the smaller of the
  // two inputs' (+infinity once an input has ended). Left 1 (100) holds it at 100 while the
  // rights come, so right 102 (399) is not late; once the right input has ended, left 2 (600)
  // moves it to 600, and left 3 (350) is late by 150 (grace 100). Late events join nothing.
  JoinRun run =
      RunJoin({{"u", 100, 1}, {"u", 600, 2}, {"u", 350, 3}},
              {{"u", 500, 101}, {"u", 399, 102}, {"u", 400, 103}}, Interval(1000, 1000, 100));
  EXPECT_EQ(LateIds(run), (std::vector<int64_t>{3}));
  ASSERT_EQ(run.late.size(), 1u);
  EXPECT_EQ(run.late[0].late_by_ms, 150);
  EXPECT_EQ(run.summary.late, 1);
  EXPECT_EQ(Sorted(Results(run)),
            (std::vector<std::string>{"u@399 left 1 right 102", "u@400 left 1 right 103",
                                      "u@500 left 1 right 101", "u@600 left 2 right 101",
                                      "u@600 left 2 right 102", "u@600 left 2 right 103"}));
}

TEST(IntervalJoin, TheLateTopicOptionNamesWhereLateEventsGo) {
  JoinRun run =
      RunJoin({{"u", 500, 1}, {"u", 100, 2}}, {}, Interval(0, 0, 0, false, "ij-late"), "ij-late");
  EXPECT_EQ(LateIds(run), (std::vector<int64_t>{2}));
}

TEST(IntervalJoin, KeysNeverMix) {
  // Keys that are prefixes of one another or carry separators each join only their own events.
  std::vector<std::string> keys = {"k", "k1", "k1|", "k1\x01", "", "k\"1"};
  std::vector<ModelEvent> left, right;
  for (size_t i = 0; i < keys.size(); ++i) {
    left.push_back({keys[i], 100, static_cast<int64_t>(i)});
    right.push_back({keys[i], 100, static_cast<int64_t>(100 + i)});
  }
  JoinRun run = RunJoin(left, right, Interval(0, 0));
  EXPECT_TRUE(run.status.ok()) << run.status.ToString();
  ASSERT_EQ(run.joined.size(), keys.size());
  for (const ModelJoined& j : run.joined) {
    EXPECT_EQ(*j.right_id, j.left_id + 100) << j.ToString();
    EXPECT_EQ(j.key, keys[j.left_id]);
  }
}

// A long run over few keys, stopped at a checkpoint in the middle: what the step's store holds
// then is what can still match, not everything read.
TEST(IntervalJoin, StateExpiresByWatermark) {
  StoredJoinState stored =
      StateAfterALongRun(Interval(5, 5, 10, true), "ij", 6000, /*left_flags=*/true);
  ASSERT_TRUE(stored.status.ok()) << stored.status.ToString();
  ASSERT_GT(stored.records_in, 6000);
  EXPECT_LE(stored.keys, 10u);
  // A left is kept for upper + grace after its time, a right for lower + grace: about 16 ms of
  // each input, one event per ms.
  EXPECT_LE(stored.events, 40u) << "of " << stored.records_in << " read";
}

// A state another build wrote is refused when the task opens, naming the step and the layout
// version, never read as something else.
TEST(IntervalJoin, AStateOfAnotherLayoutIsRefusedOnResume) {
  struct Case {
    std::function<Value(const Value&)> rewrite;
    std::string error;
  };
  // A state's right index and values rewritten by `change`, if it holds two rights or more.
  auto rights = [](std::function<void(Value::String & index, Value::String & values)> change) {
    return [change](const Value& v) {
      Value changed = v;
      Value::String& index = changed.as_array()[5].mutable_string();
      if (index.size() >= 2 * dataflow::JoinSide::kIndexBytes) {
        change(index, changed.as_array()[6].mutable_string());
      }
      return changed;
    };
  };
  auto set_last_end = [](Value::String& index, int64_t end) {
    std::memcpy(index.data() + index.size() - sizeof(end), &end, sizeof(end));
  };
  const std::vector<Case> cases = {
      // The first layout: [serde, lefts, rights], each entry an array of its own.
      {[](const Value& v) {
         return Value::MakeArray(
             {v.as_array()[1], Value::MakeArray({Value::MakeArray({1, 2})}), Value::Array{}});
       },
       "layout version 1 (this build reads 3)"},
      // The same with an int key's serde (2), which equals a later version.
      {[](const Value&) {
         return Value::MakeArray(
             {static_cast<int64_t>(KeySerde::kInt), Value::Array{}, Value::Array{}});
       },
       "layout version 1 (this build reads 3)"},
      // The second: each side's values in an array.
      {[](const Value& v) {
         Value second = v;
         second.as_array()[0] = 2;
         second.as_array()[3] = Value::Array{};
         second.as_array()[6] = Value::Array{};
         return second;
       },
       "layout version 2 (this build reads 3)"},
      {[](const Value& v) {
         Value later = v;
         later.as_array()[0] = 4;
         return later;
       },
       "layout version 4 (this build reads 3)"},
      // A left flag too few.
      {[](const Value& v) {
         Value cut = v;
         cut.as_array()[4].AssignString("");
         return cut;
       },
       "wrong shape"},
      // Half a right index entry too many.
      {rights([](Value::String& index, Value::String&) { index.append(8, '\0'); }), "wrong shape"},
      // The last right ending past the values.
      {rights([&](Value::String& index, Value::String& values) {
         set_last_end(index, static_cast<int64_t>(values.size()) + 1);
       }),
       "wrong shape"},
      // The last right's value a byte short (its end moved with it).
      {rights([&](Value::String& index, Value::String& values) {
         values.pop_back();
         set_last_end(index, static_cast<int64_t>(values.size()));
       }),
       "is not one value in the binary form"},
      // The first right ending past the values (and so after the second).
      {rights([](Value::String& index, Value::String& values) {
         const int64_t past = static_cast<int64_t>(values.size()) + 1;
         std::memcpy(index.data() + 8, &past, sizeof(past));
       }),
       "ends outside its side's values"},
      // The first right later than the second.
      {rights([](Value::String& index, Value::String&) {
         const int64_t latest = std::numeric_limits<int64_t>::max();
         std::memcpy(index.data(), &latest, sizeof(latest));
       }),
       "out of time order"}};
  for (const Case& c : cases) {
    auto resumed = ResumeFromRewrittenState(Interval(5, 5, 10, true), "ij", c.rewrite);
    ASSERT_FALSE(resumed.ok()) << c.error;
    EXPECT_NE(resumed.status().message().find(c.error), std::string::npos)
        << resumed.status().ToString();
    EXPECT_NE(resumed.status().message().find("join step ij"), std::string::npos)
        << resumed.status().ToString();
  }
}

// Stops twice at a checkpoint with pairs and unmatched lefts pending, resumes, and compares
// with one uninterrupted run: the same results and late events, none twice.
TEST(IntervalJoin, ARestartInTheMiddleGivesTheOutputOfOneRun) {
  std::vector<ModelEvent> left, right;
  RestartInputs(left, right);
  auto join = Interval(12, 8, kRestartGrace, true);
  JoinRun once = RunJoin(left, right, join);
  JoinRun resumed = RunJoin(left, right, join, "joins.late", /*stops=*/2, /*stop_after=*/700);
  EXPECT_EQ(ResultsDifference(Sorted(Results(once)), Sorted(Results(resumed))), "");
  ASSERT_GT(once.late.size(), 0u);
  EXPECT_EQ(LateIds(resumed, true), LateIds(once, true));
}

}  // namespace
}  // namespace weir::testing
