// The client's pieces that need no server: the subscription URL, the start position, the cursor
// file, and what Open refuses before it connects.
#include "weir/subscription.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "client/cursor_file.h"
#include "client/stream_url.h"
#include "testing/temp_dir.h"

namespace weir::client {
namespace {

using testing::TempDir;

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A loopback port nothing listens on (bound, then released).
uint16_t UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(StreamUrl, ParsesHostPortTopicAndPartition) {
  auto url = ParseStreamUrl("ws://127.0.0.1:9000/streams/clicks.v2_x-y?partition=3");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 9000);
  EXPECT_EQ(url->topic, "clicks.v2_x-y");
  EXPECT_EQ(url->partition, 3);
  EXPECT_EQ(url->token, "");
  EXPECT_EQ(url->ToString(), "ws://127.0.0.1:9000/streams/clicks.v2_x-y?partition=3");
}

TEST(StreamUrl, DefaultsPortTo80AndPartitionTo0) {
  auto url = ParseStreamUrl("WS://localhost/streams/t");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->host, "localhost");
  EXPECT_EQ(url->port, 80);
  EXPECT_EQ(url->partition, 0);
  EXPECT_EQ(url->HostHeader(), "localhost:80");
}

TEST(StreamUrl, AcceptsABracketedIpv6Host) {
  auto url = ParseStreamUrl("ws://[::1]:8080/streams/t?partition=0");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->HostHeader(), "[::1]:8080");
}

TEST(StreamUrl, TakesAPercentEncodedToken) {
  auto url = ParseStreamUrl("ws://h:1/streams/t?token=a%2Bb%3D+c&partition=1");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->token, "a+b=+c");
  EXPECT_EQ(url->partition, 1);
  EXPECT_EQ(url->ToString().find("token"), std::string::npos) << "never in messages";
}

// Each bad URL is refused with a message naming it and saying what is wrong.
TEST(StreamUrl, RefusesBadUrlsSayingWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no scheme"},
      {"127.0.0.1:8080/streams/t", "no scheme"},
      {"wss://h:1/streams/t", "wss:// (TLS) is not supported"},
      {"http://h:1/streams/t", "the scheme must be ws://"},
      {"ws://:1/streams/t", "no host"},
      {"ws://user@h:1/streams/t", "user info"},
      {"ws://h:0/streams/t", "port must be 1-65535"},
      {"ws://h:65536/streams/t", "port must be 1-65535"},
      {"ws://h:-1/streams/t", "port must be 1-65535"},
      {"ws://h:80x/streams/t", "port must be 1-65535"},
      {"ws://h:/streams/t", "port must be 1-65535"},
      {"ws://[::1/streams/t", "unterminated [IPv6]"},
      {"ws://h:1", "the path must be /streams/TOPIC"},
      {"ws://h:1/", "the path must be /streams/TOPIC"},
      {"ws://h:1/publish/t", "the path must be /streams/TOPIC"},
      {"ws://h:1/streams/", "1-200 characters"},
      {"ws://h:1/streams/" + std::string(201, 'a'), "1-200 characters"},
      {"ws://h:1/streams/a/b", "not '/'"},
      {"ws://h:1/streams/a%20b", "not '%'"},
      {"ws://h:1/streams/t#frag", "fragment"},
      {"ws://h:1/streams/t?offset=5", "the start offset is not part of the URL"},
      {"ws://h:1/streams/t?partition=-1", "the partition must be a number"},
      {"ws://h:1/streams/t?partition=+1", "the partition must be a number"},
      {"ws://h:1/streams/t?partition=2147483648", "the partition must be a number"},
      {"ws://h:1/streams/t?partition=1&partition=2", "partition is given twice"},
      {"ws://h:1/streams/t?partition=", "needs a value"},
      {"ws://h:1/streams/t?partition", "needs a value"},
      {"ws://h:1/streams/t?token=%zz", "needs a value"},
      {"ws://h:1/streams/t?from=earliest", "unknown query parameter 'from'"},
  };
  for (const auto& [text, why] : cases) {
    auto url = ParseStreamUrl(text);
    ASSERT_FALSE(url.ok()) << text;
    EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(url.status().message().find(why), std::string::npos)
        << text << " -> " << url.status().message();
    EXPECT_NE(url.status().message().find("'" + text + "'"), std::string::npos)
        << "names the URL: " << url.status().message();
  }
}

