#include "app/pipeline_yaml.h"

#include <gtest/gtest.h>

#include "app/data_dir.h"
#include "app/testing.h"
#include "dataflow/graph.h"

namespace weir::app {
namespace {

using weir::testing::ReadLines;
using weir::testing::TempDir;
using weir::testing::WriteLines;

std::string ErrorOf(const std::string& yaml) {
  auto app = LoadPipelineText(yaml, "p.yaml", "/tmp", PipelineOverrides{});
  if (app.ok()) return "";
  EXPECT_EQ(app.status().code(), StatusCode::kInvalidArgument);
  return app.status().message();
}

constexpr const char* kSource = "source: {file: in.jsonl, key: user, timestamp: ts}\n";

TEST(PipelineYaml, UnknownTopLevelKeyIsNamedWithTheChoices) {
  std::string e = ErrorOf(std::string(kSource) + "sink: {stdout: true}\nsinkk: {stdout: true}\n");
  EXPECT_NE(e.find("p.yaml: sinkk: unknown key 'sinkk' (expected one of:"), std::string::npos) << e;
  EXPECT_NE(e.find("(line 3"), std::string::npos) << e;
}

// `views:` is the lake's (src/lake/view.h): a pipeline file may carry it, and the loader leaves
// it to `weir run`.
TEST(PipelineYaml, AViewsKeyBesideThePipelineIsLeftAlone) {
  EXPECT_EQ(ErrorOf(std::string(kSource) +
                    "sink: {stdout: true}\nviews: {clicks: {topic: clicks, whatever: [1]}}\n"),
            "");
}

TEST(PipelineYaml, WrongTypeNamesThePathExpectedAndFound) {
  std::string e = ErrorOf(std::string(kSource) + "sink: {stdout: true}\nworkers: [1, 2]\n");
  EXPECT_NE(e.find("p.yaml: workers: expected an integer, found a list (line 3, column 10)"),
            std::string::npos)
      << e;
  e = ErrorOf(std::string(kSource) + "sink: {stdout: true}\ncheckpoint: {interval_ms: soon}\n");
  EXPECT_NE(e.find("checkpoint.interval_ms: expected an integer, found 'soon'"), std::string::npos)
      << e;
}

TEST(PipelineYaml, StepErrorsNameTheStepIndex) {
  std::string e =
      ErrorOf(std::string(kSource) +
              "steps:\n  - group_by: page\n  - filter: {field: action}\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("steps[1].filter: expected exactly one of eq, ne, gt, ge, lt, le, in, exists"),
            std::string::npos)
      << e;
  e = ErrorOf(std::string(kSource) +
              "steps:\n  - aggregate: {n: {median: x}}\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("steps[0].aggregate.n.median: unknown aggregation 'median'"), std::string::npos)
      << e;
  e = ErrorOf(std::string(kSource) + "steps:\n  - explode: x\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("steps[0]: unknown step 'explode'"), std::string::npos) << e;
  e = ErrorOf(std::string(kSource) +
              "steps:\n  - group_by: {field: page, type: float}\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("steps[0].group_by.type: unknown key type 'float'"), std::string::npos) << e;
}

TEST(PipelineYaml, SourceAndSinkMustSayExactlyOneKind) {
  // The engine's own source kinds; `weir run` also knows nexmark and jetstream (cli_test).
  EXPECT_NE(ErrorOf("source: {file: a, topic: b, key: k}\nsink: {stdout: true}\n")
                .find("source: expected exactly one of file, topic, generator"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kSource).find("missing 'sink'"), std::string::npos);
  EXPECT_NE(
      ErrorOf("source: {file: a.jsonl}\nsink: {stdout: true}\n").find("source: missing 'key'"),
      std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kSource) + "sink: {file: a, partitions: 2}\n")
                .find("sink.partitions: 'partitions' applies to topic sinks only"),
            std::string::npos);
}

TEST(PipelineYaml, FsyncPolicyIsChecked) {
  auto app = LoadPipelineText(std::string(kSource) + "sink: {stdout: true}\nfsync: always\n",
                              "p.yaml", "", {});
  ASSERT_TRUE(app.ok());
  EXPECT_EQ((*app)->options().fsync, FsyncPolicy::kAlways);
  EXPECT_NE(ErrorOf(std::string(kSource) + "sink: {stdout: true}\nfsync: sometimes\n")
                .find("fsync: expected group, always or never, found 'sometimes'"),
            std::string::npos);
}

TEST(PipelineYaml, WindowStepErrorsNameTheirPath) {
  auto window = [](const std::string& step) {
    return ErrorOf(std::string(kSource) + "steps:\n  - " + step + "\nsink: {stdout: true}\n");
  };
  EXPECT_NE(window("window: {circular: {size_ms: 5}}\n    agg: count")
                .find("steps[0].window: unknown window kind 'circular'"),
            std::string::npos);
  EXPECT_NE(window("window: {hopping: {size_ms: 10, step_ms: 20}}\n    agg: count")
                .find("steps[0].window.hopping: hopping window: the step (20 ms) must not exceed"),
            std::string::npos);
  EXPECT_NE(window("window: {session: {gap_ms: 0}}\n    agg: count")
                .find("the inactivity gap must be > 0"),
            std::string::npos);
  EXPECT_NE(window("window: {session: {gap_ms: 10, grace_ms: soon}}\n    agg: count")
                .find("steps[0].window.session.grace_ms: expected an integer, found 'soon'"),
            std::string::npos);
  EXPECT_NE(window("window: {tumbling: {size_ms: 10}}").find("missing 'agg'"), std::string::npos);
  EXPECT_NE(window("window: {tumbling: {size_ms: 10}}\n    agg: count\n    emit: sometimes")
                .find("steps[0].emit: expected final or current, found 'sometimes'"),
            std::string::npos);
  EXPECT_NE(window("window: {tumbling: {size_ms: 10}}\n    agg: count\n    closing: global")
                .find("steps[0].closing: expected key or partition"),
            std::string::npos);
  EXPECT_NE(window("window: {count: {size: 5, grace: 1}}\n    agg: count")
                .find("steps[0].window.count.grace: unknown key 'grace'"),
            std::string::npos);
}

TEST(PipelineYaml, WindowStepsRunWithSingleAndNamedAggregations) {
  TempDir dir;
  WriteLines(dir / "in.jsonl",
             {R"({"user":"a","ts":1000,"amount":2})", R"({"user":"a","ts":1500,"amount":3})",
              R"({"user":"a","ts":9000,"amount":1})", R"({"user":"a","ts":100,"amount":7})"});
  WriteLines(dir / "p.yaml", {"source: {file: in.jsonl, key: user, timestamp: ts}", "steps:",
                              "  - window: {session: {gap_ms: 1000}}", "    agg: {sum: amount}",
                              "    late: late.jsonl", "sink: {file: out.jsonl}"});
  WriteLines(dir / "q.yaml", {"source: {file: in.jsonl, key: user, timestamp: ts}",
                              "steps:", "  - window: {tumbling: {size_ms: 5000}}",
                              "    agg: {n: count, pages: {collect: amount}, top: {max_rows: amount}}",
                              "    emit: current",
                              "sink: {file: current.jsonl}"});
  PipelineOverrides overrides;
  overrides.data_dir = dir / "data";
  for (const char* file : {"p.yaml", "q.yaml"}) {
    auto app = LoadPipelineFile(dir / file, overrides);
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    auto summary = (*app)->Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  }
  EXPECT_EQ(ReadLines(dir / "out.jsonl"),
            (std::vector<std::string>{
                R"({"key":"a","timestamp":1500,"value":{"start":1000,"end":1501,"value":5}})",
                R"({"key":"a","timestamp":9000,"value":{"start":9000,"end":9001,"value":1}})"}));
  ASSERT_EQ(ReadLines(dir / "late.jsonl").size(), 1u);
  EXPECT_NE(ReadLines(dir / "late.jsonl")[0].find(R"("late_by_ms":7900)"), std::string::npos);
  EXPECT_EQ(ReadLines(dir / "current.jsonl").size(), 3u);  // ts 100 is late: [0, 5000) closed
  EXPECT_EQ(ReadLines(dir / "current.jsonl")[1],
            R"({"key":"a","timestamp":4999,"value":{"start":0,"end":5000,"n":2,"pages":[2,3],)"
            R"("top":[{"user":"a","ts":1500,"amount":3}]}})");
}

// yaml-cpp throws when a key is not a plain scalar; the loader says where instead.
TEST(PipelineYaml, AKeyThatIsNotANameIsAnErrorWithItsPath) {
  std::string e = ErrorOf(std::string(kSource) + "? [a, b]\n: 1\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("p.yaml: (top level): expected a key name, found a list (line 2"),
            std::string::npos)
      << e;
  e = ErrorOf(std::string(kSource) + "steps:\n  - ? {filter: 1}\n    : 2\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("p.yaml: steps[0]: expected a key name, found a map"), std::string::npos) << e;
  e = ErrorOf("source: {file: in.jsonl, ? [k]: user}\nsink: {stdout: true}\n");
  EXPECT_NE(e.find("source: expected a key name, found a list"), std::string::npos) << e;
}

TEST(PipelineYaml, InvalidYamlReportsTheLine) {
  std::string e = ErrorOf("source: {file: a\nsink: [\n");
  EXPECT_NE(e.find("p.yaml: not valid YAML"), std::string::npos) << e;
  EXPECT_NE(e.find("line "), std::string::npos) << e;
}

TEST(PipelineYaml, AValidPipelineRunsWithPathsRelativeToTheFile) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {R"({"user":"a","ts":1,"action":"buy","amount":2.5})",
                                R"({"user":"b","ts":2,"action":"view"})",
                                R"({"user":"a","ts":3,"action":"buy","amount":1})"});
  WriteLines(dir / "p.yaml",
             {"name: buys", "source:", "  file: in.jsonl", "  key: user", "  timestamp: ts",
              "steps:", "  - filter: {field: action, in: [buy]}", "  - select: [user, amount]",
              "  - aggregate: {orders: count, spent: {sum: amount}}", "sink: {file: out.jsonl}"});
  PipelineOverrides overrides;
  overrides.data_dir = dir / "data";
  auto app = LoadPipelineFile(dir / "p.yaml", overrides);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  EXPECT_EQ((*app)->options().name, "buys");
  auto summary = (*app)->Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(
      ReadLines(dir / "out.jsonl"),
      (std::vector<std::string>{R"({"key":"a","timestamp":1,"value":{"orders":1,"spent":2.5}})",
                                R"({"key":"a","timestamp":3,"value":{"orders":2,"spent":3.5}})"}));
}

// `weir run` passes its flags as the ways out; the same refusals from C++ name the API.
TEST(PipelineYaml, RefusalsNameTheWaysOutTheCallerGave) {
  TempDir dir;
  WriteLines(dir / "a.jsonl", {R"({"user":"a","ts":1})"});
  WriteLines(dir / "b.jsonl", {R"({"user":"b","ts":2})"});
  PipelineOverrides overrides;
  overrides.data_dir = dir / "data";
  overrides.ways_out = {.reset = "weir run --reset", .data_dir = "--data-dir"};
  auto run = [&](const std::string& input) {
    auto app = LoadPipelineText(
        "source: {file: " + input + ", key: user, timestamp: ts}\nsink: {file: out.jsonl}\n",
        "p.yaml", dir.path(), overrides);
    EXPECT_TRUE(app.ok()) << app.status().ToString();
    return (*app)->Run();
  };
  ASSERT_TRUE(run("a.jsonl").ok());
  auto moved = run("b.jsonl");
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(moved.status().message().find("reset it (weir run --reset)"), std::string::npos)
      << moved.status().message();
  WriteLines(dir / "a.jsonl", {R"({"user":"c","ts":3})"});
  auto rewritten = run("a.jsonl");
  ASSERT_FALSE(rewritten.ok());
  EXPECT_NE(rewritten.status().message().find("reset the application (weir run --reset)"),
            std::string::npos)
      << rewritten.status().message();
  auto held = DataDirLock::Acquire(dir / "data", "--data-dir");
  ASSERT_TRUE(held.ok());
  auto locked = run("a.jsonl");
  ASSERT_FALSE(locked.ok());
  EXPECT_NE(locked.status().message().find("choose another --data-dir"), std::string::npos)
      << locked.status().message();
}

TEST(PipelineYaml, PacingChangesDoNotChangeTheDefinition) {
  auto a = LoadPipelineText(std::string(kSource) + "sink: {stdout: true}\nworkers: 1\n", "p.yaml",
                            "", {});
  auto b = LoadPipelineText(
      "source: {file: in.jsonl, key: user, timestamp: ts, rate: 5}\n"
      "sink: {stdout: true}\nworkers: 2\ncheckpoint: {interval_ms: 9}\n",
      "p.yaml", "", {});
  auto c = LoadPipelineText(
      std::string(kSource) + "steps: [{group_by: page}]\nsink: {stdout: true}\n", "p.yaml", "", {});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // What a restart checks: only options that may change differ between a and b.
  EXPECT_EQ(dataflow::DefinitionChange((*a)->Definition(), (*b)->Definition()), std::nullopt);
  EXPECT_NE(dataflow::DefinitionChange((*a)->Definition(), (*c)->Definition()), std::nullopt);
}

}  // namespace
}  // namespace weir::app

namespace weir::app {
namespace {

TEST(PipelineYaml, JoinOfNamedStreamsRuns) {
  TempDir dir;
  WriteLines(dir / "cam.jsonl", {R"({"id":"c","ts":1000,"f":1})", R"({"id":"c","ts":2000,"f":2})"});
  WriteLines(dir / "lidar.jsonl", {R"({"id":"l","ts":1004,"s":1})"});
  WriteLines(
      dir / "p.yaml",
      {"streams:", "  camera: {source: {file: cam.jsonl, key: id, timestamp: ts}}",
       "  lidar:", "    source: {file: lidar.jsonl, key: id, timestamp: ts}",
       "    steps: [{select: [s, ts]}]", "join:", "  parents: [camera, lidar]", "  mode: time",
       "  tolerance_ms: 10", "  timeout_ms: 500", "  quorum: 1", "sink: {file: out.jsonl}"});
  PipelineOverrides overrides;
  overrides.data_dir = dir / "data";
  auto app = LoadPipelineFile(dir / "p.yaml", overrides);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  auto summary = (*app)->Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(
      ReadLines(dir / "out.jsonl"),
      (std::vector<std::string>{
          R"({"key":"tw-1000-camera-1","timestamp":1000,"value":{"group_id":"tw-1000-camera-1","seq":1,"event_ts":1000,"camera":{"id":"c","ts":1000,"f":1},"lidar":{"s":1,"ts":1004}}})",
          R"({"key":"tw-2000-camera-2","timestamp":2000,"value":{"group_id":"tw-2000-camera-2","seq":2,"event_ts":2000,"camera":{"id":"c","ts":2000,"f":2},"lidar":null}})"}));
}

TEST(PipelineYaml, JoinErrorsNameTheirPath) {
  const std::string streams =
      "streams:\n  a: {source: {file: a.jsonl, key: k}}\n  b: {source: {file: b.jsonl, key: k}}\n";
  const std::string sink = "sink: {stdout: true}\n";
  std::string e = ErrorOf(streams + "join: {parents: [a, c]}\n" + sink);
  EXPECT_NE(e.find("join.parents[1]: unknown stream 'c' (streams: a, b)"), std::string::npos) << e;
  e = ErrorOf(streams + "  c: {source: {file: c.jsonl, key: k}}\njoin: {parents: [a, b]}\n" + sink);
  EXPECT_NE(e.find("streams.c: stream 'c' is not used by the join"), std::string::npos) << e;
  e = ErrorOf(streams + "join: {parents: [a, b], mode: time, tolerance_ms: 5, collect: {x: 3}}\n" +
              sink);
  EXPECT_NE(e.find("p.yaml: join: collect parent 'x' is not a parent of this join"),
            std::string::npos)
      << e;
  e = ErrorOf(streams + "join: {parents: [a, b], mode: time}\n" + sink);
  EXPECT_NE(e.find("tolerance_ms > 0"), std::string::npos) << e;
  e = ErrorOf(streams + "join: {parents: [a, b], missing: maybe}\n" + sink);
  EXPECT_NE(e.find("join.missing: expected drop or error, found 'maybe'"), std::string::npos) << e;
  e = ErrorOf(streams + "join: {parents: [a, b]}\nsource: {file: a.jsonl, key: k}\n" + sink);
  EXPECT_NE(e.find("expected exactly one of source, join, interval_join, asof_join"),
            std::string::npos)
      << e;
  e = ErrorOf(streams + "interval_join: {left: a, right: b, upper: 5}\n" + sink);
  EXPECT_NE(e.find("interval_join.upper: unknown key 'upper'"), std::string::npos) << e;
  e = ErrorOf(streams + "asof_join: {left: a, right: a}\n" + sink);
  EXPECT_NE(e.find("asof_join.right: stream 'a' is used twice"), std::string::npos) << e;
}

}  // namespace
}  // namespace weir::app
