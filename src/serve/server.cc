// The server's I/O thread: connections, partition feeds, publish acknowledgements. See server.h
// for the threads and README.md for the protocol.
#include "serve/server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/detail/hybi13.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <chrono>
#include <deque>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>  // before Asio (DEPENDENCIES.md)
#include <vector>

#include "log/record_format.h"
#include "serve/request.h"
#include "serve/websocket_frame.h"
#include "stream_protocol/stream_protocol.h"
#include "weir/value.h"

namespace weir::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using stream_protocol::CloseReason;
using stream_protocol::GreetingJson;

namespace {

// Messages per encoded batch, and bytes per socket write.
constexpr size_t kBatchRecords = 1024;
constexpr size_t kMaxWriteBytes = 256 << 10;
constexpr auto kCloseGrace = std::chrono::seconds(5);

// Frames of consecutive messages, back to back, encoded once and written to every subscriber.
struct EncodedBatch {
  int64_t first = 0;
  int64_t count = 0;
  std::string bytes;
  int64_t end() const { return first + count; }
};
using BatchPtr = std::shared_ptr<const EncodedBatch>;

EncodedBatch Encode(std::span<const log::StoredRecord> records) {
  EncodedBatch batch;
  batch.first = records.front().offset.value();
  batch.count = static_cast<int64_t>(records.size());
  size_t bytes = 0;
  for (const log::StoredRecord& r : records) bytes += r.value.size() + 32;
  batch.bytes.reserve(bytes);
  for (const log::StoredRecord& r : records) {
    AppendMessageFrame(batch.bytes, r.offset.value(), r.value);
  }
  return batch;
}

std::string Member(std::string_view name, int64_t value) {
  return ",\"" + std::string(name) + "\":" + std::to_string(value);
}

std::string JsonString(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

std::string HttpResponse(int status, std::string_view reason, std::string_view body,
                         bool keep_alive) {
  std::string out =
      "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  out += body;
  return out;
}

bool TokenMatches(std::string_view given, std::string_view expected) {
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < given.size(); ++i) diff |= given[i] ^ expected[i];
  return diff == 0;
}

}  // namespace

class Connection;

// One subscribed partition: reads what the log made visible, once, into shared batches.
struct Feed {
  Feed(log::Partition& p) : partition(p), reader(p, p.NextOffset()) {
    head = p.NextOffset().value();
  }
  log::Partition& partition;
  log::PartitionReader reader;
  int64_t head;               // every message below it is in a batch (or was, before start)
  uint64_t head_seq = 0;      // the sequence number the next batch will get
  std::deque<BatchPtr> ring;  // batches ring_first_seq .. head_seq - 1
  uint64_t ring_first_seq = 0;
  std::vector<Connection*> live;
  int subscribers = 0;  // live and replaying
  bool step_posted = false;
};

class Server::Impl {
 public:
  Impl(log::LogStore& log, ServerOptions options)
      : log_(log), options_(std::move(options)), acceptor_(io_), sweep_(io_) {}

  Status Listen();
  void StartThreads();
  void Shutdown();

  uint16_t port() const { return port_; }
  ServerStats Stats();

  // I/O thread only, from here on.
  log::LogStore& log() { return log_; }
  const ServerOptions& options() const { return options_; }
  asio::io_context& io() { return io_; }
  ServerStats& counters() { return counters_; }
  bool stopping() const { return stopping_; }

  void Forget(Connection* connection);
  // The feed of a partition, created (at the partition's next offset) if needed.
  Feed& FeedFor(log::Partition& partition);
  void ReleaseFeed(Feed& feed);
  // Reads the feed's next step of records (a quarter of max_backlog at most) and hands it to its
  // live subscribers. The feed reads on only when one of them has written everything it has
  // (RequestStep, or a log change finding one waiting): a burst in the log reaches subscribers
  // at the pace of the fastest, so a subscriber is too slow for falling behind the others, not
  // for the size of a burst nor for a write that takes a few rounds. Without live subscribers,
  // the feed just follows the log's end. False if it read nothing.
  bool PollFeed(Feed& feed);
  // Steps until the feed has read the whole log, for a new subscriber.
  void CatchUp(Feed& feed);
  // A live subscriber has written everything the feed read: one more step, soon.
  void RequestStep(Feed& feed);
  void AwaitDurability(Connection* connection) { awaiting_durability_.insert(connection); }
  // Acknowledges the publishes whose records are now durable.
  void CheckDurability();

 private:
  void Accept();
  void OnLogChanged();
  void Sweep();
  void Watch();

  log::LogStore& log_;
  ServerOptions options_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer sweep_;
  uint16_t port_ = 0;
  std::thread io_thread_;
  std::thread watcher_;
  std::atomic<bool> stop_watcher_{false};
  std::atomic<bool> poll_posted_{false};
  bool stopping_ = false;
  std::promise<void> drained_;
  bool drained_set_ = false;

  std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
  std::map<log::Partition*, std::unique_ptr<Feed>> feeds_;
  std::unordered_set<Connection*> awaiting_durability_;
  ServerStats counters_;
};

