#include "connectors/nats/jetstream_source.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "testing/nats_server.h"
#include "testing/recording_context.h"

namespace weir::nats {
namespace {

using dataflow::PollResult;
using dataflow::Resolution;
using dataflow::Source;
using dataflow::SourceBatch;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using testing::RecordingContext;

constexpr milliseconds kPatience{5000};  // for what must happen: fails a test only on a hang
constexpr milliseconds kShortAckWait{500};

int64_t WallClockMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t Field(const Value& object, std::string_view name) {
  const Value* field = object.Find(name);
  return field != nullptr && field->is_int() ? field->as_int() : -1;
}

// Opening fails with `code`, and the message names `mentioned`.
void ExpectOpenFails(const JetStreamSourceOptions& options, StatusCode code,
                     const std::string& mentioned) {
  auto source = OpenJetStreamSource(options);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), code) << source.status().ToString();
  EXPECT_NE(source.status().message().find(mentioned), std::string::npos)
      << source.status().ToString();
}

class JetStreamSourceTest : public ::testing::Test {
 protected:
  void SetUp() override { server_.CreateStream("ORDERS", {"orders.>"}); }

  JetStreamSourceOptions Options() {
    return {.url = server_.url(),
            .stream = "ORDERS",
            .durable = "weir",
            .key = {.field = "user"},
            .timestamp_field = "ts"};
  }

  std::unique_ptr<Source> Open(const JetStreamSourceOptions& options) {
    auto source = OpenJetStreamSource(options);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    return source.ok() ? std::move(source).value() : nullptr;
  }

  uint64_t PublishOrder(const std::string& user, int64_t ts) {
    return server_.Publish("orders.new",
                           R"({"user":")" + user + R"(","ts":)" + std::to_string(ts) + "}");
  }

  // Polls until `count` records have come, or kPatience has passed.
  SourceBatch PollRecords(Source& source, size_t count) {
    SourceBatch batch;
    auto deadline = Clock::now() + kPatience;
    while (batch.records.size() < count && Clock::now() < deadline) {
      auto result = source.Poll(count - batch.records.size(), batch, ctx_);
      if (!result.ok()) {
        ADD_FAILURE() << result.status().ToString();
        break;
      }
    }
    return batch;
  }

  // Publishes one order and opens a source with `ack_wait` that has polled it: the position
  // of that first delivery (-1, a test failure, if it did not come).
  int64_t OpenAndDeliverOne(std::unique_ptr<Source>& source, milliseconds ack_wait) {
    sequence_ = PublishOrder("ann", 1);
    JetStreamSourceOptions options = Options();
    options.ack_wait = ack_wait;
    source = Open(options);
    if (source == nullptr) return -1;
    SourceBatch batch = PollRecords(*source, 1);
    EXPECT_EQ(batch.records.size(), 1u);
    return batch.records.empty() ? -1 : batch.positions[0];
  }

  // Polls the next record and checks it is that order's second delivery; returns its position.
  int64_t ExpectSecondDelivery(Source& source) {
    SourceBatch again = PollRecords(source, 1);
    EXPECT_EQ(again.records.size(), 1u);
    if (again.records.empty()) return -1;
    EXPECT_EQ(again.identities[0], static_cast<int64_t>(sequence_));
    EXPECT_EQ(Field(source.PositionValue(again.positions[0]), "delivery"), 2);
    return again.positions[0];
  }

  // Polls for `duration`: what a source delivers in that time.
  SourceBatch PollFor(Source& source, milliseconds duration) {
    SourceBatch batch;
    auto deadline = Clock::now() + duration;
    while (Clock::now() < deadline) {
      auto result = source.Poll(100, batch, ctx_);
      if (!result.ok()) {
        ADD_FAILURE() << result.status().ToString();
        break;
      }
    }
    return batch;
  }

  // Polls until the source returns `wanted`, or kPatience has passed.
  bool PollUntil(Source& source, PollResult wanted) {
    auto deadline = Clock::now() + kPatience;
    while (Clock::now() < deadline) {
      SourceBatch batch;
      auto result = source.Poll(100, batch, ctx_);
      if (!result.ok()) {
        ADD_FAILURE() << result.status().ToString();
        return false;
      }
      if (*result == wanted) return true;
    }
    return false;
  }

