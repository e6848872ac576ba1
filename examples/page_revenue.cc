// A Weir application in C++: revenue per page from the clickstream generator, with a stateful
// step written by hand (Apply with State) beside a built-in running aggregate.
//
//   build/examples/page_revenue [DATA_DIR]
#include <weir/weir.h>

#include <cstdio>

int main(int argc, char** argv) {
  weir::Application app({.name = "page-revenue", .data_dir = argc > 1 ? argv[1] : "./weir-data"});
  weir::Stream purchases =
      app.FromGenerator({.partitions = 2, .events = 200'000, .users = 5'000})
          .Filter([](const weir::Value& v) { return v.Find("action")->as_string() == "purchase"; });

  // Built in: a running count and sum per page.
  purchases.GroupBy("page")
      .Aggregate({{"orders", weir::agg::Count()}, {"revenue", weir::agg::Sum("amount")}})
      .ToTopic("page-revenue");

  // By hand: each user's biggest purchase so far, emitted when it grows.
  purchases
      .Apply(
          [](const weir::Value& v, weir::State& state) -> std::optional<weir::Value> {
            double amount = v.Find("amount")->as_number();
            const weir::Value* best = state.Get("best");
            if (best != nullptr && best->as_number() >= amount) return std::nullopt;
            state.Set("best", amount);
            return weir::Value::MakeObject({{"user", *v.Find("user")}, {"best", amount}});
          },
          "biggest-purchase")
      .ToTopic("biggest-purchase");

  weir::Result<weir::RunSummary> summary = app.Run();
  if (!summary.ok()) {
    std::fprintf(stderr, "page_revenue: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  std::printf("page_revenue: %lld events in, %lld results out, %lld checkpoints\n",
              static_cast<long long>(summary->records_in),
              static_cast<long long>(summary->records_out),
              static_cast<long long>(summary->checkpoints));
  return summary->completed ? 0 : 1;
}
