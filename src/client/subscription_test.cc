// The client: the subscription URL, the start position, the cursor file, what Open refuses before
// it connects, what it does with what a peer sends (a scripted peer plays what the real server
// never does: gaps, duplicates, garbage), and, against the real server in this process, replay,
// live delivery, resuming from the cursor, too_slow, a server restart and every refusal.
#include "weir/subscription.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/beast/websocket/detail/hybi13.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "client/cursor_file.h"
#include "client/stream_url.h"
#include "log/log.h"
#include "serve/server.h"
#include "serve/websocket_frame.h"
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

// `status` has `code` and a message that says `part`.
void ExpectStatus(const Status& status, StatusCode code, const std::string& part) {
  EXPECT_EQ(status.code(), code) << status.ToString();
  EXPECT_NE(status.message().find(part), std::string::npos)
      << "'" << part << "' is not in: " << status.message();
}

// A listening socket on a free loopback port.
int ListenOnLoopback(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A loopback port nothing listens on (listened on, then released).
uint16_t UnusedPort() {
  uint16_t port;
  ::close(ListenOnLoopback(&port));
  return port;
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
      {"ws://h:1/streams/..", "may not be '.' or '..'"},
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
    ExpectStatus(url.status(), StatusCode::kInvalidArgument, why);
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
    ExpectStatus(start.status(), StatusCode::kInvalidArgument, "earliest, latest or an offset");
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
    ExpectStatus(cursor.status(), StatusCode::kCorruption, path);
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
  ExpectStatus(sub.status(), StatusCode::kInvalidArgument, "'-5'");
}

TEST(SubscriptionOpen, RefusesACorruptCursorFileInsteadOfStartingOver) {
  TempDir dir;
  WriteText(dir / "c", "{\"topic\":\"t\",\"partition\":0,");
  auto sub =
      Subscription::Open({.url = "ws://127.0.0.1:" + std::to_string(UnusedPort()) + "/streams/t",
                          .cursor_file = dir / "c"});
  ASSERT_FALSE(sub.ok());
  ExpectStatus(sub.status(), StatusCode::kCorruption, dir / "c");
}

TEST(SubscriptionOpen, RefusesAnotherPartitionsCursorFile) {
  TempDir dir;
  ASSERT_TRUE(WriteCursorFile(dir / "c", {"t", PartitionId(1), Offset(3)}).ok());
  auto sub = Subscription::Open(
      {.url = "ws://127.0.0.1:1/streams/t?partition=0", .cursor_file = dir / "c"});
  ASSERT_FALSE(sub.ok());
  ExpectStatus(sub.status(), StatusCode::kInvalidArgument,
               "is for topic t partition 1, not t partition 0");
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
  ExpectStatus(sub.status(), StatusCode::kUnavailable, url.substr(0, url.size() - 10));
  EXPECT_NE(sub.status().message().find("connecting"), std::string::npos) << sub.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
}

// ---- A scripted WebSocket peer -----------------------------------------------------------

// Plays one script per connection it accepts: answers the upgrade, writes the script's bytes,
// then (if `hold`) waits for the client to send something or hang up (if `mute`, for it to hang
// up), and hangs up. After the last
// script it stops listening. Records what the client asked for.
class ScriptedPeer {
 public:
  struct Script {
    std::string bytes;  // frames, written right after the 101 response
    bool hold = true;
    // Holding, answer nothing (not even pings) until the client hangs up.
    bool mute = false;
  };

  explicit ScriptedPeer(std::vector<Script> scripts) : scripts_(std::move(scripts)) {
    listen_fd_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedPeer() {
    stop_ = true;
    thread_.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  std::string url(const std::string& topic = "t") const {
    return "ws://127.0.0.1:" + std::to_string(port_) + "/streams/" + topic;
  }
  // The request heads received, one per connection.
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

  static std::string Greeting(int64_t first, int64_t next, int64_t start) {
    return Text("{\"type\":\"greeting\",\"topic\":\"t\",\"partition\":0,\"first\":" +
                std::to_string(first) + ",\"next\":" + std::to_string(next) +
                ",\"start\":" + std::to_string(start) + ",\"max_replay\":100,\"max_backlog\":8}");
  }
  static std::string Text(std::string_view payload) {
    std::string out;
    serve::AppendFrame(out, serve::Opcode::kText, payload);
    return out;
  }
  static std::string Messages(int64_t from, int64_t to) {  // [from, to)
    std::string out;
    for (int64_t o = from; o < to; ++o) {
      serve::AppendMessageFrame(out, o, "{\"n\":" + std::to_string(o) + "}");
    }
    return out;
  }
  static std::string Close(uint16_t code, std::string_view reason) {
    std::string out;
    serve::AppendCloseFrame(out, static_cast<serve::CloseCode>(code), reason);
    return out;
  }

 private:
  // Waits for `fd` to be readable; false on stop or after `timeout_ms`.
  bool Readable(int fd, int timeout_ms) {
    for (int waited = 0; !stop_ && waited < timeout_ms; waited += 20) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  void Serve() {
    for (const Script& script : scripts_) {
      if (!Readable(listen_fd_, 20'000)) return;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos && Readable(fd, 5'000)) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        requests_.push_back(head);
      }
      const std::string key_header = "Sec-WebSocket-Key: ";
      size_t k = head.find(key_header);
      std::string key =
          k == std::string::npos
              ? ""
              : head.substr(k + key_header.size(), head.find("\r\n", k) - k - key_header.size());
      boost::beast::websocket::detail::sec_ws_accept_type accept;
      boost::beast::websocket::detail::make_sec_ws_accept(accept, key);
      std::string out =
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          "Sec-WebSocket-Accept: " +
          std::string(accept.data(), accept.size()) + "\r\n\r\n" + script.bytes;
      for (size_t done = 0; done < out.size();) {
        ssize_t n = ::write(fd, out.data() + done, out.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      // Holding: until the client says something (the reply to a close frame) or hangs up. A
      // server hangs up first after the closing handshake (RFC 6455 7.1.1).
      if (script.hold && Readable(fd, 10'000)) (void)::read(fd, buf, sizeof(buf));
      while (script.mute && Readable(fd, 10'000) && ::read(fd, buf, sizeof(buf)) > 0) {
      }
      ::close(fd);
    }
    ::close(listen_fd_);
    listen_fd_ = -1;
  }

  std::vector<Script> scripts_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

SubscriptionOptions QuickOptions(const std::string& url) {
  SubscriptionOptions options;
  options.url = url;
  options.initial_backoff = std::chrono::milliseconds(10);
  options.max_backoff = std::chrono::milliseconds(50);
  options.connect_timeout = std::chrono::milliseconds(3000);
  return options;
}

// Open that the test expects to work: nullptr (and a failure) if it does not.
std::unique_ptr<Subscription> MustOpen(SubscriptionOptions options) {
  auto sub = Subscription::Open(std::move(options));
  if (!sub.ok()) {
    ADD_FAILURE() << sub.status().ToString();
    return nullptr;
  }
  return std::move(*sub);
}

// Next until a message or an error, for at most 10 s.
Result<SubscriptionMessage> NextMessage(Subscription& sub) {
  for (int i = 0; i < 100; ++i) {
    auto m = sub.Next(std::chrono::milliseconds(100));
    if (!m.ok()) return m.status();
    if (*m) return std::move(**m);
  }
  return Status::Unavailable("no message within 10 s");
}

TEST(SubscriptionPeer, AGapIsCorruptionNamingBothOffsets) {
  ScriptedPeer peer({{ScriptedPeer::Greeting(0, 10, 0) + ScriptedPeer::Messages(0, 2) +
                      ScriptedPeer::Messages(5, 6)}});
  auto sub = MustOpen(QuickOptions(peer.url()));
  ASSERT_NE(sub, nullptr);
  for (int64_t o : {0, 1}) {
    auto m = NextMessage(*sub);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->offset, Offset(o));
    EXPECT_EQ(m->value, "{\"n\":" + std::to_string(o) + "}");
  }
  auto gap = NextMessage(*sub);
  ASSERT_FALSE(gap.ok());
  ExpectStatus(gap.status(), StatusCode::kCorruption,
               "expected offset 2, the server sent 5 (a gap: 3 missing)");
  // Final: the same error again, no reconnection.
  auto again = sub->Next(std::chrono::milliseconds(0));
  EXPECT_EQ(again.status().message(), gap.status().message());
  EXPECT_EQ(sub->reconnects(), 0);
}

TEST(SubscriptionPeer, ADuplicateIsCorruption) {
  ScriptedPeer peer({{ScriptedPeer::Greeting(0, 10, 0) + ScriptedPeer::Messages(0, 2) +
                      ScriptedPeer::Messages(1, 2)}});
  auto sub = MustOpen(QuickOptions(peer.url()));
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(NextMessage(*sub).ok());
  ASSERT_TRUE(NextMessage(*sub).ok());
  auto dup = NextMessage(*sub);
  ExpectStatus(dup.status(), StatusCode::kCorruption,
               "expected offset 2, the server sent 1 (a duplicate");
}

TEST(SubscriptionPeer, AFrameThatIsNotOffsetAndMessageIsCorruption) {
  for (std::string frame : {"hello", "[1 ,{}]", "[-1,{}]", "[,{}]", "{\"n\":1}", "[0,{}"}) {
    ScriptedPeer peer({{ScriptedPeer::Greeting(0, 10, 0) + ScriptedPeer::Text(frame)}});
    auto sub = MustOpen(QuickOptions(peer.url()));
    ASSERT_NE(sub, nullptr);
    auto m = NextMessage(*sub);
    ExpectStatus(m.status(), StatusCode::kCorruption, "not [OFFSET,MESSAGE]: '" + frame + "'");
  }
}

TEST(SubscriptionPeer, ABadGreetingFailsOpen) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {ScriptedPeer::Text("greetings!"), "is not JSON"},
      {ScriptedPeer::Messages(0, 1), "is not {\"type\":\"greeting\""},
      {ScriptedPeer::Text("{\"type\":\"hello\"}"), "is not {\"type\":\"greeting\""},
      {ScriptedPeer::Text("{\"type\":\"greeting\",\"topic\":\"t\",\"partition\":0}"),
       "lacks topic, partition, first, next or start"},
      {ScriptedPeer::Text("{\"type\":\"greeting\",\"topic\":\"u\",\"partition\":0,\"first\":0,"
                          "\"next\":0,\"start\":0}"),
       "another topic or partition"},
      {ScriptedPeer::Greeting(5, 9, 2), "start outside first..next"},
      {ScriptedPeer::Greeting(0, 9, 3), "starts at 3, not at the offset asked for, 4"},
  };
  for (const auto& [greeting, why] : cases) {
    ScriptedPeer peer({{greeting}});
    SubscriptionOptions options = QuickOptions(peer.url());
    options.start = why.find("asked for") != std::string::npos ? "4" : "earliest";
    auto sub = Subscription::Open(options);
    ASSERT_FALSE(sub.ok()) << why;
    ExpectStatus(sub.status(), StatusCode::kCorruption, why);
  }
}

TEST(SubscriptionPeer, EachCloseCodeMapsToItsStatusWithTheReasonJson) {
  const std::vector<std::tuple<uint16_t, std::string, StatusCode>> cases = {
      {4400, R"({"reason":"bad_request","param":"offset"})", StatusCode::kInvalidArgument},
      {4401, R"({"reason":"unauthorized"})", StatusCode::kFailedPrecondition},
      {4404, R"({"reason":"not_found","partitions":0})", StatusCode::kNotFound},
      {4204, R"({"reason":"empty","offset":5,"next":0})", StatusCode::kOutOfRange},
      {4410, R"({"reason":"evicted","offset":0,"first":7})", StatusCode::kOutOfRange},
      {4413, R"({"reason":"too_old","offset":0,"min":9})", StatusCode::kOutOfRange},
      {4416, R"({"reason":"ahead","offset":99,"next":9})", StatusCode::kOutOfRange},
      {1003, R"({"reason":"subscriber_sent_data"})", StatusCode::kInternal},
      {4999, R"({"reason":"something_new"})", StatusCode::kInternal},
      // Open does not retry what a reconnection would.
      {4429, R"({"reason":"too_many_subscribers","max":1})", StatusCode::kUnavailable},
  };
  for (const auto& [code, reason, status] : cases) {
    ScriptedPeer peer({{ScriptedPeer::Close(code, reason)}});
    auto sub = Subscription::Open(QuickOptions(peer.url()));
    ASSERT_FALSE(sub.ok()) << code;
    EXPECT_EQ(sub.status().code(), status) << sub.status().ToString();
    EXPECT_NE(sub.status().message().find(reason + " (close " + std::to_string(code) + ")"),
              std::string::npos)
        << sub.status().message();
    EXPECT_NE(sub.status().message().find("refused by the server"), std::string::npos);
  }
}

TEST(SubscriptionPeer, TooSlowReconnectsAtTheNextOffsetWithTheToken) {
  ScriptedPeer peer({
      {ScriptedPeer::Greeting(0, 5, 0) + ScriptedPeer::Messages(0, 3) +
       ScriptedPeer::Close(4408, R"({"reason":"too_slow","last":2})")},
      {ScriptedPeer::Greeting(0, 5, 3) + ScriptedPeer::Messages(3, 5)},
  });
  SubscriptionOptions options = QuickOptions(peer.url());
  options.token = "s3cret";
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  for (int64_t o = 0; o < 5; ++o) {
    auto m = NextMessage(*sub);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->offset, Offset(o));
  }
  EXPECT_EQ(sub->reconnects(), 1);
  EXPECT_EQ(sub->greeting().start, Offset(3));
  std::vector<std::string> requests = peer.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].rfind("GET /streams/t?partition=0&offset=earliest HTTP/1.1\r\n", 0), 0u)
      << requests[0];
  EXPECT_EQ(requests[1].rfind("GET /streams/t?partition=0&offset=3 HTTP/1.1\r\n", 0), 0u)
      << requests[1];
  for (const std::string& r : requests) {
    EXPECT_NE(r.find("Authorization: Bearer s3cret\r\n"), std::string::npos) << r;
  }
}

TEST(SubscriptionPeer, ADroppedConnectionIsReopenedAndThenGivenUpOn) {
  ScriptedPeer peer({{ScriptedPeer::Greeting(0, 9, 0) + ScriptedPeer::Messages(0, 2), false}});
  SubscriptionOptions options = QuickOptions(peer.url());
  options.max_reconnects = 3;
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ASSERT_TRUE(NextMessage(*sub).ok());
  ASSERT_TRUE(NextMessage(*sub).ok());
  // The peer hung up and stopped listening: three refused attempts, then the error.
  auto m = NextMessage(*sub);
  ASSERT_FALSE(m.ok());
  ExpectStatus(m.status(), StatusCode::kUnavailable,
               "gave up after 3 reconnection attempts in a row");
  EXPECT_NE(m.status().message().find("from offset 2"), std::string::npos) << m.status().message();
}

TEST(SubscriptionPeer, APeerThatFallsSilentIsLeftAfterTheIdleTimeout) {
  ScriptedPeer peer({
      {ScriptedPeer::Greeting(0, 1, 0), true, true},
      {ScriptedPeer::Greeting(0, 1, 0) + ScriptedPeer::Messages(0, 1)},
  });
  SubscriptionOptions options = QuickOptions(peer.url());
  options.idle_timeout = std::chrono::milliseconds(300);
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  // No message and no pong from the first connection: after 300 ms it counts as lost.
  auto began = std::chrono::steady_clock::now();
  auto m = NextMessage(*sub);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->offset, Offset(0));
  EXPECT_EQ(sub->reconnects(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
}

TEST(SubscriptionPeer, AnHttpRefusalOfTheUpgradeIsReported) {
  // Not a Weir server: a plain 404 to the upgrade.
  uint16_t port;
  int fd = ListenOnLoopback(&port);
  std::thread server([fd] {
    int c = ::accept(fd, nullptr, nullptr);
    char buf[4096];
    (void)::read(c, buf, sizeof(buf));
    const std::string reply =
        "HTTP/1.1 404 Not Found\r\nContent-Length: 21\r\n\r\n{\"error\":\"not_found\"}";
    (void)::write(c, reply.data(), reply.size());
    ::close(c);
  });
  auto sub =
      Subscription::Open(QuickOptions("ws://127.0.0.1:" + std::to_string(port) + "/streams/t"));
  server.join();
  ::close(fd);
  ASSERT_FALSE(sub.ok());
  ExpectStatus(sub.status(), StatusCode::kNotFound, "HTTP 404 '{\"error\":\"not_found\"}'");
}

// ---- Against the real server --------------------------------------------------------------

class SubscriptionServer : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions options;
    options.dir = dir_.path() / "log";
    auto log = log::LogStore::Open(options);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    ASSERT_TRUE(log_->CreateTopic("t", log::TopicConfig{}).ok());
  }
  void TearDown() override {
    server_.reset();
    log_.reset();
  }

  // Starts (or restarts, on the same port) the server.
  void StartServer(ServerOptions options = {}) {
    server_.reset();
    options.listen = "127.0.0.1:" + std::to_string(port_);
    auto server = serve::Server::Start(*log_, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    port_ = server_->port();
  }

  // Appends {"n":from} .. {"n":from+count-1} (padded to `bytes`) to `topic`, durable and visible.
  void Append(int64_t from, int64_t count, const std::string& topic = "t", size_t bytes = 0) {
    auto found = log_->GetTopic(topic);
    ASSERT_TRUE(found.ok());
    log::RecordBatchBuilder batch;
    for (int64_t n = from; n < from + count; ++n) {
      batch.AddRaw(EventTime(n), KeySerde::kNull, "", Value(n, bytes));
      if (batch.bytes() > (1 << 20) || n + 1 == from + count) {
        ASSERT_TRUE(
            (*found)->partition(PartitionId(0)).Append(batch, log::Durability::kWaitDurable).ok());
        batch.Clear();
      }
    }
  }
  static std::string Value(int64_t n, size_t bytes = 0) {
    std::string v = "{\"n\":" + std::to_string(n) + ",\"pad\":\"";
    v.append(bytes > v.size() + 2 ? bytes - v.size() - 2 : 0, 'x');
    return v + "\"}";
  }

  SubscriptionOptions Options(const std::string& topic = "t", int partition = 0) const {
    SubscriptionOptions options =
        QuickOptions("ws://127.0.0.1:" + std::to_string(port_) + "/streams/" + topic +
                     "?partition=" + std::to_string(partition));
    options.max_reconnects = 200;
    return options;
  }

  // Reads `count` messages and checks they are exactly offsets from..from+count-1.
  void ExpectMessages(Subscription& sub, int64_t from, int64_t count, size_t bytes = 0) {
    for (int64_t o = from; o < from + count; ++o) {
      auto m = NextMessage(sub);
      ASSERT_TRUE(m.ok()) << "at offset " << o << ": " << m.status().ToString();
      ASSERT_EQ(m->offset, Offset(o));
      ASSERT_EQ(m->value, Value(o, bytes));
    }
  }

  TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  std::unique_ptr<serve::Server> server_;
  uint16_t port_ = 0;
};

TEST_F(SubscriptionServer, ReplaysTheLogThenDeliversLiveMessages) {
  Append(0, 100);
  StartServer();
  auto sub = MustOpen(Options());
  ASSERT_NE(sub, nullptr);
  const SubscriptionGreeting& g = sub->greeting();
  EXPECT_EQ(g.topic, "t");
  EXPECT_EQ(g.partition, PartitionId(0));
  EXPECT_EQ(g.first, Offset(0));
  EXPECT_EQ(g.next, Offset(100));
  EXPECT_EQ(g.start, Offset(0));
  EXPECT_GT(g.max_replay, 0);
  EXPECT_GT(g.max_backlog, 0);
  ExpectMessages(*sub, 0, 100);
  Append(100, 50);
  ExpectMessages(*sub, 100, 50);
  auto none = sub->Next(std::chrono::milliseconds(50));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(sub->next_offset(), Offset(150));
  EXPECT_EQ(sub->reconnects(), 0);
}

TEST_F(SubscriptionServer, LatestStartsAtTheEndAndAnOffsetWhereAsked) {
  Append(0, 10);
  StartServer();
  SubscriptionOptions options = Options();
  options.start = "latest";
  auto latest = MustOpen(options);
  ASSERT_NE(latest, nullptr);
  EXPECT_EQ(latest->greeting().start, Offset(10));
  options.start = "7";
  auto at = MustOpen(options);
  ASSERT_NE(at, nullptr);
  Append(10, 1);
  ExpectMessages(*latest, 10, 1);
  ExpectMessages(*at, 7, 4);
}

TEST_F(SubscriptionServer, ARestartedConsumerResumesAfterTheLastHandledMessage) {
  Append(0, 30);
  StartServer();
  SubscriptionOptions options = Options();
  options.cursor_file = dir_ / "t.cursor";
  {
    auto sub = MustOpen(options);
    ASSERT_NE(sub, nullptr);
    ExpectMessages(*sub, 0, 10);
    ASSERT_TRUE(sub->Commit().ok());  // 9 is handled too
    ASSERT_TRUE(sub->Close().ok());
  }
  EXPECT_EQ(ReadText(dir_ / "t.cursor"), "{\"topic\":\"t\",\"partition\":0,\"last\":9}\n");
  options.start = "latest";  // the cursor wins
  {
    auto sub = MustOpen(options);
    ASSERT_NE(sub, nullptr);
    EXPECT_EQ(sub->greeting().start, Offset(10));
    ExpectMessages(*sub, 10, 5);
    // Destroyed without Commit: 14 was returned but not handled.
  }
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 14, 16);
}

TEST_F(SubscriptionServer, TheCursorCatchesUpWhileNextWaits) {
  Append(0, 20);
  StartServer();
  SubscriptionOptions options = Options();
  options.cursor_file = dir_ / "c";
  options.cursor_interval = std::chrono::milliseconds(100);
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 0, 20);
  // Nothing more arrives; while waiting, 19 counts as handled and reaches the file.
  auto none = sub->Next(std::chrono::milliseconds(400));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto cursor = ReadCursorFile(dir_ / "c");
  ASSERT_TRUE(cursor.ok() && cursor->has_value());
  EXPECT_EQ((*cursor)->last, Offset(19));
}

TEST_F(SubscriptionServer, ACursorThatCannotBeWrittenStopsTheSubscription) {
  Append(0, 5);
  StartServer();
  std::filesystem::create_directory(dir_ / "cursors");
  SubscriptionOptions options = Options();
  options.cursor_file = dir_ / "cursors/c";
  options.cursor_interval = std::chrono::milliseconds(0);
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 0, 1);
  std::filesystem::remove_all(dir_ / "cursors");
  // Handing out 1 marks 0 handled: its cursor cannot be written, and the consumer hears so.
  auto m = sub->Next(std::chrono::milliseconds(1000));
  ASSERT_FALSE(m.ok());
  ExpectStatus(m.status(), StatusCode::kNotFound, options.cursor_file);
  EXPECT_EQ(sub->Next(std::chrono::milliseconds(0)).status().message(), m.status().message());
}

