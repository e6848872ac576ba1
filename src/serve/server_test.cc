// The server over a real LogStore in a temp dir, driven over loopback by real clients: Beast's
// WebSocket and HTTP clients, and raw TCP sockets where a client has to misbehave. Every
// network wait has a deadline (clients_for_test.h), so a hang fails the test that caused it.
#include "serve/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "log/log_test_util.h"
#include "serve/clients_for_test.h"
#include "serve/masked_frame_for_test.h"

namespace weir::serve {
namespace {

using namespace std::chrono_literals;
using log::testing::ReadAll;
using testing::HttpClient;
using testing::JsonInt;
using testing::ParseMessage;
namespace asio = testing::asio;
namespace http = testing::http;
using testing::RawClient;
using testing::ServerFrame;
using testing::TakeServerFrames;
using testing::UpgradeRequest;
using testing::WsClient;

// A value that a subscriber must get back byte for byte: escapes, non-ASCII text, spaces, and a
// length that varies with i.
std::string ValueOf(int64_t i) {
  return R"({"i":)" + std::to_string(i) + R"(, "s":"caf\u00e9 é \"q\" \\","pad":")" +
         std::string(i % 37, 'x') + R"("})";
}

// The subscriber's data frame for a message.
std::string MessageText(int64_t offset, std::string_view value) {
  return "[" + std::to_string(offset) + "," + std::string(value) + "]";
}

std::string Greeting(const std::string& topic, int partition, int64_t first, int64_t next,
                     int64_t start, const ServerOptions& options = {}) {
  return R"({"type":"greeting","topic":")" + topic + R"(","partition":)" +
         std::to_string(partition) + R"(,"first":)" + std::to_string(first) + R"(,"next":)" +
         std::to_string(next) + R"(,"start":)" + std::to_string(start) + R"(,"max_replay":)" +
         std::to_string(options.max_replay) + R"(,"max_backlog":)" +
         std::to_string(options.max_backlog) + "}";
}

std::string Ack(int64_t seq, int64_t first, int64_t count) {
  return R"({"ack":)" + std::to_string(seq) + R"(,"first":)" + std::to_string(first) +
         R"(,"count":)" + std::to_string(count) + "}";
}

// Polls `condition` until it holds or the hang deadline passes.
bool Eventually(const std::function<bool()>& condition) {
  const auto until = std::chrono::steady_clock::now() + testing::kHangDeadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Failures seen by helper threads (gtest assertions belong to the main thread).
class ThreadFailures {
 public:
  void Add(std::string what) {
    std::lock_guard lock(mu_);
    failures_.push_back(std::move(what));
  }
  // Runs `body`, recording what it throws under `name`.
  void Run(const std::string& name, const std::function<void()>& body) {
    try {
      body();
    } catch (const std::exception& e) {
      Add(name + ": " + e.what());
    }
  }
  void Expect() {
    std::lock_guard lock(mu_);
    for (const std::string& failure : failures_) ADD_FAILURE() << failure;
  }
  std::string Summary() {
    std::lock_guard lock(mu_);
    std::string out;
    for (const std::string& failure : failures_) out += failure + "; ";
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> failures_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions options;
    options.dir = dir_.path() / "log";
    auto store = log::LogStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    log_ = std::move(store).value();
  }

  log::Partition& CreateTopic(const std::string& name, log::TopicConfig config = {}) {
    auto topic = log_->CreateTopic(name, config);
    if (!topic.ok()) throw std::runtime_error(topic.status().ToString());
    return (*topic)->partition(PartitionId(0));
  }

  log::Partition& PartitionOf(const std::string& name) {
    auto topic = log_->GetTopic(name);
    if (!topic.ok()) throw std::runtime_error(topic.status().ToString());
    return (*topic)->partition(PartitionId(0));
  }

  void StartServer(ServerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    options_ = options;
    auto server = Server::Start(*log_, options);
    if (!server.ok()) throw std::runtime_error(server.status().ToString());
    server_ = std::move(server).value();
    port_ = server_->port();
  }

  // Appends ValueOf(from) .. ValueOf(from + count - 1), `per_batch` records per append.
  static void AppendValues(log::Partition& p, int64_t from, int64_t count, int64_t per_batch = 1000,
                           log::Durability durability = log::Durability::kWaitDurable) {
    for (int64_t i = from; i < from + count; i += per_batch) {
      log::RecordBatchBuilder batch;
      for (int64_t j = i; j < std::min(from + count, i + per_batch); ++j) {
        batch.AddRaw(EventTime(j), KeySerde::kNull, {}, ValueOf(j));
      }
      auto offset = p.Append(batch, durability);
      if (!offset.ok()) throw std::runtime_error(offset.status().ToString());
      if (offset->value() != i) throw std::runtime_error("appended at an unexpected offset");
    }
  }

  // Upgrades to `target` and expects a refusal: a close frame with `code` and `reason`, before
  // any message.
  void ExpectRefusal(const std::string& target, uint16_t code, const std::string& reason,
                     const std::string& authorization = "") {
    SCOPED_TRACE(target);
    WsClient client(port_, target, authorization);
    auto message = client.Read();
    EXPECT_FALSE(message) << "instead of a refusal: " << *message;
    EXPECT_EQ(client.ending().code, code) << client.ending().error.message();
    EXPECT_EQ(client.ending().reason, reason);
    EXPECT_EQ(client.ending().error, testing::websocket::error::closed);  // a clean close
  }

  // Expects a greeting (the subscription was accepted) and closes.
  void ExpectGreeting(const std::string& target, const std::string& authorization = "") {
    SCOPED_TRACE(target);
    WsClient client(port_, target, authorization);
    auto message = client.Read();
    ASSERT_TRUE(message) << client.ending().code << " " << client.ending().reason;
    EXPECT_TRUE(message->starts_with(R"({"type":"greeting")")) << *message;
    client.Close();
  }

  // The server still does its job: a new record reaches a new subscriber.
  void ExpectStillServes() {
    auto topic = log_->GetOrCreateTopic("probe", {});
    ASSERT_TRUE(topic.ok());
    log::Partition& p = (*topic)->partition(PartitionId(0));
    const int64_t at = p.NextOffset().value();
    AppendValues(p, at, 1);
    WsClient client(port_, "/streams/probe?offset=" + std::to_string(at));
    auto greeting = client.Read();
    ASSERT_TRUE(greeting) << client.ending().reason;
    EXPECT_EQ(*greeting, Greeting("probe", 0, 0, at + 1, at, options_));
    auto message = client.Read();
    ASSERT_TRUE(message);
    EXPECT_EQ(*message, MessageText(at, ValueOf(at)));
    client.Close();
  }

  ServerStats Stats() { return server_->stats(); }

  weir::testing::TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  ServerOptions options_;
  std::unique_ptr<Server> server_;  // destroyed before the log
  uint16_t port_ = 0;
};

// --- Subscribing ---------------------------------------------------------------------------------

using ServerSubscribe = ServerTest;

TEST_F(ServerSubscribe, GreetingNamesTheEndsAndWhereEachKindOfStartBegins) {
  log::Partition& p = CreateTopic("events");
  AppendValues(p, 0, 10);
  StartServer({.max_replay = 1000, .max_backlog = 77});
  for (const auto& [query, start] :
       std::vector<std::pair<std::string, int64_t>>{{"", 10},
                                                    {"?offset=latest", 10},
                                                    {"?offset=earliest", 0},
                                                    {"?offset=4", 4},
                                                    {"?offset=10", 10},
                                                    {"?partition=0&offset=0", 0}}) {
    SCOPED_TRACE(query);
    WsClient client(port_, "/streams/events" + query);
    auto greeting = client.Read();
    ASSERT_TRUE(greeting) << client.ending().reason;
    EXPECT_EQ(*greeting, Greeting("events", 0, 0, 10, start, options_));
    if (start < 10) {
      auto message = client.Read();
      ASSERT_TRUE(message);
      EXPECT_EQ(*message, MessageText(start, ValueOf(start)));
    }
    client.Close();
  }
}

TEST_F(ServerSubscribe, ReplayThenLiveHasNoGapAndNoDuplicateWhileAppending) {
  log::Partition& p = CreateTopic("events");
  constexpr int64_t kBefore = 50'000;
  constexpr int64_t kDuring = 50'000;
  AppendValues(p, 0, kBefore);
  StartServer();
  WsClient client(port_, "/streams/events?offset=0");
  auto greeting = client.Read();
  ASSERT_TRUE(greeting) << client.ending().reason;
  EXPECT_EQ(*greeting, Greeting("events", 0, 0, kBefore, 0));

  // Appends while the subscriber replays (and then while it is live), in small batches.
  ThreadFailures failures;
  std::jthread appender([&] {
    failures.Run("appender", [&] {
      AppendValues(p, kBefore, kDuring, 100, log::Durability::kNoWait);
      if (!log_->FlushAll().ok()) throw std::runtime_error("FlushAll");
    });
  });
  for (int64_t i = 0; i < kBefore + kDuring; ++i) {
    auto message = client.Read();
    ASSERT_TRUE(message) << "after " << i << " messages: " << client.ending().code << " "
                         << client.ending().reason;
    ASSERT_EQ(*message, MessageText(i, ValueOf(i)));
  }
  appender.join();
  failures.Expect();
  client.Close();
}

// A topic whose values are stored in the binary form (a repartition topic) is served as JSON.
TEST_F(ServerSubscribe, BinaryStoredValuesAreSentAsTheirJson) {
  log::Partition& p = CreateTopic("internal");
  const Value value = *Value::Parse(R"({"bidder":7,"name":"caf\u00e9 \"q\"","bids":[1.5,null]})");
  log::RecordBatchBuilder batch(log::ValueEncoding::kBinary);
  batch.Add(EventTime(1), Key::Int(7), value);
  batch.Add(EventTime(2), Key::Int(8), Value(8));
  ASSERT_TRUE(p.Append(batch, log::Durability::kWaitDurable).ok());
  StartServer();
  WsClient client(port_, "/streams/internal?offset=0");
  ASSERT_TRUE(client.Read()) << client.ending().reason;  // the greeting
  auto first = client.Read();
  ASSERT_TRUE(first) << client.ending().reason;
  EXPECT_EQ(*first, MessageText(0, value.ToJson()));
  auto second = client.Read();
  ASSERT_TRUE(second) << client.ending().reason;
  EXPECT_EQ(*second, MessageText(1, "8"));
  client.Close();
}

