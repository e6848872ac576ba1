// Session windows per user with an aggregation of the user's own: each session's order count
// and total amount, folded by agg::Reduce with the merger that sessions need (an order that
// falls between two sessions of a user joins them into one). Orders that arrive after their
// session has closed are late: they are counted by an OnLate callback and kept in a topic,
// never lost. Malformed lines, an order without a user and orders whose amount is not an
// integer (the Reduce throws on them) go to the dead-letter topic; the run goes on.
//
// The program writes its input (DIR/orders.jsonl) on the first run, runs the pipeline to the end
// of it with its state in DIR/weir-data, reads the sessions, late orders and dead letters back
// and checks them against the values worked out by hand below: it exits 0 only if they match.
// Run it again on the same DIR: it resumes from the checkpoint, reads nothing new, and the
// topics hold exactly what they held (exactly once).
//
//   build/examples/session_late DIR
#include <weir/weir.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "example_check.h"

namespace {

using namespace std::chrono_literals;

// The input: one order a line, keyed by "user", event time "ts" (ms). Sessions close after 10 s
// of a user's inactivity (gap 10 s, no grace). Arrival order is file order.
constexpr const char* kOrders = R"({"user":"ann","ts":1000,"amount":5}
{"user":"bob","ts":3000,"amount":7}
{"user":"ann","ts":2000,"amount":3}
{"user":"ann","ts":2500,"amount":"three"}
{"user":"cat","ts":6000,"amount":"lots"}
this line is not JSON
{"ts":7000,"amount":1}
{"user":"bob","ts":9000,"amount":1}
{"user":"ann","ts":14000,"amount":4}
{"user":"ann","ts":8000,"amount":2}
{"user":"bob","ts":30000,"amount":2}
{"user":"bob","ts":12000,"amount":50}
{"user":"ann","ts":40000,"amount":10}
{"user":"ann","ts":5000,"amount":99}
)";

// Worked out by hand (window.h, session windows, closing per key):
// - ann 1000 and 2000 make a session; 14000 is more than a gap after 2000, so it starts another;
//   8000 lies within a gap of both, so it merges them: [1000, 14001), 4 orders, 5+3+4+2 = 14.
// - ann 2500 ("three") and cat 6000 ("lots"): the Reduce throws reading the amount, so they are
//   dead letters and change nothing (cat has no session at all).
// - bob 3000 and 9000: [3000, 9001), 2 orders, 8. bob 30000 alone: [30000, 30001), 1 order, 2.
// - bob 12000 is late: bob's watermark is 30000 and 12000 < 30000 - gap (late by 8000).
// - ann 40000 alone: [40000, 40001), 1 order, 10. ann 5000 is late: 5000 < 40000 - gap (by 25000).
// - Dead letters: the line that is not JSON, the order without "user", and the two bad amounts.
const std::set<std::string> kExpectedSessions = {
    R"("ann" [1000, 14001): orders 4, total 14)",
    R"("ann" [40000, 40001): orders 1, total 10)",
    R"("bob" [3000, 9001): orders 2, total 8)",
    R"("bob" [30000, 30001): orders 1, total 2)",
};
const std::set<std::string> kExpectedLate = {
    R"("ann" at 5000, late by 25000 ms)",
    R"("bob" at 12000, late by 8000 ms)",
};
// The reasons begin with the engine's words: the step (named "window-<index>" by default) and
// the ValueTypeError's message for the bad amounts.
const std::set<std::string> kExpectedDeadLetters = {
    R"(orders.jsonl line 4: step 'window-1' failed: read as integer, but holds string "three")",
    R"(orders.jsonl line 5: step 'window-1' failed: read as integer, but holds string "lots")",
    "orders.jsonl line 6: malformed JSON",
    "orders.jsonl line 7: key field 'user' is missing",
};
constexpr int64_t kExpectedUserFunctionFailures = 2;  // the two bad amounts
// Every line that became a record: not the one that is not JSON, nor the one without a key.
constexpr int64_t kExpectedRecordsIn = 12;

// A session's accumulator: {"orders": n, "total": sum}. as_int() throws weir::ValueTypeError on
// an amount that is not an integer: that order becomes a dead letter and no session changes.
weir::Value StartSession(const weir::Value& order) {
  return weir::Value::MakeObject({{"orders", 1}, {"total", order.Find("amount")->as_int()}});
}
weir::Value AddOrder(const weir::Value& session, const weir::Value& order) {
  return weir::Value::MakeObject(
      {{"orders", session.Find("orders")->as_int() + 1},
       {"total", session.Find("total")->as_int() + order.Find("amount")->as_int()}});
}
// Two sessions joined by an order between them: the sums of both.
weir::Value MergeSessions(const weir::Value& a, const weir::Value& b) {
  return weir::Value::MakeObject(
      {{"orders", a.Find("orders")->as_int() + b.Find("orders")->as_int()},
       {"total", a.Find("total")->as_int() + b.Find("total")->as_int()}});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = example::DirArgument(argc, argv, "session_late");
  const std::string data_dir = dir + "/weir-data";
  example::WriteOnce(dir + "/orders.jsonl", kOrders);

  weir::Application app({.name = "session-late", .data_dir = data_dir});
  // OnLate runs on the worker threads that run the tasks, hence an atomic counter.
  std::atomic<int64_t> late_seen{0};
  app.FromFile(example::JsonLinesFile(dir + "/orders.jsonl", "user"))
      .Window(weir::WindowDefinition::Session(10s))
      .Agg({{"session", weir::agg::Reduce(AddOrder, StartSession, MergeSessions)}})
      .OnLate([&late_seen](const weir::LateRecord&) { ++late_seen; })
      .LateTopic("late-orders")
      .Final()
      .ToTopic("sessions");

  weir::Result<weir::RunSummary> run = app.Run();
  example::Checker check("session_late", data_dir);
  check.Summary(run,
                {.records_in = kExpectedRecordsIn,
                 .dead_letters = static_cast<int64_t>(kExpectedDeadLetters.size()),
                 .user_function_failures = kExpectedUserFunctionFailures,
                 .late = static_cast<int64_t>(kExpectedLate.size())},
                late_seen.load());

  // Each session: {"start", "end", "session": {"orders", "total"}} under the user, at end - 1.
  std::set<std::string> session_lines;
  std::vector<weir::Record> sessions = check.ReadTopic("sessions");
  for (const weir::Record& r : sessions) {
    const weir::Value& s = *r.value.Find("session");
    session_lines.insert(
        example::Text(example::KeyText(r.key), " [", r.value.Find("start")->as_int(), ", ",
                      r.value.Find("end")->as_int(), "): orders ", s.Find("orders")->as_int(),
                      ", total ", s.Find("total")->as_int()));
  }
  check.Lines("sessions", session_lines, sessions.size(), kExpectedSessions);

  // Each late order: {"reason", "late_by_ms", "value"} under the order's key and time.
  std::set<std::string> late_lines;
  std::vector<weir::Record> late = check.ReadTopic("late-orders");
  for (const weir::Record& r : late) {
    late_lines.insert(example::Text(example::KeyText(r.key), " at ", r.timestamp.value(),
                                    ", late by ", r.value.Find("late_by_ms")->as_int(), " ms"));
  }
  check.Lines("late orders", late_lines, late.size(), kExpectedLate);
  check.DeadLetters("session-late.dlq", kExpectedDeadLetters);
  return check.Finish();
}
