#include "process/protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weir::process {
namespace {

Value Json(std::string_view text) { return Value::Parse(text).value(); }

// The error ParseReply gives for `line`, or "" if it decodes.
std::string ReplyError(std::string_view line) {
  std::vector<ProcessResult> results;
  auto reply = ParseReply(line, results);
  return reply.ok() ? "" : reply.status().message();
}

// A result line around one result item.
std::string WithResult(std::string_view item) {
  return R"({"type":"result","call":1,"results":[)" + std::string(item) + "]}";
}

TEST(Protocol, HelloCarriesTheDescriptorAndReadsBack) {
  ProcessOptions options;
  options.id = "cart";
  options.version = 3;
  options.state = {"cart", "seen"};
  options.timers = {"abandon"};
  options.limits.max_keys = 7;
  std::string line;
  AppendHello(options, line);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  Value hello = Json(line);
  EXPECT_EQ(hello.GetString("type"), "hello");
  EXPECT_EQ(hello.GetInt("protocol"), kProtocolVersion);
  EXPECT_EQ(hello.GetInt("limits.max_keys"), 7);
  EXPECT_EQ(hello.GetInt("limits.max_timer_callbacks_per_step"), 256);

  auto read = ParseHello(line);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->id, "cart");
  EXPECT_EQ(read->version, 3);
  EXPECT_EQ(read->state, options.state);
  EXPECT_EQ(read->timers, options.timers);
  EXPECT_EQ(read->limits, options.limits);
}

TEST(Protocol, ReadyOfThisVersionIsAccepted) {
  std::string line;
  AppendReady(line);
  EXPECT_TRUE(ParseReady(line).ok());
  EXPECT_EQ(ParseReady(R"({"type":"ready","protocol":2})").message(),
            "the worker speaks protocol 2, Weir speaks 1");
  EXPECT_EQ(ParseReady(R"({"type":"ready","protocol":1,"x":1})").message(), "unknown field 'x'");
  EXPECT_EQ(ParseReady(R"({"type":"result"})").message(),
            "expected a message of type 'ready', found 'result'");
  EXPECT_EQ(ParseReady("hello").message().rfind("not JSON: ", 0), 0u);
}

TEST(Protocol, InvokeEncodesInputsTimersKeysAndStateAndReadsBack) {
  Value input = Json(R"({"action":"add","n":2})");
  Value state = Json(R"({"cart":3})");
  Value empty = Json("{}");
  Call call{.call = 9, .attempt = 2, .watermark = 1000, .activations = {}};
  ProcessActivation by_string{.id = 1,
                              .key = Key::String("u\"1"),
                              .time = 1500,
                              .watermark = 1000,
                              .input = &input,
                              .state = &state};
  ProcessActivation by_int{.id = 2,
                           .key = Key::Int(-4),
                           .time = 900,
                           .watermark = 1200,
                           .input = nullptr,
                           .timer = "abandon",
                           .state = &empty};
  ProcessActivation unkeyed{
      .id = 3, .key = Key(), .time = 5, .watermark = 1200, .input = &input, .state = &empty};
  call.activations = {by_string, by_int, unkeyed};
  std::string line;
  AppendInvoke(call, line);
  EXPECT_EQ(
      line,
      R"({"type":"invoke","call":9,"attempt":2,"watermark":1000,"activations":[)"
      R"({"id":1,"key":"u\"1","time":1500,"watermark":1000,"input":{"action":"add","n":2},)"
      R"("state":{"cart":3}},)"
      R"({"id":2,"key":-4,"time":900,"watermark":1200,"timer":"abandon","state":{}},)"
      R"({"id":3,"key":null,"time":5,"watermark":1200,"input":{"action":"add","n":2},)"
      R"("state":{}}]})"
      "\n");

  Value document;
  Call read;
  ASSERT_TRUE(ParseInvoke(line, document, read).ok());
  EXPECT_EQ(read.call, 9);
  EXPECT_EQ(read.attempt, 2);
  EXPECT_EQ(read.watermark, 1000);
  ASSERT_EQ(read.activations.size(), 3u);
  EXPECT_EQ(read.activations[0].key, Key::String("u\"1"));
  EXPECT_EQ(*read.activations[0].input, input);
  EXPECT_EQ(read.activations[0].State("cart")->as_int(), 3);
  EXPECT_EQ(read.activations[0].watermark, 1000);
  EXPECT_EQ(read.activations[1].watermark, 1200);
  EXPECT_TRUE(read.activations[1].is_timer());
  EXPECT_EQ(read.activations[1].timer, "abandon");
  EXPECT_EQ(read.activations[1].key, Key::Int(-4));
  EXPECT_TRUE(read.activations[2].key.is_null());
}

