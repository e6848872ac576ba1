// The process step with native functions, through the real engine (RocksDB on disk, the log):
// timer order and replacement, the end of input, restarts, splitting down to the activation that
// fails alone, limits, and the descriptor a restart must match.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "app/testing.h"
#include "weir/weir.h"

namespace weir {
namespace {

using testing::ReadLines;
using testing::ReadTopic;
using testing::TempDir;
using testing::TestOptions;
using testing::UserFile;
using testing::WriteLines;

std::string Event(std::string_view user, int64_t ts, std::string_view action = "add") {
  return R"({"user":")" + std::string(user) + R"(","ts":)" + std::to_string(ts) +
         R"(,"action":")" + std::string(action) + "\"}";
}

// Counts each user's events in state "count" and alerts once the user has been idle for
// `idle_ms` of event time (timer "idle", moved on by every event): {"user", "count", "idle_at"}.
class CountUntilIdle : public ProcessFunction {
 public:
  explicit CountUntilIdle(int64_t idle_ms) : idle_ms_(idle_ms) {}
  void OnInput(const ProcessActivation& a, ProcessResult& result) override {
    const Value* count = a.State("count");
    result.Set("count", Value((count ? count->as_int() : 0) + 1));
    result.SetTimer("idle", a.time + idle_ms_);
  }
  void OnTimer(const ProcessActivation& a, ProcessResult& result) override {
    result.Emit(Value::MakeObject({{"user", a.key.ToValue()},
                                   {"count", *a.State("count")},
                                   {"idle_at", Value(a.time)}}),
                a.time);
    result.Clear("count");
  }

 private:
  int64_t idle_ms_;
};

ProcessOptions CountOptions() {
  return {.id = "count-until-idle", .state = {"count"}, .timers = {"idle"}};
}

// The values of an output file, in order, as compact JSON.
std::vector<std::string> OutputValues(const std::string& path) {
  std::vector<std::string> values;
  for (const std::string& line : ReadLines(path)) {
    values.push_back(Value::Parse(line)->Find("value")->ToJson());
  }
  return values;
}

Result<RunSummary> RunCount(const TempDir& dir, ProcessOptions options,
                            std::shared_ptr<ProcessFunction> function) {
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Process(std::move(options), std::move(function), "count")
      .ToFile(dir / "out.jsonl");
  return app.Run();
}

TEST(ProcessStep, TimersFireInTimeKeyNameOrderOnceTheWatermarkReachesThem) {
  TempDir dir;
  // a's timer moves from 11000 to 15000; b's is at 12000; c at 30000 moves the watermark past
  // both (after c's own activation); d and e both time out at 45000 (d after e in the input,
  // before it in key order) and fire after c's second event, which moved c's timer from 40000
  // to 60000 before the watermark reached 40000; c's fires at the end of input.
  WriteLines(dir / "in.jsonl", {Event("a", 1000), Event("b", 2000), Event("a", 5000),
                                Event("c", 30000), Event("e", 35000), Event("d", 35000),
                                Event("c", 50000)});
  auto summary = RunCount(dir, CountOptions(), std::make_shared<CountUntilIdle>(10000));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->completed);
  EXPECT_EQ(OutputValues(dir / "out.jsonl"),
            (std::vector<std::string>{R"({"user":"b","count":1,"idle_at":12000})",
                                      R"({"user":"a","count":2,"idle_at":15000})",
                                      R"({"user":"d","count":1,"idle_at":45000})",
                                      R"({"user":"e","count":1,"idle_at":45000})",
                                      R"({"user":"c","count":2,"idle_at":60000})"}));
  EXPECT_EQ(summary->process.activations, 7 + 5);
  EXPECT_EQ(summary->process.timers_fired, 5);
  EXPECT_EQ(summary->process.dead_lettered, 0);
}

// Two timers of one key at one time fire in name order; a cancelled timer never fires.
class TwoTimers : public ProcessFunction {
 public:
  void OnInput(const ProcessActivation& a, ProcessResult& result) override {
    const std::string_view action = a.input->Find("action")->as_string();
    if (action == "cancel") return result.CancelTimer("b_second");
    result.SetTimer("b_second", a.time + 100);
    result.SetTimer("a_first", a.time + 100);
  }
  void OnTimer(const ProcessActivation& a, ProcessResult& result) override {
    result.Emit(Value(std::string(a.timer)), a.time);
  }
};

