// The usage examples in the comments of include/weir/*.h, each written here exactly as its header
// shows it (the lines between "// header:" and "// end"), so that an example that stops compiling
// or linking fails the build. Each sits in a function that gives it the names it assumes
// (`app`, `stream`, `left`, ...).
//
// Run in an empty folder, the program writes events.jsonl and runs stream.h's example over it,
// and runs value.h's; the others need a topic that is followed forever, a server or a join's
// inputs, so they are compiled and linked, not run.
//
//   build/examples/header_examples   (in an empty folder; prints "header_examples: ok" or why not)
#include <weir/subscription.h>
#include <weir/weir.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

using namespace std::chrono_literals;

// weir.h
weir::Result<weir::RunSummary> CountClicks() {
  // header:
  weir::Application app({.name = "counts", .data_dir = "./weir-data"});
  app.FromTopic({.topic = "clicks"}).Aggregate({{"n", weir::agg::Count()}}).ToTopic("counts");
  weir::Result<weir::RunSummary> summary = app.Run();
  // end
  return summary;
}

// stream.h
weir::Result<weir::RunSummary> SalesByPage() {
  // header:
  weir::Application app({.name = "purchases", .data_dir = "./weir-data"});
  app.FromFile({.path = "events.jsonl", .key = {"user"}, .timestamp_field = "ts"})
      .Filter([](const weir::Value& v) { return v.GetString("action") == "buy"; })
      .GroupBy("page")
      .Aggregate({{"sales", weir::agg::Count()}, {"revenue", weir::agg::Sum("amount")}})
      .ToTopic("sales-by-page");
  weir::Result<weir::RunSummary> summary = app.Run();
  // end
  return summary;
}

// window.h
weir::Stream Sessions(weir::Stream stream) {
  return
      // header:
      stream.Window(weir::WindowDefinition::Session(std::chrono::seconds(30)))
          .Agg({{"clicks", weir::agg::Count()}, {"revenue", weir::agg::Sum("amount")}})
          .Final();  // one result per window, when it closes
  // end
}

// join.h
weir::Stream Fused(weir::Application& app, weir::Stream cam, weir::Stream lidar,
                   weir::JoinOptions options) {
  return
      // header:
      app.Join({{"camera", cam}, {"lidar", lidar}}, options)
      // end
      ;
}
weir::Stream Intervals(weir::Stream left, weir::Stream right) {
  return
      // header:
      left.IntervalJoin(right, {.lower = 5s, .upper = 10s})
      // end
      ;
}
weir::Stream AsOf(weir::Stream left, weir::Stream right) {
  return
      // header:
      left.AsOfJoin(right, {.lookback = 60s})
      // end
      ;
}

// subscription.h
void Handle(weir::Offset offset, const std::string& value) {
  std::printf("%lld: %s\n", static_cast<long long>(offset.value()), value.c_str());
}
weir::Status ReadClicks(const bool& running) {
  // header:
  weir::SubscriptionOptions options;
  options.url = "ws://127.0.0.1:8080/streams/clicks?partition=0";
  options.cursor_file = "clicks.cursor";
  WEIR_ASSIGN_OR_RETURN(auto subscription, weir::Subscription::Open(options));
  while (running) {
    WEIR_ASSIGN_OR_RETURN(auto message, subscription->Next(std::chrono::seconds(1)));
    if (message) Handle(message->offset, message->value);
  }
  WEIR_RETURN_IF_ERROR(subscription->Commit());  // the last message is handled too
  // end
  return weir::Status::OK();
}

// value.h
std::string IdAndName(std::string_view name) {
  using weir::Value;
  Value v;
  // clang-format off
  // header:
  { Value::ObjectWriter w(v); w.Add("id") = 7; w.Add("name").AssignString(name); }
  // end
  // clang-format on
  std::string json;
  v.AppendJson(json);
  return json;
}

// process.h
// header:
struct IdleAlert : weir::ProcessFunction {
  void OnInput(const weir::ProcessActivation& a, weir::ProcessResult& r) override {
    const weir::Value* n = a.State("n");
    r.Set("n", weir::Value((n ? n->as_int() : 0) + 1));
    r.SetTimer("idle", a.time + 60'000);  // replaces the pending one
  }
  void OnTimer(const weir::ProcessActivation& a, weir::ProcessResult& r) override {
    r.Emit(weir::Value::MakeObject({{"user", a.key.ToValue()}, {"events", *a.State("n")}}),
           a.time);
    r.Clear("n");
  }
};
// end
void IdleUsers(weir::Stream stream) {
  // header:
  stream.Process({.id = "idle-alert", .state = {"n"}, .timers = {"idle"}},
                 std::make_shared<IdleAlert>())
      .ToTopic("idle-users");
  // end
}

int main() {
  std::ofstream("events.jsonl")
      << R"({"user": "ann", "page": "/a", "action": "buy", "amount": 5, "ts": 1000}
{"user": "bob", "page": "/a", "action": "view", "ts": 2000}
{"user": "bob", "page": "/b", "action": "buy", "amount": 7, "ts": 3000}
)";
  weir::Result<weir::RunSummary> sales = SalesByPage();
  if (!sales.ok()) {
    std::printf("header_examples: stream.h: %s\n", sales.status().ToString().c_str());
    return 1;
  }
  if (sales->records_in != 3 || !sales->completed) {
    std::printf("header_examples: stream.h: %lld records in, completed %d (want 3, 1)\n",
                static_cast<long long>(sales->records_in), sales->completed);
    return 1;
  }
  std::string json = IdAndName("ann");
  if (json != R"({"id":7,"name":"ann"})") {
    std::printf("header_examples: value.h: %s\n", json.c_str());
    return 1;
  }
  std::printf("header_examples: ok\n");
  return 0;
}