// --- Resuming ------------------------------------------------------------------------------------

using ServerResume = ServerTest;

// Subscribers that drop their connection at random points and resume, at last + 1 or earlier,
// while two publishers pipeline frames: each one's sequence is the partition's log exactly.
TEST_F(ServerResume, ResumingSubscribersSeeExactlyTheLogWhilePublishersPublish) {
  log::Partition& p = CreateTopic("orders");
  StartServer();
  constexpr int kPublishers = 2;
  constexpr int kPerPublisher = 10'000;
  constexpr int kSubscribers = 20;
  constexpr int64_t kTotal = kPublishers * kPerPublisher;
  constexpr int kInFlight = 200;
  auto message_of = [](int publisher, int n) {
    return R"({"publisher":)" + std::to_string(publisher) + R"(,"n":)" + std::to_string(n) +
           R"(,"pad":")" + std::string(n % 50, 'p') + R"("})";
  };
  ThreadFailures failures;
  std::vector<std::vector<int64_t>> acked(kPublishers);  // [publisher][n] = offset
  std::vector<std::vector<std::string>> seen(kSubscribers);
  std::vector<int> resumes(kSubscribers);
  {
    std::vector<std::jthread> threads;
    for (int s = 0; s < kSubscribers; ++s) {
      threads.emplace_back([&, s] {
        failures.Run("subscriber " + std::to_string(s), [&] {
          std::mt19937 random(s);
          std::vector<std::string>& got = seen[s];
          while (static_cast<int64_t>(got.size()) < kTotal) {
            int64_t start = static_cast<int64_t>(got.size());
            if (start > 0 && random() % 4 == 0)
              start -= 1 + random() % std::min<int64_t>(start, 2000);
            WsClient client(port_, "/streams/orders?offset=" + std::to_string(start));
            ++resumes[s];
            auto greeting = client.Read();
            if (!greeting) throw std::runtime_error("refused: " + client.ending().reason);
            if (JsonInt(*greeting, "start") != start) throw std::runtime_error(*greeting);
            int64_t expected = start;
            for (int budget = 1 + random() % 3000;
                 budget > 0 && static_cast<int64_t>(got.size()) < kTotal; --budget) {
              auto message = client.Read();
              if (!message) {
                // Too slow is a legitimate ending: resume after the last message written.
                if (client.ending().code == 4408 &&
                    JsonInt(client.ending().reason, "last") == expected - 1) {
                  break;
                }
                throw std::runtime_error("ended: " + std::to_string(client.ending().code) + " " +
                                         client.ending().reason + " " +
                                         client.ending().error.message());
              }
              auto [offset, value] = ParseMessage(*message);
              if (offset != expected) {
                throw std::runtime_error("got offset " + std::to_string(offset) + ", expected " +
                                         std::to_string(expected));
              }
              ++expected;
              if (offset < static_cast<int64_t>(got.size())) {
                if (got[offset] != value) throw std::runtime_error("offset changed: " + value);
              } else {
                got.push_back(std::move(value));
              }
            }
            if (random() % 2) {
              client.Close();
            } else {
              client.Abandon();
            }
          }
        });
      });
    }
    for (int publisher = 0; publisher < kPublishers; ++publisher) {
      threads.emplace_back([&, publisher] {
        failures.Run("publisher " + std::to_string(publisher), [&] {
          WsClient client(port_, "/publish/orders");
          int sent = 0;
          int acks = 0;
          while (acks < kPerPublisher) {
            while (sent < kPerPublisher && sent - acks < kInFlight) {
              client.Send(message_of(publisher, sent++));
            }
            auto ack = client.Read();
            if (!ack) throw std::runtime_error("publisher closed: " + client.ending().reason);
            const int64_t first = JsonInt(*ack, "first");
            if (*ack != Ack(acks, first, 1)) throw std::runtime_error("ack " + *ack);
            acked[publisher].push_back(first);
            ++acks;
          }
          client.Close();
        });
      });
    }
  }
  failures.Expect();
  const auto records = ReadAll(p);
  ASSERT_EQ(static_cast<int64_t>(records.size()), kTotal);
  for (int publisher = 0; publisher < kPublishers; ++publisher) {
    ASSERT_EQ(acked[publisher].size(), static_cast<size_t>(kPerPublisher));
    for (int n = 0; n < kPerPublisher; ++n) {
      ASSERT_EQ(records[acked[publisher][n]].second, message_of(publisher, n))
          << "publisher " << publisher << " message " << n;
    }
  }
  for (int s = 0; s < kSubscribers; ++s) {
    ASSERT_EQ(seen[s].size(), records.size()) << "subscriber " << s;
    for (size_t i = 0; i < records.size(); ++i) {
      ASSERT_EQ(seen[s][i], records[i].second) << "subscriber " << s << " offset " << i;
    }
    EXPECT_GT(resumes[s], 1) << "subscriber " << s << " never resumed";
  }
  // Connections dropped without a closing handshake are gone too.
  EXPECT_TRUE(Eventually([&] {
    const ServerStats stats = Stats();
    return stats.connections == 0 && stats.subscribers == 0;
  })) << Stats().connections
      << " connections, " << Stats().subscribers << " subscribers";
}