TEST(StartPosition, ParsesEarliestLatestAndOffsets) {
  auto earliest = ParseStartPosition("earliest");
  ASSERT_TRUE(earliest.ok());
  EXPECT_EQ(earliest->kind, StartPosition::Kind::kEarliest);
  auto latest = ParseStartPosition("latest");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->kind, StartPosition::Kind::kLatest);
  auto at = ParseStartPosition("9223372036854775807");
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->kind, StartPosition::Kind::kAt);
  EXPECT_EQ(at->offset, INT64_MAX);
  EXPECT_EQ(at->QueryValue(), "9223372036854775807");
}

TEST(StartPosition, RefusesAnythingElse) {
  for (const char* text :
       {"", "-1", "+1", "1.0", "0x10", "9223372036854775808", "Earliest", "now", " 1"}) {
    auto start = ParseStartPosition(text);
    ASSERT_FALSE(start.ok()) << text;
    EXPECT_EQ(start.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(start.status().message().find("earliest, latest or an offset"), std::string::npos);
  }
}

TEST(StreamTarget, CarriesPartitionAndStartButNeverTheToken) {
  auto url = ParseStreamUrl("ws://h:1/streams/clicks?partition=2&token=secret");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(StreamTarget(*url, StartPosition{StartPosition::Kind::kAt, 42}),
            "/streams/clicks?partition=2&offset=42");
  EXPECT_EQ(StreamTarget(*url, StartPosition{}), "/streams/clicks?partition=2&offset=earliest");
  EXPECT_EQ(StreamTarget(*url, StartPosition{StartPosition::Kind::kLatest, 0}),
            "/streams/clicks?partition=2&offset=latest");
}

TEST(CursorFile, MissingFileIsNoCursor) {
  TempDir dir;
  auto cursor = ReadCursorFile(dir / "none");
  ASSERT_TRUE(cursor.ok()) << cursor.status().ToString();
  EXPECT_FALSE(cursor->has_value());
}

TEST(CursorFile, WrittenCursorReadsBackAsOneJsonLine) {
  TempDir dir;
  const std::string path = dir / "c";
  Cursor written{"clicks", PartitionId(2), Offset(41)};
  ASSERT_TRUE(WriteCursorFile(path, written).ok());
  EXPECT_EQ(ReadText(path), "{\"topic\":\"clicks\",\"partition\":2,\"last\":41}\n");
  auto read = ReadCursorFile(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, written);
}

TEST(CursorFile, RewriteReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir / "c";
  for (int64_t last : {int64_t{5}, int64_t{1'000'000'000'000}, int64_t{6}}) {
    ASSERT_TRUE(WriteCursorFile(path, {"t", PartitionId(0), Offset(last)}).ok());
    auto read = ReadCursorFile(path);
    ASSERT_TRUE(read.ok() && read->has_value());
    EXPECT_EQ((*read)->last, Offset(last));
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"c"});
}

