// Orders matched with the payments that settle them, from two files:
//   - orders, keyed by customer: a stateful step (Apply with State) numbers each customer's
//     orders and keeps what they have spent so far; then the orders are re-keyed by order id
//     (SelectKey, a function of the record).
//   - payments, keyed by payment id: each payment's event time becomes the time its money
//     clears, the time it was sent plus how long it takes (WithTimestamp); then the payments are
//     re-keyed by the order they pay (GroupBy("order")).
//   - an interval join by order id: a payment settles an order if it cleared at most 1 s before
//     the order (clocks differ) and at most 5 s after it.
// Bad records go to the dead-letter topic and the run goes on: an order whose amount is a string
// (the Apply reads it as an integer, which throws), a payment whose clearing delay is a string
// (the WithTimestamp function throws the same way), a line that is not JSON.
//
// The program writes its inputs (DIR/orders.jsonl, DIR/payments.jsonl) on the first run, runs
// the pipeline to their end with its state in DIR/weir-data, reads the matches and the dead
// letters back and checks them against the values worked out by hand below: it exits 0 only if
// they match. Run it again on the same DIR: it resumes from the checkpoint, reads nothing new,
// and the topics hold exactly what they held (exactly once).
//
//   build/examples/join_rekey DIR
#include <weir/weir.h>

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "example_check.h"

namespace {

using namespace std::chrono_literals;

// "ts" is the event time (ms) in both files; each file is in time order.
constexpr const char* kOrders = R"({"order":"o1","customer":"ann","ts":1000,"amount":30}
{"order":"o2","customer":"bob","ts":2000,"amount":12}
{"order":"o3","customer":"ann","ts":3000,"amount":"45"}
{"order":"o4","customer":"ann","ts":4000,"amount":8}
{"order":"o5","customer":"bob","ts":9000,"amount":20}
)";
constexpr const char* kPayments = R"({"payment":"p1","order":"o1","ts":1500,"clears_in_ms":500}
{"payment":"p2","order":"o2","ts":2500,"clears_in_ms":"soon"}
{"payment":"p3","order":"o3","ts":3100,"clears_in_ms":100}
{"payment":"p4","order":"o4","ts":4200,"clears_in_ms":300}
{"payment":"p5","order":"o4","ts":5000,"clears_in_ms":1000}
{"payment":"p6","order":"o5",
{"payment":"p7","order":"o5","ts":8000,"clears_in_ms":500}
{"payment":"p8","order":"o5","ts":9500,"clears_in_ms":7000}
)";