TEST(ProcessStep, TimersOfOneKeyAtOneTimeFireInNameOrderAndACancelledOneNever) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("a", 1000), Event("b", 1000), Event("b", 1050, "cancel")});
  auto summary = RunCount(dir, {.id = "two", .timers = {"b_second", "a_first"}},
                          std::make_shared<TwoTimers>());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(OutputValues(dir / "out.jsonl"),
            (std::vector<std::string>{R"("a_first")", R"("b_second")", R"("a_first")"}));
}

// Throws for one user's events: the call is retried, split, and only that user's activations go
// to the dead-letter topic; everyone else's results are applied.
class FailsForOneUser : public CountUntilIdle {
 public:
  FailsForOneUser() : CountUntilIdle(10000) {}
  void OnInput(const ProcessActivation& a, ProcessResult& result) override {
    if (a.key.bytes() == "poison") throw std::runtime_error("cannot handle this user");
    CountUntilIdle::OnInput(a, result);
  }
};

TEST(ProcessStep, ACallThatKeepsFailingIsSplitDownToTheActivationThatFailsAlone) {
  TempDir dir;
  std::vector<std::string> lines;
  for (int i = 0; i < 40; ++i) {
    lines.push_back(Event(i == 17 ? "poison" : "u" + std::to_string(i), 1000 + i));
  }
  WriteLines(dir / "in.jsonl", lines);
  auto summary = RunCount(dir, CountOptions(), std::make_shared<FailsForOneUser>());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->process.dead_lettered, 1);
  EXPECT_GT(summary->process.splits, 0);
  EXPECT_EQ(summary->process.retries, 2);  // the first call's; halves are tried once
  EXPECT_EQ(ReadLines(dir / "out.jsonl").size(), 39u);
  std::vector<testing::TopicRecord> dead = ReadTopic(dir / "data", "app.dlq");
  ASSERT_EQ(dead.size(), 1u);
  const std::string reason(dead[0].value.Find("reason")->as_string());
  EXPECT_NE(reason.find("process step 'count' refused activation 18"), std::string::npos)
      << reason;
  EXPECT_NE(reason.find("cannot handle this user"), std::string::npos) << reason;
  EXPECT_NE(dead[0].value.ToJson().find("poison"), std::string::npos);
}

// Breaks one rule for one user, so that the engine's validation (not an exception) refuses.
class BreaksARule : public CountUntilIdle {
 public:
  explicit BreaksARule(std::string rule) : CountUntilIdle(10000), rule_(std::move(rule)) {}
  void OnInput(const ProcessActivation& a, ProcessResult& result) override {
    CountUntilIdle::OnInput(a, result);
    if (a.key.bytes() != "bad") return;
    if (rule_ == "undeclared state") result.Set("other", Value(1));
    if (rule_ == "undeclared timer") result.SetTimer("other", a.time + 1);
    if (rule_ == "timer not after the watermark") {
      result.timers.clear();
      result.SetTimer("idle", a.watermark);
    }
    if (rule_ == "output before the activation") result.Emit(Value(1), a.time - 1);
    if (rule_ == "state changed twice") result.Clear("count");
  }

 private:
  std::string rule_;
};

TEST(ProcessStep, AResultThatBreaksARuleIsRefusedAndOnlyItsActivationDeadLettered) {
  for (const auto& [rule, reason] :
       std::vector<std::pair<std::string, std::string>>{
           {"undeclared state", "state 'other' is not declared"},
           {"undeclared timer", "timer 'other' is not declared"},
           {"timer not after the watermark", "is not after the watermark"},
           {"output before the activation", "is before the activation's time"},
           {"state changed twice", "state 'count' is changed twice"}}) {
    SCOPED_TRACE(rule);
    TempDir dir;
    WriteLines(dir / "in.jsonl", {Event("a", 1000), Event("bad", 2000), Event("c", 3000)});
    auto summary = RunCount(dir, CountOptions(), std::make_shared<BreaksARule>(rule));
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(summary->process.dead_lettered, 1);
    // a and c time out; bad's input changed nothing.
    EXPECT_EQ(ReadLines(dir / "out.jsonl").size(), 2u);
    std::vector<testing::TopicRecord> dead = ReadTopic(dir / "data", "app.dlq");
    ASSERT_EQ(dead.size(), 1u);
    EXPECT_NE(dead[0].value.Find("reason")->as_string().find(reason), std::string::npos)
        << dead[0].value.ToJson();
  }
}

