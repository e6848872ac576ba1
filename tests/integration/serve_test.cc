// `weir serve` as a process: what it acknowledged to a WebSocket publisher survives kill -9, at
// the acknowledged offsets, and a restarted server serves it to a subscriber; a subscriber below
// the log's retention is served from the topic's archive view, then the log, then live.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

#include "log/log.h"
#include "serve/clients_for_test.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using serve::testing::HttpClient;
using serve::testing::JsonInt;
using serve::testing::ParseMessage;
using serve::testing::WsClient;
using testing::RunCommand;
using testing::Subprocess;
using testing::TempDir;

std::string MessageOf(int64_t n) {
  return R"({"n":)" + std::to_string(n) + R"(,"text":"caf\u00e9 é","pad":")" +
         std::string(n % 61, 'x') + R"("})";
}

class ServeProcess : public ::testing::Test {
 protected:
  std::string data() const { return dir_ / "data"; }

  // Starts `weir serve` on a free port; returns the port its first line names.
  uint16_t StartServe() {
    // stderr into stdout, where Subprocess lets a test read it while the process runs.
    server_ = std::make_unique<Subprocess>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 std::string("exec '") + WEIR_BINARY + "' serve --data-dir '" +
                                     data() + "' --listen 127.0.0.1:0 2>&1"},
        dir_.path().string());
    const std::regex serving(R"(serving .* on http://127\.0\.0\.1:(\d+))");
    const auto until = std::chrono::steady_clock::now() + serve::testing::kHangDeadline;
    while (std::chrono::steady_clock::now() < until) {
      std::smatch match;
      const std::string out = server_->StdoutSoFar();
      if (std::regex_search(out, match, serving)) return std::stoi(match[1]);
      if (server_->Done()) break;
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "weir serve did not say where it serves: " << server_->StdoutSoFar();
    return 0;
  }

  // Every record of partition 0 of `topic`, read from the data directory.
  std::vector<std::string> ReadLog(const std::string& topic) {
    log::LogOptions options;
    options.dir = std::filesystem::path(data()) / "log";
    auto store = log::LogStore::Open(options);
    if (!store.ok()) throw std::runtime_error(store.status().ToString());
    auto t = (*store)->GetTopic(topic);
    if (!t.ok()) throw std::runtime_error(t.status().ToString());
    std::vector<std::string> values;
    log::PartitionReader reader((*t)->partition(PartitionId(0)), Offset(0));
    for (;;) {
      auto records = reader.Next();
      if (!records.ok()) throw std::runtime_error(records.status().ToString());
      if (records->empty()) break;
      for (const log::StoredRecord& r : *records) {
        if (r.offset.value() != static_cast<int64_t>(values.size())) {
          throw std::runtime_error("gap in the log at " + std::to_string(values.size()));
        }
        values.emplace_back(r.value);
      }
    }
    return values;
  }

  TempDir dir_;
  std::unique_ptr<Subprocess> server_;
};

TEST_F(ServeProcess, AcknowledgedPublishesSurviveKillNineAndAreServedAfterARestart) {
  {
    log::LogOptions options;
    options.dir = std::filesystem::path(data()) / "log";
    auto store = log::LogStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->CreateTopic("events", {}).ok());
  }
  const uint16_t port = StartServe();
  ASSERT_NE(port, 0);

  // A publisher pipelining frames (several in flight) until the server dies under it.
  std::mutex mu;
  std::vector<int64_t> acked;  // acked[n]: the offset of message n
  std::atomic<int64_t> acks = 0;
  std::string publisher_error;
  std::jthread publisher([&] {
    try {
      WsClient client(port, "/publish/events");
      int64_t sent = 0;
      for (;;) {
        while (sent - acks < 64) client.Send(MessageOf(sent++));
        auto ack = client.Read();
        if (!ack) return;  // the server is gone
        const std::string expected_prefix = R"({"ack":)" + std::to_string(acks.load()) + ",";
        if (!ack->starts_with(expected_prefix) || !ack->ends_with(R"(,"count":1})")) {
          throw std::runtime_error("unexpected answer " + *ack);
        }
        const size_t first = ack->find(R"("first":)") + 8;
        std::lock_guard lock(mu);
        acked.push_back(std::stoll(ack->substr(first)));
        ++acks;
      }
    } catch (const std::exception& e) {
      // A write to the dead server fails; anything else is a failure of the test.
      const std::string what = e.what();
      if (what.find("write") == std::string::npos) {
        std::lock_guard lock(mu);
        publisher_error = what;
      }
    }
  });
  const auto until = std::chrono::steady_clock::now() + serve::testing::kHangDeadline;
  while (acks < 3000 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  server_->Kill(SIGKILL);
  EXPECT_EQ(server_->Wait().exit_code, -SIGKILL);
  publisher.join();
  ASSERT_EQ(publisher_error, "");
  ASSERT_GE(acked.size(), 3000u);

  // Every acknowledged message is in the log at the offset its acknowledgement named.
  const std::vector<std::string> log = ReadLog("events");
  ASSERT_GE(log.size(), acked.size());
  for (size_t n = 0; n < acked.size(); ++n) {
    ASSERT_LT(acked[n], static_cast<int64_t>(log.size())) << "message " << n;
    ASSERT_EQ(log[acked[n]], MessageOf(static_cast<int64_t>(n))) << "message " << n;
  }

  // A restarted server serves the same messages from offset 0.
  const uint16_t restarted = StartServe();
  ASSERT_NE(restarted, 0);
  WsClient subscriber(restarted, "/streams/events?offset=0");
  auto greeting = subscriber.Read();
  ASSERT_TRUE(greeting) << subscriber.ending().reason;
  EXPECT_NE(greeting->find(R"("next":)" + std::to_string(log.size()) + ","), std::string::npos)
      << *greeting;
  for (size_t i = 0; i < log.size(); ++i) {
    auto message = subscriber.Read();
    ASSERT_TRUE(message) << subscriber.ending().reason;
    ASSERT_EQ(*message, "[" + std::to_string(i) + "," + log[i] + "]");
  }
  subscriber.Close();
  server_->Kill(SIGTERM);
  EXPECT_EQ(server_->Wait().exit_code, 0);
}

