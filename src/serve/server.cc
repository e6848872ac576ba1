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
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
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
// Bytes of a streamed answer (a query's) not yet on the socket before its thread waits.
constexpr size_t kMaxPendingBytes = 1 << 20;

// Frames of consecutive messages, back to back, encoded once and written to every subscriber.
struct EncodedBatch {
  int64_t first = 0;
  int64_t count = 0;
  std::string bytes;
  int64_t end() const { return first + count; }
};
using BatchPtr = std::shared_ptr<const EncodedBatch>;

int64_t OffsetOf(const log::StoredRecord& r) { return r.offset.value(); }
int64_t OffsetOf(const ArchivedMessage& m) { return m.offset; }

// Records of the log, or messages of the archive: the same frames.
template <typename Message>
EncodedBatch Encode(std::span<const Message> records) {
  EncodedBatch batch;
  batch.first = OffsetOf(records.front());
  batch.count = static_cast<int64_t>(records.size());
  size_t bytes = 0;
  for (const Message& r : records) bytes += r.value.size() + 32;
  batch.bytes.reserve(bytes);
  std::string scratch;  // a value stored in the binary form, as JSON (log::StoredValueJson)
  for (const Message& r : records) {
    AppendMessageFrame(batch.bytes, OffsetOf(r), log::StoredValueJson(r.value, scratch));
  }
  return batch;
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
class Subscriber;

// A POST /query's or GET /views' handler, run on a thread of its own: it writes its answer
// through `write`; `client_gone` says whether the client has hung up (so it may stop early).
using StreamJob =
    std::function<Status(const BodyWriter& write, const std::function<bool()>& client_gone)>;

// The answer of a POST /query or GET /views: made on a thread of its own (a handler of
// ServerOptions), written to the socket by the I/O thread. The handler's thread waits while
// more than kMaxPendingBytes are not yet on the socket, for at most `patience` (then the client
// is too slow, and its connection is closed); once the connection is gone, what it writes is
// dropped.
class BodyStream {
 public:
  BodyStream(asio::io_context& io, std::weak_ptr<Connection> connection,
             std::chrono::milliseconds patience)
      : io_(io), connection_(std::move(connection)), patience_(patience) {}

  // The handler's thread.
  void Write(std::string_view chunk);
  // The I/O thread: what was written since the last Take; `bytes` went out on the socket; the
  // connection is gone.
  std::string Take();
  void Sent(size_t bytes);
  void Close();
  // Any thread: the connection is gone (or too slow), its writes dropped.
  bool closed();

 private:
  asio::io_context& io_;
  std::weak_ptr<Connection> connection_;
  const std::chrono::milliseconds patience_;
  std::mutex mu_;
  std::condition_variable drained_;
  std::string buffer_;  // written, not yet taken
  size_t pending_ = 0;  // written, not yet on the socket
  bool closed_ = false;
  bool take_posted_ = false;
};

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
  std::vector<Subscriber*> live;
  int subscribers = 0;  // live and replaying
  bool step_posted = false;
};

// A subscriber's catch-up through the archive: a catch-up thread reads the archive (DuckDB) and
// encodes chunks; the I/O thread writes them. At most two chunks are ready or being written at
// a time: the reader waits for the subscriber's socket (bounded memory, paced by the backlog).
struct ArchiveCatchUp {
  std::string topic;
  int32_t partition = 0;
  int64_t from = 0;
  std::weak_ptr<Connection> connection;

  std::mutex mu;
  std::condition_variable taken;  // a chunk was written, or the subscriber left
  std::deque<BatchPtr> ready;     // encoded, not yet taken by the I/O thread
  int outstanding = 0;            // chunks ready or being written
  bool cancelled = false;         // the subscriber left (or the server stops)
  bool done = false;              // the reader returned `status`
  Status status;
};
using CatchUpPtr = std::shared_ptr<ArchiveCatchUp>;

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
  // Runs `job` (a query or views handler) on a thread of its own, writing to `stream`; at its
  // end the connection's OnStreamEnd gets its status. False if max_queries run already.
  bool StartJob(std::shared_ptr<BodyStream> stream, std::weak_ptr<Connection> connection,
                StreamJob job);
  // What the partition's archive holds, if the server has archives (from memory).
  std::optional<ArchiveExtent> ArchiveOf(std::string_view topic, int32_t partition) const;
  // Queues a catch-up for a catch-up thread (started on the first).
  void StartCatchUp(CatchUpPtr catch_up);

 private:
  void CatchUpLoop();
  void RunCatchUp(ArchiveCatchUp& catch_up);
  // The I/O thread hears of a chunk or of the end of a catch-up.
  void PostCatchUpNews(const CatchUpPtr& catch_up);
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
  // Query and views handlers running (their threads are joined once they posted their end).
  std::map<uint64_t, std::thread> jobs_;
  uint64_t next_job_ = 0;
  // Catch-ups: the threads reading archives and their queue.
  std::mutex catch_up_mu_;
  std::condition_variable catch_up_cv_;
  std::deque<CatchUpPtr> catch_up_queue_;      // guarded by catch_up_mu_
  std::vector<std::thread> catch_up_threads_;  // guarded by catch_up_mu_
  std::atomic<bool> stop_catch_ups_{false};
};

// A connection's subscription to one partition: the checks of its start, the greeting, then the
// replay read from the log below the feed's head, then the feed's shared batches. Writes and
// closes through its connection; the feed calls it (OnBatch, CloseTooSlow) on the I/O thread.
class Subscriber {
 public:
  Subscriber(Server::Impl& server, Connection& connection)
      : server_(server), connection_(connection) {}

  // Checks `start` against the partition's ends and greets, or refuses with a close.
  void Start(log::Partition& partition, const Target& target);
  // Adds the next data to the write (batches of the feed when live, else the next replayed
  // chunk), keeping it alive until Written. False if there is none.
  bool TakeData(std::vector<asio::const_buffer>& buffers, size_t& bytes);
  // The write of what TakeData gave is done.
  void Written();
  // Leaves the feed (idempotent): nothing more is taken.
  void Leave();

  // The feed's side. A batch arrived (the feed checked the backlog).
  void OnBatch();
  // The backlog went over max_backlog: leave, and close once the write in flight is done.
  void CloseTooSlow();
  int64_t written_end() const { return written_end_; }
  uint64_t next_seq() const { return next_seq_; }
  // Live, and has written everything its feed has read.
  bool WantsMore(uint64_t head_seq) const;

  // Closed as too slow: the close frame waits for the write in flight (its `last`).
  bool slow() const { return slow_; }
  int64_t last_written() const { return last_written_; }