// --- Refusals ------------------------------------------------------------------------------------

using ServerRefusal = ServerTest;

TEST_F(ServerRefusal, EmptyPartitionRefusesAnyOffsetButItsNext) {
  CreateTopic("t");
  StartServer();
  ExpectRefusal("/streams/t?offset=5", 4204, R"({"reason":"empty","offset":5,"next":0})");
  ExpectGreeting("/streams/t?offset=0");
  ExpectGreeting("/streams/t?offset=earliest");
}

TEST_F(ServerRefusal, OffsetBeyondTheNextIsAhead) {
  AppendValues(CreateTopic("t"), 0, 10);
  StartServer();
  ExpectRefusal("/streams/t?offset=11", 4416, R"({"reason":"ahead","offset":11,"next":10})");
  ExpectRefusal("/streams/t?offset=9223372036854775807", 4416,
                R"({"reason":"ahead","offset":9223372036854775807,"next":10})");
  ExpectGreeting("/streams/t?offset=10");
}

TEST_F(ServerRefusal, OffsetDeletedByRetentionIsEvicted) {
  log::Partition& p = CreateTopic("t", {.retention_bytes = 4096, .segment_bytes = 4096});
  AppendValues(p, 0, 300, /*per_batch=*/1);
  auto removed = p.EnforceRetention(std::chrono::system_clock::now());
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  const int64_t first = p.FirstOffset().value();
  ASSERT_GT(first, 0);
  StartServer();
  ExpectRefusal("/streams/t?offset=0", 4410,
                R"({"reason":"evicted","offset":0,"first":)" + std::to_string(first) + "}");
  ExpectRefusal("/streams/t?offset=" + std::to_string(first - 1), 4410,
                R"({"reason":"evicted","offset":)" + std::to_string(first - 1) + R"(,"first":)" +
                    std::to_string(first) + "}");
  WsClient client(port_, "/streams/t?offset=earliest");
  auto greeting = client.Read();
  ASSERT_TRUE(greeting);
  EXPECT_EQ(*greeting, Greeting("t", 0, first, 300, first));
  auto message = client.Read();
  ASSERT_TRUE(message);
  EXPECT_EQ(*message, MessageText(first, ValueOf(first)));
  client.Close();
}

TEST_F(ServerRefusal, OffsetBelowMaxReplayIsTooOld) {
  AppendValues(CreateTopic("t"), 0, 100);
  StartServer({.max_replay = 10});
  ExpectRefusal("/streams/t?offset=50", 4413, R"({"reason":"too_old","offset":50,"min":90})");
  ExpectRefusal("/streams/t?offset=89", 4413, R"({"reason":"too_old","offset":89,"min":90})");
  ExpectGreeting("/streams/t?offset=90");
}

TEST_F(ServerRefusal, UnknownTopicOrPartitionIsNotFound) {
  ASSERT_TRUE(log_->CreateTopic("two", {.partitions = 2}).ok());
  StartServer();
  ExpectRefusal("/streams/nope", 4404, R"({"reason":"not_found","partitions":0})");
  ExpectRefusal("/streams/two?partition=2", 4404, R"({"reason":"not_found","partitions":2})");
  ExpectRefusal("/publish/nope", 4404, R"({"reason":"not_found","partitions":0})");
  ExpectRefusal("/publish/two?partition=7", 4404, R"({"reason":"not_found","partitions":2})");
  ExpectGreeting("/streams/two?partition=1");
}

TEST_F(ServerRefusal, MalformedParametersAreBadRequestsNamingThem) {
  CreateTopic("t");
  StartServer();
  for (const char* offset : {"-1", "abc", "+1", "", "99999999999999999999", "1.5"}) {
    ExpectRefusal(std::string("/streams/t?offset=") + offset, 4400,
                  R"({"reason":"bad_request","param":"offset"})");
  }
  ExpectRefusal("/streams/t?partition=x", 4400, R"({"reason":"bad_request","param":"partition"})");
  ExpectRefusal("/streams/t?colour=red", 4400, R"({"reason":"bad_request","param":"colour"})");
  ExpectRefusal("/publish/t?offset=0", 4400, R"({"reason":"bad_request","param":"offset"})");
}

TEST_F(ServerRefusal, MissingOrWrongTokenIsUnauthorized) {
  CreateTopic("t");
  StartServer({.publish_token = "pub-secret", .subscribe_token = "sub-secret"});
  const std::string refused = R"({"reason":"unauthorized"})";
  ExpectRefusal("/streams/t", 4401, refused);
  ExpectRefusal("/streams/t", 4401, refused, "Bearer wrong");
  ExpectRefusal("/streams/t", 4401, refused, "Bearer pub-secret");
  ExpectRefusal("/streams/t?token=sub-secre", 4401, refused);
  ExpectRefusal("/streams/t", 4401, refused, "Basic sub-secret");
  ExpectGreeting("/streams/t", "Bearer sub-secret");
  ExpectGreeting("/streams/t?token=sub-secret");
  ExpectGreeting("/streams/t?token=sub%2Dsecret");

  ExpectRefusal("/publish/t", 4401, refused);
  ExpectRefusal("/publish/t", 4401, refused, "Bearer sub-secret");
  ExpectRefusal("/publish/t?token=wrong", 4401, refused);
  for (const std::string& auth : std::vector<std::string>{"Bearer pub-secret", ""}) {
    WsClient publisher(port_, auth.empty() ? "/publish/t?token=pub-secret" : "/publish/t", auth);
    publisher.Send("{}");
    auto ack = publisher.Read();
    ASSERT_TRUE(ack) << publisher.ending().reason;
    EXPECT_EQ(JsonInt(*ack, "count"), 1) << *ack;
    publisher.Close();
  }

  HttpClient http(port_);
  EXPECT_EQ(HttpClient(port_).Post("/publish/t", "{}").status, 401);
  EXPECT_EQ(HttpClient(port_).Post("/publish/t", "{}", "Bearer sub-secret").status, 401);
  EXPECT_EQ(http.Post("/publish/t", "{}", "Bearer pub-secret").status, 200);
  EXPECT_EQ(http.Post("/publish/t?token=pub-secret", "{}").status, 200);
  EXPECT_EQ(ReadAll(PartitionOf("t")).size(), 4u);
}

TEST_F(ServerRefusal, BeyondMaxSubscribersIsTooManySubscribers) {
  CreateTopic("t");
  ASSERT_TRUE(log_->CreateTopic("other", {}).ok());
  StartServer({.max_subscribers = 1});
  WsClient first(port_, "/streams/t");
  ASSERT_TRUE(first.Read());
  ExpectRefusal("/streams/t", 4429, R"({"reason":"too_many_subscribers","max":1})");
  ExpectRefusal("/streams/t?offset=0", 4429, R"({"reason":"too_many_subscribers","max":1})");
  ExpectGreeting("/streams/other");  // the limit is per partition
  first.Close();
  ExpectGreeting("/streams/t");
}

TEST_F(ServerRefusal, TopicOwnedByAPipelineIsNotWritable) {
  auto topic = log_->CreateTopic("owned", {});
  ASSERT_TRUE(topic.ok());
  ASSERT_TRUE((*topic)->ClaimForTransactions("app").ok());
  StartServer();
  ExpectRefusal("/publish/owned", 4409, R"({"reason":"not_writable"})");
  ExpectGreeting("/streams/owned");  // reading it is fine
}