  // Waits until the server's view of the consumer satisfies `condition`.
  bool ConsumerReaches(const std::function<bool(const testing::NatsConsumerState&)>& condition) {
    auto deadline = Clock::now() + kPatience;
    while (Clock::now() < deadline) {
      if (condition(server_.Consumer("ORDERS", "weir"))) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  testing::NatsServer server_;
  RecordingContext ctx_;
  uint64_t sequence_ = 0;  // of the order OpenAndDeliverOne published
};

TEST_F(JetStreamSourceTest, RecordsCarryKeyTimestampAndStreamSequence) {
  uint64_t first = PublishOrder("ann", 1000);
  uint64_t second = PublishOrder("bob", 2000);
  auto source = Open(Options());
  ASSERT_NE(source, nullptr);
  EXPECT_TRUE(source->RedeliversItself());

  SourceBatch batch = PollRecords(*source, 2);
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].key, Key::String("ann"));
  EXPECT_EQ(batch.records[0].timestamp, EventTime(1000));
  EXPECT_EQ(batch.records[1].key, Key::String("bob"));
  EXPECT_EQ(batch.records[1].timestamp, EventTime(2000));
  EXPECT_EQ(batch.identities,
            (std::vector<int64_t>{static_cast<int64_t>(first), static_cast<int64_t>(second)}));
  ASSERT_EQ(batch.positions.size(), 2u);
  EXPECT_NE(batch.positions[0], batch.positions[1]);

  Value where = source->PositionValue(batch.positions[1]);
  EXPECT_EQ(where.Find("stream")->as_string(), "ORDERS");
  EXPECT_EQ(Field(where, "sequence"), static_cast<int64_t>(second));
  EXPECT_EQ(Field(where, "delivery"), 1);
  EXPECT_TRUE(ctx_.raw_letters.empty());
}

TEST_F(JetStreamSourceTest, WithoutFieldsTheKeyIsNullAndTheTimeIsWhenStored) {
  int64_t before = WallClockMs();
  PublishOrder("ann", 1000);
  int64_t after = WallClockMs();
  JetStreamSourceOptions options = Options();
  options.key = {};
  options.timestamp_field.clear();
  auto source = Open(options);
  ASSERT_NE(source, nullptr);

  SourceBatch batch = PollRecords(*source, 1);
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.records[0].key, Key());
  EXPECT_GE(batch.records[0].timestamp.value(), before);
  EXPECT_LE(batch.records[0].timestamp.value(), after);
}

TEST_F(JetStreamSourceTest, FilterSubjectSelectsMessages) {
  server_.Publish("orders.eu", R"({"user":"ann","ts":1})");
  uint64_t us = server_.Publish("orders.us", R"({"user":"bob","ts":2})");
  JetStreamSourceOptions options = Options();
  options.subject = "orders.us";
  auto source = Open(options);
  ASSERT_NE(source, nullptr);

  SourceBatch batch = PollRecords(*source, 1);
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.identities[0], static_cast<int64_t>(us));
  EXPECT_TRUE(PollFor(*source, milliseconds(300)).records.empty());
}

TEST_F(JetStreamSourceTest, AcksWaitForTheCheckpoint) {
  PublishOrder("ann", 1);
  PublishOrder("bob", 2);
  auto source = Open(Options());
  ASSERT_NE(source, nullptr);
  SourceBatch batch = PollRecords(*source, 2);
  ASSERT_EQ(batch.records.size(), 2u);
  for (int64_t position : batch.positions) source->Resolve(position, Resolution::kAck);

  // More fetches on the source's connection: anything it had sent would be ahead of them.
  EXPECT_TRUE(PollFor(*source, milliseconds(200)).records.empty());
  EXPECT_EQ(server_.Consumer("ORDERS", "weir").ack_pending, 2);

  ASSERT_TRUE(source->OnCheckpointCommitted().ok());
  EXPECT_TRUE(
      ConsumerReaches([](const auto& c) { return c.ack_pending == 0 && c.ack_floor == 2; }));
}