 private:
  // The refusal of a start at `n`, if any (README.md's order).
  std::optional<std::pair<CloseCode, std::string>> RefuseStart(
      int64_t n, int64_t first, int64_t next, int64_t min_replay,
      std::optional<int64_t> archive_first);
  void JoinLive();
  bool TakeReplay(std::vector<asio::const_buffer>& buffers, size_t& bytes);
  bool TakeLive(std::vector<asio::const_buffer>& buffers, size_t& bytes);
  // From `from` on out of the archive, then the log (Catch-up in README.md).
  void CatchUpFrom(int64_t from);
  bool TakeArchive(std::vector<asio::const_buffer>& buffers, size_t& bytes);
  // The archive is through (or failed): on with the log from written_end_, or close.
  bool EndCatchUp(std::vector<asio::const_buffer>& buffers, size_t& bytes);
  void CancelCatchUp();

  Server::Impl& server_;
  Connection& connection_;
  Feed* feed_ = nullptr;
  bool live_ = false;
  bool slow_ = false;
  uint64_t next_seq_ = 0;    // live: the next batch of the feed to write
  int64_t written_end_ = 0;  // every message below it is written to the socket
  int64_t last_written_ = -1;
  std::optional<log::PartitionReader> replay_;
  std::vector<BatchPtr> in_flight_;  // being written
  std::string topic_;
  CatchUpPtr catch_up_;         // while catching up through the archive
  int archive_in_flight_ = 0;   // of in_flight_, the catch-up's chunks
  int64_t catch_up_from_ = -1;  // where the latest catch-up started
};

// A connection's publishing (WebSocket frames, or one HTTP POST body): each body appended
// atomically, answered in order once its records are durable.
class Publisher {
 public:
  Publisher(Server::Impl& server, Connection& connection, log::Partition& partition, bool http)
      : server_(server), connection_(connection), partition_(partition), http_(http) {}

  // Appends one body's values (all or none) and queues its answer.
  void Publish(std::string_view body);
  // Queues the answers now due, in order. True while some still wait for durability.
  bool FlushReplies();
  bool idle() const { return replies_.empty(); }

 private:
  struct Reply {
    uint64_t seq;
    int64_t first = 0;
    int64_t count = 0;
    std::optional<Value> error;  // the answer, or nullopt while waiting for durability
    int http_status = 200;
  };
  // {"error":ERROR,"seq":n,...members}; no seq over HTTP (one body per request).
  Value Error(const Reply& reply, std::string_view error,
              std::initializer_list<Value::Member> members = {}) const;
  void Answer(const Reply& reply, const Value& body);

  Server::Impl& server_;
  Connection& connection_;
  log::Partition& partition_;
  const bool http_;
  uint64_t seq_ = 0;
  std::deque<Reply> replies_;
  log::RecordBatchBuilder builder_;
};

// The HTTP side of a connection: reads requests (Beast), answers /health, /topics and POST
// /publish, checks tokens and origins, and turns an upgrade into a subscriber or a publisher.
class HttpRequests {
 public:
  explicit HttpRequests(Server::Impl& server, Connection& connection)
      : server_(server), connection_(connection) {}

  void ReadRequest();
  // A write of the connection is done. Lingers after a final answer, or reads the next request
  // of a kept-alive connection once nothing is queued and no publish answer waits; true if it
  // did either (the connection has nothing to write then).
  bool Written(bool queue_empty, bool replies_done);
  // A request was read and its answer is (being) written.
  bool answering() const { return requests_done_; }
  // Queues an answer (the connection closes after it unless kept alive) and writes it.
  void Respond(int status, std::string_view reason, const Value& body, bool keep_alive);
  void Refuse(int status, std::string_view reason, const Value& body);
  // Queues a publish answer for this request (written by the caller's Pump).
  void QueueAnswer(int status, std::string_view reason, const Value& body);

  // A streamed answer (POST /query, GET /views): what its handler wrote since, and its end.
  void OnStreamData();
  void OnStreamEnd(const Status& status);
  // The connection wrote `bytes` / is gone: the handler may write more / its writes are dropped.
  void Sent(size_t bytes) {
    if (stream_) stream_->Sent(bytes);
  }
  void Closed() {
    if (stream_) stream_->Close();
  }

 private:
  void OnHeader(beast::error_code ec);
  void OnRequest(beast::error_code ec);
  void OnBadTarget(const TargetError& error, bool upgrade);
  void OnUpgrade();
  void OnPlainRequest();
  Value TopicsJson();
  // Answers the upgrade with 101. False (and a 400/426 answer) for a malformed upgrade.
  bool Upgrade();
  std::optional<std::string_view> RequestToken();
  bool Authorized(const std::string& expected);
  bool CrossOrigin() const;
  // The topic's partition for a WebSocket, or a refusal sent (and nullptr).
  log::Partition* FindPartition();
  void Subscribe();
  // Checks the token, the origin and the topic; the publish partition, or nullptr after a
  // refusal (a close frame, or an HTTP answer).
  log::Partition* PublishPartition();
  void PublishHttp();
  // POST /query and GET /views: refused (404 without a handler, 405, 401, 400) or streamed.
  void Query();
  void Views();
  // Their common checks: a handler, the method, the subscribe token. False after a refusal.
  bool MayAsk(bool handled, http::verb method, std::string_view wrong_method);
  // Starts `job` on a thread of its own; its answer is streamed as `content_type` (503 if
  // max_queries run already).
  void StartStream(std::string content_type, StreamJob job);
  void SendStreamHeader();
  void QueueChunk(std::string_view data);

 public:
  void WatchForHangUp();

 private:
  Server::Impl& server_;
  Connection& connection_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  Target target_;
  log::Topic* topic_ = nullptr;  // of the partition found
  bool websocket_ = false;       // the upgrade was answered
  bool keep_alive_ = false;
  bool requests_done_ = false;  // a request was read and its answer is (being) written
  bool close_after_write_ = false;
  std::array<char, 64> hang_up_buffer_{};
  std::shared_ptr<BodyStream> stream_;  // a streamed answer's
  std::string stream_content_type_;
  bool stream_header_sent_ = false;
};