// The server paces a partition's feed to its fastest subscriber: one that falls max_backlog
// behind the others is closed as too_slow, and resumes from where it was.
TEST_F(SubscriptionServer, TooSlowIsResumedWithoutALossOrARepeat) {
  ServerOptions server_options;
  server_options.max_backlog = 32;
  StartServer(server_options);
  SubscriptionOptions options = Options();
  options.start = "latest";
  auto slow = MustOpen(options);
  ASSERT_NE(slow, nullptr);
  auto fast = MustOpen(options);
  ASSERT_NE(fast, nullptr);
  // 24 MiB: more than the sockets' buffers hold while `slow` reads nothing.
  constexpr int64_t kCount = 24'000;
  constexpr size_t kBytes = 1024;
  std::thread reader([&] { ExpectMessages(*fast, 0, kCount, kBytes); });
  Append(0, kCount, "t", kBytes);
  reader.join();
  EXPECT_EQ(fast->reconnects(), 0);
  EXPECT_GE(server_->stats().too_slow, 1) << "the server never found the subscriber too slow";
  ExpectMessages(*slow, 0, kCount, kBytes);
  EXPECT_GE(slow->reconnects(), 1);
}

TEST_F(SubscriptionServer, AServerRestartIsResumedWithoutALossOrARepeat) {
  Append(0, 10);
  StartServer();
  auto sub = MustOpen(Options());
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 0, 5);
  server_.reset();  // 1001 shutdown
  Append(10, 10);   // while no server runs
  std::thread restart([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    StartServer();
  });
  ExpectMessages(*sub, 5, 15);
  restart.join();
  Append(20, 5);
  ExpectMessages(*sub, 20, 5);
  EXPECT_EQ(sub->reconnects(), 1);
}