// One client connection: HTTP requests, then possibly a WebSocket subscriber or publisher.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket)
      : server_(server),
        socket_(std::move(socket)),
        frames_(server.options().max_frame_bytes),
        accepted_(Clock::now()),
        last_rx_(accepted_) {}

  void Start(bool over_capacity) {
    if (over_capacity) {
      Respond(503, "Service Unavailable", R"({"error":"too_many_connections"})", false);
      ++server_.counters().refused;
      return;
    }
    ReadRequest();
  }

  // Called by the feed when a batch arrived; the caller has checked the backlog.
  void OnBatch() { Pump(); }
  int64_t written_end() const { return written_end_; }
  uint64_t next_seq() const { return next_seq_; }
  // Live, and has written everything its feed has read.
  bool WantsMore(uint64_t head_seq) const { return !writing_ && next_seq_ == head_seq; }

  void CloseTooSlow() {
    ++server_.counters().too_slow;
    LeaveFeed();
    slow_ = true;  // the close frame is made once the write in flight is done (its `last`)
    Pump();
  }

  void Shutdown() {
    if (websocket_) {
      SendClose(CloseCode::kGoingAway, CloseReason("shutdown"));
    } else {
      Destroy();
    }
  }

  // Publish acknowledgements whose records are now durable. True while some still wait.
  bool FlushReplies();

  // The sweep: handshake and idle timeouts, pings, close grace.
  void Tick(Clock::time_point now);

  void Destroy() {
    if (destroyed_) return;
    destroyed_ = true;
    LeaveFeed();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_.Forget(this);
  }

 private:
  enum class Mode : uint8_t { kHttp, kSubscriber, kPublisher };

  struct Reply {
    uint64_t seq;
    int64_t first = 0;
    int64_t count = 0;
    std::string error;  // the JSON to send, or empty while waiting for durability
    bool http = false;
  };

  // --- HTTP -----------------------------------------------------------------------------------

  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(16 << 10);
    parser_->body_limit(server_.options().max_frame_bytes);
    http::async_read_header(
        socket_, http_buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // A client that sent `Expect: 100-continue` (curl, for a body above 1 KiB) waits for the 100
  // before it sends the body; an oversize body was refused from its header already.
  void OnHeader(beast::error_code ec) {
    if (destroyed_) return;
    if (ec || parser_->is_done()) {
      OnRequest(ec);
      return;
    }
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      Queue("HTTP/1.1 100 Continue\r\n\r\n");
      Pump();
    }
    http::async_read(
        socket_, http_buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRequest(ec); });
  }

  void OnRequest(beast::error_code ec) {
    if (destroyed_) return;
    last_rx_ = Clock::now();
    if (ec == http::error::body_limit) {
      RefuseHttp(413, "Payload Too Large",
                 "{\"error\":\"too_big\",\"max\":" +
                     std::to_string(server_.options().max_frame_bytes) + "}");
      return;
    }
    if (ec) {
      if (ec == http::error::end_of_stream || ec == asio::error::eof ||
          ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
        Destroy();
      } else {
        RefuseHttp(400, "Bad Request", CloseReason("bad_request", {{"detail", ec.message()}}));
      }
      return;
    }
    request_ = parser_->release();
    requests_done_ = true;
    auto parsed = ParseTarget(std::string_view(request_.target().data(), request_.target().size()));
    const bool upgrade = beast::websocket::is_upgrade(request_);
    if (auto* error = std::get_if<TargetError>(&parsed)) {
      if (upgrade && Upgrade()) {
        RefuseWebSocket(error->kind == TargetError::Kind::kNotFound ? CloseCode::kNotFound
                                                                    : CloseCode::kBadRequest,
                        error->kind == TargetError::Kind::kNotFound
                            ? CloseReason("not_found", {{"partitions", 0}})
                            : CloseReason("bad_request", {{"param", error->param}}));
        TakeFrames();
      } else if (!upgrade) {
        const bool not_found = error->kind == TargetError::Kind::kNotFound;
        RefuseHttp(not_found ? 404 : 400, not_found ? "Not Found" : "Bad Request",
                   not_found
                       ? R"({"error":"not_found"})"
                       : "{\"error\":\"bad_request\",\"param\":" + JsonString(error->param) + "}");
      }
      return;
    }
    target_ = std::get<Target>(std::move(parsed));
    if (upgrade) {
      if (target_.endpoint != Endpoint::kStreams && target_.endpoint != Endpoint::kPublish) {
        RefuseHttp(405, "Method Not Allowed", R"({"error":"not_a_websocket_endpoint"})");
        return;
      }
      if (!Upgrade()) return;
      if (target_.endpoint == Endpoint::kStreams) {
        Subscribe();
      } else {
        StartPublisher();
      }
      TakeFrames();
      return;
    }
    switch (target_.endpoint) {
      case Endpoint::kHealth:
        Respond(200, "OK", R"({"status":"ok"})", request_.keep_alive());
        return;
      case Endpoint::kTopics:
        Respond(200, "OK", TopicsJson(), request_.keep_alive());
        return;
      case Endpoint::kPublish:
        if (request_.method() != http::verb::post) {
          RefuseHttp(405, "Method Not Allowed", R"({"error":"post_to_publish"})");
          return;
        }
        PublishHttp();
        return;
      case Endpoint::kStreams:
        RefuseHttp(426, "Upgrade Required", R"({"error":"websocket_upgrade_required"})");
        return;
    }
  }

  std::string TopicsJson() {
    std::string out = "[";
    for (const std::string& name : server_.log().ListTopics()) {
      auto topic = server_.log().GetTopic(name);
      if (!topic.ok()) continue;
      if (out.size() > 1) out += ',';
      out += "{\"topic\":" + JsonString(name) + ",\"partitions\":[";
      for (int32_t p = 0; p < (*topic)->num_partitions(); ++p) {
        log::Partition& partition = (*topic)->partition(PartitionId(p));
        if (p > 0) out += ',';
        out += "{\"partition\":" + std::to_string(p) +
               Member("first", partition.FirstOffset().value()) +
               Member("next", partition.NextOffset().value()) + "}";
      }
      out += "]}";
    }
    return out + "]";
  }

  void Respond(int status, std::string_view reason, std::string_view body, bool keep_alive) {
    keep_alive_ = keep_alive;
    Queue(HttpResponse(status, reason, body, keep_alive));
    close_after_write_ = !keep_alive;
    Pump();
  }

  void RefuseHttp(int status, std::string_view reason, const std::string& body) {
    ++server_.counters().refused;
    Respond(status, reason, body, false);
  }

  // Answers the upgrade with 101. False (and a 400/426 answer) for a malformed upgrade.
  bool Upgrade() {
    auto key = request_[http::field::sec_websocket_key];
    if (request_.method() != http::verb::get || key.empty() || key.size() > 64) {
      RefuseHttp(400, "Bad Request", R"({"error":"bad_websocket_upgrade"})");
      return false;
    }
    if (request_[http::field::sec_websocket_version] != "13") {
      ++server_.counters().refused;
      keep_alive_ = false;
      Queue(
          "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n");
      close_after_write_ = true;
      Pump();
      return false;
    }
    beast::websocket::detail::sec_ws_accept_type accept;
    beast::websocket::detail::make_sec_ws_accept(accept, key);
    Queue(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        std::string(accept.data(), accept.size()) + "\r\n\r\n");
    websocket_ = true;
    // Frames the client sent right after its request are already in the HTTP buffer.
    const auto data = http_buffer_.data();
    frames_.Feed(std::string_view(static_cast<const char*>(data.data()), data.size()));
    http_buffer_.consume(http_buffer_.size());
    ReadFrames();
    return true;
  }

  std::optional<std::string_view> RequestToken() {
    if (target_.token) return std::string_view(*target_.token);
    auto header = request_[http::field::authorization];
    return BearerToken(std::string_view(header.data(), header.size()));
  }

  bool Authorized(const std::string& expected) {
    if (expected.empty()) return true;
    auto given = RequestToken();
    return given && TokenMatches(*given, expected);
  }

  // A browser page from another site: its Origin names a host other than the one it asked. Any
  // web page could otherwise publish to a server on the user's own machine.
  bool CrossOrigin() const {
    auto origin = request_[http::field::origin];
    if (origin.empty()) return false;
    std::string_view host(origin.data(), origin.size());
    const size_t scheme = host.find("://");
    if (scheme != std::string_view::npos) host.remove_prefix(scheme + 3);
    auto asked = request_[http::field::host];
    return host != std::string_view(asked.data(), asked.size());
  }

  // The topic's partition, or a refusal sent (and nullptr).
  log::Partition* FindPartition() {
    auto topic = server_.log().GetTopic(target_.topic);
    if (!topic.ok()) {
      RefuseWebSocket(CloseCode::kNotFound, CloseReason("not_found", {{"partitions", 0}}));
      return nullptr;
    }
    if (target_.partition >= (*topic)->num_partitions()) {
      RefuseWebSocket(CloseCode::kNotFound,
                      CloseReason("not_found", {{"partitions", (*topic)->num_partitions()}}));
      return nullptr;
    }
    topic_ = *topic;
    return &(*topic)->partition(PartitionId(target_.partition));
  }

  // --- Subscribing ----------------------------------------------------------------------------

  void Subscribe() {
    mode_ = Mode::kSubscriber;
    if (!Authorized(server_.options().subscribe_token)) {
      RefuseWebSocket(CloseCode::kUnauthorized, CloseReason("unauthorized"));
      return;
    }
    log::Partition* partition = FindPartition();
    if (!partition) return;
    const ServerOptions& options = server_.options();
    Feed& feed = server_.FeedFor(*partition);
    if (feed.subscribers >= options.max_subscribers) {
      if (feed.subscribers == 0) server_.ReleaseFeed(feed);
      RefuseWebSocket(CloseCode::kTooManySubscribers,
                      CloseReason("too_many_subscribers", {{"max", options.max_subscribers}}));
      return;
    }
    // Counted from here, so that the poll (which may close slow subscribers) keeps the feed.
    ++feed.subscribers;
    server_.CatchUp(feed);
    const int64_t first = partition->FirstOffset().value();
    const int64_t next = feed.head;
    const int64_t min_replay = std::max(first, next - options.max_replay);
    int64_t start = next;
    if (target_.start.kind == StartOffset::Kind::kEarliest) {
      start = min_replay;
    } else if (target_.start.kind == StartOffset::Kind::kAt) {
      const int64_t n = target_.start.offset;
      std::optional<std::pair<CloseCode, std::string>> refusal;
      if (first == next && n != next) {
        refusal.emplace(CloseCode::kEmpty, CloseReason("empty", {{"offset", n}, {"next", next}}));
      } else if (n > next) {
        refusal.emplace(CloseCode::kAhead, CloseReason("ahead", {{"offset", n}, {"next", next}}));
      } else if (n < first) {
        refusal.emplace(CloseCode::kEvicted,
                        CloseReason("evicted", {{"offset", n}, {"first", first}}));
      } else if (n < min_replay) {
        refusal.emplace(CloseCode::kTooOld,
                        CloseReason("too_old", {{"offset", n}, {"min", min_replay}}));
      }
      if (refusal) {
        if (--feed.subscribers == 0) server_.ReleaseFeed(feed);
        RefuseWebSocket(refusal->first, refusal->second);
        return;
      }
      start = n;
    }
    feed_ = &feed;
    ++server_.counters().subscribers;
    written_end_ = start;
    last_written_ = start - 1;
    QueueFrame(Opcode::kText, GreetingJson({.topic = target_.topic,
                                            .partition = target_.partition,
                                            .first = first,
                                            .next = next,
                                            .start = start,
                                            .max_replay = options.max_replay,
                                            .max_backlog = options.max_backlog}));
    if (start == feed.head) {
      JoinLive();
    } else {
      replay_.emplace(*partition, Offset(start));
    }
    Pump();
  }

  void JoinLive() {
    replay_.reset();
    live_ = true;
    next_seq_ = feed_->head_seq;
    feed_->live.push_back(this);
  }

  void LeaveFeed() {
    if (!feed_) return;
    if (live_) {
      auto& live = feed_->live;
      live.erase(std::find(live.begin(), live.end(), this));
      live_ = false;
    }
    --feed_->subscribers;
    --server_.counters().subscribers;
    Feed& feed = *feed_;
    feed_ = nullptr;
    replay_.reset();
    if (feed.subscribers == 0) server_.ReleaseFeed(feed);
  }

  // Adds the subscriber's next data to the write: batches of the feed when live, else the next
  // replayed chunk (read from the log, below the feed's head). False if there is none.
  bool TakeData(std::vector<asio::const_buffer>& buffers, size_t& bytes) {
    if (!feed_ || closing_ || slow_) return false;
    if (!live_) {
      if (written_end_ == feed_->head) {
        JoinLive();
      } else {
        // Up to kMaxWriteBytes per write: fewer rounds through the socket for a long replay.
        bool any = false;
        while (bytes < kMaxWriteBytes && replay_->position().value() < feed_->head) {
          auto records = replay_->Next(kBatchRecords);
          if (!records.ok()) {
            if (any) break;  // what is taken goes out first; the error comes with the next take
            const bool evicted = records.status().code() == StatusCode::kOutOfRange;
            const int64_t first = feed_->partition.FirstOffset().value();
            SendClose(evicted ? CloseCode::kEvicted : CloseCode::kServerError,
                      evicted ? CloseReason("evicted", {{"offset", written_end_}, {"first", first}})
                              : CloseReason("storage"));
            return false;
          }
          auto span = *records;
          size_t n = 0;
          while (n < span.size() && span[n].offset.value() < feed_->head) ++n;
          if (n == 0) break;  // the feed has not read that far: the next poll will
          replay_->Seek(Offset(span[0].offset.value() + static_cast<int64_t>(n)));
          auto batch = std::make_shared<EncodedBatch>(Encode(span.first(n)));
          buffers.emplace_back(batch->bytes.data(), batch->bytes.size());
          bytes += batch->bytes.size();
          in_flight_.push_back(std::move(batch));
          any = true;
        }
        return any;
      }
    }
    bool any = false;
    while (next_seq_ < feed_->head_seq && bytes < kMaxWriteBytes) {
      const BatchPtr& batch = feed_->ring[next_seq_ - feed_->ring_first_seq];
      buffers.emplace_back(batch->bytes.data(), batch->bytes.size());
      bytes += batch->bytes.size();
      in_flight_.push_back(batch);
      ++next_seq_;
      any = true;
    }
    if (!any) server_.RequestStep(*feed_);
    return any;
  }

  // --- Publishing -----------------------------------------------------------------------------

  // Checks the token and the topic; the publish partition, or nullptr after a refusal.
  log::Partition* PublishPartition() {
    if (server_.options().publish_token.empty() && CrossOrigin()) {
      if (websocket_) {
        RefuseWebSocket(CloseCode::kCrossOrigin, CloseReason("cross_origin"));
      } else {
        RefuseHttp(403, "Forbidden", R"({"error":"cross_origin"})");
      }
      return nullptr;
    }
    if (!Authorized(server_.options().publish_token)) {
      if (websocket_) {
        RefuseWebSocket(CloseCode::kUnauthorized, CloseReason("unauthorized"));
      } else {
        RefuseHttp(401, "Unauthorized", R"({"error":"unauthorized"})");
      }
      return nullptr;
    }
    log::Partition* partition = nullptr;
    if (websocket_) {
      partition = FindPartition();
    } else {
      auto topic = server_.log().GetTopic(target_.topic);
      if (topic.ok() && target_.partition < (*topic)->num_partitions()) {
        topic_ = *topic;
        partition = &(*topic)->partition(PartitionId(target_.partition));
      } else {
        RefuseHttp(404, "Not Found", R"({"error":"not_found"})");
      }
    }
    if (partition && !topic_->owner().empty()) {
      if (websocket_) {
        RefuseWebSocket(CloseCode::kNotWritable, CloseReason("not_writable"));
      } else {
        RefuseHttp(409, "Conflict", R"({"error":"not_writable"})");
      }
      return nullptr;
    }
    return partition;
  }

  void StartPublisher() {
    mode_ = Mode::kPublisher;
    publish_partition_ = PublishPartition();
    Pump();  // the 101 (a refusal has sent it already)
  }

  void PublishHttp() {
    publish_partition_ = PublishPartition();
    if (!publish_partition_) return;
    keep_alive_ = request_.keep_alive();
    Publish(request_.body(), /*http=*/true);
  }

  // Appends one body's values (atomically: all or none) and queues its reply.
  void Publish(std::string_view body, bool http) {
    Reply reply{.seq = publish_seq_++, .http = http};
    auto values = SplitPublishBody(body);
    if (auto* error = std::get_if<BodyError>(&values)) {
      reply.error = "{\"error\":\"not_json\"" + SeqMember(reply) + Member("line", error->line) +
                    ",\"detail\":" + JsonString(error->detail) + "}";
    } else if (std::get<0>(values).empty()) {
      reply.error = "{\"error\":\"empty\"" + SeqMember(reply) + "}";
    } else {
      const auto& list = std::get<0>(values);
      builder_.Clear();
      const EventTime now(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
      for (std::string_view value : list) builder_.AddRaw(now, KeySerde::kNull, {}, value);
      auto first = publish_partition_->Append(builder_, log::Durability::kFlushSoon);
      if (!first.ok() && first.status().code() == StatusCode::kFailedPrecondition) {
        // Claimed by a pipeline since the upgrade.
        reply.error = "{\"error\":\"not_writable\"" + SeqMember(reply) + "}";
      } else if (!first.ok()) {
        reply.error = "{\"error\":\"storage\"" + SeqMember(reply) +
                      ",\"detail\":" + JsonString(first.status().ToString()) + "}";
      } else {
        reply.first = first->value();
        reply.count = static_cast<int64_t>(list.size());
        server_.counters().published += reply.count;
        server_.AwaitDurability(this);
      }
    }
    replies_.push_back(std::move(reply));
    FlushReplies();
  }

  std::string SeqMember(const Reply& reply) const {
    return reply.http ? std::string() : Member("seq", static_cast<int64_t>(reply.seq));
  }

  // --- WebSocket frames in ---------------------------------------------------------------------

  void ReadFrames() {
    socket_.async_read_some(
        asio::buffer(read_buffer_),
        [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnFrames(ec, n); });
  }

  void OnFrames(beast::error_code ec, size_t n) {
    if (destroyed_) return;
    if (ec) {
      Destroy();  // the peer went away (mid-frame or not): nothing to answer
      return;
    }
    last_rx_ = Clock::now();
    ping_sent_ = false;
    if (!protocol_error_) {
      frames_.Feed(std::string_view(read_buffer_.data(), n));
      TakeFrames();
    }
    // After a protocol error, what arrives is dropped until the peer closes: closing a socket
    // with unread bytes would reset the connection and lose the close frame on its way.
    if (!destroyed_ && !peer_closed_) ReadFrames();
  }

  // Handles the complete frames received, those that came with the upgrade request included.
  void TakeFrames() {
    ClientMessage message;
    while (!destroyed_ && !protocol_error_) {
      const FrameParser::Result result = frames_.Next(&message);
      if (result == FrameParser::Result::kNeedMore) break;
      if (result == FrameParser::Result::kError) {
        // Fail the connection (RFC 6455 7.1.7): the close frame, then our end of the TCP
        // connection, without waiting for the peer's close frame.
        protocol_error_ = true;
        if (close_sent_ && !writing_) {
          EndSending();
        } else if (frames_.error_code() == CloseCode::kTooBig) {
          SendClose(
              CloseCode::kTooBig,
              CloseReason("too_big",
                          {{"max", static_cast<int64_t>(server_.options().max_frame_bytes)}}));
        } else {
          SendClose(frames_.error_code(),
                    CloseReason("protocol", {{"detail", frames_.error_reason()}}));
        }
        return;
      }
      OnMessage(message);
    }
  }

  void OnMessage(ClientMessage& message) {
    switch (message.opcode) {
      case Opcode::kPing:
        QueueFrame(Opcode::kPong, message.payload);
        Pump();
        return;
      case Opcode::kPong:
        return;
      case Opcode::kClose:
        peer_closed_ = true;
        if (close_sent_) {
          Destroy();
        } else {
          // Echo the code (RFC 6455 §5.5.1), then end the connection once it is written.
          auto code = CloseCode::kNormal;
          if (message.payload.size() >= 2) {
            code = static_cast<CloseCode>((static_cast<unsigned char>(message.payload[0]) << 8) |
                                          static_cast<unsigned char>(message.payload[1]));
          }
          SendClose(code, {});
        }
        return;
      case Opcode::kText:
      case Opcode::kBinary:
        if (closing_) return;
        if (mode_ == Mode::kSubscriber) {
          SendClose(CloseCode::kUnsupportedData, CloseReason("subscriber_sent_data"));
        } else if (message.opcode == Opcode::kBinary) {
          SendClose(CloseCode::kUnsupportedData, CloseReason("binary"));
        } else if (publish_partition_) {
          Publish(message.payload, /*http=*/false);
        }
        return;
      case Opcode::kContinuation:
        return;
    }
  }

  // --- Frames and bytes out -------------------------------------------------------------------

  void Queue(std::string bytes) { queued_.push_back(std::move(bytes)); }

  void QueueFrame(Opcode opcode, std::string_view payload) {
    std::string frame;
    AppendFrame(frame, opcode, payload);
    Queue(std::move(frame));
  }

  void RefuseWebSocket(CloseCode code, const std::string& reason) {
    ++server_.counters().refused;
    SendClose(code, reason);
  }

  // Queues the close frame (after what is queued; data stops) and waits for the peer's close,
  // for at most the close grace.
  void SendClose(CloseCode code, const std::string& reason) {
    if (closing_) return;
    closing_ = true;
    close_code_ = code;
    close_reason_ = reason;
    closing_since_ = Clock::now();
    LeaveFeed();
    Pump();
  }

  // Starts a write of everything queued (control frames and HTTP first, then data), unless one
  // is in flight.
  void Pump() {
    if (destroyed_ || writing_) return;
    if (slow_ && !closing_) {
      SendClose(CloseCode::kTooSlow, CloseReason("too_slow", {{"last", last_written_}}));
      return;
    }
    buffers_.clear();
    size_t bytes = 0;
    while (!queued_.empty() && bytes < kMaxWriteBytes) {
      writing_owned_.push_back(std::move(queued_.front()));
      queued_.pop_front();
      bytes += writing_owned_.back().size();
    }
    for (const std::string& owned : writing_owned_)
      buffers_.emplace_back(owned.data(), owned.size());
    if (queued_.empty()) TakeData(buffers_, bytes);
    // The close frame goes after the acknowledgements of the frames before it.
    if (closing_ && !close_sent_ && queued_.empty() && replies_.empty()) {
      std::string frame;
      AppendCloseFrame(frame, close_code_, close_reason_);
      writing_owned_.push_back(std::move(frame));
      buffers_.emplace_back(writing_owned_.back().data(), writing_owned_.back().size());
      close_sent_ = true;
    }
    if (buffers_.empty()) return;
    writing_ = true;
    asio::async_write(socket_, buffers_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->OnWritten(ec);
    });
  }

  // An HTTP answer that ends the connection is out: FIN, then drop what the client still sends
  // (the rest of a refused body) until it closes, so that closing with unread bytes does not
  // reset the connection and destroy the answer before the client reads it. The close grace
  // bounds the wait.
  void Linger() {
    lingering_ = true;
    closing_since_ = Clock::now();
    EndSending();
    Drain();
  }

  void Drain() {
    socket_.async_read_some(asio::buffer(read_buffer_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (self->destroyed_) return;
                              if (ec) {
                                self->Destroy();
                              } else {
                                self->Drain();
                              }
                            });
  }

  // Sends FIN; the peer's close (or the close grace) ends the connection.
  void EndSending() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  void OnWritten(beast::error_code ec) {
    writing_ = false;
    if (destroyed_) return;
    if (ec) {
      Destroy();
      return;
    }
    for (const BatchPtr& batch : in_flight_) {
      server_.counters().delivered += batch->count;
      written_end_ = batch->end();
    }
    last_written_ = written_end_ - 1;
    in_flight_.clear();
    writing_owned_.clear();
    if (close_sent_ && (peer_closed_ || !websocket_)) {
      Destroy();
      return;
    }
    if (close_sent_ && protocol_error_) {
      EndSending();
      return;
    }
    if (!websocket_ && close_after_write_) {
      Linger();
      return;
    }
    if (!websocket_ && queued_.empty() && requests_done_ && keep_alive_ && replies_.empty()) {
      requests_done_ = false;
      ReadRequest();
      return;
    }
    Pump();
  }

  Server::Impl& server_;
  tcp::socket socket_;
  Mode mode_ = Mode::kHttp;
  bool websocket_ = false;
  bool destroyed_ = false;

  // HTTP.
  beast::flat_buffer http_buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  Target target_;
  bool keep_alive_ = false;
  bool requests_done_ = false;  // a request was read and its answer is (being) written
  bool close_after_write_ = false;
  bool lingering_ = false;  // the answer is out; waiting for the client to close
  log::Topic* topic_ = nullptr;

  // WebSocket in.
  std::array<char, 64 << 10> read_buffer_;
  FrameParser frames_;
  Clock::time_point accepted_;
  Clock::time_point last_rx_;
  bool ping_sent_ = false;
  bool protocol_error_ = false;  // what arrives is dropped

  // Out.
  std::deque<std::string> queued_;
  std::vector<std::string> writing_owned_;
  std::vector<BatchPtr> in_flight_;
  std::vector<asio::const_buffer> buffers_;
  bool writing_ = false;
  bool closing_ = false;      // a close is decided: no more data
  bool close_sent_ = false;   // the close frame is written or being written
  bool peer_closed_ = false;  // the peer's close frame arrived
  CloseCode close_code_ = CloseCode::kNormal;
  std::string close_reason_;
  Clock::time_point closing_since_;

  // Subscriber.
  Feed* feed_ = nullptr;
  bool live_ = false;
  bool slow_ = false;
  uint64_t next_seq_ = 0;    // live: the next batch of the feed to write
  int64_t written_end_ = 0;  // every message below it is written to the socket
  int64_t last_written_ = -1;
  std::optional<log::PartitionReader> replay_;

  // Publisher (WebSocket or HTTP).
  log::Partition* publish_partition_ = nullptr;
  uint64_t publish_seq_ = 0;
  std::deque<Reply> replies_;
  log::RecordBatchBuilder builder_;
};

