// Joins through a real application: files in, groups, dead letters and redeliveries out
// (the assembly rules themselves are tested one by one in src/join/assembler_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/testing.h"
#include "weir/weir.h"

namespace weir {
namespace {

using std::chrono::milliseconds;
using testing::ReadLines;
using testing::ReadTopic;
using testing::TempDir;
using testing::WriteLines;

class Joins : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_ / name; }
  std::string Data() const { return Path("data"); }

  // The output file's records, as values ({"key", "timestamp", "value"}).
  std::vector<Value> Output(const std::string& name) const {
    std::vector<Value> out;
    for (const std::string& l : ReadLines(Path(name))) out.push_back(*Value::Parse(l));
    return out;
  }
  std::vector<Value> DeadLetters(const std::string& app) const {
    std::vector<Value> out;
    for (const auto& r : ReadTopic(Data(), app + ".dlq")) out.push_back(r.value);
    return out;
  }
  static std::vector<std::string> GroupIds(const std::vector<Value>& out, std::string_view field) {
    std::vector<std::string> ids;
    for (const Value& r : out) ids.push_back(r.FindPath("value." + std::string(field))->ToJson());
    return ids;
  }

  TempDir dir_;
};

TEST_F(Joins, TraceJoinOfTwoInputsEmitsOneRecordPerCompleteGroup) {
  WriteLines(Path("orders.jsonl"),
             {R"({"trace":"t1","ts":100,"item":"book"})", R"({"trace":"t2","ts":200,"item":"pen"})",
              R"({"trace":"t3","ts":300,"item":"ink"})"});
  WriteLines(Path("payments.jsonl"),
             {R"({"trace":"t2","ts":210,"paid":3})", R"({"trace":"t1","ts":90,"paid":12})"});
  Application app({.name = "trace", .data_dir = Data()});
  Stream orders =
      app.FromFile({.path = Path("orders.jsonl"), .key = {"trace"}, .timestamp_field = "ts"});
  Stream payments =
      app.FromFile({.path = Path("payments.jsonl"), .key = {"trace"}, .timestamp_field = "ts"});
  app.Join({{"order", orders}, {"payment", payments}}, {.mode = JoinMode::kTrace})
      .ToFile(Path("out.jsonl"));
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  std::vector<Value> out = Output("out.jsonl");
  ASSERT_EQ(out.size(), 2u);
  std::sort(out.begin(), out.end(), [](const Value& a, const Value& b) {
    return a.Find("key")->ToJson() < b.Find("key")->ToJson();
  });
  EXPECT_EQ(out[0].Find("key")->ToJson(), R"("t1")");
  EXPECT_EQ(out[0].Find("timestamp")->as_int(), 90);  // the smallest member time
  EXPECT_EQ(
      out[0].Find("value")->ToJson(),
      R"({"trace_id":"t1","seq":1,"event_ts":90,"order":{"trace":"t1","ts":100,"item":"book"},)"
      R"("payment":{"trace":"t1","ts":90,"paid":12}})");
  EXPECT_EQ(out[1].FindPath("value.payment.paid")->as_int(), 3);
  // t3 never completed: at the end of input it is evicted (drop: to the dead-letter topic).
  std::vector<Value> dead = DeadLetters("trace");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_NE(dead[0].Find("reason")->as_string().find("missing [payment]"), std::string::npos)
      << dead[0].ToJson();
  EXPECT_EQ(dead[0].FindPath("position.line")->as_int(), 3);  // where the member came from
  EXPECT_EQ(summary->join_evicted, 1);
}