// Without a publish token, a web page of another site cannot publish to a server on the user's
// machine; its own host's origin, or a token, can.
TEST_F(ServerRefusal, APublishFromAnotherSitesPageNeedsAToken) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  HttpClient client(port_);
  testing::HttpAnswer cross = client.Post("/publish/t", R"({"a":1})", "", "https://elsewhere.example");
  EXPECT_EQ(cross.status, 403);
  EXPECT_EQ(cross.body, R"({"error":"cross_origin"})");
  HttpClient same(port_);
  EXPECT_EQ(same.Post("/publish/t", R"({"a":2})", "", "http://127.0.0.1").status, 200);
  EXPECT_EQ(ReadAll(p).size(), 1u);  // only the same-origin publish

  server_.reset();
  StartServer({.publish_token = "s3cret"});
  HttpClient with_token(port_);
  EXPECT_EQ(
      with_token.Post("/publish/t", R"({"a":3})", "Bearer s3cret", "https://elsewhere.example")
          .status,
      200);
}

TEST_F(ServerRefusal, SubscriberSendingADataFrameIsClosed1003) {
  AppendValues(CreateTopic("t"), 0, 3);
  StartServer();
  WsClient client(port_, "/streams/t?offset=0");
  ASSERT_TRUE(client.Read());  // the greeting
  client.Send("hello");
  // What was already sent may come first; then the close.
  for (int i = 0; i < 4; ++i) {
    auto message = client.Read();
    if (!message) break;
    EXPECT_EQ(*message, MessageText(i, ValueOf(i)));
  }
  EXPECT_EQ(client.ending().code, 1003);
  EXPECT_EQ(client.ending().reason, R"({"reason":"subscriber_sent_data"})");
  EXPECT_EQ(client.ending().error, testing::websocket::error::closed);  // a clean close
  ExpectStillServes();
}

// --- Slow subscribers ----------------------------------------------------------------------------

using ServerSlowSubscriber = ServerTest;

// A subscriber that stops reading is closed too_slow once its backlog passes max_backlog; the
// others get everything; it gets what was written to its socket, then the close, and resumes
// from there with no gap.
TEST_F(ServerSlowSubscriber, AStalledSubscriberIsClosedAndTheOthersAreNotAffected) {
  log::Partition& p = CreateTopic("t");
  StartServer({.max_backlog = 256});
  constexpr int kFast = 3;
  constexpr int kChunk = 500;
  constexpr int kMaxMessages = 60'000;
  auto message_of = [](int64_t n) {
    std::string message = R"({"n":)" + std::to_string(n) + R"(,"pad":")";
    message.resize(500, 'x');
    return message + "\"}";
  };
  // The stalled subscriber: a small receive window, the 101 read, then nothing until the
  // server has given up on it.
  RawClient stalled(port_, /*rcvbuf=*/4096);
  stalled.Write(UpgradeRequest("/streams/t"));
  ASSERT_TRUE(stalled.ReadUntil("\r\n\r\n").starts_with("HTTP/1.1 101"));

  ThreadFailures failures;
  std::vector<std::vector<std::string>> received(kFast);
  std::atomic<int> subscribed = 0;
  std::atomic<int64_t> total = -1;  // published in all, once the publisher knows
  std::vector<std::jthread> threads;
  for (int i = 0; i < kFast; ++i) {
    threads.emplace_back([&, i] {
      failures.Run("fast subscriber " + std::to_string(i), [&] {
        // A receive buffer that holds what the server writes while this thread is not
        // scheduled: this subscriber drains as fast as the server writes.
        WsClient client(port_, "/streams/t", "", 4 << 20);
        if (!client.Read()) throw std::runtime_error("refused: " + client.ending().reason);
        ++subscribed;
        for (int64_t n = 0; total < 0 || n < total; ++n) {
          auto message = client.Read();
          if (!message) {
            throw std::runtime_error("closed after " + std::to_string(n) + ": " +
                                     std::to_string(client.ending().code) + " " +
                                     client.ending().reason);
          }
          auto [offset, value] = ParseMessage(*message);
          if (offset != n) throw std::runtime_error("offset " + std::to_string(offset));
          received[i].push_back(std::move(value));
        }
        client.Close();
      });
    });
  }
  ASSERT_TRUE(Eventually([&] { return subscribed == kFast; }));
  // Publishes until the stalled subscriber is closed (its socket buffers, which the system
  // sizes, are full by then), then one chunk more.
  threads.emplace_back([&] {
    failures.Run("publisher", [&] {
      WsClient publisher(port_, "/publish/t");
      int64_t sent = 0;
      while (total < 0) {
        if (Stats().too_slow > 0 || sent + kChunk >= kMaxMessages) total = sent + kChunk;
        for (int i = 0; i < kChunk; ++i) publisher.Send(message_of(sent++));
        for (int64_t n = sent - kChunk; n < sent; ++n) {
          auto ack = publisher.Read();
          if (!ack || *ack != Ack(n, n, 1)) throw std::runtime_error("ack " + ack.value_or(""));
        }
      }
      publisher.Close();
    });
  });

  // Once the server has closed it, the stalled subscriber reads: messages from 0 with no gap,
  // then the close frame naming the last of them.
  ASSERT_TRUE(Eventually([&] { return Stats().too_slow > 0; })) << failures.Summary();
  std::vector<ServerFrame> frames = TakeServerFrames(stalled.pending());  // came with the 101
  while (frames.empty() || frames.back().opcode != Opcode::kClose) {
    ASSERT_TRUE(stalled.ReadMore()) << "ended without a close frame after " << frames.size();
    for (ServerFrame& frame : TakeServerFrames(stalled.pending())) {
      frames.push_back(std::move(frame));
    }
  }
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0].payload, Greeting("t", 0, 0, 0, 0, options_));
  const int64_t last = static_cast<int64_t>(frames.size()) - 3;
  for (int64_t n = 0; n <= last; ++n) {
    ASSERT_EQ(frames[n + 1].opcode, Opcode::kText);
    ASSERT_EQ(frames[n + 1].payload, MessageText(n, message_of(n)));
  }
  EXPECT_EQ(frames.back().close_code(), 4408);
  EXPECT_EQ(frames.back().close_reason(),
            R"({"reason":"too_slow","last":)" + std::to_string(last) + "}");
  stalled.Write(testing::MaskedFrame(Opcode::kClose, frames.back().payload.substr(0, 2)));
  EXPECT_EQ(stalled.ReadToEnd(), "");

  threads.clear();
  failures.Expect();
  ASSERT_GT(total, last + 1) << "the stalled subscriber was not closed before the end";
  for (int i = 0; i < kFast; ++i) {
    ASSERT_EQ(static_cast<int64_t>(received[i].size()), total.load()) << "fast subscriber " << i;
    for (int64_t n = 0; n < total; ++n) ASSERT_EQ(received[i][n], message_of(n));
  }
  EXPECT_EQ(Stats().too_slow, 1);

  WsClient resumed(port_, "/streams/t?offset=" + std::to_string(last + 1));
  auto greeting = resumed.Read();
  ASSERT_TRUE(greeting) << resumed.ending().reason;
  EXPECT_EQ(*greeting, Greeting("t", 0, 0, total, last + 1, options_));
  for (int64_t n = last + 1; n < total; ++n) {
    auto message = resumed.Read();
    ASSERT_TRUE(message) << resumed.ending().reason;
    ASSERT_EQ(*message, MessageText(n, message_of(n)));
  }
  resumed.Close();
  EXPECT_EQ(static_cast<int64_t>(ReadAll(p).size()), total.load());
}

