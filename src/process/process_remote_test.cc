// A remote worker's results through the process step (a real python3 worker, the real engine):
// each way a result can be wrong refuses the call that holds it; the call is retried, split, and
// only the activation that fails alone goes to the dead-letter topic, the others' results applied.
#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "app/testing.h"
#include "dataflow/graph.h"
#include "process/process_step.h"
#include "process/worker.h"
#include "weir/weir.h"

namespace weir::process {
namespace {

using testing::ReadLines;
using testing::ReadTopic;
using testing::TempDir;

constexpr int kInputs = 12;
constexpr int kBadInput = 5;  // in the middle: the call is split on both sides of it

struct BadResult {
  std::string test_name;
  std::string what;    // policy_worker.py's "do" for the bad input
  std::string reason;  // what the dead letter's reason says (the activation alone in its call)
  friend void PrintTo(const BadResult& bad, std::ostream* out) { *out << bad.what; }
};

class RemoteResultValidation : public ::testing::TestWithParam<BadResult> {};

// Inputs of distinct keys, so that they make one call; the bad one asks the worker for `what`.
std::vector<std::string> Inputs(const std::string& what) {
  std::vector<std::string> lines;
  for (int i = 0; i < kInputs; ++i) {
    lines.push_back(R"({"user":"u)" + std::to_string(i) + R"(","ts":)" + std::to_string(1000 + i) +
                    R"(,"do":")" + (i == kBadInput ? what : "echo") + "\"}");
  }
  return lines;
}

std::shared_ptr<const dataflow::StepDefinition> PolicyWorkerStep() {
  RemoteWorkerOptions worker;
  worker.process = {.id = "policy", .state = {"seen"}, .timers = {"later"}};
  worker.command = {"python3", std::string(WEIR_PROCESS_TESTDATA) + "/policy_worker.py"};
  worker.first_backoff = std::chrono::milliseconds(10);
  worker.max_backoff = std::chrono::milliseconds(50);
  worker.restart_budget = 50;  // a protocol violation restarts the worker at every attempt
  return MakeProcessStep(worker.process,
                         [worker](std::string_view step) -> Result<std::unique_ptr<Invoker>> {
                           RemoteWorkerOptions for_task = worker;
                           for_task.step = std::string(step);
                           return StartRemoteInvoker(for_task);
                         });
}

TEST_P(RemoteResultValidation, RefusesTheCallAndDeadLettersOnlyTheBadActivation) {
  const BadResult& bad = GetParam();
  TempDir dir;
  const std::vector<std::string> inputs = Inputs(bad.what);
  testing::WriteLines(dir / "in.jsonl", inputs);
  Application app(testing::TestOptions(dir));
  dataflow::GraphAccess::AddStep(app.FromFile(testing::UserFile(dir / "in.jsonl")),
                                 PolicyWorkerStep(), "checked")
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  EXPECT_EQ(summary->process.dead_lettered, 1);
  EXPECT_EQ(summary->process.retries, 2);  // the whole call's; the halves are tried once
  EXPECT_GT(summary->process.splits, 0);
  EXPECT_GE(summary->process.refused, 3 + 1);  // the call's attempts, then the bad one alone
  EXPECT_EQ(summary->process.activations, kInputs - 1);

  std::vector<std::string> echoed;
  for (const std::string& line : ReadLines(dir / "out.jsonl")) {
    echoed.push_back(Value::Parse(line)->Find("value")->ToJson());
  }
  std::vector<std::string> good;
  for (int i = 0; i < kInputs; ++i) {
    if (i != kBadInput) good.push_back(Value::Parse(inputs[i])->ToJson());
  }
  EXPECT_EQ(echoed, good);

  std::vector<testing::TopicRecord> dead = ReadTopic(dir / "data", "app.dlq");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].value.Find("raw")->as_string(), inputs[kBadInput]);
  const std::string reason(dead[0].value.Find("reason")->as_string());
  const std::string refused =
      "process step 'checked' refused activation " + std::to_string(kBadInput + 1) + ": ";
  EXPECT_EQ(reason.rfind(refused, 0), 0u) << reason;
  EXPECT_NE(reason.find(bad.reason), std::string::npos) << reason;
}

INSTANTIATE_TEST_SUITE_P(
    EachWrongResult, RemoteResultValidation,
    ::testing::Values(BadResult{"UnknownId", "unknown-id",
                                "a result for activation 1000006, which is not in "
                                "the call"},
                      BadResult{"DuplicateId", "duplicate-id", "2 results for 1 activations"},
                      BadResult{"MissingResult", "missing-result", "0 results for 1 activations"},
                      BadResult{"UnknownField", "unknown-field", "unknown field 'extra'"},
                      BadResult{"UndeclaredState", "undeclared-state",
                                "state 'undeclared' is not declared"}),
    [](const ::testing::TestParamInfo<BadResult>& info) { return info.param.test_name; });

}  // namespace
}  // namespace weir::process
