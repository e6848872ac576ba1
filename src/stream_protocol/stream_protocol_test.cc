#include "stream_protocol/stream_protocol.h"

#include <gtest/gtest.h>

#include <limits>

namespace weir::stream_protocol {
namespace {

TEST(StreamProtocol, CloseReasonPutsTheReasonFirstThenItsNumbers) {
  EXPECT_EQ(CloseReason("unauthorized"), R"({"reason":"unauthorized"})");
  EXPECT_EQ(CloseReason("too_old", {{"offset", int64_t{3}}, {"min", int64_t{9}}}),
            R"({"reason":"too_old","offset":3,"min":9})");
}

TEST(StreamProtocol, AGreetingReadsBackAsWritten) {
  const Greeting written{.topic = "orders\"x",
                         .partition = 2,
                         .first = 5,
                         .next = 9,
                         .start = 7,
                         .max_replay = 100,
                         .max_backlog = 8};
  const std::string json = GreetingJson(written);
  EXPECT_EQ(json, R"({"type":"greeting","topic":"orders\"x","partition":2,"first":5,"next":9,)"
                  R"("start":7,"max_replay":100,"max_backlog":8})");
  auto read = ParseGreeting(json);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->topic, written.topic);
  EXPECT_EQ(read->partition, 2);
  EXPECT_EQ(read->first, 5);
  EXPECT_EQ(read->next, 9);
  EXPECT_EQ(read->start, 7);
  EXPECT_EQ(read->max_replay, 100);
  EXPECT_EQ(read->max_backlog, 8);
}

TEST(StreamProtocol, AGreetingWithoutItsLimitsHasThemZero) {
  auto read = ParseGreeting(
      R"({"type":"greeting","topic":"t","partition":0,"first":0,"next":0,"start":0})");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->max_replay, 0);
  EXPECT_EQ(read->max_backlog, 0);
}

TEST(StreamProtocol, ACatchUpGreetingStartsBelowFirstDownToTheArchive) {
  Greeting written{.topic = "t", .partition = 0, .first = 50, .next = 90, .start = 20};
  written.archive_first = 10;
  const std::string json = GreetingJson(written);
  EXPECT_NE(json.find(R"("archive_first":10)"), std::string::npos) << json;
  auto read = ParseGreeting(json);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->start, 20);
  EXPECT_EQ(read->archive_first, 10);
  EXPECT_FALSE(ParseGreeting(R"({"type":"greeting","topic":"t","partition":0,"first":5,)"
                             R"("next":9,"start":2,"archive_first":3})")
                   .ok());
  EXPECT_FALSE(ParseGreeting(R"({"type":"greeting","topic":"t","partition":0,"first":5,)"
                             R"("next":9,"start":5,"archive_first":"x"})")
                   .ok());
  EXPECT_FALSE(ParseGreeting(R"({"type":"greeting","topic":"t","partition":0,"first":5,)"
                             R"("next":9,"start":5})")
                   ->archive_first.has_value());
}

TEST(StreamProtocol, ABadGreetingSaysWhatIsWrong) {
  const std::pair<std::string, std::string> cases[] = {
      {"greetings!", "is not JSON"},
      {"[0,1]", "is not {\"type\":\"greeting\""},
      {R"({"type":"hello"})", "is not {\"type\":\"greeting\""},
      {R"({"type":"greeting","topic":"t","partition":0})",
       "lacks topic, partition, first, next or start"},
      {R"({"type":"greeting","topic":"t","partition":-1,"first":0,"next":0,"start":0})",
       "lacks topic, partition, first, next or start"},
      {R"({"type":"greeting","topic":"t","partition":0,"first":5,"next":9,"start":2})",
       "has start outside first..next"},
      {R"({"type":"greeting","topic":"t","partition":0,"first":9,"next":5,"start":5})",
       "has start outside first..next"},
  };
  for (const auto& [text, why] : cases) {
    auto read = ParseGreeting(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.status().code(), StatusCode::kCorruption) << text;
    EXPECT_NE(read.status().message().find(why), std::string::npos)
        << text << ": " << read.status().ToString();
  }
}

TEST(StreamProtocol, AMessagePayloadReadsBackAsWritten) {
  for (int64_t offset : {int64_t{0}, int64_t{41}, std::numeric_limits<int64_t>::max()}) {
    for (std::string_view value : {std::string_view("{\"a\":[1,2]}"), std::string_view("")}) {
      std::string payload = "prefix";
      AppendMessagePayload(payload, offset, value);
      ASSERT_EQ(payload.size(), 6 + MessagePayloadSize(offset, value));
      auto message = ParseMessagePayload(std::string_view(payload).substr(6));
      ASSERT_TRUE(message.has_value()) << payload;
      EXPECT_EQ(message->offset, offset);
      EXPECT_EQ(message->value, value);
    }
  }
}

TEST(StreamProtocol, AMalformedMessagePayloadIsRefused) {
  for (std::string_view payload :
       {"", "[]", "[1]", "[,1]", "[-1,1]", "[+1,1]", "[1 ,1]", "{1,1}", "[1,1", "1,1]",
        "[9223372036854775808,1]", "[12345678901234567890,1]", "[00000000000000000001,1]",
        "[0x1,2]"}) {
    EXPECT_FALSE(ParseMessagePayload(payload).has_value()) << payload;
  }
}

}  // namespace
}  // namespace weir::stream_protocol
