#include "weir/application.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "app/data_dir.h"
#include "app/testing.h"

namespace weir {
namespace {

using testing::ReadLines;
using testing::ReadTopic;
using testing::TempDir;
using testing::TestOptions;
using testing::UserFile;
using testing::WriteLines;


std::string Event(const std::string& user, int64_t ts, const std::string& page, int amount) {
  return R"({"user":")" + user + R"(","ts":)" + std::to_string(ts) + R"(,"page":")" + page +
         R"(","amount":)" + std::to_string(amount) + "}";
}

TEST(Application, FileToFileRunsStepsInOrderAndCompletes) {
  TempDir dir;
  WriteLines(dir / "in.jsonl",
             {Event("ann", 10, "/a", 5), Event("bob", 20, "/b", 7), Event("ann", 30, "/c", 1)});
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Filter([](const Value& v) { return v.Find("amount")->as_int() > 2; })
      .Map([](const Value& v) {
        return Value::MakeObject({{"page", *v.Find("page")}});
      })
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->completed);
  EXPECT_EQ(summary->records_in, 3);
  EXPECT_EQ(ReadLines(dir / "out.jsonl"),
            (std::vector<std::string>{R"({"key":"ann","timestamp":10,"value":{"page":"/a"}})",
                                      R"({"key":"bob","timestamp":20,"value":{"page":"/b"}})"}));
}

TEST(Application, BadRecordsGoToTheDeadLetterTopicAndProcessingContinues) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {
                                   Event("ann", 1, "/a", 1),
                                   R"({"user":"bob","ts":)",         // malformed JSON
                                   R"({"user":"bob","page":"/x"})",  // no timestamp
                                   R"({"user":"bob","ts":"noon"})",  // non-integer time
                                   R"({"user":42,"ts":5})",          // key of the wrong type
                                   Event("cid", 6, "/b", 2),
                               });
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl")).ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->dead_letters, 4);
  EXPECT_EQ(ReadLines(dir / "out.jsonl").size(), 2u);

  std::vector<testing::TopicRecord> dead = ReadTopic(dir / "data", "app.dlq");
  ASSERT_EQ(dead.size(), 4u);
  std::vector<std::string> reasons;
  for (const auto& d : dead) reasons.emplace_back(d.value.Find("reason")->as_string());
  EXPECT_NE(reasons[0].find("malformed JSON"), std::string::npos);
  EXPECT_EQ(reasons[1], "timestamp field 'ts' is missing");
  EXPECT_NE(reasons[2].find("timestamp field 'ts' must be an integer"), std::string::npos);
  EXPECT_EQ(reasons[3], "key field 'user' must be a string, found integer");
  EXPECT_EQ(dead[0].value.Find("raw")->as_string(), R"({"user":"bob","ts":)");
  EXPECT_EQ(dead[0].value.FindPath("position.line")->as_int(), 2);
  EXPECT_EQ(dead[3].value.FindPath("position.line")->as_int(), 5);
  EXPECT_EQ(dead[0].value.Find("source")->as_string(), "file " + (dir / "in.jsonl"));
}

TEST(Application, GroupByRunningAggregatesMatchAModel) {
  TempDir dir;
  std::mt19937 rng(3);
  std::vector<std::string> lines;
  std::map<std::string, std::pair<int64_t, int64_t>> model;  // page -> (count, sum)
  for (int i = 0; i < 5000; ++i) {
    std::string page = "/p" + std::to_string(rng() % 37);
    int amount = static_cast<int>(rng() % 100);
    lines.push_back(Event("u" + std::to_string(rng() % 200), i, page, amount));
    model[page].first += 1;
    model[page].second += amount;
  }
  WriteLines(dir / "in.jsonl", lines);
  ApplicationOptions options = TestOptions(dir);
  options.partitions = 3;
  Application app(options);
  app.FromFile(UserFile(dir / "in.jsonl"))
      .GroupBy("page")
      .Aggregate({{"n", agg::Count()}, {"total", agg::Sum("amount")}})
      .ToTopic("by-page");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  std::map<std::string, std::pair<int64_t, int64_t>> last;
  for (const auto& r : ReadTopic(dir / "data", "by-page")) {
    auto& [n, total] = last[r.key_json];
    ASSERT_EQ(r.value.Find("n")->as_int(), n + 1) << "counts of a key go 1, 2, 3... in order";
    n = r.value.Find("n")->as_int();
    total = r.value.Find("total")->as_int();
  }
  ASSERT_EQ(last.size(), model.size());
  for (const auto& [page, expected] : model) EXPECT_EQ(last["\"" + page + "\""], expected) << page;
}