// One publish of many records (a burst far above max_backlog) does not make a subscriber that
// reads too slow: it is handed out as fast as the subscriber's socket takes it.
TEST_F(ServerSlowSubscriber, ABurstAboveMaxBacklogDoesNotCloseASubscriberThatReads) {
  log::Partition& p = CreateTopic("t");
  StartServer({.max_backlog = 256});
  WsClient subscriber(port_, "/streams/t");
  ASSERT_TRUE(subscriber.Read());
  constexpr int64_t kBurst = 50'000;
  AppendValues(p, 0, kBurst, /*per_batch=*/kBurst);
  for (int64_t n = 0; n < kBurst; ++n) {
    auto message = subscriber.Read();
    ASSERT_TRUE(message) << "after " << n << ": " << subscriber.ending().code << " "
                         << subscriber.ending().reason;
    ASSERT_EQ(*message, MessageText(n, ValueOf(n)));
  }
  subscriber.Close();
  EXPECT_EQ(Stats().too_slow, 0);
}

// --- Publishing ----------------------------------------------------------------------------------

using ServerPublish = ServerTest;

TEST_F(ServerPublish, PipelinedFramesAreAcknowledgedInOrderWithTheirOffsets) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  constexpr int kFrames = 1000;
  std::vector<std::string> values;  // the log to expect
  std::vector<std::string> acks;
  WsClient client(port_, "/publish/t");
  for (int n = 0; n < kFrames; ++n) {
    const std::string tag = std::to_string(n);
    std::vector<std::string> frame_values;
    std::string body;
    switch (n % 4) {
      case 0:  // JSON lines, with a \r\n, an empty line and surrounding spaces
        frame_values = {R"({"n":)" + tag + R"(,"k":0})", R"({"n":)" + tag + R"(,"k":1})",
                        R"({"n":)" + tag + R"(, "k": 2})"};
        body = frame_values[0] + "\n" + frame_values[1] + "\r\n\n   " + frame_values[2] + "  \n";
        break;
      case 1:  // one value over several lines
        frame_values = {"{\n  \"n\": " + tag + ",\n  \"list\": [1, 2]\n}"};
        body = frame_values[0] + "\n";
        break;
      case 2:  // a string with escapes and non-ASCII text
        frame_values = {R"("caf\u00e9 é \"q\" )" + tag + "\""};
        body = "  " + frame_values[0] + " ";
        break;
      default:
        frame_values = {tag};
        body = tag;
    }
    acks.push_back(
        Ack(n, static_cast<int64_t>(values.size()), static_cast<int64_t>(frame_values.size())));
    values.insert(values.end(), frame_values.begin(), frame_values.end());
    client.Send(body);
  }
  for (int n = 0; n < kFrames; ++n) {
    auto ack = client.Read();
    ASSERT_TRUE(ack) << client.ending().reason;
    ASSERT_EQ(*ack, acks[n]);
  }
  client.Close();
  const auto records = ReadAll(p);
  ASSERT_EQ(records.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(records[i].first, static_cast<int64_t>(i));
    EXPECT_EQ(records[i].second, values[i]);
  }
}

TEST_F(ServerPublish, ABodyWithABadLineAppendsNothingAndNamesTheLine) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  WsClient client(port_, "/publish/t");
  client.Send(R"({"a":0})");
  client.Send("{\"a\":1}\n{\"b\":\n{\"c\":3}");
  client.Send("\n  \r\n");
  client.Send(R"({"a":2})");
  auto answer = client.Read();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, Ack(0, 0, 1));
  answer = client.Read();
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->starts_with(R"({"error":"not_json","seq":1,"line":2,"detail":")")) << *answer;
  answer = client.Read();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, R"({"error":"empty","seq":2})");
  answer = client.Read();
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, Ack(3, 1, 1));
  client.Close();

  HttpClient http(port_);
  auto bad = http.Post("/publish/t", "{\"ok\":1}\n\n[1,2\n");
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(bad.body.starts_with(R"({"error":"not_json","line":3,"detail":")")) << bad.body;
  auto empty = HttpClient(port_).Post("/publish/t", " \n");
  EXPECT_EQ(empty.status, 400);
  EXPECT_EQ(empty.body, R"({"error":"empty"})");

  const auto records = ReadAll(p);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].second, R"({"a":0})");
  EXPECT_EQ(records[1].second, R"({"a":2})");
}

TEST_F(ServerPublish, ABinaryFrameClosesWith1003AfterTheAcksOfEarlierFrames) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  WsClient client(port_, "/publish/t");
  for (int n = 0; n < 3; ++n) client.Send(std::to_string(n));
  client.Send("{}", /*binary=*/true);
  client.Send("3");
  for (int n = 0; n < 3; ++n) {
    auto ack = client.Read();
    ASSERT_TRUE(ack) << client.ending().code << " " << client.ending().reason;
    EXPECT_EQ(*ack, Ack(n, n, 1));
  }
  EXPECT_FALSE(client.Read());
  EXPECT_EQ(client.ending().code, 1003);
  EXPECT_EQ(client.ending().reason, R"({"reason":"binary"})");
  EXPECT_EQ(client.ending().error, testing::websocket::error::closed);  // a clean close
  EXPECT_EQ(ReadAll(p).size(), 3u);
}

TEST_F(ServerPublish, AFrameAboveMaxFrameBytesClosesWith1009AfterTheAcksOfEarlierFrames) {
  log::Partition& p = CreateTopic("t");
  StartServer({.max_frame_bytes = 1024});
  WsClient client(port_, "/publish/t");
  client.Send(R"({"a":0})");
  client.Send(R"({"a":1})");
  client.Send(R"({"big":")" + std::string(2000, 'x') + R"("})");
  for (int n = 0; n < 2; ++n) {
    auto ack = client.Read();
    ASSERT_TRUE(ack) << client.ending().code << " " << client.ending().reason;
    EXPECT_EQ(*ack, Ack(n, n, 1));
  }
  EXPECT_FALSE(client.Read());
  EXPECT_EQ(client.ending().code, 1009) << client.ending().error.message();
  EXPECT_EQ(client.ending().reason, R"({"reason":"too_big","max":1024})");
  EXPECT_EQ(client.ending().error, testing::websocket::error::closed);  // a clean close
  EXPECT_EQ(ReadAll(p).size(), 2u);
  ExpectStillServes();
}

TEST_F(ServerPublish, HttpPostAnswersOnceDurableOrWithTheRefusalsStatus) {
  log::Partition& p = CreateTopic("t");
  auto owned = log_->CreateTopic("owned", {});
  ASSERT_TRUE(owned.ok());
  ASSERT_TRUE((*owned)->ClaimForTransactions("app").ok());
  StartServer({.max_frame_bytes = 4096});

  auto ok = HttpClient(port_).Post("/publish/t", "{\"a\":1}\n{\"a\":2}\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, R"({"first":0,"count":2})");
  auto not_json = HttpClient(port_).Post("/publish/t", "{\"a\":");
  EXPECT_EQ(not_json.status, 400);
  EXPECT_TRUE(not_json.body.starts_with(R"({"error":"not_json","line":1,"detail":")"))
      << not_json.body;
  auto not_found = HttpClient(port_).Post("/publish/nope", "{}");
  EXPECT_EQ(not_found.status, 404);
  EXPECT_EQ(not_found.body, R"({"error":"not_found"})");
  auto partition = HttpClient(port_).Post("/publish/t?partition=1", "{}");
  EXPECT_EQ(partition.status, 404);
  auto not_writable = HttpClient(port_).Post("/publish/owned", "{}");
  EXPECT_EQ(not_writable.status, 409);
  EXPECT_EQ(not_writable.body, R"({"error":"not_writable"})");
  auto too_big = HttpClient(port_).Post("/publish/t", "[" + std::string(5000, '1') + "]");
  EXPECT_EQ(too_big.status, 413);
  EXPECT_EQ(too_big.body, R"({"error":"too_big","max":4096})");
  // A body far larger than what the server reads before it answers.
  auto huge = HttpClient(port_).Post("/publish/t", "[" + std::string(4 << 20, '1') + "]");
  EXPECT_EQ(huge.status, 413);
  auto get = HttpClient(port_).Request(http::verb::get, "/publish/t");
  EXPECT_EQ(get.status, 405);

  const auto records = ReadAll(p);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].second, R"({"a":1})");
  EXPECT_EQ(records[1].second, R"({"a":2})");
  EXPECT_TRUE(ReadAll((*owned)->partition(PartitionId(0))).empty());
}