TEST_F(JetStreamSourceTest, AckedButUncommittedMessageComesBackAfterACrash) {
  std::unique_ptr<Source> source;
  int64_t first = OpenAndDeliverOne(source, kShortAckWait);
  ASSERT_GE(first, 0);
  source->Resolve(first, Resolution::kAck);
  source.reset();  // without OnCheckpointCommitted: a crash before the checkpoint

  JetStreamSourceOptions options = Options();
  options.ack_wait = kShortAckWait;
  source = Open(options);
  ASSERT_NE(source, nullptr);
  ExpectSecondDelivery(*source);
}

TEST_F(JetStreamSourceTest, UnresolvedMessageIsRedeliveredAfterAckWait) {
  std::unique_ptr<Source> source;
  int64_t first = OpenAndDeliverOne(source, kShortAckWait);
  ASSERT_GE(first, 0);
  EXPECT_NE(ExpectSecondDelivery(*source), first);  // the first is held, never resolved
}

TEST_F(JetStreamSourceTest, QueuedAckIsKeptAliveUntilTheCheckpoint) {
  std::unique_ptr<Source> source;
  int64_t first = OpenAndDeliverOne(source, kShortAckWait);
  ASSERT_GE(first, 0);
  source->Resolve(first, Resolution::kAck);

  EXPECT_TRUE(PollFor(*source, 3 * kShortAckWait).records.empty());
  ASSERT_TRUE(source->OnCheckpointCommitted().ok());
  EXPECT_TRUE(ConsumerReaches([](const auto& c) { return c.ack_pending == 0; }));
}