TEST(Application, RerunningACompletedPipelineWritesNothingNew) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("ann", 1, "/a", 1), Event("bob", 2, "/b", 2)});
  auto build = [&](Application& app) {
    app.FromFile(UserFile(dir / "in.jsonl"))
        .GroupBy("page")
        .Aggregate({{"n", agg::Count()}})
        .ToFile(dir / "out.jsonl");
  };
  {
    Application app(TestOptions(dir));
    build(app);
    ASSERT_TRUE(app.Run().ok());
  }
  std::vector<std::string> first = ReadLines(dir / "out.jsonl");
  Application again(TestOptions(dir));
  build(again);
  auto summary = again.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->records_in, 0);
  EXPECT_EQ(summary->restored_checkpoint > 0, true);
  EXPECT_EQ(ReadLines(dir / "out.jsonl"), first);
}

// Counts per user with a C++ Apply: the state survives a stop and a restart.
void BuildGeneratorCount(Application& app, int64_t events, double max_rate) {
  GeneratorOptions g;
  g.partitions = 2;
  g.users = 300;
  g.events = events;
  g.max_rate = max_rate;
  app.FromGenerator(g)
      .Apply(
          [](const Value& v, State& state) -> std::optional<Value> {
            const Value* seen = state.Get("seen");
            int64_t n = seen ? seen->as_int() + 1 : 1;
            state.Set("seen", Value(n));
            return Value::MakeObject({{"user", *v.Find("user")}, {"n", n}});
          },
          "count-by-user")
      .ToTopic("counts");
}

TEST(Application, StopThenResumeGivesTheOutputOfAnUninterruptedRun) {
  TempDir dir;
  ApplicationOptions interrupted = TestOptions(dir, "gen");
  {
    Application* running = nullptr;
    ApplicationOptions stop_early = interrupted;
    stop_early.on_checkpoint = [&](int64_t, int64_t records_in) {
      if (records_in > 1000) running->Stop();
    };
    Application app(stop_early);
    running = &app;
    BuildGeneratorCount(app, -1, 20000);
    auto summary = app.Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_FALSE(summary->completed);
    EXPECT_GT(summary->records_in, 0);
    EXPECT_LT(summary->records_in, 20000);
  }
  {
    Application app(interrupted);
    BuildGeneratorCount(app, 20000, 0);
    auto summary = app.Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_TRUE(summary->completed);
  }
  TempDir reference_dir;
  {
    Application app(TestOptions(reference_dir, "gen"));
    BuildGeneratorCount(app, 20000, 0);
    ASSERT_TRUE(app.Run().ok());
  }
  auto got = ReadTopic(dir / "data", "counts");
  auto want = ReadTopic(reference_dir / "data", "counts");
  ASSERT_EQ(got.size(), 20000u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].partition, want[i].partition);
    EXPECT_EQ(got[i].key_json, want[i].key_json);
    EXPECT_EQ(got[i].value, want[i].value) << i;
    if (got[i].value != want[i].value) break;
  }
}