// One client connection: the socket, bytes out (control frames and HTTP answers first, then a
// subscriber's data), WebSocket frames in, the closing handshake and the timeouts. What a
// request asks is HttpRequests', then a Subscriber's or a Publisher's.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& server, tcp::socket socket)
      : server_(server),
        socket_(std::move(socket)),
        frames_(server.options().max_frame_bytes),
        accepted_(Clock::now()),
        last_rx_(accepted_),
        http_(server, *this) {}

  void Start(bool over_capacity) {
    if (over_capacity) {
      http_.Respond(503, "Service Unavailable",
                    Value::MakeObject({{"error", "too_many_connections"}}), false);
      ++server_.counters().refused;
      return;
    }
    http_.ReadRequest();
  }

  void Shutdown() {
    if (websocket_) {
      SendClose(CloseCode::kGoingAway, CloseReason("shutdown"));
    } else {
      Destroy();
    }
  }

  // Publish acknowledgements whose records are now durable. True while some still wait.
  bool FlushReplies() { return publisher_ && publisher_->FlushReplies(); }

  // The sweep: handshake and idle timeouts, pings, close grace.
  void Tick(Clock::time_point now);

  void Destroy() {
    if (destroyed_) return;
    destroyed_ = true;
    if (subscriber_) subscriber_->Leave();
    http_.Closed();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    server_.Forget(this);
  }

  // --- For HttpRequests, Subscriber and Publisher ----------------------------------------------

  tcp::socket& socket() { return socket_; }
  bool destroyed() const { return destroyed_; }
  bool writing() const { return writing_; }
  bool closing() const { return closing_; }
  void Received() { last_rx_ = Clock::now(); }

  // The upgrade is answered: `early` (frames the client sent right after its request) is parsed
  // first, then frames are read from the socket.
  void BecomeWebSocket(std::string_view early) {
    websocket_ = true;
    frames_.Feed(early);
    ReadFrames();
  }
  Subscriber& StartSubscriber() {
    subscriber_ = std::make_unique<Subscriber>(server_, *this);
    return *subscriber_;
  }
  void StartPublisher(log::Partition* partition, bool http) {
    publisher_ =
        partition ? std::make_unique<Publisher>(server_, *this, *partition, http) : nullptr;
  }
  HttpRequests& http() { return http_; }
  Publisher& publisher() { return *publisher_; }

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
    if (subscriber_) subscriber_->Leave();
    Pump();
  }

  // Handles the complete frames received, those that came with the upgrade request included.
  void TakeFrames();

  // Starts a write of everything queued (control frames and HTTP first, then data), unless one
  // is in flight.
  void Pump();

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

 private:
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

  void OnProtocolError();
  void OnMessage(ClientMessage& message);

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

  void OnWritten(beast::error_code ec);

  Server::Impl& server_;
  tcp::socket socket_;
  bool websocket_ = false;
  bool destroyed_ = false;
  bool lingering_ = false;  // an HTTP answer is out; waiting for the client to close

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
  std::vector<asio::const_buffer> buffers_;
  bool writing_ = false;
  bool closing_ = false;      // a close is decided: no more data
  bool close_sent_ = false;   // the close frame is written or being written
  bool peer_closed_ = false;  // the peer's close frame arrived
  CloseCode close_code_ = CloseCode::kNormal;
  std::string close_reason_;
  Clock::time_point closing_since_;

  // What the requests asked for.
  HttpRequests http_;
  std::unique_ptr<Subscriber> subscriber_;
  std::unique_ptr<Publisher> publisher_;
};

// --- Connection ------------------------------------------------------------------------------

void Connection::TakeFrames() {
  ClientMessage message;
  while (!destroyed_ && !protocol_error_) {
    const FrameParser::Result result = frames_.Next(&message);
    if (result == FrameParser::Result::kNeedMore) break;
    if (result == FrameParser::Result::kError) {
      OnProtocolError();
      return;
    }
    OnMessage(message);
  }
}

// Fails the connection (RFC 6455 7.1.7): the close frame, then our end of the TCP connection,
// without waiting for the peer's close frame.
void Connection::OnProtocolError() {
  protocol_error_ = true;
  if (close_sent_ && !writing_) {
    EndSending();
  } else if (frames_.error_code() == CloseCode::kTooBig) {
    SendClose(
        CloseCode::kTooBig,
        CloseReason("too_big", {{"max", static_cast<int64_t>(server_.options().max_frame_bytes)}}));
  } else {
    SendClose(frames_.error_code(), CloseReason("protocol", {{"detail", frames_.error_reason()}}));
  }
}

void Connection::OnMessage(ClientMessage& message) {
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
      if (subscriber_) {
        SendClose(CloseCode::kUnsupportedData, CloseReason("subscriber_sent_data"));
      } else if (message.opcode == Opcode::kBinary) {
        SendClose(CloseCode::kUnsupportedData, CloseReason("binary"));
      } else if (publisher_) {
        publisher_->Publish(message.payload);
      }
      return;
    case Opcode::kContinuation:
      return;
  }
}