TEST_F(ServerPublish, RequestsFollowEachOtherOnAKeepAliveConnection) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  HttpClient http(port_);
  auto first = http.Post("/publish/t", R"({"n":1})");
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, R"({"first":0,"count":1})");
  EXPECT_TRUE(first.keep_alive);
  auto second = http.Post("/publish/t", "{\"n\":2}\n{\"n\":3}");
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.body, R"({"first":1,"count":2})");
  auto health = http.Request(http::verb::get, "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, R"({"status":"ok"})");
  auto topics = http.Request(http::verb::get, "/topics");
  EXPECT_EQ(topics.status, 200);
  EXPECT_EQ(topics.body, R"([{"topic":"t","partitions":[{"partition":0,"first":0,"next":3}]}])");
  EXPECT_EQ(ReadAll(p).size(), 3u);
}

TEST_F(ServerPublish, ATopicClaimedByAPipelineAfterTheUpgradeAnswersNotWritable) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  WsClient client(port_, "/publish/t");
  client.Send("1");
  auto ack = client.Read();
  ASSERT_TRUE(ack);
  EXPECT_EQ(*ack, Ack(0, 0, 1));
  auto topic = log_->GetTopic("t");
  ASSERT_TRUE(topic.ok());
  ASSERT_TRUE((*topic)->ClaimForTransactions("app").ok());
  client.Send("2");
  auto refused = client.Read();
  ASSERT_TRUE(refused) << client.ending().reason;
  EXPECT_EQ(*refused, R"({"error":"not_writable","seq":1})");
  client.Close();
  EXPECT_EQ(ReadAll(p).size(), 1u);
}

// curl sends `Expect: 100-continue` with a body above 1 KiB and waits for the 100 (a second,
// then it sends the body anyway).
TEST_F(ServerPublish, HttpPostWithExpectContinueIsToldToContinue) {
  log::Partition& p = CreateTopic("t");
  StartServer({.max_frame_bytes = 4096});
  const std::string body = R"({"big":")" + std::string(2000, 'x') + R"("})";
  RawClient raw(port_);
  raw.Write("POST /publish/t HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(raw.ReadUntil("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  raw.Write(body);
  const std::string answer = raw.ReadUntil("}");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 ")) << answer;
  EXPECT_TRUE(answer.ends_with(R"({"first":0,"count":1})")) << answer;
  ASSERT_EQ(ReadAll(p).size(), 1u);
  EXPECT_EQ(ReadAll(p)[0].second, body);

  // A body above the limit is refused without being sent.
  RawClient refused(port_);
  refused.Write(
      "POST /publish/t HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10000\r\n"
      "Expect: 100-continue\r\n\r\n");
  EXPECT_TRUE(refused.ReadUntil("\r\n\r\n").starts_with("HTTP/1.1 413 "));
}

// --- Misbehaving clients -------------------------------------------------------------------------

using ServerBadClient = ServerTest;

TEST_F(ServerBadClient, APublisherThatDisconnectsMidFrameAppendsNothing) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  {
    RawClient raw(port_);
    raw.Write(UpgradeRequest("/publish/t"));
    ASSERT_TRUE(raw.ReadUntil("\r\n\r\n").starts_with("HTTP/1.1 101"));
    const std::string frame = testing::MaskedFrame(Opcode::kText, R"({"half":"a frame"})");
    raw.Write(frame.substr(0, frame.size() / 2));
  }
  EXPECT_TRUE(Eventually([&] { return Stats().connections == 0; }));
  EXPECT_TRUE(ReadAll(p).empty());
  ExpectStillServes();
}

TEST_F(ServerBadClient, FramesSentRightAfterTheUpgradeRequestAreRead) {
  log::Partition& p = CreateTopic("t");
  StartServer();
  RawClient raw(port_);
  raw.Write(UpgradeRequest("/publish/t") + testing::MaskedFrame(Opcode::kText, R"({"early":1})"));
  ASSERT_TRUE(raw.ReadUntil("\r\n\r\n").starts_with("HTTP/1.1 101"));
  // The ack may have come with the 101.
  std::vector<ServerFrame> frames = TakeServerFrames(raw.pending());
  while (frames.empty()) {
    ASSERT_TRUE(raw.ReadMore());
    frames = TakeServerFrames(raw.pending());
  }
  EXPECT_EQ(frames[0].payload, Ack(0, 0, 1));
  EXPECT_EQ(ReadAll(p).size(), 1u);
}

TEST_F(ServerBadClient, GarbageInsteadOfARequestIsAnswered400) {
  CreateTopic("t");
  StartServer();
  for (const std::string& garbage :
       {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n", 22),
        std::string("NOT HTTP AT ALL\r\n\r\n"), std::string("GET / HTTP/9.9\r\n\r\n")}) {
    RawClient raw(port_);
    raw.Write(garbage);
    const std::string answer = raw.ReadToEnd();
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400 ")) << answer;
  }
  ExpectStillServes();
}

TEST_F(ServerBadClient, ConnectionsClosedAtOnceLeaveNothingBehind) {
  CreateTopic("t");
  StartServer();
  for (int i = 0; i < 2000; ++i) {
    RawClient raw(port_);
    if (i % 2) {
      // An abortive close (RST) for half of them.
      raw.socket().set_option(asio::socket_base::linger(true, 0));
    }
    raw.Close();
  }
  EXPECT_TRUE(Eventually([&] { return Stats().connections == 0; }))
      << Stats().connections << " connections still open";
  ExpectStillServes();
}

TEST_F(ServerBadClient, HalfARequestIsClosedAfterTheHandshakeTimeout) {
  CreateTopic("t");
  StartServer({.handshake_timeout = 300ms});
  // A subscriber from before is not subject to the handshake timeout.
  WsClient subscriber(port_, "/streams/t");
  ASSERT_TRUE(subscriber.Read());
  RawClient slowloris(port_);
  slowloris.Write("GET /streams/t HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgr");
  EXPECT_EQ(slowloris.ReadToEnd(), "");  // closed without an answer (the deadline is 30 s)
  AppendValues(PartitionOf("t"), 0, 1);
  auto message = subscriber.Read();
  ASSERT_TRUE(message) << subscriber.ending().code;
  EXPECT_EQ(*message, MessageText(0, ValueOf(0)));
  subscriber.Close();
  ExpectStillServes();
}

TEST_F(ServerBadClient, AWebSocketThatNeverAnswersPingsIsClosedAfterTheIdleTimeout) {
  CreateTopic("t");
  StartServer({.idle_timeout = 600ms});
  RawClient silent(port_);
  silent.Write(UpgradeRequest("/streams/t"));
  ASSERT_TRUE(silent.ReadUntil("\r\n\r\n").starts_with("HTTP/1.1 101"));
  // A client that reads answers the pings (Beast does) and stays.
  WsClient polite(port_, "/streams/t");
  ASSERT_TRUE(polite.Read());
  ThreadFailures failures;
  std::string polite_got;
  std::jthread reader([&] {
    failures.Run("polite subscriber", [&] {
      auto message = polite.Read();
      if (!message) throw std::runtime_error("closed: " + std::to_string(polite.ending().code));
      polite_got = *message;
    });
  });
  std::string bytes = silent.ReadToEnd();
  auto frames = TakeServerFrames(bytes);
  EXPECT_EQ(bytes, "");
  ASSERT_GE(frames.size(), 2u);
  EXPECT_TRUE(frames[0].payload.starts_with(R"({"type":"greeting")"));
  EXPECT_EQ(frames[1].opcode, Opcode::kPing);
  for (const ServerFrame& frame : frames) EXPECT_NE(frame.opcode, Opcode::kClose);

  std::this_thread::sleep_for(1200ms);  // two idle timeouts: the polite one answered its pings
  AppendValues(PartitionOf("t"), 0, 1);
  reader.join();
  failures.Expect();
  EXPECT_EQ(polite_got, MessageText(0, ValueOf(0)));
  polite.Close();
  ExpectStillServes();
}