bool Connection::FlushReplies() {
  bool queued = false;
  while (!replies_.empty()) {
    Reply& reply = replies_.front();
    std::string body = std::move(reply.error);
    if (body.empty()) {
      if (publish_partition_->DurableEnd().value() < reply.first + reply.count) break;
      body = reply.http
                 ? "{\"first\":" + std::to_string(reply.first) + Member("count", reply.count) + "}"
                 : "{\"ack\":" + std::to_string(reply.seq) + Member("first", reply.first) +
                       Member("count", reply.count) + "}";
      if (reply.http) {
        Queue(HttpResponse(200, "OK", body, keep_alive_));
        close_after_write_ = !keep_alive_;
      }
    } else if (reply.http) {
      const bool storage = body.starts_with("{\"error\":\"storage\"");
      const bool not_writable = body.starts_with("{\"error\":\"not_writable\"");
      Queue(not_writable
                ? HttpResponse(409, "Conflict", body, keep_alive_)
                : HttpResponse(storage ? 503 : 400, storage ? "Service Unavailable" : "Bad Request",
                               body, keep_alive_));
      close_after_write_ = !keep_alive_;
    }
    if (!reply.http) QueueFrame(Opcode::kText, body);
    replies_.pop_front();
    queued = true;
  }
  if (queued) Pump();
  return !replies_.empty();
}