void Connection::Pump() {
  if (destroyed_ || writing_) return;
  if (subscriber_ && subscriber_->slow() && !closing_) {
    SendClose(CloseCode::kTooSlow,
              CloseReason("too_slow", {{"last", subscriber_->last_written()}}));
    return;
  }
  buffers_.clear();
  size_t bytes = 0;
  while (!queued_.empty() && bytes < kMaxWriteBytes) {
    writing_owned_.push_back(std::move(queued_.front()));
    queued_.pop_front();
    bytes += writing_owned_.back().size();
  }
  for (const std::string& owned : writing_owned_) buffers_.emplace_back(owned.data(), owned.size());
  if (queued_.empty() && subscriber_) subscriber_->TakeData(buffers_, bytes);
  // The close frame goes after the acknowledgements of the frames before it.
  if (closing_ && !close_sent_ && queued_.empty() && (!publisher_ || publisher_->idle())) {
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

void Connection::OnWritten(beast::error_code ec) {
  writing_ = false;
  if (destroyed_) return;
  if (ec) {
    Destroy();
    return;
  }
  if (subscriber_) subscriber_->Written();
  size_t sent = 0;
  for (const std::string& owned : writing_owned_) sent += owned.size();
  http_.Sent(sent);
  writing_owned_.clear();
  if (close_sent_ && (peer_closed_ || !websocket_)) {
    Destroy();
    return;
  }
  if (close_sent_ && protocol_error_) {
    EndSending();
    return;
  }
  if (!websocket_ && http_.Written(queued_.empty(), !publisher_ || publisher_->idle())) return;
  Pump();
}

void Connection::Tick(Clock::time_point now) {
  const ServerOptions& options = server_.options();
  if (closing_ || lingering_) {
    if (now - closing_since_ > kCloseGrace) Destroy();
    return;
  }
  if (!websocket_) {
    if (!http_.answering() && now - last_rx_ > options.handshake_timeout) Destroy();
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

// --- Subscriber ------------------------------------------------------------------------------

void Subscriber::Start(log::Partition& partition, const Target& target) {
  const ServerOptions& options = server_.options();
  Feed& feed = server_.FeedFor(partition);
  if (feed.subscribers >= options.max_subscribers) {
    if (feed.subscribers == 0) server_.ReleaseFeed(feed);
    connection_.RefuseWebSocket(
        CloseCode::kTooManySubscribers,
        CloseReason("too_many_subscribers", {{"max", options.max_subscribers}}));
    return;
  }
  // Counted from here, so that the poll (which may close slow subscribers) keeps the feed.
  ++feed.subscribers;
  server_.CatchUp(feed);
  const int64_t first = partition.FirstOffset().value();
  const int64_t next = feed.head;
  const int64_t min_replay = std::max(first, next - options.max_replay);
  const std::optional<ArchiveExtent> archive =
      server_.ArchiveOf(target.topic, static_cast<int32_t>(target.partition));
  int64_t start = next;
  bool catch_up = false;
  if (target.start.kind == StartOffset::Kind::kEarliest) {
    start = min_replay;
  } else if (target.start.kind == StartOffset::Kind::kAt) {
    start = target.start.offset;
    // Below the log's reach (evicted or too old) and in the archive: a catch-up.
    catch_up = archive && start < min_replay && start >= archive->first && start < archive->end;
    if (auto refusal = catch_up
                           ? std::nullopt
                           : RefuseStart(start, first, next, min_replay,
                                         archive ? std::optional(archive->first) : std::nullopt)) {
      if (--feed.subscribers == 0) server_.ReleaseFeed(feed);
      connection_.RefuseWebSocket(refusal->first, refusal->second);
      return;
    }
  }
  feed_ = &feed;
  topic_ = target.topic;
  ++server_.counters().subscribers;
  written_end_ = start;
  last_written_ = start - 1;
  connection_.QueueFrame(
      Opcode::kText,
      GreetingJson({.topic = target.topic,
                    .partition = target.partition,
                    .first = first,
                    .next = next,
                    .start = start,
                    .max_replay = options.max_replay,
                    .max_backlog = options.max_backlog,
                    .archive_first = archive ? std::optional(archive->first) : std::nullopt}));
  if (catch_up) {
    CatchUpFrom(start);
  } else if (start == feed.head) {
    JoinLive();
  } else {
    replay_.emplace(partition, Offset(start));
  }
  connection_.Pump();
}

std::optional<std::pair<CloseCode, std::string>> Subscriber::RefuseStart(
    int64_t n, int64_t first, int64_t next, int64_t min_replay,
    std::optional<int64_t> archive_first) {
  if (first == next && n != next) {
    return std::pair(CloseCode::kEmpty, CloseReason("empty", {{"offset", n}, {"next", next}}));
  }
  if (n > next) {
    return std::pair(CloseCode::kAhead, CloseReason("ahead", {{"offset", n}, {"next", next}}));
  }
  if (n < first) {
    if (archive_first) {
      return std::pair(
          CloseCode::kEvicted,
          CloseReason("evicted",
                      {{"offset", n}, {"first", first}, {"archive_first", *archive_first}}));
    }
    return std::pair(CloseCode::kEvicted,
                     CloseReason("evicted", {{"offset", n}, {"first", first}}));
  }
  if (n < min_replay) {
    return std::pair(CloseCode::kTooOld,
                     CloseReason("too_old", {{"offset", n}, {"min", min_replay}}));
  }
  return std::nullopt;
}

void Subscriber::JoinLive() {
  replay_.reset();
  live_ = true;
  next_seq_ = feed_->head_seq;
  feed_->live.push_back(this);
}

void Subscriber::Leave() {
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
  CancelCatchUp();
  if (feed.subscribers == 0) server_.ReleaseFeed(feed);
}

void Subscriber::OnBatch() { connection_.Pump(); }

void Subscriber::CloseTooSlow() {
  ++server_.counters().too_slow;
  Leave();
  slow_ = true;  // the close frame is made once the write in flight is done (its `last`)
  connection_.Pump();
}

bool Subscriber::WantsMore(uint64_t head_seq) const {
  return !connection_.writing() && next_seq_ == head_seq;
}

bool Subscriber::TakeData(std::vector<asio::const_buffer>& buffers, size_t& bytes) {
  if (!feed_ || connection_.closing() || slow_) return false;
  if (catch_up_) return TakeArchive(buffers, bytes);
  if (!live_) {
    if (written_end_ != feed_->head) return TakeReplay(buffers, bytes);
    JoinLive();
  }
  return TakeLive(buffers, bytes);
}

// Up to kMaxWriteBytes per write: fewer rounds through the socket for a long replay.
bool Subscriber::TakeReplay(std::vector<asio::const_buffer>& buffers, size_t& bytes) {
  bool any = false;
  while (bytes < kMaxWriteBytes && replay_->position().value() < feed_->head) {
    auto records = replay_->Next(kBatchRecords);
    if (!records.ok()) {
      if (any) break;  // what is taken goes out first; the error comes with the next take
      const bool evicted = records.status().code() == StatusCode::kOutOfRange;
      if (evicted && written_end_ > catch_up_from_) {
        // Retention went past us meanwhile (the archive grew): the archive has it.
        std::optional<ArchiveExtent> archive =
            server_.ArchiveOf(topic_, feed_->partition.id().value());
        if (archive && archive->first <= written_end_ && written_end_ < archive->end) {
          CatchUpFrom(written_end_);
          return TakeArchive(buffers, bytes);
        }
      }
      const int64_t first = feed_->partition.FirstOffset().value();
      connection_.SendClose(
          evicted ? CloseCode::kEvicted : CloseCode::kServerError,
          evicted ? CloseReason("evicted", {{"offset", written_end_}, {"first", first}})
                  : CloseReason("storage"));
      return false;
    }
    auto span = *records;
    size_t n = 0;
    while (n < span.size() && span[n].offset.value() < feed_->head) ++n;
    if (n == 0) break;  // the feed has not read that far: the next poll will
    replay_->Seek(Offset(span[0].offset.value() + static_cast<int64_t>(n)));
    auto batch = std::make_shared<EncodedBatch>(Encode<log::StoredRecord>(span.first(n)));
    buffers.emplace_back(batch->bytes.data(), batch->bytes.size());
    bytes += batch->bytes.size();
    in_flight_.push_back(std::move(batch));
    any = true;
  }
  return any;
}

bool Subscriber::TakeLive(std::vector<asio::const_buffer>& buffers, size_t& bytes) {
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

void Subscriber::Written() {
  for (const BatchPtr& batch : in_flight_) {
    server_.counters().delivered += batch->count;
    written_end_ = batch->end();
  }
  last_written_ = written_end_ - 1;
  in_flight_.clear();
  if (archive_in_flight_ > 0 && catch_up_) {
    {
      std::lock_guard lock(catch_up_->mu);
      catch_up_->outstanding -= archive_in_flight_;
    }
    catch_up_->taken.notify_all();
  }
  archive_in_flight_ = 0;
}

void Subscriber::CatchUpFrom(int64_t from) {
  replay_.reset();
  catch_up_from_ = from;
  catch_up_ = std::make_shared<ArchiveCatchUp>();
  catch_up_->topic = topic_;
  catch_up_->partition = feed_->partition.id().value();
  catch_up_->from = from;
  catch_up_->connection = connection_.weak_from_this();
  server_.StartCatchUp(catch_up_);
}

void Subscriber::CancelCatchUp() {
  if (!catch_up_) return;
  {
    std::lock_guard lock(catch_up_->mu);
    catch_up_->cancelled = true;
  }
  catch_up_->taken.notify_all();
  catch_up_.reset();
  archive_in_flight_ = 0;
}

bool Subscriber::TakeArchive(std::vector<asio::const_buffer>& buffers, size_t& bytes) {
  bool any = false;
  bool done = false;
  {
    std::lock_guard lock(catch_up_->mu);
    while (!catch_up_->ready.empty() && bytes < kMaxWriteBytes) {
      BatchPtr batch = std::move(catch_up_->ready.front());
      catch_up_->ready.pop_front();
      buffers.emplace_back(batch->bytes.data(), batch->bytes.size());
      bytes += batch->bytes.size();
      in_flight_.push_back(std::move(batch));
      ++archive_in_flight_;
      any = true;
    }
    done = catch_up_->done && catch_up_->ready.empty();
  }
  if (any || !done) return any;  // more when the reader posts it
  return EndCatchUp(buffers, bytes);
}

bool Subscriber::EndCatchUp(std::vector<asio::const_buffer>& buffers, size_t& bytes) {
  const Status status = catch_up_->status;
  catch_up_.reset();
  if (!status.ok()) {
    std::fprintf(stderr, "weir serve: catch-up of %s partition %d from offset %lld failed: %s\n",
                 topic_.c_str(), feed_->partition.id().value(),
                 static_cast<long long>(written_end_), status.ToString().c_str());
    connection_.SendClose(CloseCode::kArchiveUnreadable,
                          CloseReason("archive_unreadable", {{"offset", written_end_}}));
    return false;
  }
  // The log from here: it holds every record the archive lacked when the read ended (the
  // retention floor), unless the archive grew and retention went on meanwhile, in which case
  // TakeReplay catches up through the archive again.
  if (written_end_ >= feed_->head) {
    JoinLive();
    return TakeLive(buffers, bytes);
  }
  replay_.emplace(feed_->partition, Offset(written_end_));
  return TakeReplay(buffers, bytes);
}

// --- Publisher -------------------------------------------------------------------------------

Value Publisher::Error(const Reply& reply, std::string_view error,
                       std::initializer_list<Value::Member> members) const {
  Value body = Value::MakeObject({{"error", error}});
  if (!http_) body.Set("seq", static_cast<int64_t>(reply.seq));
  for (const Value::Member& member : members) body.as_object().push_back(member);
  return body;
}

void Publisher::Publish(std::string_view body) {
  Reply reply{.seq = seq_++};
  auto values = SplitPublishBody(body);
  if (auto* error = std::get_if<BodyError>(&values)) {
    reply.error = Error(reply, "not_json", {{"line", error->line}, {"detail", error->detail}});
    reply.http_status = 400;
  } else if (std::get<0>(values).empty()) {
    reply.error = Error(reply, "empty");
    reply.http_status = 400;
  } else {
    const auto& list = std::get<0>(values);
    builder_.Clear();
    const EventTime now(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
    for (std::string_view value : list) builder_.AddRaw(now, KeySerde::kNull, {}, value);
    auto first = partition_.Append(builder_, log::Durability::kFlushSoon);
    if (!first.ok() && first.status().code() == StatusCode::kFailedPrecondition) {
      // Claimed by a pipeline since the upgrade.
      reply.error = Error(reply, "not_writable");
      reply.http_status = 409;
    } else if (!first.ok()) {
      reply.error = Error(reply, "storage", {{"detail", first.status().ToString()}});
      reply.http_status = 503;
    } else {
      reply.first = first->value();
      reply.count = static_cast<int64_t>(list.size());
      server_.counters().published += reply.count;
      server_.AwaitDurability(&connection_);
    }
  }
  replies_.push_back(std::move(reply));
  FlushReplies();
}

bool Publisher::FlushReplies() {
  bool queued = false;
  while (!replies_.empty()) {
    const Reply& reply = replies_.front();
    if (reply.error) {
      Answer(reply, *reply.error);
    } else if (partition_.DurableEnd().value() < reply.first + reply.count) {
      break;
    } else if (http_) {
      Answer(reply, Value::MakeObject({{"first", reply.first}, {"count", reply.count}}));
    } else {
      Answer(reply, Value::MakeObject({{"ack", static_cast<int64_t>(reply.seq)},
                                       {"first", reply.first},
                                       {"count", reply.count}}));
    }
    replies_.pop_front();
    queued = true;
  }
  if (queued) connection_.Pump();
  return !replies_.empty();
}

void Publisher::Answer(const Reply& reply, const Value& body) {
  if (!http_) {
    connection_.QueueFrame(Opcode::kText, body.ToJson());
    return;
  }
  const int status = reply.http_status;
  const std::string_view reason = status == 200   ? "OK"
                                  : status == 409 ? "Conflict"
                                  : status == 503 ? "Service Unavailable"
                                                  : "Bad Request";
  connection_.http().QueueAnswer(status, reason, body);
}

// --- HttpRequests ----------------------------------------------------------------------------

namespace {

Value ErrorJson(std::string_view error) { return Value::MakeObject({{"error", error}}); }

}  // namespace

void HttpRequests::ReadRequest() {
  parser_.emplace();
  parser_->header_limit(16 << 10);
  parser_->body_limit(server_.options().max_frame_bytes);
  http::async_read_header(connection_.socket(), buffer_, *parser_,
                          [self = connection_.shared_from_this()](beast::error_code ec, size_t) {
                            self->http().OnHeader(ec);
                          });
}

// A client that sent `Expect: 100-continue` (curl, for a body above 1 KiB) waits for the 100
// before it sends the body; an oversize body was refused from its header already.
void HttpRequests::OnHeader(beast::error_code ec) {
  if (connection_.destroyed()) return;
  if (ec || parser_->is_done()) {
    OnRequest(ec);
    return;
  }
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
    connection_.Queue("HTTP/1.1 100 Continue\r\n\r\n");
    connection_.Pump();
  }
  http::async_read(connection_.socket(), buffer_, *parser_,
                   [self = connection_.shared_from_this()](beast::error_code ec, size_t) {
                     self->http().OnRequest(ec);
                   });
}

void HttpRequests::OnRequest(beast::error_code ec) {
  if (connection_.destroyed()) return;
  connection_.Received();
  if (ec == http::error::body_limit) {
    Refuse(413, "Payload Too Large",
           Value::MakeObject({{"error", "too_big"},
                              {"max", static_cast<int64_t>(server_.options().max_frame_bytes)}}));
    return;
  }
  if (ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
      connection_.Destroy();
    } else {
      Refuse(400, "Bad Request",
             Value::MakeObject({{"reason", "bad_request"}, {"detail", ec.message()}}));
    }
    return;
  }
  request_ = parser_->release();
  requests_done_ = true;
  auto parsed = ParseTarget(std::string_view(request_.target().data(), request_.target().size()));
  const bool upgrade = beast::websocket::is_upgrade(request_);
  if (auto* error = std::get_if<TargetError>(&parsed)) {
    OnBadTarget(*error, upgrade);
    return;
  }
  target_ = std::get<Target>(std::move(parsed));
  if (upgrade) {
    OnUpgrade();
  } else {
    OnPlainRequest();
  }
}

void HttpRequests::OnBadTarget(const TargetError& error, bool upgrade) {
  const bool not_found = error.kind == TargetError::Kind::kNotFound;
  if (upgrade && Upgrade()) {
    connection_.RefuseWebSocket(not_found ? CloseCode::kNotFound : CloseCode::kBadRequest,
                                not_found ? CloseReason("not_found", {{"partitions", 0}})
                                          : CloseReason("bad_request", {{"param", error.param}}));
    connection_.TakeFrames();
  } else if (!upgrade) {
    Refuse(not_found ? 404 : 400, not_found ? "Not Found" : "Bad Request",
           not_found ? ErrorJson("not_found")
                     : Value::MakeObject({{"error", "bad_request"}, {"param", error.param}}));
  }
}

void HttpRequests::OnUpgrade() {
  if (target_.endpoint != Endpoint::kStreams && target_.endpoint != Endpoint::kPublish) {
    Refuse(405, "Method Not Allowed", ErrorJson("not_a_websocket_endpoint"));
    return;
  }
  if (!Upgrade()) return;
  if (target_.endpoint == Endpoint::kStreams) {
    Subscribe();
  } else {
    connection_.StartPublisher(PublishPartition(), /*http=*/false);
    connection_.Pump();  // the 101 (a refusal has sent it already)
  }
  connection_.TakeFrames();
}

void HttpRequests::OnPlainRequest() {
  switch (target_.endpoint) {
    case Endpoint::kHealth:
      Respond(200, "OK", Value::MakeObject({{"status", "ok"}}), request_.keep_alive());
      return;
    case Endpoint::kTopics:
      Respond(200, "OK", TopicsJson(), request_.keep_alive());
      return;
    case Endpoint::kPublish:
      if (request_.method() != http::verb::post) {
        Refuse(405, "Method Not Allowed", ErrorJson("post_to_publish"));
        return;
      }
      PublishHttp();
      return;
    case Endpoint::kStreams:
      Refuse(426, "Upgrade Required", ErrorJson("websocket_upgrade_required"));
      return;
    case Endpoint::kQuery:
      Query();
      return;
    case Endpoint::kViews:
      Views();
      return;
  }
}

Value HttpRequests::TopicsJson() {
  Value::Array topics;
  for (const std::string& name : server_.log().ListTopics()) {
    auto topic = server_.log().GetTopic(name);
    if (!topic.ok()) continue;
    Value::Array partitions;
    for (int32_t p = 0; p < (*topic)->num_partitions(); ++p) {
      log::Partition& partition = (*topic)->partition(PartitionId(p));
      partitions.push_back(Value::MakeObject({{"partition", p},
                                              {"first", partition.FirstOffset().value()},
                                              {"next", partition.NextOffset().value()}}));
    }
    topics.push_back(Value::MakeObject({{"topic", name}, {"partitions", std::move(partitions)}}));
  }
  return Value(std::move(topics));
}

void HttpRequests::QueueAnswer(int status, std::string_view reason, const Value& body) {
  const std::string json = body.ToJson();
  connection_.Queue(HttpResponse(status, reason, json, keep_alive_));
  close_after_write_ = !keep_alive_;
}

void HttpRequests::Respond(int status, std::string_view reason, const Value& body,
                           bool keep_alive) {
  keep_alive_ = keep_alive;
  QueueAnswer(status, reason, body);
  connection_.Pump();
}

void HttpRequests::Refuse(int status, std::string_view reason, const Value& body) {
  ++server_.counters().refused;
  Respond(status, reason, body, false);
}

bool HttpRequests::Written(bool queue_empty, bool replies_done) {
  if (close_after_write_ && queue_empty) {
    connection_.Linger();
    return true;
  }
  if (queue_empty && requests_done_ && keep_alive_ && replies_done) {
    requests_done_ = false;
    ReadRequest();
    return true;
  }
  return false;
}

bool HttpRequests::Upgrade() {
  auto key = request_[http::field::sec_websocket_key];
  if (request_.method() != http::verb::get || key.empty() || key.size() > 64) {
    Refuse(400, "Bad Request", ErrorJson("bad_websocket_upgrade"));
    return false;
  }
  if (request_[http::field::sec_websocket_version] != "13") {
    ++server_.counters().refused;
    keep_alive_ = false;
    connection_.Queue(
        "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n");
    close_after_write_ = true;
    connection_.Pump();
    return false;
  }
  beast::websocket::detail::sec_ws_accept_type accept;
  beast::websocket::detail::make_sec_ws_accept(accept, key);
  connection_.Queue(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: " +
      std::string(accept.data(), accept.size()) + "\r\n\r\n");
  websocket_ = true;
  // Frames the client sent right after its request are already in the HTTP buffer.
  const auto data = buffer_.data();
  const std::string early(static_cast<const char*>(data.data()), data.size());
  buffer_.consume(buffer_.size());
  connection_.BecomeWebSocket(early);
  return true;
}

std::optional<std::string_view> HttpRequests::RequestToken() {
  if (target_.token) return std::string_view(*target_.token);
  auto header = request_[http::field::authorization];
  return BearerToken(std::string_view(header.data(), header.size()));
}

bool HttpRequests::Authorized(const std::string& expected) {
  if (expected.empty()) return true;
  auto given = RequestToken();
  return given && TokenMatches(*given, expected);
}

// A browser page from another site: its Origin names a host other than the one it asked. Any
// web page could otherwise publish to a server on the user's own machine.
bool HttpRequests::CrossOrigin() const {
  auto origin = request_[http::field::origin];
  if (origin.empty()) return false;
  std::string_view host(origin.data(), origin.size());
  const size_t scheme = host.find("://");
  if (scheme != std::string_view::npos) host.remove_prefix(scheme + 3);
  auto asked = request_[http::field::host];
  return host != std::string_view(asked.data(), asked.size());
}

log::Partition* HttpRequests::FindPartition() {
  auto topic = server_.log().GetTopic(target_.topic);
  if (!topic.ok()) {
    connection_.RefuseWebSocket(CloseCode::kNotFound,
                                CloseReason("not_found", {{"partitions", 0}}));
    return nullptr;
  }
  if (target_.partition >= (*topic)->num_partitions()) {
    connection_.RefuseWebSocket(
        CloseCode::kNotFound,
        CloseReason("not_found", {{"partitions", (*topic)->num_partitions()}}));
    return nullptr;
  }
  topic_ = *topic;
  return &(*topic)->partition(PartitionId(target_.partition));
}

void HttpRequests::Subscribe() {
  Subscriber& subscriber = connection_.StartSubscriber();
  if (!Authorized(server_.options().subscribe_token)) {
    connection_.RefuseWebSocket(CloseCode::kUnauthorized, CloseReason("unauthorized"));
    return;
  }
  if (log::Partition* partition = FindPartition()) subscriber.Start(*partition, target_);
}

log::Partition* HttpRequests::PublishPartition() {
  // A refusal: a close frame once upgraded, else an HTTP answer.
  auto refuse = [&](CloseCode code, std::string_view reason, int status,
                    std::string_view status_text) {
    if (websocket_) {
      connection_.RefuseWebSocket(code, CloseReason(reason));
    } else {
      Refuse(status, status_text, ErrorJson(reason));
    }
    return nullptr;
  };
  if (server_.options().publish_token.empty() && CrossOrigin()) {
    return refuse(CloseCode::kCrossOrigin, "cross_origin", 403, "Forbidden");
  }
  if (!Authorized(server_.options().publish_token)) {
    return refuse(CloseCode::kUnauthorized, "unauthorized", 401, "Unauthorized");
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
      Refuse(404, "Not Found", ErrorJson("not_found"));
    }
  }
  if (partition && !topic_->owner().empty()) {
    return refuse(CloseCode::kNotWritable, "not_writable", 409, "Conflict");
  }
  return partition;
}

void HttpRequests::PublishHttp() {
  log::Partition* partition = PublishPartition();
  if (!partition) return;
  keep_alive_ = request_.keep_alive();
  connection_.StartPublisher(partition, /*http=*/true);
  connection_.publisher().Publish(request_.body());
}

// --- Streamed answers: POST /query, GET /views --------------------------------------------------

namespace {

// {"error": MESSAGE, "code": STATUS CODE NAME}: a handler's failure.
Value FailureJson(const Status& status) {
  return Value::MakeObject({{"error", status.message()}, {"code", StatusCodeName(status.code())}});
}

std::string_view ContentTypeOf(std::string_view format) {
  if (format == "csv") return "text/csv; charset=utf-8; header=present";
  if (format == "table") return "text/plain; charset=utf-8";
  return "application/x-ndjson";
}

}  // namespace

void BodyStream::Write(std::string_view chunk) {
  if (chunk.empty()) return;
  std::unique_lock lock(mu_);
  if (!drained_.wait_for(lock, patience_, [&] { return closed_ || pending_ < kMaxPendingBytes; })) {
    // The client has not read for the idle timeout: it is gone, or too slow.
    closed_ = true;
    asio::post(io_, [connection = connection_] {
      if (auto c = connection.lock()) c->Destroy();
    });
  }
  if (closed_) return;
  buffer_.append(chunk);
  pending_ += chunk.size();
  if (!take_posted_) {
    take_posted_ = true;
    asio::post(io_, [connection = connection_] {
      if (auto c = connection.lock(); c && !c->destroyed()) c->http().OnStreamData();
    });
  }
}

std::string BodyStream::Take() {
  std::lock_guard lock(mu_);
  take_posted_ = false;
  return std::exchange(buffer_, {});
}

void BodyStream::Sent(size_t bytes) {
  {
    std::lock_guard lock(mu_);
    pending_ -= std::min(pending_, bytes);
  }
  drained_.notify_all();
}

bool BodyStream::closed() {
  std::lock_guard lock(mu_);
  return closed_;
}

void BodyStream::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    buffer_.clear();
  }
  drained_.notify_all();
}

bool HttpRequests::MayAsk(bool handled, http::verb method, std::string_view wrong_method) {
  if (!handled) {
    Refuse(404, "Not Found", ErrorJson("not_found"));
  } else if (request_.method() != method) {
    Refuse(405, "Method Not Allowed", ErrorJson(wrong_method));
  } else if (!Authorized(server_.options().subscribe_token)) {
    Refuse(401, "Unauthorized", ErrorJson("unauthorized"));
  } else {
    return true;
  }
  return false;
}

void HttpRequests::Query() {
  const ServerOptions& options = server_.options();
  if (!MayAsk(bool(options.query_handler), http::verb::post, "post_a_query")) return;
  auto parsed = ParseQueryBody(request_.body(), target_.format, options.max_query_time);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    Refuse(400, "Bad Request", ErrorJson(*error));
    return;
  }
  QueryRequest query = std::get<QueryRequest>(std::move(parsed));
  std::string content_type(ContentTypeOf(query.format));
  StartStream(std::move(content_type),
              [handler = options.query_handler, query = std::move(query)](
                  const BodyWriter& write, const std::function<bool()>& client_gone) {
                QueryRequest request = query;
                request.client_gone = client_gone;
                return handler(request, write);
              });
}