TEST_F(ServerBadClient, BeyondMaxConnectionsIsHttp503) {
  CreateTopic("t");
  StartServer({.max_connections = 5});
  std::vector<std::unique_ptr<WsClient>> subscribers;
  for (int i = 0; i < 5; ++i) {
    subscribers.push_back(std::make_unique<WsClient>(port_, "/streams/t"));
    ASSERT_TRUE(subscribers.back()->Read());
  }
  for (int i = 0; i < 20; ++i) {
    auto refused = HttpClient(port_).Request(http::verb::get, "/health");
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(refused.body, R"({"error":"too_many_connections"})");
  }
  subscribers.back()->Close();
  subscribers.pop_back();
  EXPECT_TRUE(Eventually([&] { return Stats().connections == 4; }));
  ExpectStillServes();
}

// --- Queries (POST /query, GET /views) -----------------------------------------------------------

// The server knows nothing of the lake: these handlers stand for it (the CLI's tests run the
// real one). Each writes what the test says and tells it what it was asked.
class ServerQuery : public ServerTest {
 protected:
  // A query handler that writes `rows` lines "{"n":i}" and returns `end`.
  ServerOptions WithRows(int rows, Status end = Status::OK(), ServerOptions options = {}) {
    options.query_handler = [this, rows, end](const QueryRequest& request,
                                              const BodyWriter& write) {
      {
        std::lock_guard lock(mu_);
        asked_.push_back(request);
      }
      for (int i = 0; i < rows; ++i) write(R"({"n":)" + std::to_string(i) + "}\n");
      return end;
    };
    return options;
  }
  std::vector<QueryRequest> Asked() {
    std::lock_guard lock(mu_);
    return asked_;
  }

  std::mutex mu_;
  std::vector<QueryRequest> asked_;
};

std::string Rows(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += R"({"n":)" + std::to_string(i) + "}\n";
  return out;
}

TEST_F(ServerQuery, RowsAreStreamedInTheFormatAsked) {
  StartServer(WithRows(3));
  auto plain = HttpClient(port_).Post("/query", "SELECT n FROM t");
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.body, Rows(3));
  auto json = HttpClient(port_).Post("/query?format=table", R"({"sql":"SELECT 1","format":"csv"})");
  EXPECT_EQ(json.status, 200);
  auto param = HttpClient(port_).Post("/query?format=csv", "SELECT 2");
  EXPECT_EQ(param.status, 200);
  auto asked = Asked();
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0].sql, "SELECT n FROM t");
  EXPECT_EQ(asked[0].format, "jsonl");
  EXPECT_EQ(asked[1].sql, "SELECT 1");
  EXPECT_EQ(asked[1].format, "csv");
  EXPECT_EQ(asked[2].format, "csv");

  RawClient raw(port_);
  raw.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 8\r\n\r\nSELECT 1");
  const std::string header = raw.ReadUntil("\r\n\r\n");
  EXPECT_TRUE(header.starts_with("HTTP/1.1 200 OK\r\n")) << header;
  EXPECT_NE(header.find("Content-Type: application/x-ndjson\r\n"), std::string::npos) << header;
  EXPECT_NE(header.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << header;
  EXPECT_TRUE(raw.ReadToEnd().ends_with("0\r\n\r\n"));
}

// The first rows reach the client while the handler is still running.
TEST_F(ServerQuery, TheFirstRowsArriveBeforeTheQueryEnds) {
  std::promise<void> seen;
  auto seen_future = seen.get_future().share();
  ServerOptions options;
  options.query_handler = [seen_future](const QueryRequest&, const BodyWriter& write) {
    write("{\"first\":1}\n");
    if (seen_future.wait_for(testing::kHangDeadline) != std::future_status::ready) {
      return Status::Internal("the client never saw the first row");
    }
    write("{\"second\":2}\n");
    return Status::OK();
  };
  StartServer(options);
  RawClient raw(port_);
  raw.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 8\r\n\r\nSELECT 1");
  raw.ReadUntil("\r\n\r\n");
  EXPECT_EQ(raw.ReadUntil("\r\n"), "c\r\n");
  EXPECT_EQ(raw.ReadUntil("\r\n"), "{\"first\":1}\n\r\n");
  seen.set_value();
  EXPECT_EQ(raw.ReadToEnd(), "d\r\n{\"second\":2}\n\r\n0\r\n\r\n");
}

TEST_F(ServerQuery, AFailureBeforeAnyRowIs400AndAfterRowsEndsTheStream) {
  StartServer(WithRows(0, Status::InvalidArgument("a lake query is one SELECT")));
  auto refused = HttpClient(port_).Post("/query", "INSERT INTO t VALUES (1)");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body, R"({"error":"a lake query is one SELECT","code":"Invalid argument"})");
  server_.reset();

  StartServer(WithRows(2, Status::ResourceExhausted("stopped after its time limit")));
  RawClient raw(port_);
  raw.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 8\r\n\r\nSELECT 1");
  const std::string answer = raw.ReadToEnd();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  const std::string error =
      R"({"error":"stopped after its time limit","code":"Resource exhausted"})";
  // Each row may travel in a chunk of its own (the raw answer is chunked): the decoded body
  // below checks them together.
  EXPECT_LT(answer.find(R"({"n":0})"), answer.find(R"({"n":1})")) << answer;
  EXPECT_NE(answer.find(R"({"n":1})"), std::string::npos) << answer;
  EXPECT_TRUE(answer.ends_with(error + "\n\r\n0\r\nX-Weir-Error: " + error + "\r\n\r\n")) << answer;
  auto beast = HttpClient(port_).Post("/query", "SELECT 1");
  EXPECT_EQ(beast.status, 200);
  EXPECT_EQ(beast.body, Rows(2) + error + "\n");
}