TEST(Protocol, ResultsRoundTrip) {
  std::vector<ProcessResult> results(2);
  results[0].id = 4;
  results[0].Emit(Json(R"({"user":"a","items":2})"), 600);
  results[0].Emit(Json("[1,2]"), 601, Key::Int(7));
  results[0].Emit(Json("null"), 602, Key());
  results[0].Emit(Json("1"), 603, Key::Json(Json(R"({"k":1})")));
  results[0].Set("cart", Json(R"({"n":1})"));
  results[0].Clear("seen");
  results[0].SetTimer("abandon", 600600);
  results[0].CancelTimer("idle");
  results[1].id = 5;
  std::string line;
  AppendResults(12, results, line);

  std::vector<ProcessResult> read;
  auto reply = ParseReply(line, read);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->call, 12);
  EXPECT_FALSE(reply->error);
  EXPECT_EQ(read, results);
}

TEST(Protocol, OmittedListsAreEmpty) {
  std::vector<ProcessResult> results;
  auto reply = ParseReply(WithResult(R"({"id":3})"), results);
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0], ProcessResult{.id = 3});
}

TEST(Protocol, AnOutputKeyIsReadByItsJsonType) {
  std::vector<ProcessResult> results;
  ASSERT_TRUE(ParseReply(WithResult(R"({"id":1,"outputs":[)"
                                    R"({"value":1,"time":1,"key":"s"},)"
                                    R"({"value":1,"time":1,"key":5},)"
                                    R"({"value":1,"time":1,"key":null},)"
                                    R"({"value":1,"time":1,"key":1.5},)"
                                    R"({"value":1,"time":1,"key":["a"]}]})"),
                         results)
                  .ok());
  const auto& outputs = results[0].outputs;
  ASSERT_EQ(outputs.size(), 5u);
  EXPECT_EQ(outputs[0].key, Key::String("s"));
  EXPECT_EQ(outputs[1].key, Key::Int(5));
  EXPECT_EQ(outputs[2].key, Key());
  EXPECT_EQ(outputs[3].key, Key::Json(Json("1.5")));
  EXPECT_EQ(outputs[4].key, Key::Json(Json(R"(["a"])")));
}

TEST(Protocol, AnErrorReplyCarriesTheMessage) {
  std::string line;
  AppendError(6, "KeyError: 'x'", line);
  std::vector<ProcessResult> results;
  auto reply = ParseReply(line, results);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->call, 6);
  EXPECT_EQ(reply->error, "KeyError: 'x'");
  EXPECT_EQ(ReplyError(R"({"type":"error","call":6})"), "missing field 'message'");
  EXPECT_EQ(ReplyError(R"({"type":"error","call":6,"message":"m","x":0})"), "unknown field 'x'");
}

TEST(Protocol, MessageLevelViolationsAreNamed) {
  EXPECT_EQ(ReplyError("[1]"), "a message must be a JSON object, found array");
  EXPECT_EQ(ReplyError(R"({"call":1})"), "missing field 'type'");
  EXPECT_EQ(ReplyError(R"({"type":"ready","protocol":1})"),
            "expected a message of type 'result' or 'error', found 'ready'");
  EXPECT_EQ(ReplyError(R"({"type":"result","results":[]})"), "missing field 'call'");
  EXPECT_EQ(ReplyError(R"({"type":"result","call":"1","results":[]})"),
            "'call' must be an integer, found string");
  EXPECT_EQ(ReplyError(R"({"type":"result","call":1})"), "missing field 'results'");
  EXPECT_EQ(ReplyError(R"({"type":"result","call":1,"results":{}})"),
            "'results' must be an array, found object");
  EXPECT_EQ(ReplyError(R"({"type":"result","call":1,"results":[],"extra":1})"),
            "unknown field 'extra'");
  EXPECT_EQ(ReplyError(R"({"type":"result","call":1,"call":2,"results":[]})"),
            "duplicate field 'call'");
  EXPECT_EQ(ReplyError(R"({"type":"result","call":1,"results":[]} x)").rfind("not JSON: ", 0), 0u);
}