void HttpRequests::Views() {
  const ServerOptions& options = server_.options();
  if (!MayAsk(bool(options.views_handler), http::verb::get, "get_views")) return;
  StartStream("application/json", [handler = options.views_handler, view = target_.topic](
                                      const BodyWriter& write, const std::function<bool()>&) {
    return handler(view, write);
  });
}

void HttpRequests::StartStream(std::string content_type, StreamJob job) {
  const ServerOptions& options = server_.options();
  auto stream = std::make_shared<BodyStream>(server_.io(), connection_.weak_from_this(),
                                             options.idle_timeout);
  if (!server_.StartJob(stream, connection_.weak_from_this(), std::move(job))) {
    Refuse(503, "Service Unavailable",
           Value::MakeObject({{"error", "too_many_queries"}, {"max", options.max_queries}}));
    return;
  }
  stream_ = std::move(stream);
  stream_content_type_ = std::move(content_type);
  keep_alive_ = false;
  WatchForHangUp();
}

// Nothing more is read from a client whose answer streams, but a read stays posted, so that a
// client hanging up (EOF, reset) is seen at once, not at the next write: the connection is
// destroyed, which closes the stream, which the handler sees as client_gone.
void HttpRequests::WatchForHangUp() {
  connection_.socket().async_read_some(
      asio::buffer(hang_up_buffer_),
      [self = connection_.shared_from_this()](beast::error_code ec, size_t) {
        if (self->destroyed()) return;
        if (ec) {
          self->Destroy();
        } else {
          self->http().WatchForHangUp();  // bytes after the request: ignored
        }
      });
}

