// Catch-up past retention: subscribers below the log's first offset served from the topic's
// archive view, then the log, then live. Real parts: the log on disk with retention running, the
// lake (DuckDB, Parquet) refreshing the archive in the background, the server, and real
// WebSocket clients (Beast, and weir::Subscription).
#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <fstream>
#include <thread>

#include "lake/lake.h"
#include "serve/clients_for_test.h"
#include "serve/server.h"
#include "testing/temp_dir.h"
#include "weir/subscription.h"

namespace weir::serve {
namespace {

using namespace std::chrono_literals;
using testing::JsonInt;
using testing::ParseMessage;
using testing::WsClient;

std::string ValueOf(int64_t i) {
  return R"({"i":)" + std::to_string(i) + R"(,"pad":")" + std::string(20 + i % 29, 'x') + R"("})";
}

class CatchUpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions options;
    options.dir = dir_.path() / "log";
    options.retention_check_interval = 20ms;
    auto store = log::LogStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    log_ = std::move(store).value();
    // Retention keeps nothing it may delete: only the floor and the active segment hold.
    auto topic = log_->CreateTopic("clicks", {.retention_bytes = 0, .segment_bytes = 4096});
    ASSERT_TRUE(topic.ok());
    partition_ = &(*topic)->partition(PartitionId(0));
    lake::LakeOptions lake_options;
    lake_options.dir = dir_.path() / "lake";
    lake_options.retired_grace = 0ms;  // retired files go at the next sweep: reads must cope
    auto lake = lake::Lake::Open(*log_, std::move(lake_options));
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(lake).value();
  }

  void TearDown() override {
    server_.reset();
    if (lake_) lake_->StopBackground();
  }

  void DeclareArchive(std::chrono::milliseconds partition = 1h) {
    lake::ViewSpec spec = lake::ArchiveSpec("clicks_archive", "clicks");
    spec.refresh = 100ms;
    spec.partition = partition;
    ASSERT_TRUE(lake_->Register(spec).ok());
  }