TEST_F(ServerQuery, RefusalsHaveTheirStatus) {
  StartServer();  // no handlers
  EXPECT_EQ(HttpClient(port_).Post("/query", "SELECT 1").status, 404);
  EXPECT_EQ(HttpClient(port_).Request(http::verb::get, "/views").status, 404);
  server_.reset();

  ServerOptions options =
      WithRows(1, Status::OK(), {.max_frame_bytes = 1024, .subscribe_token = "s3cret"});
  options.views_handler = [](std::string_view view, const BodyWriter& write) {
    if (!view.empty() && view != "clicks") return Status::NotFound("no lake view named 'x'");
    write(view.empty() ? R"([{"name":"clicks"}])" : R"({"name":"clicks"})");
    return Status::OK();
  };
  StartServer(options);
  const std::string bearer = "Bearer s3cret";
  EXPECT_EQ(HttpClient(port_).Post("/query", "SELECT 1").status, 401);
  EXPECT_EQ(HttpClient(port_).Post("/query", "SELECT 1", "Bearer wrong").status, 401);
  EXPECT_EQ(HttpClient(port_).Request(http::verb::get, "/views").status, 401);
  auto get = HttpClient(port_).Request(http::verb::get, "/query", "", bearer);
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(get.body, R"({"error":"post_a_query"})");
  EXPECT_EQ(HttpClient(port_).Post("/views", "", bearer).status, 405);
  auto too_big =
      HttpClient(port_).Post("/query", "SELECT '" + std::string(2000, 'x') + "'", bearer);
  EXPECT_EQ(too_big.status, 413);
  EXPECT_EQ(too_big.body, R"({"error":"too_big","max":1024})");
  auto bad_format = HttpClient(port_).Post("/query?format=xml", "SELECT 1", bearer);
  EXPECT_EQ(bad_format.status, 400);
  EXPECT_EQ(bad_format.body, R"({"error":"format must be jsonl, csv or table, not 'xml'"})");
  EXPECT_EQ(HttpClient(port_).Post("/query", " ", bearer).status, 400);
  EXPECT_EQ(HttpClient(port_).Post("/query?token=s3cret", "SELECT 1").status, 200);

  auto all = HttpClient(port_).Request(http::verb::get, "/views", "", bearer);
  EXPECT_EQ(all.status, 200);
  EXPECT_EQ(all.body, R"([{"name":"clicks"}])");
  EXPECT_EQ(HttpClient(port_).Request(http::verb::get, "/views/clicks", "", bearer).body,
            R"({"name":"clicks"})");
  auto missing = HttpClient(port_).Request(http::verb::get, "/views/x", "", bearer);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"error":"no lake view named 'x'","code":"Not found"})");
  EXPECT_EQ(Asked().size(), 1u) << "only the authorized, well-formed query ran";
}

TEST_F(ServerQuery, BeyondMaxQueriesIs503AndTheEventLoopIsNotBlocked) {
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> running{0};
  ServerOptions options{.max_queries = 2};
  options.query_handler = [&running, released](const QueryRequest&, const BodyWriter& write) {
    ++running;
    released.wait_for(testing::kHangDeadline);
    write("{}\n");
    return Status::OK();
  };
  StartServer(options);
  auto first =
      std::async(std::launch::async, [&] { return HttpClient(port_).Post("/query", "1"); });
  auto second =
      std::async(std::launch::async, [&] { return HttpClient(port_).Post("/query", "2"); });
  ASSERT_TRUE(Eventually([&] { return running == 2; }));
  auto third = HttpClient(port_).Post("/query", "3");
  EXPECT_EQ(third.status, 503);
  EXPECT_EQ(third.body, R"({"error":"too_many_queries","max":2})");
  ExpectStillServes();  // while two queries run
  release.set_value();
  EXPECT_EQ(first.get().body, "{}\n");
  EXPECT_EQ(second.get().body, "{}\n");
  EXPECT_TRUE(Eventually([&] { return HttpClient(port_).Post("/query", "4").status == 200; }));
}

// A client that stops reading holds its query for the idle timeout at most, and one that goes
// away lets it finish at once: what the handler writes then is dropped.
TEST_F(ServerQuery, AClientThatStopsReadingOrLeavesDoesNotHoldItsQuery) {
  std::atomic<int> finished{0};
  ServerOptions options{.idle_timeout = 500ms};
  options.query_handler = [&finished](const QueryRequest&, const BodyWriter& write) {
    const std::string row(1000, 'x');
    for (int i = 0; i < 50'000; ++i) write(row);  // 50 MB
    ++finished;
    return Status::OK();
  };
  StartServer(options);
  RawClient stalled(port_, /*rcvbuf=*/4096);
  stalled.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\n1");
  EXPECT_TRUE(Eventually([&] { return finished == 1; }));
  {
    RawClient leaving(port_);
    leaving.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\n1");
    leaving.ReadUntil("\r\n\r\n");
  }
  EXPECT_TRUE(Eventually([&] { return finished == 2; }));
  EXPECT_TRUE(Eventually([&] { return Stats().connections == 0; })) << Stats().connections;
  ExpectStillServes();
}

// A silent query (no row yet) learns that its client hung up, and stops.
TEST_F(ServerQuery, AHandlerSeesItsClientHangUpBeforeWritingAnything) {
  std::atomic<bool> saw_gone{false};
  ServerOptions options;
  options.query_handler = [&saw_gone](const QueryRequest& request, const BodyWriter&) {
    const auto deadline = std::chrono::steady_clock::now() + testing::kHangDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (request.client_gone && request.client_gone()) {
        saw_gone = true;
        return Status::Cancelled("the client went away");
      }
      std::this_thread::sleep_for(10ms);
    }
    return Status::OK();
  };
  StartServer(options);
  {
    RawClient leaving(port_);
    leaving.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\n1");
    EXPECT_TRUE(Eventually([&] { return Stats().connections == 1; }));
  }
  EXPECT_TRUE(Eventually([&] { return saw_gone.load(); }));
  EXPECT_TRUE(Eventually([&] { return Stats().connections == 0; })) << Stats().connections;
  ExpectStillServes();
}

// --- Shutdown ------------------------------------------------------------------------------------

using ServerShutdown = ServerTest;

TEST_F(ServerShutdown, DestroyingTheServerClosesEveryWebSocketWith1001) {
  log::Partition& p = CreateTopic("t");
  AppendValues(p, 0, 10);
  StartServer();
  WsClient live(port_, "/streams/t");
  ASSERT_TRUE(live.Read());
  WsClient replaying(port_, "/streams/t?offset=0");
  ASSERT_TRUE(replaying.Read());
  WsClient publisher(port_, "/publish/t");
  publisher.Send("{}");
  ASSERT_TRUE(publisher.Read());
  std::jthread stopper([&] { server_.reset(); });
  // Each gets what was sent before (the replay, the published record), then the close.
  for (WsClient* client : {&live, &replaying, &publisher}) {
    int messages = 0;
    while (client->Read()) ++messages;
    EXPECT_LE(messages, 11);
    EXPECT_EQ(client->ending().code, 1001);
    EXPECT_EQ(client->ending().reason, R"({"reason":"shutdown"})");
    EXPECT_EQ(client->ending().error, testing::websocket::error::closed);
  }
}

// A subscriber that does not read cannot take its close frame: the server still stops.
TEST_F(ServerShutdown, ASubscriberThatDoesNotReadDoesNotHoldTheServerUp) {
  log::Partition& p = CreateTopic("t");
  AppendValues(p, 0, 20'000);
  StartServer();
  RawClient stalled(port_, /*rcvbuf=*/4096);
  stalled.Write(UpgradeRequest("/streams/t?offset=0"));
  ASSERT_TRUE(stalled.ReadUntil("\r\n\r\n").starts_with("HTTP/1.1 101"));
  WsClient live(port_, "/streams/t");
  ASSERT_TRUE(live.Read());
  auto stopped = std::async(std::launch::async, [&] { server_.reset(); });
  ASSERT_EQ(stopped.wait_for(testing::kHangDeadline), std::future_status::ready) << "~Server hangs";
  EXPECT_FALSE(live.Read());
  EXPECT_EQ(live.ending().code, 1001);
}

// A query whose client does not read: its writes are dropped once the server closes its
// connection, so the handler ends and the server stops.
TEST_F(ServerShutdown, AQueryWritingToAStalledClientDoesNotHoldTheServerUp) {
  std::atomic<bool> finished{false};
  ServerOptions options;
  options.query_handler = [&finished](const QueryRequest&, const BodyWriter& write) {
    const std::string row(1000, 'x');
    for (int i = 0; i < 50'000; ++i) write(row);
    finished = true;
    return Status::OK();
  };
  StartServer(options);
  RawClient stalled(port_, /*rcvbuf=*/4096);
  stalled.Write("POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\n1");
  stalled.ReadUntil("\r\n\r\n");
  auto stopped = std::async(std::launch::async, [&] { server_.reset(); });
  ASSERT_EQ(stopped.wait_for(testing::kHangDeadline), std::future_status::ready) << "~Server hangs";
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace weir::serve