TEST_F(Joins, DiamondSplitsOneMessageAndRejoinsItsBranchesByTraceId) {
  std::vector<std::string> lines;
  for (int i = 0; i < 500; ++i) {
    lines.push_back(R"({"id":"m)" + std::to_string(i) + R"(","ts":)" + std::to_string(i * 10) +
                    R"(,"n":)" + std::to_string(i) + "}");
  }
  WriteLines(Path("in.jsonl"), lines);
  Application app({.name = "diamond", .data_dir = Data()});
  Stream in = app.FromFile({.path = Path("in.jsonl"), .key = {"id"}, .timestamp_field = "ts"});
  Stream doubled = in.Map([](const Value& v) {
    return Value::MakeObject({{"twice", Value(v.Find("n")->as_int() * 2)}});
  });
  Stream even = in.Filter([](const Value& v) { return v.Find("n")->as_int() % 2 == 0; });
  app.Join({{"doubled", doubled}, {"even", even}}, {.mode = JoinMode::kTrace})
      .ToFile(Path("out.jsonl"));
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::vector<Value> out = Output("out.jsonl");
  ASSERT_EQ(out.size(), 250u);
  for (const Value& r : out) {
    EXPECT_EQ(r.FindPath("value.doubled.twice")->as_int(),
              2 * r.FindPath("value.even.n")->as_int());
  }
  // The odd ones never had their second branch: evicted at the end, as dead letters.
  EXPECT_EQ(DeadLetters("diamond").size(), 250u);
}

// Camera and lidar at 10 Hz (lidar 3 ms behind), an IMU at 1 kHz collected within 5 ms.
TEST_F(Joins, TimeJoinAlignsIndependentProducersAndCollectsAHighRateSensor) {
  std::vector<std::string> camera, lidar, imu;
  for (int i = 0; i < 50; ++i) {
    camera.push_back(R"({"ts":)" + std::to_string(1000 + i * 100) + R"(,"frame":)" +
                     std::to_string(i) + "}");
    if (i != 7) {  // one lidar sweep is missing
      lidar.push_back(R"({"ts":)" + std::to_string(1003 + i * 100) + R"(,"sweep":)" +
                      std::to_string(i) + "}");
    }
  }
  for (int t = 900; t < 6000; ++t) imu.push_back(R"({"ts":)" + std::to_string(t) + "}");
  WriteLines(Path("camera.jsonl"), camera);
  WriteLines(Path("lidar.jsonl"), lidar);
  WriteLines(Path("imu.jsonl"), imu);
  Application app({.name = "fusion", .data_dir = Data()});
  auto from = [&](const std::string& name) {
    return app.FromFile(
        {.path = Path(name + ".jsonl"), .key = {"ts", KeySerde::kInt}, .timestamp_field = "ts"});
  };
  app.Join({{"camera", from("camera")}, {"lidar", from("lidar")}, {"imu", from("imu")}},
           {.mode = JoinMode::kTime,
            .tolerance = milliseconds(20),
            .timeout = milliseconds(500),
            .quorum = 1,
            .collect = {{"imu", milliseconds(5)}}})
      .ToFile(Path("out.jsonl"));
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::vector<Value> out = Output("out.jsonl");
  ASSERT_EQ(out.size(), 50u);
  int missing_lidar = 0;
  for (const Value& r : out) {
    const Value& v = *r.Find("value");
    const int64_t frame = v.FindPath("camera.frame")->as_int();
    EXPECT_EQ(v.Find("event_ts")->as_int(), 1000 + frame * 100);
    if (v.Find("lidar")->is_null()) {
      ++missing_lidar;
      EXPECT_EQ(frame, 7);  // emitted at quorum after the timeout, lidar null
    } else {
      EXPECT_EQ(v.FindPath("lidar.sweep")->as_int(), frame);
    }
    // Every IMU sample within 5 ms of the group time, oldest first.
    const Value::Array& samples = v.Find("imu")->as_array();
    ASSERT_EQ(samples.size(), 11u) << r.ToJson();
    EXPECT_EQ(samples.front().Find("ts")->as_int(), 1000 + frame * 100 - 5);
    EXPECT_EQ(samples.back().Find("ts")->as_int(), 1000 + frame * 100 + 5);
  }
  EXPECT_EQ(missing_lidar, 1);
  EXPECT_EQ(summary->dead_letters, 0);  // unclaimed IMU samples are acknowledged, not dead
}