void Connection::Tick(Clock::time_point now) {
  const ServerOptions& options = server_.options();
  if (closing_ || lingering_) {
    if (now - closing_since_ > kCloseGrace) Destroy();
    return;
  }
  if (!websocket_) {
    if (!requests_done_ && now - last_rx_ > options.handshake_timeout) Destroy();
    return;
  }
  if (now - last_rx_ > options.idle_timeout) {
    Destroy();
  } else if (!ping_sent_ && now - last_rx_ > options.idle_timeout / 2) {
    ping_sent_ = true;
    QueueFrame(Opcode::kPing, {});
    Pump();
  }
}

// --- Server::Impl --------------------------------------------------------------------------------

Status Server::Impl::Listen() {
  const std::string& listen = options_.listen;
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("listen address '" + listen + "': expected HOST:PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port_text = listen.substr(colon + 1);
  int port = -1;
  if (!port_text.empty() && port_text.size() <= 5 &&
      std::all_of(port_text.begin(), port_text.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    port = std::stoi(port_text);
  }
  if (port < 0 || port > 65535) {
    return Status::InvalidArgument("listen address '" + listen + "': bad port '" + port_text + "'");
  }
  beast::error_code ec;
  tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(host, port_text,
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Status::InvalidArgument("listen address '" + listen + "': " + ec.message());
  }
  const tcp::endpoint endpoint = *endpoints.begin();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + listen + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  return Status::OK();
}

void Server::Impl::StartThreads() {
  Accept();
  Sweep();
  io_thread_ = std::thread([this] { io_.run(); });
  watcher_ = std::thread([this] { Watch(); });
}

void Server::Impl::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopping_) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of file descriptors or similar: try again shortly, keep serving the others.
      auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      retry->async_wait([this, retry](beast::error_code) {
        if (!stopping_) Accept();
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto connection = std::make_shared<Connection>(*this, std::move(socket));
    const bool over = static_cast<int>(connections_.size()) >= options_.max_connections;
    connections_.emplace(connection.get(), connection);
    ++counters_.connections;
    connection->Start(over);
    Accept();
  });
}

