#include "weir/application.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
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
  EXPECT_NE(summary.status().message().find("reset it (Application::Reset())"), std::string::npos)
      << summary.status().message();
  ASSERT_TRUE(changed.Reset().ok());
  EXPECT_TRUE(changed.Run().ok());
}

// A running count per user, from a file to a file.
void BuildFileCount(Application& app, const std::string& input, const std::string& output) {
  app.FromFile(UserFile(input)).Aggregate({{"n", agg::Count()}}).ToFile(output);
}

// One run of BuildFileCount over `input`, writing dir/out.jsonl.
Result<RunSummary> RunFileCount(const TempDir& dir, const std::string& input) {
  Application app(TestOptions(dir));
  BuildFileCount(app, input, dir / "out.jsonl");
  return app.Run();
}

std::vector<std::string> Events(int from, int to) {
  std::vector<std::string> lines;
  for (int i = from; i < to; ++i) lines.push_back(Event("u" + std::to_string(i % 7), i, "/p", i));
  return lines;
}

TEST(Application, AChangedInputPathIsRefusedNamingTheSourceAndTheWayToStartOver) {
  TempDir dir;
  WriteLines(dir / "a.jsonl", Events(0, 50));
  WriteLines(dir / "b.jsonl", Events(100, 200));
  ASSERT_TRUE(RunFileCount(dir, dir / "a.jsonl").ok());
  Application moved(TestOptions(dir));
  BuildFileCount(moved, dir / "b.jsonl", dir / "out.jsonl");
  auto summary = moved.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kFailedPrecondition);
  const std::string& message = summary.status().message();
  EXPECT_NE(message.find("'file-source-0' (file-source): path \"" + (dir / "a.jsonl") + "\" -> \"" +
                         (dir / "b.jsonl") + "\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("reset it (Application::Reset())"), std::string::npos) << message;
  ASSERT_TRUE(moved.Reset().ok());
  auto fresh = moved.Run();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->records_in, 100);
}

TEST(Application, AnInputFileRewrittenUnderItsPathIsRefusedAtStart) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", Events(0, 50));
  ASSERT_TRUE(RunFileCount(dir, dir / "in.jsonl").ok());
  const std::vector<std::string> written = ReadLines(dir / "out.jsonl");
  const auto read_up_to = std::filesystem::file_size(dir / "in.jsonl");
  // Longer than before, so only its content tells it from a file that grew.
  WriteLines(dir / "in.jsonl", Events(1000, 1100));
  auto summary = RunFileCount(dir, dir / "in.jsonl");
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kFailedPrecondition);
  const std::string& message = summary.status().message();
  EXPECT_NE(message.find("input file " + (dir / "in.jsonl") +
                         " changed before the position its last checkpoint read up to (byte " +
                         std::to_string(read_up_to) + ", line 50): the " +
                         std::to_string(read_up_to) + " bytes before that byte had CRC-32C 0x"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("; to start over, reset the application (Application::Reset())"),
            std::string::npos)
      << message;
  EXPECT_EQ(ReadLines(dir / "out.jsonl"), written);
}

TEST(Application, AnInputFileCutShorterIsRefusedAtStart) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", Events(0, 50));
  ASSERT_TRUE(RunFileCount(dir, dir / "in.jsonl").ok());
  WriteLines(dir / "in.jsonl", Events(0, 10));
  auto summary = RunFileCount(dir, dir / "in.jsonl");
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("input file " + (dir / "in.jsonl") + " is shorter"),
            std::string::npos)
      << summary.status().message();
  EXPECT_NE(summary.status().message().find("reset the application (Application::Reset())"),
            std::string::npos);
}

// Over 1 MiB before the append, so the source's window spans refills of its read buffer.
TEST(Application, AnInputFileAppendedToResumesWithTheNewLinesOnlyExactlyOnce) {
  TempDir dir;
  const std::vector<std::string> before = Events(0, 20000);
  const std::vector<std::string> after = Events(20000, 20500);
  WriteLines(dir / "in.jsonl", before);
  auto first = RunFileCount(dir, dir / "in.jsonl");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->records_in, 20000);
  {
    std::ofstream grow(dir / "in.jsonl", std::ios::app);
    for (const std::string& line : after) grow << line << '\n';
  }
  auto summary = RunFileCount(dir, dir / "in.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->records_in, 500);
  EXPECT_EQ(summary->dead_letters, 0);

  TempDir reference;
  std::vector<std::string> all = before;
  all.insert(all.end(), after.begin(), after.end());
  WriteLines(reference / "in.jsonl", all);
  ASSERT_TRUE(RunFileCount(reference, reference / "in.jsonl").ok());
  EXPECT_EQ(ReadLines(dir / "out.jsonl"), ReadLines(reference / "out.jsonl"));
}

TEST(Application, AFileSinkToDevNullRunsAndResumes) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", Events(0, 20));
  for (int run = 0; run < 2; ++run) {
    Application app(TestOptions(dir));
    BuildFileCount(app, dir / "in.jsonl", "/dev/null");
    auto summary = app.Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(summary->records_out, run == 0 ? 20 : 0);
  }
}

TEST(Application, AFileSinkToAFifoWritesEveryRecordToItsReader) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", Events(0, 20));
  ASSERT_EQ(::mkfifo((dir / "out.fifo").c_str(), 0600), 0);
  std::vector<std::string> received;
  std::thread reader([&] { received = ReadLines(dir / "out.fifo"); });
  Application app(TestOptions(dir));
  BuildFileCount(app, dir / "in.jsonl", dir / "out.fifo");
  auto summary = app.Run();
  if (!summary.ok()) {
    // The run never opened the FIFO: a writer that comes and goes lets the reader go.
    ::close(::open((dir / "out.fifo").c_str(), O_WRONLY | O_NONBLOCK));
  }
  reader.join();  // the FIFO closes with the run
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  TempDir reference;
  WriteLines(reference / "in.jsonl", Events(0, 20));
  ASSERT_TRUE(RunFileCount(reference, reference / "in.jsonl").ok());
  EXPECT_EQ(received, ReadLines(reference / "out.jsonl"));
}

TEST(Application, ADataDirectoryInUseIsRefused) {
  TempDir dir;
  auto held = app::DataDirLock::Acquire(dir / "data", "--data-dir");
  ASSERT_TRUE(held.ok());
  WriteLines(dir / "in.jsonl", {Event("ann", 1, "/a", 1)});
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl")).ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("is in use by another process"), std::string::npos);
  EXPECT_NE(summary.status().message().find("choose another ApplicationOptions::data_dir"),
            std::string::npos)
      << summary.status().message();
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