TEST_F(SubscriptionServer, AQuietConnectionOutlivesTheServersIdleTimeout) {
  ServerOptions server_options;
  // The server sweeps every 250 ms: a second leaves the pong half a second, even under load.
  server_options.idle_timeout = std::chrono::milliseconds(1000);
  StartServer(server_options);
  auto sub = MustOpen(Options());
  ASSERT_NE(sub, nullptr);
  // Nothing to deliver for three idle timeouts: the server's pings are answered while Next waits.
  auto none = sub->Next(std::chrono::milliseconds(3000));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  Append(0, 1);
  ExpectMessages(*sub, 0, 1);
  EXPECT_EQ(sub->reconnects(), 0);
}

TEST_F(SubscriptionServer, EachRefusalIsAnErrorWithTheServersReason) {
  ASSERT_TRUE(log_->CreateTopic("empty", log::TopicConfig{}).ok());
  Append(0, 100);
  ServerOptions server_options;
  server_options.max_replay = 10;
  StartServer(server_options);
  struct Case {
    std::string topic;
    int partition;
    std::string start;
    StatusCode code;
    std::string reason;
  };
  for (const Case& c : std::vector<Case>{
           {"nope", 0, "earliest", StatusCode::kNotFound,
            R"({"reason":"not_found","partitions":0} (close 4404))"},
           {"t", 3, "earliest", StatusCode::kNotFound,
            R"({"reason":"not_found","partitions":1} (close 4404))"},
           {"t", 0, "101", StatusCode::kOutOfRange,
            R"({"reason":"ahead","offset":101,"next":100} (close 4416))"},
           {"t", 0, "5", StatusCode::kOutOfRange,
            R"({"reason":"too_old","offset":5,"min":90} (close 4413))"},
           {"empty", 0, "3", StatusCode::kOutOfRange,
            R"({"reason":"empty","offset":3,"next":0} (close 4204))"},
       }) {
    SubscriptionOptions options = Options(c.topic, c.partition);
    options.start = c.start;
    auto sub = Subscription::Open(options);
    ASSERT_FALSE(sub.ok()) << c.reason;
    ExpectStatus(sub.status(), c.code, c.reason);
  }
  // What max_replay allows is served.
  SubscriptionOptions options = Options();
  options.start = "90";
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 90, 10);
}