// Publishes `count` messages to partition 0 of `topic`, each acknowledged before the next.
void PublishAcknowledged(uint16_t port, const std::string& topic, int64_t first, int64_t count) {
  WsClient publisher(port, "/publish/" + topic);
  for (int64_t n = first; n < first + count; ++n) {
    publisher.Send(MessageOf(n));
    auto ack = publisher.Read();
    ASSERT_TRUE(ack) << publisher.ending().reason;
    ASSERT_EQ(JsonInt(*ack, "first"), n) << *ack;
  }
  publisher.Close();
}

// The archive wired through `weir serve` (LakeService::ServeArchives): retention deletes what the
// archive view holds, and a subscriber from offset 0 still gets every message once, in order.
TEST_F(ServeProcess, ASubscriberBelowRetentionIsServedFromTheArchiveThenTheLogThenLive) {
  {
    log::LogOptions options;
    options.dir = std::filesystem::path(data()) / "log";
    auto store = log::LogStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    // Retention keeps nothing it may delete: only what the archive lacks and the active segment.
    ASSERT_TRUE(
        (*store)->CreateTopic("clicks", {.retention_bytes = 0, .segment_bytes = 4096}).ok());
  }
  const std::string views = dir_ / "views.yaml";
  std::ofstream(views) << "views:\n  clicks_archive:\n    topic: clicks\n    archive: true\n"
                          "    refresh: 100ms\n";
  auto created = RunCommand({WEIR_BINARY, "views", "create", views, "--data-dir", data()},
                            dir_.path().string());
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  const uint16_t port = StartServe();
  ASSERT_NE(port, 0);
  constexpr int64_t kMessages = 3000;  // ~60 segments of 4 KiB
  PublishAcknowledged(port, "clicks", 0, kMessages);

  // Retention runs every 10 s in `weir serve`; it deletes segments once the archive holds them.
  int64_t first = 0;
  const auto until = std::chrono::steady_clock::now() + serve::testing::kHangDeadline;
  while (first == 0 && std::chrono::steady_clock::now() < until) {
    auto topics = HttpClient(port).Request(serve::testing::http::verb::get, "/topics");
    ASSERT_EQ(topics.status, 200) << topics.body;
    first = JsonInt(topics.body, "first");
    if (first == 0) std::this_thread::sleep_for(100ms);
  }
  ASSERT_GT(first, 0) << "retention deleted nothing: " << server_->StdoutSoFar();

  WsClient subscriber(port, "/streams/clicks?offset=0");
  auto greeting = subscriber.Read();
  ASSERT_TRUE(greeting) << subscriber.ending().code << " " << subscriber.ending().reason;
  EXPECT_EQ(JsonInt(*greeting, "start"), 0) << *greeting;
  EXPECT_EQ(JsonInt(*greeting, "archive_first"), 0) << *greeting;
  EXPECT_GT(JsonInt(*greeting, "first"), 0) << *greeting;
  for (int64_t i = 0; i < kMessages; ++i) {
    auto message = subscriber.Read();
    ASSERT_TRUE(message) << "at " << i << ": " << subscriber.ending().reason;
    const auto [offset, body] = ParseMessage(*message);
    ASSERT_EQ(offset, i);
    ASSERT_EQ(body, MessageOf(i));
  }
  // Then live: what is published now arrives after the catch-up, at the next offsets.
  PublishAcknowledged(port, "clicks", kMessages, 10);
  for (int64_t i = kMessages; i < kMessages + 10; ++i) {
    auto message = subscriber.Read();
    ASSERT_TRUE(message) << "at " << i << ": " << subscriber.ending().reason;
    EXPECT_EQ(ParseMessage(*message), std::make_pair(i, MessageOf(i)));
  }
  subscriber.Close();
  server_->Kill(SIGTERM);
  EXPECT_EQ(server_->Wait().exit_code, 0);
}

}  // namespace
}  // namespace weir