void Server::Impl::Forget(Connection* connection) {
  awaiting_durability_.erase(connection);
  if (connections_.erase(connection) > 0) --counters_.connections;
  if (stopping_ && connections_.empty() && !drained_set_) {
    drained_set_ = true;
    drained_.set_value();
  }
}

Feed& Server::Impl::FeedFor(log::Partition& partition) {
  auto& feed = feeds_[&partition];
  if (!feed) feed = std::make_unique<Feed>(partition);
  return *feed;
}

void Server::Impl::ReleaseFeed(Feed& feed) { feeds_.erase(&feed.partition); }

bool Server::Impl::PollFeed(Feed& feed) {
  if (feed.live.empty()) {
    // Replaying subscribers read the log up to the head; no batch is needed below it.
    feed.head = feed.partition.NextOffset().value();
    feed.reader.Seek(Offset(feed.head));
    feed.ring.clear();
    feed.ring_first_seq = feed.head_seq;
    return false;
  }
  const size_t step =
      static_cast<size_t>(std::clamp<int64_t>(options_.max_backlog / 4, 1, kBatchRecords));
  bool failed = false;
  auto records = feed.reader.Next(step);
  if (!records.ok()) {
    failed = true;
  } else if (!records->empty()) {
    auto batch = std::make_shared<EncodedBatch>(Encode(*records));
    feed.head = batch->end();
    feed.ring.push_back(std::move(batch));
    ++feed.head_seq;
  }
  const bool progressed = !failed && !records->empty();
  std::vector<Connection*> slow;
  uint64_t min_seq = feed.head_seq;
  for (Connection* subscriber : feed.live) {
    if (failed) {
      slow.push_back(subscriber);
    } else if (feed.head - subscriber->written_end() > options_.max_backlog) {
      slow.push_back(subscriber);
    } else {
      min_seq = std::min(min_seq, subscriber->next_seq());
    }
  }
  // Batches no live subscriber needs any more (a write in flight holds its own reference).
  while (feed.ring_first_seq < min_seq) {
    feed.ring.pop_front();
    ++feed.ring_first_seq;
  }
  // Closing a subscriber may release the feed (the last one): work on a copy.
  std::vector<Connection*> live = feed.live;
  for (Connection* subscriber : slow) subscriber->CloseTooSlow();
  if (slow.size() == live.size()) return progressed;
  for (Connection* subscriber : live) {
    if (std::find(slow.begin(), slow.end(), subscriber) == slow.end()) subscriber->OnBatch();
  }
  return progressed;
}