TEST_F(JetStreamSourceTest, NakedMessageComesBackAtOnceAsANewDelivery) {
  std::unique_ptr<Source> source;
  // ack_wait 30 s: only the nak can bring it back within the test's patience.
  int64_t first = OpenAndDeliverOne(source, milliseconds(30'000));
  ASSERT_GE(first, 0);
  source->Resolve(first, Resolution::kNak);
  EXPECT_NE(ExpectSecondDelivery(*source), first);
}

TEST_F(JetStreamSourceTest, TerminatedMessageNeverComesBack) {
  std::unique_ptr<Source> source;
  int64_t first = OpenAndDeliverOne(source, kShortAckWait);
  ASSERT_GE(first, 0);
  source->Resolve(first, Resolution::kTerm);

  EXPECT_TRUE(PollFor(*source, 3 * kShortAckWait).records.empty());
  EXPECT_TRUE(ConsumerReaches([](const auto& c) { return c.ack_pending == 0; }));
}

// Each record carries the message's bytes as they were published (SourceBatch::json), for a sink
// to write if no step changes the value; they stay readable until the next Poll even when the
// delivery is nak'd or terminated at once (a step resolving the record it is processing), when
// the source no longer holds the delivery. (Under ASan a read of freed bytes fails the test.)
TEST_F(JetStreamSourceTest, RecordsCarryTheirTextUntilTheNextPollWhateverTheirResolution) {
  const std::vector<std::string> published = {R"({ "user": "ann", "ts": 1 })",
                                              R"({"user":"bob",  "ts":2})",
                                              R"({"ts":3,"user":"cy","s":"\u0041"})"};
  for (const std::string& text : published) server_.Publish("orders.new", text);
  auto source = Open(Options());
  ASSERT_NE(source, nullptr);
  SourceBatch batch = PollRecords(*source, published.size());
  ASSERT_EQ(batch.records.size(), published.size());
  ASSERT_EQ(batch.json.size(), published.size());
  source->Resolve(batch.positions[0], Resolution::kNak);
  source->Resolve(batch.positions[1], Resolution::kTerm);
  source->Resolve(batch.positions[2], Resolution::kAck);
  // libnats frees a destroyed message on a thread of its own, soon after: give it that time.
  std::this_thread::sleep_for(milliseconds(200));
  for (size_t i = 0; i < published.size(); ++i) {
    EXPECT_EQ(std::string(batch.json_of(i)), published[i]) << i;
  }
}

TEST_F(JetStreamSourceTest, FollowsTheStreamAcrossAServerRestart) {
  std::unique_ptr<Source> source;
  int64_t first = OpenAndDeliverOne(source, milliseconds(30'000));
  ASSERT_GE(first, 0);
  source->Resolve(first, Resolution::kAck);
  ASSERT_TRUE(source->OnCheckpointCommitted().ok());
  ASSERT_TRUE(ConsumerReaches([](const auto& c) { return c.ack_floor == 1; }));

  server_.Restart();
  uint64_t after = PublishOrder("bob", 2);
  SourceBatch batch = PollRecords(*source, 1);  // Poll says kIdle while libnats reconnects
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.identities[0], static_cast<int64_t>(after));
}

TEST_F(JetStreamSourceTest, MessageDeliveredMoreThanMaxDeliverIsDeadLettered) {
  auto dead_letters = server_.Subscribe("ORDERS.dlq");
  const std::string data = R"({"user":"ann","ts":1})";
  uint64_t sequence = server_.Publish("orders.new", data);
  JetStreamSourceOptions options = Options();
  options.max_deliver = 2;
  auto source = Open(options);
  ASSERT_NE(source, nullptr);
  for (int delivery = 1; delivery <= 2; ++delivery) {
    SourceBatch batch = PollRecords(*source, 1);
    ASSERT_EQ(batch.records.size(), 1u) << "delivery " << delivery;
    source->Resolve(batch.positions[0], Resolution::kNak);
  }

  // The third delivery is no record.
  auto deadline = Clock::now() + kPatience;
  while (ctx_.raw_letters.empty() && Clock::now() < deadline) {
    EXPECT_TRUE(PollFor(*source, milliseconds(100)).records.empty());
  }
  ASSERT_EQ(ctx_.raw_letters.size(), 1u);
  EXPECT_EQ(ctx_.raw_letters[0].reason, "delivered 3 times, more than max_deliver 2");
  EXPECT_EQ(ctx_.raw_letters[0].raw, data);
  EXPECT_EQ(Field(ctx_.raw_letters[0].position, "sequence"), static_cast<int64_t>(sequence));
  EXPECT_EQ(Field(ctx_.raw_letters[0].position, "delivery"), 3);

  auto letter = dead_letters->Next(kPatience);
  ASSERT_TRUE(letter.has_value());
  EXPECT_EQ(letter->data, data);
  EXPECT_EQ(letter->headers["Weir-Reason"], "delivered 3 times, more than max_deliver 2");
  EXPECT_EQ(letter->headers["Weir-Stream"], "ORDERS");
  EXPECT_EQ(letter->headers["Weir-Subject"], "orders.new");
  EXPECT_EQ(letter->headers["Weir-Sequence"], std::to_string(sequence));
  EXPECT_EQ(letter->headers["Weir-Deliveries"], "3");
  EXPECT_EQ(letter->headers["Weir-Consumer"], "weir");

  // Terminated with the next checkpoint's acks.
  EXPECT_EQ(server_.Consumer("ORDERS", "weir").ack_pending, 1);
  ASSERT_TRUE(source->OnCheckpointCommitted().ok());
  EXPECT_TRUE(ConsumerReaches([](const auto& c) { return c.ack_pending == 0; }));
  EXPECT_FALSE(dead_letters->Next(milliseconds(100)).has_value());
}

TEST_F(JetStreamSourceTest, MalformedJsonIsDeadLetteredAndAckedAtTheCheckpoint) {
  uint64_t bad = server_.Publish("orders.new", "{not json");
  uint64_t good = PublishOrder("ann", 1);
  auto source = Open(Options());
  ASSERT_NE(source, nullptr);
  SourceBatch batch = PollRecords(*source, 1);
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.identities[0], static_cast<int64_t>(good));
  ASSERT_EQ(ctx_.raw_letters.size(), 1u);
  EXPECT_EQ(ctx_.raw_letters[0].raw, "{not json");
  EXPECT_EQ(Field(ctx_.raw_letters[0].position, "sequence"), static_cast<int64_t>(bad));
  EXPECT_FALSE(ctx_.raw_letters[0].reason.empty());

  source->Resolve(batch.positions[0], Resolution::kAck);
  EXPECT_EQ(server_.Consumer("ORDERS", "weir").ack_pending, 2);
  ASSERT_TRUE(source->OnCheckpointCommitted().ok());
  EXPECT_TRUE(ConsumerReaches([](const auto& c) { return c.ack_pending == 0; }));
}

TEST_F(JetStreamSourceTest, BoundedSourceEndsOnceEverythingUpToTheBoundIsResolved) {
  PublishOrder("ann", 1);
  PublishOrder("bob", 2);
  JetStreamSourceOptions options = Options();
  options.bounded = true;
  auto source = Open(options);
  ASSERT_NE(source, nullptr);
  uint64_t later = PublishOrder("cat", 3);  // after the bound: for the next run

  SourceBatch batch = PollRecords(*source, 2);
  ASSERT_EQ(batch.records.size(), 2u);
  SourceBatch more = PollFor(*source, milliseconds(300));
  EXPECT_TRUE(more.records.empty());
  source->Resolve(batch.positions[0], Resolution::kAck);
  source->Resolve(batch.positions[1], Resolution::kNak);  // outstanding until it comes back
  SourceBatch again = PollRecords(*source, 1);
  ASSERT_EQ(again.records.size(), 1u);
  EXPECT_EQ(again.identities[0], batch.identities[1]);
  source->Resolve(again.positions[0], Resolution::kAck);

  EXPECT_TRUE(PollUntil(*source, PollResult::kEnd));
  ASSERT_TRUE(source->OnCheckpointCommitted().ok());
  source.reset();

  options.bounded = false;
  auto next_run = Open(options);
  ASSERT_NE(next_run, nullptr);
  SourceBatch next = PollRecords(*next_run, 1);
  ASSERT_EQ(next.records.size(), 1u);
  EXPECT_EQ(next.identities[0], static_cast<int64_t>(later));
}

TEST_F(JetStreamSourceTest, BoundedSourceOfAnEmptyStreamEnds) {
  JetStreamSourceOptions options = Options();
  options.bounded = true;
  auto source = Open(options);
  ASSERT_NE(source, nullptr);
  EXPECT_TRUE(PollUntil(*source, PollResult::kEnd));
}

TEST_F(JetStreamSourceTest, AnExistingConsumerGetsTheSourcesAckWaitAndUnlimitedDelivery) {
  server_.CreateConsumer("ORDERS", "weir", milliseconds(10'000), 3);
  JetStreamSourceOptions options = Options();
  options.ack_wait = milliseconds(2000);
  ASSERT_NE(Open(options), nullptr);
  testing::NatsConsumerState consumer = server_.Consumer("ORDERS", "weir");
  EXPECT_EQ(consumer.ack_wait_ms, 2000);
  EXPECT_EQ(consumer.max_deliver, -1);
}

TEST_F(JetStreamSourceTest, ConsumerWithAnotherFilterIsRefused) {
  JetStreamSourceOptions options = Options();
  options.subject = "orders.eu";
  ASSERT_NE(Open(options), nullptr);
  options.subject = "orders.us";
  ExpectOpenFails(options, StatusCode::kFailedPrecondition, "orders.eu");
}

TEST_F(JetStreamSourceTest, FilterOutsideTheStreamIsABadOption) {
  JetStreamSourceOptions options = Options();
  options.subject = "payments.new";
  ExpectOpenFails(options, StatusCode::kInvalidArgument, "durable consumer weir of stream ORDERS");
}

TEST_F(JetStreamSourceTest, PositionIsKeptByTheConsumerNotTheCheckpoint) {
  auto source = Open(Options());
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->SavePosition(), "");
  EXPECT_TRUE(source->RestorePosition("").ok());
  EXPECT_FALSE(source->RestorePosition("17").ok());
}

TEST_F(JetStreamSourceTest, UnknownStreamIsNotFound) {
  JetStreamSourceOptions options = Options();
  options.stream = "NOPE";
  ExpectOpenFails(options, StatusCode::kNotFound, "NOPE");
}

TEST(JetStreamSource, ConnectionRefusedNamesTheUrl) {
  std::string url;
  {
    testing::NatsServer stopped;
    url = stopped.url();
  }  // nothing listens there any more
  ExpectOpenFails({.url = url, .stream = "ORDERS", .durable = "weir"}, StatusCode::kUnavailable,
                  url);
}

TEST(JetStreamSource, MissingDurableIsABadOption) {
  ExpectOpenFails({.stream = "ORDERS"}, StatusCode::kInvalidArgument, "durable");
}

}  // namespace
}  // namespace weir::nats