void HttpRequests::SendStreamHeader() {
  stream_header_sent_ = true;
  connection_.Queue("HTTP/1.1 200 OK\r\nContent-Type: " + stream_content_type_ +
                    "\r\nTransfer-Encoding: chunked\r\nTrailer: X-Weir-Error\r\n"
                    "Cache-Control: no-store\r\nConnection: close\r\n\r\n");
}

void HttpRequests::QueueChunk(std::string_view data) {
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string chunk(size, static_cast<size_t>(n));
  chunk.append(data);
  chunk.append("\r\n");
  connection_.Queue(std::move(chunk));
}

void HttpRequests::OnStreamData() {
  std::string data = stream_->Take();
  if (data.empty()) return;
  if (!stream_header_sent_) SendStreamHeader();
  QueueChunk(data);
  connection_.Pump();
}

void HttpRequests::OnStreamEnd(const Status& status) {
  if (connection_.destroyed()) return;
  std::string rest = stream_->Take();
  if (!status.ok() && !stream_header_sent_ && rest.empty()) {
    const bool not_found = status.code() == StatusCode::kNotFound;
    Refuse(not_found ? 404 : 400, not_found ? "Not Found" : "Bad Request", FailureJson(status));
    return;
  }
  if (!stream_header_sent_) SendStreamHeader();
  if (!rest.empty()) QueueChunk(rest);
  if (status.ok()) {
    connection_.Queue("0\r\n\r\n");
  } else {
    // After rows: a last line says why the answer stops there, and so does the trailer.
    const std::string error = FailureJson(status).ToJson();
    QueueChunk(error + "\n");
    connection_.Queue("0\r\nX-Weir-Error: " + error + "\r\n\r\n");
  }
  close_after_write_ = true;
  connection_.Pump();
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
    auto batch = std::make_shared<EncodedBatch>(Encode<log::StoredRecord>(*records));
    feed.head = batch->end();
    feed.ring.push_back(std::move(batch));
    ++feed.head_seq;
  }
  const bool progressed = !failed && !records->empty();
  std::vector<Subscriber*> slow;
  uint64_t min_seq = feed.head_seq;
  for (Subscriber* subscriber : feed.live) {
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
  std::vector<Subscriber*> live = feed.live;
  for (Subscriber* subscriber : slow) subscriber->CloseTooSlow();
  if (slow.size() == live.size()) return progressed;
  for (Subscriber* subscriber : live) {
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

bool Server::Impl::StartJob(std::shared_ptr<BodyStream> stream,
                            std::weak_ptr<Connection> connection, StreamJob job) {
  if (static_cast<int64_t>(jobs_.size()) >= options_.max_queries) return false;
  const uint64_t id = next_job_++;
  std::thread thread;
  try {
    thread = std::thread([this, id, stream = std::move(stream), connection = std::move(connection),
                          job = std::move(job)] {
      const BodyWriter write = [&stream](std::string_view chunk) { stream->Write(chunk); };
      const std::function<bool()> client_gone = [&stream] { return stream->closed(); };
      Status status;
      try {
        status = job(write, client_gone);
      } catch (const std::exception& e) {
        status = Status::Internal(std::string("query handler failed: ") + e.what());
      }
      asio::post(io_, [this, id, connection, status = std::move(status)] {
        auto it = jobs_.find(id);
        if (it != jobs_.end()) {
          it->second.join();  // it has posted this: its end is near
          jobs_.erase(it);
        }
        if (auto c = connection.lock(); c && !c->destroyed()) {
          c->http().OnStreamEnd(status);
        }
      });
    });
  } catch (const std::system_error&) {
    return false;  // no thread to be had: as busy as max_queries
  }
  jobs_.emplace(id, std::move(thread));
  return true;
}

std::optional<ArchiveExtent> Server::Impl::ArchiveOf(std::string_view topic,
                                                     int32_t partition) const {
  if (!options_.archive.extent || !options_.archive.read) return std::nullopt;
  return options_.archive.extent(topic, partition);
}

void Server::Impl::StartCatchUp(CatchUpPtr catch_up) {
  std::lock_guard lock(catch_up_mu_);
  if (stop_catch_ups_) return;  // shutting down: the connection is being closed
  catch_up_queue_.push_back(std::move(catch_up));
  if (static_cast<int>(catch_up_threads_.size()) < std::max(1, options_.max_catchups)) {
    try {
      catch_up_threads_.emplace_back([this] { CatchUpLoop(); });
    } catch (const std::system_error&) {
      // No thread to be had: the running ones take the queue in turn (there is at least one,
      // or the catch-up waits for the next that starts).
    }
  }
  catch_up_cv_.notify_one();
}

void Server::Impl::CatchUpLoop() {
  for (;;) {
    CatchUpPtr catch_up;
    {
      std::unique_lock lock(catch_up_mu_);
      catch_up_cv_.wait(lock, [&] { return stop_catch_ups_ || !catch_up_queue_.empty(); });
      if (stop_catch_ups_) return;
      catch_up = std::move(catch_up_queue_.front());
      catch_up_queue_.pop_front();
    }
    RunCatchUp(*catch_up);
    PostCatchUpNews(catch_up);
  }
}

void Server::Impl::RunCatchUp(ArchiveCatchUp& c) {
  // What a reader waits for: room for a chunk, the subscriber gone, or the server stopping.
  auto wait_for_room = [&](std::unique_lock<std::mutex>& lock) {
    while (c.outstanding >= 2 && !c.cancelled && !stop_catch_ups_) {
      c.taken.wait_for(lock, std::chrono::milliseconds(100));
    }
    return !c.cancelled && !stop_catch_ups_;
  };
  Status status;
  {
    std::unique_lock lock(c.mu);
    if (c.cancelled) status = Status::Cancelled("the subscriber left");
  }
  if (status.ok()) {
    status = options_.archive.read(
        c.topic, c.partition, c.from, std::max<size_t>(1, options_.catchup_chunk),
        [&](std::span<const ArchivedMessage> messages) {
          if (messages.empty()) return true;
          auto batch = std::make_shared<EncodedBatch>(Encode<ArchivedMessage>(messages));
          std::unique_lock lock(c.mu);
          if (!wait_for_room(lock)) return false;
          c.ready.push_back(std::move(batch));
          ++c.outstanding;
          lock.unlock();
          asio::post(io_, [this, weak = c.connection] {
            if (auto connection = weak.lock(); connection && !connection->destroyed()) {
              connection->Pump();
            }
          });
          return true;
        });
  }
  std::lock_guard lock(c.mu);
  c.done = true;
  c.status = std::move(status);
}

void Server::Impl::PostCatchUpNews(const CatchUpPtr& catch_up) {
  asio::post(io_, [weak = catch_up->connection] {
    if (auto connection = weak.lock(); connection && !connection->destroyed()) connection->Pump();
  });
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
                    [&](const Subscriber* s) { return s->WantsMore(feed.head_seq); })) {
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
  std::vector<std::thread> catch_up_threads;
  {
    std::lock_guard lock(catch_up_mu_);
    stop_catch_ups_ = true;
    catch_up_threads.swap(catch_up_threads_);  // none starts from here on
  }
  catch_up_cv_.notify_all();
  for (std::thread& thread : catch_up_threads) thread.join();  // each ends its read soon
  stop_watcher_ = true;
  if (watcher_.joinable()) watcher_.join();
  io_.stop();
  if (io_thread_.joinable()) io_thread_.join();
  // Their connections are closed: what they still write is dropped. A handler runs until it
  // returns (a query, at most its time limit).
  for (auto& [id, job] : jobs_) job.join();
  jobs_.clear();
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
