// The cart_abandon examples of examples/workers/ (Python and Node.js) run by the `weir` binary over
// a few hundred cart events, their outputs checked against an independent model of the function
// (examples/workers/README.md) under the process step's semantics (src/process/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "testing/process_pipeline.h"

namespace weir {
namespace {

using testing::TempDir;

constexpr int64_t kAbandonAfterMs = 10 * 60 * 1000;

struct CartEvent {
  std::string user;
  int64_t ts;
  std::string action;  // add_to_cart, checkout or view
  std::string Line() const {
    return R"({"user":")" + user + R"(","ts":)" + std::to_string(ts) + R"(,"action":")" + action +
           "\"}";
  }
};

// 400 events of 20 users, 1 to 120 s apart, one in ten up to 30 s behind the watermark: a call
// (at most one activation per user) may span more than the ten minutes of a timer, so some timers
// come due inside the call that set them.
std::vector<CartEvent> CartEvents() {
  std::mt19937_64 rng(16);
  std::vector<CartEvent> events;
  int64_t clock = 1'700'000'000'000;
  for (int i = 0; i < 400; ++i) {
    clock += 1000 + static_cast<int64_t>(rng() % 119'000);
    const int64_t ts = rng() % 10 == 0 ? clock - static_cast<int64_t>(rng() % 30'000) : clock;
    const uint64_t roll = rng() % 10;
    events.push_back({"u" + std::to_string(rng() % 20), ts,
                      roll < 5   ? "add_to_cart"
                      : roll < 7 ? "checkout"
                                 : "view"});
  }
  return events;
}

// An output line as the file sink writes it: key, event time, value (compact JSON).
using OutputLine = std::tuple<std::string, int64_t, std::string>;

// cart_abandon under the README's semantics: per input the watermark moves to the largest time
// so far, the input is handled, then every timer at or before the watermark fires in (time, key)
// order; at the end of input every pending timer fires.
std::vector<OutputLine> CartAbandonModel(const std::vector<CartEvent>& events) {
  std::map<std::string, int64_t> cart;
  std::map<std::string, int64_t> timer_of;
  std::set<std::pair<int64_t, std::string>> pending;
  std::vector<OutputLine> outputs;
  auto round = [&](int64_t watermark) {
    while (!pending.empty() && pending.begin()->first <= watermark) {
      auto [at, user] = *pending.begin();
      pending.erase(pending.begin());
      timer_of.erase(user);
      Value value = Value::MakeObject(
          {{"user", Value(user)}, {"items", Value(cart[user])}, {"abandoned_at", Value(at)}});
      outputs.emplace_back(Value(user).ToJson(), at, value.ToJson());
      cart.erase(user);
    }
  };
  int64_t watermark = INT64_MIN;
  for (const CartEvent& e : events) {
    watermark = std::max(watermark, e.ts);
    if (e.action != "view") {
      if (auto t = timer_of.find(e.user); t != timer_of.end()) {
        pending.erase({t->second, e.user});
        timer_of.erase(t);
      }
    }
    if (e.action == "add_to_cart") {
      ++cart[e.user];
      timer_of[e.user] = e.ts + kAbandonAfterMs;
      pending.insert({e.ts + kAbandonAfterMs, e.user});
    } else if (e.action == "checkout") {
      cart.erase(e.user);
    }
    round(watermark);
  }
  round(INT64_MAX);
  return outputs;
}

void ExpectTheModelsAlerts(const std::vector<std::string>& worker) {
  TempDir dir;
  const std::vector<CartEvent> events = CartEvents();
  std::vector<std::string> lines;
  for (const CartEvent& e : events) lines.push_back(e.Line());
  testing::WriteLines(dir / "input.jsonl", lines);
  testing::WriteProcessPipeline(dir, {.name = "carts",
                                      .function_id = "cart_abandon",
                                      .worker = worker,
                                      .state = {"cart"},
                                      .timers = {"abandon"}});
  testing::CommandResult run = testing::RunPipelineToEnd(dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  std::vector<OutputLine> got;
  for (const std::string& line : testing::ReadLines(dir / "output.jsonl")) {
    Value record = Value::Parse(line).value();
    got.emplace_back(record.Find("key")->ToJson(), record.Find("timestamp")->as_int(),
                     record.Find("value")->ToJson());
  }
  const std::vector<OutputLine> want = CartAbandonModel(events);
  ASSERT_GT(want.size(), 30u) << "carts must be abandoned mid-input and at its end";
  EXPECT_EQ(got, want);
  EXPECT_TRUE(testing::ReadTopic(dir / "data", "carts.dlq").empty());
}

const std::string kExamples = WEIR_WORKER_EXAMPLES;

TEST(ProcessExamples, PythonCartAbandonAlertsAsTheModelSays) {
  ExpectTheModelsAlerts({"python3", kExamples + "/python/cart_abandon.py"});
}

TEST(ProcessExamples, NodeCartAbandonAlertsAsTheModelSays) {
  ExpectTheModelsAlerts({"node", kExamples + "/node/cart_abandon.js"});
}

}  // namespace
}  // namespace weir