TEST(Protocol, ResultViolationsNameTheResultAndTheField) {
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1},{"id":2},{"id":3},{"id":4,"outptus":[]})")),
            "result 3: unknown field 'outptus'");
  EXPECT_EQ(ReplyError(WithResult("7")), "result 0: 'result' must be an object, found integer");
  EXPECT_EQ(ReplyError(WithResult("{}")), "result 0: missing field 'id'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1.0})")),
            "result 0: 'id' must be an integer, found number");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":{}})")),
            "result 0: 'outputs' must be an array, found object");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"state":[]})")),
            "result 0: 'state' must be an object, found array");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":"x"})")),
            "result 0: 'timers' must be an array, found string");
}

TEST(Protocol, OutputViolations) {
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":[{"time":1}]})")),
            "result 0: output 0: missing field 'value'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":[{"value":1,"time":1},{"value":1}]})")),
            "result 0: output 1: missing field 'time'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":[{"value":1,"time":1.5}]})")),
            "result 0: output 0: 'time' must be an integer, found number");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":[{"value":1,"time":1e30}]})")),
            "result 0: output 0: 'time' must be an integer, found number");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":[{"value":1,"time":1,"ky":1}]})")),
            "result 0: output 0: unknown field 'ky'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"outputs":[3]})")),
            "result 0: output 0: 'output' must be an object, found integer");
}

TEST(Protocol, StateViolations) {
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"state":{"cart":"clr"}})")),
            R"(result 0: state 'cart' must be {"set": value} or "clear", found "clr")");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"state":{"cart":{"set":1,"x":2}}})")),
            R"(result 0: state 'cart' must be {"set": value} or "clear", found {"set":1,"x":2})");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"state":{"cart":{}}})")),
            R"(result 0: state 'cart' must be {"set": value} or "clear", found {})");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"state":{"cart":"clear","cart":"clear"}})")),
            "result 0: duplicate state 'cart'");
}

TEST(Protocol, TimerViolations) {
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"set":"a","at":5,"cancel":"a"}]})")),
            "result 0: timer 0: both 'set' and 'cancel'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"at":5}]})")),
            "result 0: timer 0: neither 'set' nor 'cancel'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"set":"a"}]})")),
            "result 0: timer 0: missing field 'at'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"set":"a","at":"5"}]})")),
            "result 0: timer 0: 'at' must be an integer, found string");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"set":"a","at":5.0}]})")),
            "result 0: timer 0: 'at' must be an integer, found number");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"cancel":"a","at":5}]})")),
            "result 0: timer 0: 'at' with 'cancel'");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"cancel":3}]})")),
            "result 0: timer 0: 'cancel' must be a string, found integer");
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"set":"a","at":5,"when":1}]})")),
            "result 0: timer 0: unknown field 'when'");
}

TEST(Protocol, TimesAreInt64) {
  std::vector<ProcessResult> results;
  ASSERT_TRUE(
      ParseReply(WithResult(R"({"id":1,"timers":[{"set":"a","at":9223372036854775807}]})"), results)
          .ok());
  EXPECT_EQ(results[0].timers[0].at, INT64_MAX);
  EXPECT_EQ(ReplyError(WithResult(R"({"id":1,"timers":[{"set":"a","at":9223372036854775808}]})")),
            "result 0: timer 0: 'at' must be an integer, found number");
}

TEST(Protocol, HelloAndInvokeViolationsOnTheWorkerSide) {
  EXPECT_EQ(ParseHello(R"({"type":"hello","protocol":2})").status().message(),
            "Weir speaks protocol 2, this worker speaks 1");
  EXPECT_EQ(ParseHello(R"({"type":"hello","protocol":1,"function":"f","version":1,"state":[],)"
                       R"("timers":[],"limits":{"max_kyes":1}})")
                .status()
                .message(),
            "limits: unknown field 'max_kyes'");
  Value document;
  Call call;
  EXPECT_EQ(ParseInvoke(R"({"type":"invoke","call":1,"attempt":1,"watermark":0,"activations":[)"
                        R"({"id":1,"key":null,"time":0,"state":{}}]})",
                        document, call)
                .message(),
            "activation 0: exactly one of 'input' and 'timer' is needed");
}

}  // namespace
}  // namespace weir::process