TEST_F(Joins, ErrorPolicyRedeliversEvictedMembersUpToMaxDeliverThenDeadLettersThem) {
  WriteLines(Path("a.jsonl"), {R"({"k":"x","ts":1})", R"({"k":"y","ts":2})"});
  WriteLines(Path("b.jsonl"), {R"({"k":"y","ts":3})"});
  Application app({.name = "naks", .data_dir = Data()});
  Stream a = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
  Stream b = app.FromFile({.path = Path("b.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
  app.Join({{"a", a}, {"b", b}},
           {.mode = JoinMode::kTrace, .missing = MissingPolicy::kError, .max_deliver = 3})
      .ToFile(Path("out.jsonl"));
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(Output("out.jsonl").size(), 1u);  // y
  // x: evicted at the end of input, nak'd, delivered again (2nd, 3rd), then a dead letter.
  EXPECT_EQ(summary->redelivered, 2);
  std::vector<Value> dead = DeadLetters("naks");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_NE(dead[0].Find("reason")->as_string().find("on each of 3 deliveries"), std::string::npos)
      << dead[0].ToJson();
  EXPECT_EQ(dead[0].Find("raw")->as_string(), R"({"k":"x","ts":1})");
}

TEST_F(Joins, MaxPendingEvictsTheOldestGroupToTheDeadLetterTopic) {
  std::vector<std::string> a;
  for (int i = 0; i < 10; ++i) a.push_back(R"({"k":"g)" + std::to_string(i) + R"(","ts":1})");
  WriteLines(Path("a.jsonl"), a);
  WriteLines(Path("b.jsonl"), {R"({"k":"g9","ts":1})"});
  Application app({.name = "cap", .data_dir = Data()});
  Stream sa = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
  Stream sb = app.FromFile({.path = Path("b.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
  app.Join({{"a", sa}, {"b", sb}}, {.mode = JoinMode::kTrace, .max_pending = 4})
      .ToFile(Path("out.jsonl"));
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(GroupIds(Output("out.jsonl"), "trace_id"), std::vector<std::string>{R"("g9")"});
  std::vector<Value> dead = DeadLetters("cap");
  ASSERT_EQ(dead.size(), 9u);
  int capped = 0;
  for (const Value& d : dead)
    capped += d.Find("reason")->as_string().find("max_pending") != std::string::npos;
  EXPECT_EQ(capped, 6);  // g0..g5 pushed out; g6..g8 evicted at the end of input
}

// Members of pending groups stay unacknowledged: a run stopped at a checkpoint while groups are
// pending resumes with those members delivered again, and the outputs equal one whole run.
TEST_F(Joins, PendingMembersAreHeldAcrossARestartNotLostAndNotDuplicated) {
  // b's half of each group comes 10,000 records after a's: at any stop, groups are pending.
  constexpr int kGroups = 30'000, kLag = 10'000;
  std::vector<std::string> a, b;
  for (int i = 0; i < kGroups + kLag; ++i) {
    if (i < kGroups) {
      a.push_back(R"({"k":"g)" + std::to_string(i) + R"(","ts":)" + std::to_string(i) + "}");
    }
    if (i >= kLag) {
      b.push_back(R"({"k":"g)" + std::to_string(i - kLag) + R"(","ts":)" + std::to_string(i) + "}");
    }
  }
  WriteLines(Path("a.jsonl"), a);
  WriteLines(Path("b.jsonl"), b);
  // One pipeline, run whole, or stopped at its first checkpoint (after about a batch) and run
  // again until it completes.
  auto run = [&](const std::string& name, bool stop) {
    Application* running = nullptr;
    Application app({.name = name,
                     .data_dir = Data(),
                     .checkpoint_records = 100,
                     .on_checkpoint = [&](int64_t, int64_t) {
                       if (stop) running->Stop();
                     }});
    running = &app;
    Stream sa = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
    Stream sb = app.FromFile({.path = Path("b.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
    // No max_pending eviction here: which groups it evicts can differ after a restart.
    app.Join({{"a", sa}, {"b", sb}}, {.mode = JoinMode::kTrace, .max_pending = 2 * kLag})
        .ToFile(Path(name + ".jsonl"));
    return app.Run();
  };
  auto whole = run("whole", false);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  int restarts = 0;
  int64_t redelivered = 0;
  while (true) {
    auto summary = run("stopped", true);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    redelivered += summary->redelivered;
    if (summary->completed) break;
    ASSERT_LT(++restarts, 500);
  }
  EXPECT_GT(restarts, 0);
  EXPECT_GT(redelivered, 0);  // held members came back after restarts
  auto sorted_ids = [&](const std::string& file) {
    std::vector<std::string> ids = GroupIds(Output(file), "trace_id");
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  EXPECT_EQ(sorted_ids("stopped.jsonl").size(), static_cast<size_t>(kGroups));
  EXPECT_EQ(sorted_ids("stopped.jsonl"), sorted_ids("whole.jsonl"));
}

// The merge of two inputs can stop with records read but not processed; a checkpoint then must
// not skip them (regression: they were lost after a stop).
TEST_F(Joins, RecordsReadButNotYetMergedAtACheckpointAreProcessedAfterARestart) {
  std::vector<std::string> a, b;
  constexpr int kGroups = 20'000;
  for (int i = 0; i < kGroups; ++i) {
    a.push_back(R"({"k":"g)" + std::to_string(i) + R"(","ts":)" + std::to_string(2 * i) + "}");
    b.push_back(R"({"k":"g)" + std::to_string(i) + R"(","ts":)" + std::to_string(2 * i + 1) + "}");
  }
  WriteLines(Path("a.jsonl"), a);
  WriteLines(Path("b.jsonl"), b);
  int runs = 0;
  while (true) {
    Application* running = nullptr;
    Application app({.name = "merge",
                     .data_dir = Data(),
                     .checkpoint_records = 100,
                     .on_checkpoint = [&](int64_t, int64_t) { running->Stop(); }});
    running = &app;
    Stream sa = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
    Stream sb = app.FromFile({.path = Path("b.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
    app.Join({{"a", sa}, {"b", sb}}, {.mode = JoinMode::kTrace}).ToFile(Path("out.jsonl"));
    auto summary = app.Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    ASSERT_LT(++runs, 500);
    if (summary->completed) break;
  }
  EXPECT_GT(runs, 1);
  std::vector<std::string> ids = GroupIds(Output("out.jsonl"), "trace_id");
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kGroups));
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
  EXPECT_TRUE(DeadLetters("merge").empty());
}

TEST_F(Joins, InputsThatAreNotCoPartitionedAreRefusedNamingBoth) {
  WriteLines(Path("a.jsonl"), {R"({"k":"x"})"});
  Application app({.name = "parts", .data_dir = Data()});
  Stream file = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}});
  Stream gen = app.FromGenerator({.partitions = 2, .events = 10});
  app.Join({{"file", file}, {"gen", gen}}, {}).ToStdout();
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("not co-partitioned"), std::string::npos)
      << summary.status().message();
  EXPECT_NE(summary.status().message().find("2 partitions"), std::string::npos)
      << summary.status().message();
}

TEST_F(Joins, AJoinOfWhatAWindowEmitsFromItsStateIsRefusedUnlessATopicIsBetween) {
  WriteLines(Path("a.jsonl"), {R"({"k":"x","ts":1})"});
  auto build = [&](bool through_topic) {
    auto app = std::make_unique<Application>(
        ApplicationOptions{.name = through_topic ? "ok" : "refused", .data_dir = Data()});
    Stream a = app->FromFile({.path = Path("a.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
    Stream counts =
        a.Window(WindowDefinition::Tumbling(milliseconds(10))).Agg(agg::Count()).Final();
    if (through_topic) counts = counts.GroupBy("value", KeySerde::kInt);
    Stream b = app->FromFile({.path = Path("a.jsonl"), .key = {"k"}, .timestamp_field = "ts"});
    app->Join({{"counts", counts}, {"b", b}}, {}).ToFile(Path("out.jsonl"));
    return app;
  };
  auto refused = build(false)->Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("put a group_by between them"), std::string::npos)
      << refused.status().message();
  auto ok = build(true)->Run();
  EXPECT_FALSE(!ok.ok() && ok.status().message().find("group_by between") != std::string::npos);
}

TEST_F(Joins, DefinitionErrorsAreReportedByRunBeforeAnythingOpens) {
  WriteLines(Path("a.jsonl"), {R"({"k":"x"})"});
  Application app({.name = "bad", .data_dir = Data()});
  Stream a = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}});
  Stream b = app.FromFile({.path = Path("a.jsonl"), .key = {"k"}});
  app.Join({{"a", a}, {"b", b}}, {.mode = JoinMode::kTime}).ToStdout();
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("tolerance_ms"), std::string::npos);
}

}  // namespace
}  // namespace weir
