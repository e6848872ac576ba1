// A user's first Weir program: a running sum per customer, re-keyed by a function of the record,
// written to a topic and read back in the same program. Some input records are bad (an amount
// written as a string, a line that is not JSON): they go to the dead-letter topic with the
// reason, and the run goes on. Run it twice on the same data directory: the second run resumes
// from the checkpoint and adds nothing.
//
//   build/examples/running_sum INPUT.jsonl [DATA_DIR]
#include <weir/weir.h>

#include <cstdio>
#include <map>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: running_sum INPUT.jsonl [DATA_DIR]\n");
    return 2;
  }
  const std::string data_dir = argc > 2 ? argv[2] : "./weir-data";
  weir::Application app({.name = "running-sum", .data_dir = data_dir});
  weir::FileSourceOptions orders;
  orders.path = argv[1];
  orders.key.field = "order";
  orders.timestamp_field = "ts";
  app.FromFile(orders)
      .SelectKey(
          [](const weir::Record& r) {
            return weir::Key::String(r.value.Find("customer")->as_string());
          },
          "by-customer")
      .Apply(
          [](const weir::Value& order, weir::State& state) -> std::optional<weir::Value> {
            // as_int() throws on an amount that is not an integer: that order is a dead letter.
            int64_t total = order.Find("amount")->as_int();
            if (const weir::Value* before = state.Get("total")) total += before->as_int();
            state.Set("total", total);
            return weir::Value::MakeObject({{"total", total}});
          },
          "running-total")
      .ToTopic("totals");

  weir::Result<weir::RunSummary> summary = app.Run();
  if (!summary.ok()) {
    std::fprintf(stderr, "running_sum: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  std::printf("running_sum: %lld records in, %lld dead letters (%lld in user functions)\n",
              static_cast<long long>(summary->records_in),
              static_cast<long long>(summary->dead_letters),
              static_cast<long long>(summary->user_function_failures));

  // The latest total of each customer, read back from the topic.
  auto consumer = weir::TopicConsumer::Open({.data_dir = data_dir, .topic = "totals"});
  if (!consumer.ok()) {
    std::fprintf(stderr, "running_sum: %s\n", consumer.status().ToString().c_str());
    return 1;
  }
  std::map<std::string, int64_t> latest;
  while (true) {
    weir::Result<std::vector<weir::ConsumedRecord>> batch = (*consumer)->Poll();
    if (!batch.ok()) {
      std::fprintf(stderr, "running_sum: %s\n", batch.status().ToString().c_str());
      return 1;
    }
    if (batch->empty()) break;
    for (const weir::ConsumedRecord& r : *batch) {
      std::string customer;
      r.record.key.AppendJson(customer);
      latest[customer] = r.record.value.GetInt("total").value_or(0);
    }
  }
  for (const auto& [customer, total] : latest) {
    std::printf("%s %lld\n", customer.c_str(), static_cast<long long>(total));
  }
  return summary->completed ? 0 : 1;
}