TEST(Application, AChangedDefinitionIsRefusedWithTheWayOut) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("ann", 1, "/a", 1)});
  {
    Application app(TestOptions(dir));
    app.FromFile(UserFile(dir / "in.jsonl")).ToFile(dir / "out.jsonl");
    ASSERT_TRUE(app.Run().ok());
  }
  Application changed(TestOptions(dir));
  changed.FromFile(UserFile(dir / "in.jsonl")).GroupBy("page").ToFile(dir / "out.jsonl");
  auto summary = changed.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(summary.status().message().find("--reset"), std::string::npos);
  ASSERT_TRUE(changed.Reset().ok());
  EXPECT_TRUE(changed.Run().ok());
}

TEST(Application, ADataDirectoryInUseIsRefused) {
  TempDir dir;
  auto held = app::DataDirLock::Acquire(dir / "data");
  ASSERT_TRUE(held.ok());
  WriteLines(dir / "in.jsonl", {Event("ann", 1, "/a", 1)});
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl")).ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("is in use by another process"), std::string::npos);
}

TEST(Application, AnUnknownSourceTopicIsNamed) {
  TempDir dir;
  Application app(TestOptions(dir));
  app.FromTopic({.topic = "nope"}).ToStdout();
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kNotFound);
  EXPECT_NE(summary.status().message().find("unknown topic 'nope'"), std::string::npos);
}

TEST(Application, AMissingInputFileIsNamed) {
  TempDir dir;
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "missing.jsonl")).ToStdout();
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find(dir / "missing.jsonl"), std::string::npos);
}

TEST(Application, AValueAnAggregationCannotTakeIsADeadLetter) {
  TempDir dir;
  WriteLines(dir / "in.jsonl",
             {R"({"user":"a","ts":1,"amount":3})", R"({"user":"a","ts":2,"amount":"three"})",
              R"({"user":"a","ts":3,"amount":4})"});
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Aggregate({{"total", agg::Sum("amount")}})
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->dead_letters, 1);
  std::vector<std::string> out = ReadLines(dir / "out.jsonl");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[1].find(R"("total":7)"), std::string::npos);
  auto dead = ReadTopic(dir / "data", "app.dlq");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].value.Find("reason")->as_string(),
            "sum(amount) cannot take field 'amount' of type string");
  EXPECT_EQ(dead[0].value.FindPath("position.line")->as_int(), 2);
}

TEST(Application, DefinitionErrorsAreReportedBeforeAnythingRuns) {
  TempDir dir;
  Application no_sink(TestOptions(dir));
  no_sink.FromFile(UserFile(dir / "in.jsonl")).Map([](const Value& v) { return v; });
  auto s = no_sink.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("has no sink after it"), std::string::npos);

  Application bad_name(TestOptions(dir, "no spaces"));
  bad_name.FromFile(UserFile(dir / "in.jsonl")).ToStdout();
  EXPECT_EQ(bad_name.Run().status().code(), StatusCode::kInvalidArgument);

  Application no_key(TestOptions(dir));
  no_key.FromFile({.path = dir / "in.jsonl"}).ToStdout();
  EXPECT_NE(no_key.Run().status().message().find("needs a key field"), std::string::npos);

  // One partition limit for every kind, from C++ as from YAML (weir/types.h kMaxPartitions).
  Application too_wide(TestOptions(dir));
  too_wide.FromFile(UserFile(dir / "in.jsonl"))
      .GroupBy("page", KeySerde::kString, 10001)
      .ToStdout();
  EXPECT_NE(too_wide.Run().status().message().find(
                "GroupBy partitions must be 0 to 10000 (0: the default), got 10001"),
            std::string::npos);
  ApplicationOptions wide_default = TestOptions(dir);
  wide_default.partitions = -1;
  Application negative(wide_default);
  negative.FromFile(UserFile(dir / "in.jsonl")).ToStdout();
  EXPECT_NE(negative.Run().status().message().find("partitions must be 0 to 10000"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "data"));
}

}  // namespace
}  // namespace weir