TEST(ProcessStep, KeysBeyondTheLimitAreRefusedWhileKnownKeysGoOn) {
  TempDir dir;
  WriteLines(dir / "in.jsonl",
             {Event("a", 1000), Event("b", 1001), Event("c", 1002), Event("a", 1003)});
  ProcessOptions options = CountOptions();
  options.limits.max_keys = 2;
  auto summary = RunCount(dir, options, std::make_shared<CountUntilIdle>(10000));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->process.dead_lettered, 1);
  std::vector<testing::TopicRecord> dead = ReadTopic(dir / "data", "app.dlq");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_NE(dead[0].value.ToJson().find(R"(\"user\":\"c\")"), std::string::npos)
      << dead[0].value.ToJson();
  EXPECT_NE(dead[0].value.Find("reason")->as_string().find("keys with state or timers would be 3"),
            std::string::npos);
  EXPECT_EQ(OutputValues(dir / "out.jsonl"),
            (std::vector<std::string>{R"({"user":"b","count":1,"idle_at":11001})",
                                      R"({"user":"a","count":2,"idle_at":11003})"}));
}

TEST(ProcessStep, ATimerCallbackLimitSplitsRoundsWithoutChangingTheOutputs) {
  TempDir one;
  TempDir many;
  std::vector<std::string> lines;
  for (int i = 0; i < 50; ++i) lines.push_back(Event("u" + std::to_string(i), 1000 + i));
  lines.push_back(Event("late", 100000));
  WriteLines(one / "in.jsonl", lines);
  WriteLines(many / "in.jsonl", lines);
  ProcessOptions limited = CountOptions();
  limited.limits.max_timer_callbacks_per_step = 3;
  auto a = RunCount(one, limited, std::make_shared<CountUntilIdle>(10000));
  auto b = RunCount(many, CountOptions(), std::make_shared<CountUntilIdle>(10000));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(OutputValues(one / "out.jsonl"), OutputValues(many / "out.jsonl"));
  EXPECT_EQ(a->process.timers_fired, 51);
  EXPECT_GT(a->process.calls, b->process.calls);
}

// Pings a key once, 5 ms after its first input; names each activation in its output.
class PingOnce : public ProcessFunction {
 public:
  void OnInput(const ProcessActivation& a, ProcessResult& result) override {
    result.Emit(Value("input " + std::string(a.key.bytes()) + " at " + std::to_string(a.time)), a.time);
    if (a.State("pinged") != nullptr) return;
    result.Set("pinged", Value(true));
    result.SetTimer("ping", a.time + 5);
  }
  void OnTimer(const ProcessActivation& a, ProcessResult& result) override {
    result.Emit(Value("ping " + std::string(a.key.bytes()) + " at " + std::to_string(a.time)), a.time);
  }
};

// a's input sets a timer at 1005; b's input (watermark 1010) reaches it, so it fires in the round
// after b, before a's next input. The three inputs make one call [a, b], closed by a's second
// input; b is its last activation, so the round of b's watermark must run again once the call's
// results are in.
TEST(ProcessStep, ATimerSetInACallFiresBeforeTheNextInputWhenTheCallsLastInputReachesIt) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("a", 1000), Event("b", 1010), Event("a", 1020)});
  auto summary = RunCount(dir, {.id = "ping", .state = {"pinged"}, .timers = {"ping"}},
                          std::make_shared<PingOnce>());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(OutputValues(dir / "out.jsonl"),
            (std::vector<std::string>{R"("input a at 1000")", R"("input b at 1010")",
                                      R"("ping a at 1005")", R"("input a at 1020")",
                                      R"("ping b at 1015")"}));
}