// Worked out by hand:
// - Numbering: ann's o1 is her order #1 (spent 30); o3's amount is a string, so it is a dead
//   letter and leaves her state as it was (its count too); o4 is her #2 (spent 38). bob: o2 #1
//   (12), o5 #2 (32).
// - Clearing times: p1 2000, p3 3200, p4 4500, p5 6000, p7 8500, p8 16500; p2's delay is a
//   string (dead letter); p6 is cut short (dead letter).
// - Matches (the payment's time within [order - 1000, order + 5000]), at the later of the two
//   times: o1 p1 (2000 in [0, 6000]) at 2000; o4 p4 and o4 p5 (4500, 6000 in [3000, 9000]) at
//   4500 and 6000; o5 p7 (8500 in [8000, 14000], before the order) at 9000. Not: p3 (its order
//   o3 is a dead letter), p8 (16500: too late for o5), o2 (its payment is a dead letter).
const std::set<std::string> kExpectedMatches = {
    R"("o1" at 2000: ann's order #1 (30, spent 30) paid by p1 cleared at 2000)",
    R"("o4" at 4500: ann's order #2 (8, spent 38) paid by p4 cleared at 4500)",
    R"("o4" at 6000: ann's order #2 (8, spent 38) paid by p5 cleared at 6000)",
    R"("o5" at 9000: bob's order #2 (20, spent 32) paid by p7 cleared at 8500)",
};
// The reasons begin with the step's name, then the engine's words for what failed.
const std::set<std::string> kExpectedDeadLetters = {
    R"(orders.jsonl line 3: step 'number-orders' failed: read as integer, but holds string "45")",
    "payments.jsonl line 2: step 'clearing-time' failed: "
    R"(read as integer, but holds string "soon")",
    "payments.jsonl line 6: malformed JSON",
};
constexpr int64_t kExpectedUserFunctionFailures = 2;  // o3 and p2
constexpr int64_t kExpectedRecordsIn = 12;            // every line but the cut one

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = example::DirArgument(argc, argv, "join_rekey");
  const std::string data_dir = dir + "/weir-data";
  example::WriteOnce(dir + "/orders.jsonl", kOrders);
  example::WriteOnce(dir + "/payments.jsonl", kPayments);

  weir::Application app({.name = "join-rekey", .data_dir = data_dir});

  weir::Stream orders =
      app.FromFile(example::JsonLinesFile(dir + "/orders.jsonl", "customer"))
          .Apply(
              [](const weir::Value& order, weir::State& state) -> std::optional<weir::Value> {
                // The state of the record's key: the customer's order count and spending.
                const weir::Value* orders_before = state.Get("orders");
                int64_t nth = orders_before != nullptr ? orders_before->as_int() + 1 : 1;
                state.Set("orders", nth);
                // as_int() throws on an amount that is not an integer: the order is a dead
                // letter, and the count just set is discarded with it (stream.h).
                int64_t spent = order.Find("amount")->as_int();
                if (const weir::Value* before = state.Get("spent")) spent += before->as_int();
                state.Set("spent", spent);
                weir::Value numbered = order;
                numbered.Set("nth", nth);
                numbered.Set("spent", spent);
                return numbered;
              },
              "number-orders")
          .SelectKey(
              [](const weir::Record& r) {
                return weir::Key::String(r.value.Find("order")->as_string());
              },
              "by-order");

  weir::Stream payments =
      app.FromFile(example::JsonLinesFile(dir + "/payments.jsonl", "payment"))
          .WithTimestamp(
              [](const weir::Record& r) {
                // The delays are >= 0: times move forward from "ts", never behind the
                // watermark, which would make them late for the join (stream.h).
                return r.timestamp +
                       std::chrono::milliseconds(r.value.Find("clears_in_ms")->as_int());
              },
              "clearing-time")
          .GroupBy("order");

  // join.h: a right (payment) event matches a left (order) event of the same key with
  // left.ts - lower <= right.ts <= left.ts + upper. Between(-1s, 5s) is lower = 1s, upper = 5s.
  orders.IntervalJoin(payments, weir::IntervalJoinOptions::Between(-1s, 5s)).ToTopic("settled");

  weir::Result<weir::RunSummary> run = app.Run();
  example::Checker check("join_rekey", data_dir);
  check.Summary(run, {.records_in = kExpectedRecordsIn,
                      .dead_letters = static_cast<int64_t>(kExpectedDeadLetters.size()),
                      .user_function_failures = kExpectedUserFunctionFailures,
                      .late = 0});

  // Each match: {"left": order, "right": payment} under the order id, at the later time.
  std::set<std::string> matches;
  std::vector<weir::Record> settled = check.ReadTopic("settled");
  for (const weir::Record& r : settled) {
    const weir::Value& order = *r.value.Find("left");
    const weir::Value& payment = *r.value.Find("right");
    matches.insert(example::Text(
        example::KeyText(r.key), " at ", r.timestamp.value(), ": ",
        order.Find("customer")->as_string(), "'s order #", order.Find("nth")->as_int(), " (",
        order.Find("amount")->as_int(), ", spent ", order.Find("spent")->as_int(), ") paid by ",
        payment.Find("payment")->as_string(), " cleared at ",
        payment.Find("ts")->as_int() + payment.Find("clears_in_ms")->as_int()));
  }
  check.Lines("matches", matches, settled.size(), kExpectedMatches);
  check.DeadLetters("join-rekey.dlq", kExpectedDeadLetters);
  return check.Finish();
}