TEST_F(SubscriptionServer, AnEvictedCursorIsAnErrorNotARestart) {
  log::TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_bytes = 4096;
  ASSERT_TRUE(log_->CreateTopic("r", config).ok());
  for (int64_t n = 0; n < 400; n += 10) Append(n, 10, "r", 100);  // batches across segments
  auto removed = (*log_->GetTopic("r"))
                     ->partition(PartitionId(0))
                     .EnforceRetention(std::chrono::system_clock::now());
  ASSERT_TRUE(removed.ok() && *removed > 0);
  const int64_t first = (*log_->GetTopic("r"))->partition(PartitionId(0)).FirstOffset().value();
  StartServer();
  SubscriptionOptions options = Options("r");
  options.cursor_file = dir_ / "r.cursor";
  ASSERT_TRUE(WriteCursorFile(options.cursor_file, {"r", PartitionId(0), Offset(0)}).ok());
  auto sub = Subscription::Open(options);
  ASSERT_FALSE(sub.ok());
  ExpectStatus(sub.status(), StatusCode::kOutOfRange,
               R"({"reason":"evicted","offset":1,"first":)" + std::to_string(first) +
                   "} (close 4410); resuming after offset 0 from cursor file " +
                   options.cursor_file);
  // earliest still works, from what is left.
  options.cursor_file.clear();
  sub = Subscription::Open(options);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ((*sub)->greeting().start, Offset(first));
}

TEST_F(SubscriptionServer, ATokenIsNeededWhereTheServerSaysSo) {
  Append(0, 3);
  ServerOptions server_options;
  server_options.subscribe_token = "s3cret";
  StartServer(server_options);
  SubscriptionOptions options = Options();
  auto refused = Subscription::Open(options);
  ASSERT_FALSE(refused.ok());
  ExpectStatus(refused.status(), StatusCode::kFailedPrecondition,
               R"({"reason":"unauthorized"} (close 4401))");
  options.token = "wrong";
  refused = Subscription::Open(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  options.token = "s3cret";
  auto sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 0, 3);
  options.token.clear();
  options.url += "&token=s3cret";
  sub = MustOpen(options);
  ASSERT_NE(sub, nullptr);
  ExpectMessages(*sub, 0, 3);
}

}  // namespace
}  // namespace weir::client