void Server::Impl::CatchUp(Feed& feed) {
  while (feed.head < feed.partition.NextOffset().value() && PollFeed(feed)) {
  }
}

void Server::Impl::RequestStep(Feed& feed) {
  if (feed.step_posted || feed.head >= feed.partition.NextOffset().value()) return;
  feed.step_posted = true;
  asio::post(io_, [this, partition = &feed.partition] {
    auto it = feeds_.find(partition);
    if (it == feeds_.end()) return;
    it->second->step_posted = false;
    PollFeed(*it->second);
  });
}

void Server::Impl::CheckDurability() {
  std::vector<Connection*> waiting(awaiting_durability_.begin(), awaiting_durability_.end());
  for (Connection* connection : waiting) {
    if (!connection->FlushReplies()) awaiting_durability_.erase(connection);
  }
}

void Server::Impl::OnLogChanged() {
  poll_posted_ = false;
  // Acknowledgements first: a publisher should not wait for the fan-out of what it published.
  CheckDurability();
  std::vector<log::Partition*> partitions;
  for (auto& [partition, feed] : feeds_) partitions.push_back(partition);
  for (log::Partition* partition : partitions) {
    auto it = feeds_.find(partition);
    if (it == feeds_.end()) continue;
    Feed& feed = *it->second;
    if (feed.live.empty() ||
        std::any_of(feed.live.begin(), feed.live.end(),
                    [&](const Connection* c) { return c->WantsMore(feed.head_seq); })) {
      PollFeed(feed);
    }
  }
}