  void StartServer(ServerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    lake::Lake* lake = lake_.get();
    options.archive.extent = [lake](std::string_view topic, int32_t p) {
      return lake->ArchiveExtentOf(topic, p);
    };
    options.archive.read = [lake](std::string_view topic, int32_t p, int64_t from, size_t chunk,
                                  const auto& on_chunk) {
      return lake->ReadArchive(topic, p, from, chunk, on_chunk);
    };
    auto server = Server::Start(*log_, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  void Append(int64_t count, int64_t per_batch = 50) {
    for (int64_t done = 0; done < count; done += per_batch) {
      log::RecordBatchBuilder batch;
      const int64_t at = partition_->WrittenEnd().value();
      for (int64_t j = 0; j < std::min(per_batch, count - done); ++j) {
        batch.AddRaw(EventTime(at + j), KeySerde::kNull, {}, ValueOf(at + j));
      }
      ASSERT_TRUE(partition_->Append(batch, log::Durability::kWaitDurable).ok());
    }
  }

  // Archives what the log has, then lets retention run until the log's first offset is past
  // `at_least`.
  void ArchiveAndEvict(int64_t at_least) {
    ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
    ASSERT_TRUE(partition_->EnforceRetention(std::chrono::system_clock::now()).ok());
    ASSERT_GT(partition_->FirstOffset().value(), at_least);
  }

  std::string Target(const std::string& offset) { return "/streams/clicks?offset=" + offset; }

  uint16_t port() const { return server_->port(); }

  weir::testing::TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  log::Partition* partition_ = nullptr;
  std::unique_ptr<lake::Lake> lake_;
  std::unique_ptr<Server> server_;
};

TEST_F(CatchUpTest, EveryOffsetOnceInOrderThroughArchiveLogAndLiveWhilePublishersAppend) {
  DeclareArchive(/*partition=*/1s);  // spans close and seal while the subscriber reads
  Append(3000);
  ArchiveAndEvict(1000);
  lake_->StartBackground();  // keeps archiving, and so retention keeps deleting
  StartServer({.max_backlog = 256, .catchup_chunk = 100});
  constexpr int64_t kTotal = 9000;
  std::atomic<bool> failed{false};
  std::thread publisher([&] {
    while (partition_->WrittenEnd().value() < kTotal && !failed) {
      log::RecordBatchBuilder batch;
      const int64_t at = partition_->WrittenEnd().value();
      for (int64_t j = 0; j < 20; ++j)
        batch.AddRaw(EventTime(at + j), KeySerde::kNull, {}, ValueOf(at + j));
      if (!partition_->Append(batch, log::Durability::kWaitDurable).ok()) failed = true;
      std::this_thread::sleep_for(1ms);
    }
  });
  const int64_t from = 17;
  WsClient client(port(), Target(std::to_string(from)), "", /*rcvbuf=*/4096);
  auto greeting = client.Read();
  ASSERT_TRUE(greeting) << client.ending().code << " " << client.ending().reason;
  EXPECT_EQ(JsonInt(*greeting, "start"), from);
  EXPECT_EQ(JsonInt(*greeting, "archive_first"), 0);
  EXPECT_GT(JsonInt(*greeting, "first"), from);
  int64_t expected = from;
  while (expected < kTotal) {
    auto message = client.Read();
    ASSERT_TRUE(message) << "after offset " << expected - 1 << ": " << client.ending().code << " "
                         << client.ending().reason;
    auto [offset, value] = ParseMessage(*message);
    ASSERT_EQ(offset, expected);
    ASSERT_EQ(value, ValueOf(offset));
    ++expected;
    if (expected % 1000 == 0) std::this_thread::sleep_for(20ms);  // a slow reader now and then
  }
  publisher.join();
  EXPECT_FALSE(failed);
  client.Close();
  // Retention ran meanwhile: the log's start moved past what the subscriber began with.
  EXPECT_GT(partition_->FirstOffset().value(), 3000);
}

TEST_F(CatchUpTest, EvictedWhenTheArchiveDoesNotHaveItEither) {
  Append(500);
  ASSERT_TRUE(partition_->EnforceRetention(std::chrono::system_clock::now()).ok());
  const int64_t first = partition_->FirstOffset().value();
  ASSERT_GT(first, 10);
  DeclareArchive();  // too late for what retention already deleted
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  StartServer();
  WsClient client(port(), Target("3"));
  EXPECT_FALSE(client.Read());
  EXPECT_EQ(client.ending().code, 4410);
  EXPECT_EQ(client.ending().reason, R"({"reason":"evicted","offset":3,"first":)" +
                                        std::to_string(first) + R"(,"archive_first":)" +
                                        std::to_string(first) + "}");
  // What the archive holds is served.
  WsClient at_first(port(), Target(std::to_string(first)));
  auto greeting = at_first.Read();
  ASSERT_TRUE(greeting);
  EXPECT_EQ(JsonInt(*greeting, "archive_first"), first);
  auto message = at_first.Read();
  ASSERT_TRUE(message);
  EXPECT_EQ(ParseMessage(*message).first, first);
  at_first.Close();
}

TEST_F(CatchUpTest, WithoutAnArchiveBelowRetentionIsEvictedAsBefore) {
  Append(500);
  ASSERT_TRUE(partition_->EnforceRetention(std::chrono::system_clock::now()).ok());
  const int64_t first = partition_->FirstOffset().value();
  StartServer();
  WsClient client(port(), Target("0"));
  EXPECT_FALSE(client.Read());
  EXPECT_EQ(client.ending().code, 4410);
  EXPECT_EQ(client.ending().reason,
            R"({"reason":"evicted","offset":0,"first":)" + std::to_string(first) + "}");
}

TEST_F(CatchUpTest, TooOldForTheReplayWindowIsServedFromTheArchive) {
  DeclareArchive();
  Append(410, /*per_batch=*/10);  // segments of 50 records: 410 falls inside one
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  Append(100, 10);  // not archived yet: the log serves these
  StartServer({.max_replay = 50});
  // Retention stops at the segment holding 410 (the archive's end): `first` is in the log and
  // in the archive, and too old for the replay window.
  const int64_t first = partition_->FirstOffset().value();
  ASSERT_LT(first, 410);
  WsClient client(port(), Target(std::to_string(first)));
  auto greeting = client.Read();
  ASSERT_TRUE(greeting) << client.ending().reason;
  EXPECT_EQ(JsonInt(*greeting, "start"), first);
  for (int64_t i = first; i < 510; ++i) {
    auto message = client.Read();
    ASSERT_TRUE(message) << client.ending().reason;
    ASSERT_EQ(ParseMessage(*message), std::pair(i, ValueOf(i)));
  }
  client.Close();
  // Beyond what the archive holds, too_old stays too_old.
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  Append(100);
  WsClient beyond(port(), Target("530"));
  EXPECT_FALSE(beyond.Read());
  EXPECT_EQ(beyond.ending().code, 4413);
}

TEST_F(CatchUpTest, EarliestMeansTheLogsFirstRetainedOffset) {
  DeclareArchive();
  Append(1000);
  ArchiveAndEvict(100);
  StartServer();
  WsClient client(port(), Target("earliest"));
  auto greeting = client.Read();
  ASSERT_TRUE(greeting);
  EXPECT_EQ(JsonInt(*greeting, "start"), partition_->FirstOffset().value());
  EXPECT_EQ(JsonInt(*greeting, "archive_first"), 0);
  client.Close();
}

TEST_F(CatchUpTest, ACorruptArchiveFileClosesWithArchiveUnreadableNeverAGap) {
  DeclareArchive();
  Append(300);
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  Append(300);
  ArchiveAndEvict(400);
  auto described = lake_->Describe("clicks_archive");
  ASSERT_TRUE(described.ok());
  ASSERT_EQ(described->partitions.size(), 2u);
  {
    std::ofstream out(lake_->dir() / described->partitions[1].file, std::ios::trunc);
    out << "PAR1 garbage";
  }
  StartServer({.catchup_chunk = 64});
  WsClient client(port(), Target("0"));
  auto greeting = client.Read();
  ASSERT_TRUE(greeting);
  int64_t expected = 0;
  while (auto message = client.Read()) {
    auto [offset, value] = ParseMessage(*message);
    ASSERT_EQ(offset, expected);
    ++expected;
  }
  EXPECT_EQ(expected, 300);  // the first file whole, nothing of the second
  EXPECT_EQ(client.ending().code, 4500);
  EXPECT_EQ(client.ending().reason, R"({"reason":"archive_unreadable","offset":300})");
  // A missing file: the same.
  std::filesystem::remove(lake_->dir() / described->partitions[1].file);
  WsClient again(port(), Target("310"));
  ASSERT_TRUE(again.Read());
  EXPECT_FALSE(again.Read());
  EXPECT_EQ(again.ending().code, 4500);
  EXPECT_EQ(again.ending().reason, R"({"reason":"archive_unreadable","offset":310})");
}

TEST_F(CatchUpTest, ASubscriberLeavingMidCatchUpFreesItsReader) {
  DeclareArchive();
  Append(5000);
  ArchiveAndEvict(1000);
  StartServer({.max_catchups = 1, .catchup_chunk = 10});
  for (int i = 0; i < 3; ++i) {
    WsClient leaving(port(), Target("0"), "", /*rcvbuf=*/4096);
    ASSERT_TRUE(leaving.Read());
    ASSERT_TRUE(leaving.Read());
    leaving.Abandon();
  }
  // The one catch-up thread is free again: the next subscriber is served to the end.
  WsClient client(port(), Target("4990"));
  ASSERT_TRUE(client.Read());
  for (int64_t i = 4990; i < 5000; ++i) {
    auto message = client.Read();
    ASSERT_TRUE(message) << client.ending().reason;
    EXPECT_EQ(ParseMessage(*message).first, i);
  }
  client.Close();
}

TEST_F(CatchUpTest, ASubscriptionsCursorBelowRetentionResumesThroughTheArchive) {
  DeclareArchive();
  Append(2000);
  ArchiveAndEvict(500);
  StartServer({.catchup_chunk = 128});
  const auto cursor = dir_.path() / "clicks.cursor";
  {
    std::ofstream out(cursor);
    out << R"({"topic":"clicks","partition":0,"last":99})"
        << "\n";
  }
  auto subscription =
      Subscription::Open({.url = "ws://127.0.0.1:" + std::to_string(port()) + "/streams/clicks",
                          .cursor_file = cursor.string()});
  ASSERT_TRUE(subscription.ok()) << subscription.status().ToString();
  EXPECT_EQ((*subscription)->greeting().start, Offset(100));
  EXPECT_EQ((*subscription)->greeting().archive_first, Offset(0));
  for (int64_t i = 100; i < 2000; ++i) {
    auto message = (*subscription)->Next(10s);
    ASSERT_TRUE(message.ok()) << message.status().ToString();
    ASSERT_TRUE(message->has_value());
    ASSERT_EQ((*message)->offset, Offset(i));
    ASSERT_EQ((*message)->value, ValueOf(i));
  }
  ASSERT_TRUE((*subscription)->Commit().ok());
}

}  // namespace
}  // namespace weir::serve