TEST(ProcessStep, PendingTimersSurviveAStopAndFireAfterTheRestart) {
  TempDir stopped;
  TempDir straight;
  std::vector<std::string> lines;
  for (int i = 0; i < 3000; ++i) {
    lines.push_back(Event("u" + std::to_string(i % 97), 1000 + 10 * i));
  }
  WriteLines(stopped / "in.jsonl", lines);
  WriteLines(straight / "in.jsonl", lines);
  int runs = 0;
  for (bool done = false; !done; ++runs) {
    ApplicationOptions options = TestOptions(stopped);
    Application* running = nullptr;
    options.checkpoint_records = 400;
    options.on_checkpoint = [&](int64_t, int64_t in) {
      if (in > 0 && running != nullptr) running->Stop();
    };
    Application app(options);
    running = &app;
    FileSourceOptions file = UserFile(stopped / "in.jsonl");
    file.max_rate = 10000;  // about 300 ms in all: several checkpoints, each a stop
    app.FromFile(file)
        .Process(CountOptions(), std::make_shared<CountUntilIdle>(500), "count")
        .ToFile(stopped / "out.jsonl");
    auto summary = app.Run();
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    done = summary->completed;
    ASSERT_LT(runs, 100);
  }
  EXPECT_GE(runs, 2);
  ASSERT_TRUE(RunCount(straight, CountOptions(), std::make_shared<CountUntilIdle>(500)).ok());
  EXPECT_EQ(OutputValues(stopped / "out.jsonl"), OutputValues(straight / "out.jsonl"));
}

TEST(ProcessStep, ARestartUnderAnotherDescriptorIsRefusedNamingWhatChanged) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("a", 1000)});
  ASSERT_TRUE(RunCount(dir, CountOptions(), std::make_shared<CountUntilIdle>(10)).ok());
  for (const auto& [change, named] :
       std::vector<std::pair<std::function<void(ProcessOptions&)>, std::string>>{
           {[](ProcessOptions& o) { o.version = 2; }, "version"},
           {[](ProcessOptions& o) { o.state.push_back("sum"); }, "state"},
           {[](ProcessOptions& o) { o.timers = {"ttl"}; }, "timers"},
           {[](ProcessOptions& o) { o.limits.max_keys = 5; }, "limits"},
           {[](ProcessOptions& o) { o.implementation_digest = "build 2"; },
            "implementation_digest"}}) {
    ProcessOptions options = CountOptions();
    change(options);
    auto refused = RunCount(dir, options, std::make_shared<CountUntilIdle>(10));
    ASSERT_FALSE(refused.ok()) << named;
    EXPECT_NE(refused.status().message().find(named), std::string::npos)
        << refused.status().message();
  }
  ProcessOptions more_retries = CountOptions();
  more_retries.retries = 7;
  EXPECT_TRUE(RunCount(dir, more_retries, std::make_shared<CountUntilIdle>(10)).ok());
}

TEST(ProcessStep, ADefinitionWithoutAFunctionOrWithRepeatedNamesIsRefused) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("a", 1000)});
  EXPECT_FALSE(RunCount(dir, CountOptions(), nullptr).ok());
  ProcessOptions twice = CountOptions();
  twice.timers = {"idle", "idle"};
  auto refused = RunCount(dir, twice, std::make_shared<CountUntilIdle>(10));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("timer 'idle' is declared twice"), std::string::npos);
  ProcessOptions no_limit = CountOptions();
  no_limit.limits.max_timers = 0;
  EXPECT_FALSE(RunCount(dir, no_limit, std::make_shared<CountUntilIdle>(10)).ok());
}

TEST(ProcessStep, NoStepMayBeNamedLikeAProcessStepsTimerStore) {
  TempDir dir;
  WriteLines(dir / "in.jsonl", {Event("a", 1000)});
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Process(CountOptions(), std::make_shared<CountUntilIdle>(10), "count")
      .Filter([](const Value&) { return true; }, "count.timers")
      .ToFile(dir / "out.jsonl");
  auto refused = app.Run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'count.timers'"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace weir