void Server::Impl::Watch() {
  uint64_t seen = log_.ChangeEpoch();
  while (!stop_watcher_) {
    log_.WaitForChange(seen, std::chrono::milliseconds(100));
    const uint64_t now = log_.ChangeEpoch();
    if (now == seen) continue;
    seen = now;
    if (!poll_posted_.exchange(true)) asio::post(io_, [this] { OnLogChanged(); });
  }
}

void Server::Impl::Sweep() {
  sweep_.expires_after(std::chrono::milliseconds(250));
  sweep_.async_wait([this](beast::error_code ec) {
    if (ec || stopping_) return;
    const auto now = Clock::now();
    std::vector<std::shared_ptr<Connection>> all;
    all.reserve(connections_.size());
    for (auto& [raw, connection] : connections_) all.push_back(connection);
    for (auto& connection : all) connection->Tick(now);
    CheckDurability();
    Sweep();
  });
}

ServerStats Server::Impl::Stats() {
  // Shared: after a timeout the posted handler may still run, and must not write to a dead frame.
  auto result = std::make_shared<std::promise<ServerStats>>();
  auto future = result->get_future();
  asio::post(io_, [this, result] { result->set_value(counters_); });
  if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return counters_;
  return future.get();
}

void Server::Impl::Shutdown() {
  auto drained = drained_.get_future();
  asio::post(io_, [this] {
    stopping_ = true;
    beast::error_code ignored;
    acceptor_.close(ignored);
    sweep_.cancel();
    if (connections_.empty()) {
      drained_set_ = true;
      drained_.set_value();
      return;
    }
    std::vector<std::shared_ptr<Connection>> all;
    for (auto& [raw, connection] : connections_) all.push_back(connection);
    for (auto& connection : all) connection->Shutdown();
  });
  drained.wait_for(std::chrono::seconds(1));
  stop_watcher_ = true;
  if (watcher_.joinable()) watcher_.join();
  io_.stop();
  if (io_thread_.joinable()) io_thread_.join();
  // Handlers still queued hold connections; drop them with the io_context.
  connections_.clear();
  feeds_.clear();
}

// --- Server ----------------------------------------------------------------------------------

Result<std::unique_ptr<Server>> Server::Start(log::LogStore& log, ServerOptions options) {
  auto impl = std::make_unique<Impl>(log, std::move(options));
  WEIR_RETURN_IF_ERROR(impl->Listen());
  impl->StartThreads();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { impl_->Shutdown(); }

uint16_t Server::port() const { return impl_->port(); }

ServerStats Server::stats() const { return impl_->Stats(); }

}  // namespace weir::serve