// A reader racing a writer sees a whole cursor every time: the old one or the new one.
TEST(CursorFile, AConcurrentReaderNeverSeesAPartialFile) {
  TempDir dir;
  const std::string path = dir / "c";
  ASSERT_TRUE(WriteCursorFile(path, {"topic", PartitionId(0), Offset(0)}).ok());
  std::atomic<bool> done{false};
  std::atomic<int64_t> reads{0};
  std::string failure;
  std::thread reader([&] {
    int64_t previous = 0;
    while (!done) {
      auto cursor = ReadCursorFile(path);
      if (!cursor.ok() || !cursor->has_value() || (*cursor)->last.value() < previous) {
        failure = cursor.ok() ? "went back or vanished" : cursor.status().ToString();
        return;
      }
      previous = (*cursor)->last.value();
      ++reads;
    }
  });
  for (int64_t i = 1; i <= 100; ++i) {
    ASSERT_TRUE(WriteCursorFile(path, {"topic", PartitionId(0), Offset(i * 1000)}).ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(failure, "");
  EXPECT_GT(reads.load(), 0);
}

TEST(CursorFile, RefusesCorruptFilesNamingThem) {
  TempDir dir;
  const std::string path = dir / "clicks.cursor";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"{\"topic\":\"t\",\"partition\":0,\"la", "not JSON"},
      {"41\n", "not a JSON object"},
      {"{\"partition\":0,\"last\":4}", "\"topic\""},
      {"{\"topic\":7,\"partition\":0,\"last\":4}", "\"topic\""},
      {"{\"topic\":\"t\",\"last\":4}", "\"partition\""},
      {"{\"topic\":\"t\",\"partition\":-1,\"last\":4}", "\"partition\""},
      {"{\"topic\":\"t\",\"partition\":0}", "\"last\""},
      {"{\"topic\":\"t\",\"partition\":0,\"last\":-1}", "\"last\""},
      {"{\"topic\":\"t\",\"partition\":0,\"last\":\"4\"}", "\"last\""},
      {"{\"topic\":\"t\",\"partition\":0,\"last\":4.5}", "\"last\""},
      {"{\"topic\":\"t\",\"partition\":0,\"last\":4,\"x\":1}", "members other than"},
      {std::string(5000, ' '), "larger than a cursor"},
      {std::string("\0\0\0\0", 4), "not JSON"},
  };
  for (const auto& [text, why] : cases) {
    WriteText(path, text);
    auto cursor = ReadCursorFile(path);
    ASSERT_FALSE(cursor.ok()) << text;
    EXPECT_EQ(cursor.status().code(), StatusCode::kCorruption) << text;
    EXPECT_NE(cursor.status().message().find(path), std::string::npos) << "names the file";
    EXPECT_NE(cursor.status().message().find(why), std::string::npos)
        << text << " -> " << cursor.status().message();
  }
}

TEST(CursorFile, WritableCheckNamesAMissingDirectory) {
  TempDir dir;
  EXPECT_TRUE(CheckCursorFileWritable(dir / "c").ok());
  Status s = CheckCursorFileWritable(dir / "missing/c");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir / "missing"), std::string::npos) << s.message();
  s = CheckCursorFileWritable(dir.path().string());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
}

// ---- Open, before any server is involved -------------------------------------------------

TEST(SubscriptionOpen, RefusesABadUrlOrStart) {
  auto sub = Subscription::Open({.url = "wss://127.0.0.1:1/streams/t"});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument);
  sub = Subscription::Open({.url = "ws://127.0.0.1:1/streams/t", .start = "-5"});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sub.status().message().find("'-5'"), std::string::npos);
}

TEST(SubscriptionOpen, RefusesACorruptCursorFileInsteadOfStartingOver) {
  TempDir dir;
  WriteText(dir / "c", "{\"topic\":\"t\",\"partition\":0,");
  auto sub =
      Subscription::Open({.url = "ws://127.0.0.1:" + std::to_string(UnusedPort()) + "/streams/t",
                          .cursor_file = dir / "c"});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kCorruption) << sub.status().ToString();
  EXPECT_NE(sub.status().message().find(dir / "c"), std::string::npos);
}

TEST(SubscriptionOpen, RefusesAnotherPartitionsCursorFile) {
  TempDir dir;
  ASSERT_TRUE(WriteCursorFile(dir / "c", {"t", PartitionId(1), Offset(3)}).ok());
  auto sub = Subscription::Open(
      {.url = "ws://127.0.0.1:1/streams/t?partition=0", .cursor_file = dir / "c"});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sub.status().message().find("is for topic t partition 1, not t partition 0"),
            std::string::npos)
      << sub.status().message();
}

TEST(SubscriptionOpen, RefusesACursorFileInAMissingDirectory) {
  TempDir dir;
  auto sub = Subscription::Open(
      {.url = "ws://127.0.0.1:1/streams/t", .cursor_file = dir / "no/such/dir/c"});
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.status().message().find("no/such/dir"), std::string::npos)
      << sub.status().message();
}

TEST(SubscriptionOpen, SaysWhenNothingListensWithoutRetrying) {
  const std::string url = "ws://127.0.0.1:" + std::to_string(UnusedPort()) + "/streams/t";
  auto began = std::chrono::steady_clock::now();
  auto sub = Subscription::Open({.url = url});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(sub.status().message().find(url.substr(0, url.size() - 10)), std::string::npos);
  EXPECT_NE(sub.status().message().find("connecting"), std::string::npos) << sub.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
}

}  // namespace
}  // namespace weir::client
