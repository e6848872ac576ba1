// weir::Subscription over Boost.Beast. The one translation unit of the client that includes
// Beast (it is slow to compile).
//
// Every network operation is asynchronous on a private io_context that runs only on the
// caller's thread, inside Open, Next and Close: Next pumps it until a message is ready, the
// deadline passes or the cursor file is due. A connection goes resolve -> connect -> handshake
// -> greeting -> frames; anything that ends it either reconnects (after a backoff timer) or fails
// the subscription for good. Handlers carry the generation of their connection and ignore
// themselves once a newer connection exists.
#include "weir/subscription.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket.hpp>
#include <random>
#include <utility>  // Before Asio: Boost 1.74 with GCC 12 in C++20 needs std::exchange early.

#include "client/cursor_file.h"
#include "client/stream_url.h"
#include "stream_protocol/stream_protocol.h"
#include "weir/value.h"

namespace weir {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using client::StartPosition;

// A log record can be larger than what the server accepts from publishers (pipelines write
// them); this only guards against a runaway peer.
constexpr uint64_t kMaxMessageBytes = 64ull << 20;
constexpr auto kCloseWait = std::chrono::seconds(1);

// What ends a connection: retry (after a backoff) or fail the subscription with `status`.
struct Ending {
  bool retry;
  Status status;
};

// What a close code means for the subscription (src/serve/README.md). A refusal is final; losing
// the connection (too_slow, shutdown, a moment of overload, a server error) is worth a
// reconnection.
Ending EndingOfClose(uint16_t code, const std::string& what) {
  using stream_protocol::CloseCode;
  switch (static_cast<CloseCode>(code)) {
    case CloseCode::kBadRequest:
      return {false, Status::InvalidArgument(what)};
    case CloseCode::kUnauthorized:
      return {false, Status::FailedPrecondition(what)};
    case CloseCode::kNotFound:
      return {false, Status::NotFound(what)};
    case CloseCode::kEmpty:
    case CloseCode::kEvicted:
    case CloseCode::kTooOld:
    case CloseCode::kAhead:
      return {false, Status::OutOfRange(what)};
    case CloseCode::kArchiveUnreadable:
      return {false, Status::IOError(what)};
    case CloseCode::kTooSlow:
    case CloseCode::kTooManySubscribers:
    case CloseCode::kNormal:
    case CloseCode::kGoingAway:
    case CloseCode::kAbnormal:
    case CloseCode::kServerError:
    case CloseCode::kServiceRestart:
    case CloseCode::kTryAgainLater:
    case CloseCode::kBadGateway:
      return {true, Status::Unavailable(what)};
    default:
      return {false, Status::Internal(what)};
  }
}

std::string Quote(std::string_view text) {
  constexpr size_t kMax = 200;
  std::string out(text.substr(0, kMax));
  if (text.size() > kMax) out += "...";
  return "'" + out + "'";
}

}  // namespace

struct Subscription::Impl {
  enum class Phase : uint8_t { kConnecting, kStreaming, kBackoff, kFailed, kClosed };

  // First: every I/O object below uses it and must be destroyed before it.
  net::io_context ioc;
  SubscriptionOptions options;
  client::StreamUrl url;
  std::string token;
  StartPosition start;    // of the first connection
  std::string start_why;  // where the first connection's start came from, for messages

  Phase phase = Phase::kConnecting;
  Status error;  // kFailed
  bool greeted_once = false;
  uint64_t generation = 0;
  bool attempt_timed_out = false;
  int attempts_in_row = 0;
  int64_t reconnect_count = 0;
  std::minstd_rand jitter{static_cast<uint32_t>(Clock::now().time_since_epoch().count())};

  tcp::resolver resolver{ioc};
  net::steady_timer attempt_timer{ioc};
  net::steady_timer backoff_timer{ioc};
  std::optional<websocket::stream<tcp::socket>> ws;
  websocket::response_type upgrade_response;
  beast::flat_buffer buffer;
  bool reading = false;
  bool close_done = false;

  SubscriptionGreeting greeting;
  int64_t expected = -1;  // the next offset; known from the first greeting on
  std::optional<SubscriptionMessage> ready;
  std::optional<Offset> returned;  // by Next, not yet handled
  std::optional<Offset> handled;
  std::optional<Offset> written;  // to the cursor file
  Clock::time_point cursor_written_at{};
  bool cursor_given_up = false;  // after a failure, the cursor was written (or failed) once

  // The URL and where this connection starts, for messages.
  std::string Where() const {
    if (expected >= 0) return url.ToString() + " from offset " + std::to_string(expected);
    if (start.kind == StartPosition::Kind::kAt) {
      return url.ToString() + " from offset " + std::to_string(start.offset);
    }
    return url.ToString() + " from " + start.QueryValue();
  }

  // ---- the connection ----------------------------------------------------------------------

  void StartConnect() {
    const uint64_t g = ++generation;
    phase = Phase::kConnecting;
    attempt_timed_out = false;
    reading = false;
    ready.reset();
    ws.reset();
    attempt_timer.expires_after(options.connect_timeout);
    attempt_timer.async_wait([this, g](beast::error_code ec) {
      if (ec || g != generation || phase != Phase::kConnecting) return;
      attempt_timed_out = true;
      resolver.cancel();
      if (ws) {
        beast::error_code ignored;
        ws->next_layer().close(ignored);
      }
    });
    resolver.async_resolve(url.host, std::to_string(url.port),
                           [this, g](beast::error_code ec, tcp::resolver::results_type results) {
                             if (g != generation) return;
                             if (ec) return Lost("resolving " + url.host, ec);
                             ws.emplace(ioc);
                             net::async_connect(
                                 ws->next_layer(), results,
                                 [this, g](beast::error_code ec, const tcp::endpoint&) {
                                   if (g != generation) return;
                                   if (ec) return Lost("connecting", ec);
                                   Handshake(g);
                                 });
                           });
  }

  void Handshake(uint64_t g) {
    websocket::stream_base::timeout timeout;
    timeout.handshake_timeout = options.connect_timeout;
    timeout.idle_timeout =
        options.idle_timeout.count() > 0
            ? std::chrono::duration_cast<websocket::stream_base::duration>(options.idle_timeout)
            : websocket::stream_base::none();
    timeout.keep_alive_pings = options.idle_timeout.count() > 0;
    ws->set_option(timeout);
    ws->set_option(websocket::stream_base::decorator([this](websocket::request_type& req) {
      req.set(beast::http::field::user_agent, "weir-subscription");
      if (!token.empty()) req.set(beast::http::field::authorization, "Bearer " + token);
    }));
    ws->read_message_max(kMaxMessageBytes);
    upgrade_response = {};
    const StartPosition at =
        expected >= 0 ? StartPosition{StartPosition::Kind::kAt, expected} : start;
    ws->async_handshake(upgrade_response, url.HostHeader(), client::StreamTarget(url, at),
                        [this, g](beast::error_code ec) {
                          if (g != generation) return;
                          if (ec == websocket::error::upgrade_declined) return Declined();
                          if (ec) return Lost("the WebSocket handshake", ec);
                          buffer.clear();
                          ws->async_read(buffer, [this, g](beast::error_code ec, size_t) {
                            if (g != generation) return;
                            if (ec) return ReadFailed("the greeting", ec);
                            Greeted();
                          });
                        });
  }

  void Declined() {
    const unsigned status = upgrade_response.result_int();
    std::string what = "subscription to " + Where() +
                       ": the server answered the upgrade with HTTP " + std::to_string(status) +
                       " " + Quote(upgrade_response.body());
    if (status >= 500) return End({true, Status::Unavailable(what)});
    if (status == 404) return End({false, Status::NotFound(what)});
    if (status == 401 || status == 403) return End({false, Status::FailedPrecondition(what)});
    End({false, Status::InvalidArgument(what)});
  }

  void Greeted() {
    std::string_view text(static_cast<const char*>(buffer.cdata().data()), buffer.size());
    Status s = ParseGreeting(text);
    if (!s.ok()) return End({false, std::move(s)});
    attempt_timer.cancel();
    phase = Phase::kStreaming;
    if (greeted_once) ++reconnect_count;
    greeted_once = true;
    attempts_in_row = 0;
    expected = greeting.start.value();
    StartRead();
  }

  Status ParseGreeting(std::string_view text) {
    auto bad = [&](std::string_view why) {
      return Status::Corruption("subscription to " + Where() + ": the greeting " + Quote(text) +
                                " " + std::string(why));
    };
    if (!ws->got_text()) return bad("is a binary frame");
    auto parsed = stream_protocol::ParseGreeting(text);
    if (!parsed.ok()) return bad(parsed.status().message());
    if (parsed->topic != url.topic || parsed->partition != url.partition) {
      return bad("is for another topic or partition");
    }
    const int64_t asked = expected >= 0                            ? expected
                          : start.kind == StartPosition::Kind::kAt ? start.offset
                                                                   : -1;
    if (asked >= 0 && parsed->start != asked) {
      return bad("starts at " + std::to_string(parsed->start) + ", not at the offset asked for, " +
                 std::to_string(asked));
    }
    greeting.topic = std::move(parsed->topic);
    greeting.partition = PartitionId(static_cast<int32_t>(parsed->partition));
    greeting.first = Offset(parsed->first);
    greeting.next = Offset(parsed->next);
    greeting.start = Offset(parsed->start);
    greeting.max_replay = parsed->max_replay;
    greeting.max_backlog = parsed->max_backlog;
    greeting.archive_first =
        parsed->archive_first ? std::optional(Offset(*parsed->archive_first)) : std::nullopt;
    return Status::OK();
  }

  void StartRead() {
    if (phase != Phase::kStreaming || reading || ready) return;
    reading = true;
    buffer.clear();
    const uint64_t g = generation;
    ws->async_read(buffer, [this, g](beast::error_code ec, size_t) {
      if (g != generation || phase != Phase::kStreaming) return;
      reading = false;
      if (ec) return ReadFailed("reading", ec);
      std::string_view frame(static_cast<const char*>(buffer.cdata().data()), buffer.size());
      std::optional<stream_protocol::StreamMessage> message;
      if (ws->got_text()) message = stream_protocol::ParseMessagePayload(frame);
      if (!message) {
        return End(
            {false, Status::Corruption("subscription to " + Where() +
                                       ": a frame that is not [OFFSET,MESSAGE]: " + Quote(frame))});
      }
      const int64_t offset = message->offset;
      if (offset != expected) {
        std::string what = offset > expected
                               ? "a gap: " + std::to_string(offset - expected) + " missing"
                               : "a duplicate or an offset out of order";
        return End(
            {false, Status::Corruption("subscription to " + url.ToString() + ": expected offset " +
                                       std::to_string(expected) + ", the server sent " +
                                       std::to_string(offset) + " (" + what + ")")});
      }
      ++expected;
      ready = SubscriptionMessage{Offset(offset), std::string(message->value)};
    });
  }

  // A read that failed: a close frame from the server (its code says what to do) or a lost
  // connection.
  void ReadFailed(std::string_view during, beast::error_code ec) {
    if (ec == websocket::error::closed) {
      const websocket::close_reason& reason = ws->reason();
      std::string what =
          "subscription to " + Where() + (phase == Phase::kConnecting ? " refused" : " closed") +
          " by the server: " + std::string(reason.reason.data(), reason.reason.size()) +
          " (close " + std::to_string(reason.code) + ")";
      if (!greeted_once && start_why.size() > 0) what += "; " + start_why;
      return End(EndingOfClose(reason.code, what));
    }
    Lost(during, ec);
  }

  void Lost(std::string_view during, beast::error_code ec) {
    std::string what =
        "subscription to " + Where() + ": " + std::string(during) + ": " +
        (attempt_timed_out
             ? "timed out after " + std::to_string(options.connect_timeout.count()) + " ms"
             : ec.message());
    End({true, Status::Unavailable(std::move(what))});
  }

  // Ends the current connection: reconnects after a backoff, or fails for good.
  void End(Ending ending) {
    ++generation;  // whatever is still pending belongs to a connection that is over
    attempt_timer.cancel();
    reading = false;
    if (ws) {
      beast::error_code ignored;
      ws->next_layer().close(ignored);
    }
    // Open does not retry: the first connection works or says why.
    if (!ending.retry || !greeted_once) return Fail(std::move(ending.status));
    if (options.max_reconnects >= 0 && attempts_in_row >= options.max_reconnects) {
      return Fail(Status::Unavailable(
          "gave up after " + std::to_string(attempts_in_row) +
          " reconnection attempts in a row; the last: " + ending.status.message()));
    }
    auto delay = options.initial_backoff;
    for (int i = 0; i < attempts_in_row && delay < options.max_backoff; ++i) delay *= 2;
    delay = std::min(delay, options.max_backoff);
    std::uniform_real_distribution<double> spread(0.8, 1.2);
    delay = std::chrono::milliseconds(static_cast<int64_t>(delay.count() * spread(jitter)));
    ++attempts_in_row;
    phase = Phase::kBackoff;
    const uint64_t g = generation;
    backoff_timer.expires_after(delay);
    backoff_timer.async_wait([this, g](beast::error_code ec) {
      if (!ec && g == generation && phase == Phase::kBackoff) StartConnect();
    });
  }

  void Fail(Status status) {
    phase = Phase::kFailed;
    error = std::move(status);
  }

  // ---- pumping -----------------------------------------------------------------------------

  // Runs handlers until `until`, returning after the first one. Never busy-waits: there is always
  // an operation pending while connecting, streaming or backing off.
  Status PumpOnce(Clock::time_point until) {
    try {
      if (ioc.stopped()) ioc.restart();
      if (Clock::now() >= until) {
        ioc.poll();
        return Status::OK();
      }
      if (ioc.run_one_until(until) == 0 && Clock::now() < until) {
        return Status::Internal("subscription to " + url.ToString() +
                                ": nothing to wait for (a bug in the client)");
      }
    } catch (const std::exception& e) {
      return Status::Internal("subscription to " + url.ToString() + ": " + e.what());
    }
    return Status::OK();
  }

  // ---- the cursor --------------------------------------------------------------------------

  bool CursorDirty() const {
    return !options.cursor_file.empty() && handled.has_value() && handled != written;
  }

  Status WriteCursor() {
    if (!CursorDirty()) return Status::OK();
    WEIR_RETURN_IF_ERROR(client::WriteCursorFile(
        options.cursor_file, client::Cursor{url.topic, PartitionId(url.partition), *handled}));
    written = handled;
    cursor_written_at = Clock::now();
    return Status::OK();
  }

  Status WriteCursorIfDue() {
    if (CursorDirty() && Clock::now() >= cursor_written_at + options.cursor_interval) {
      return WriteCursor();
    }
    return Status::OK();
  }

  void MarkReturnedHandled() {
    if (returned) handled = returned;
    returned.reset();
  }

  Result<std::optional<SubscriptionMessage>> Next(std::chrono::milliseconds timeout) {
    if (phase == Phase::kClosed) return Status::FailedPrecondition("the subscription is closed");
    MarkReturnedHandled();
    const Clock::time_point deadline = Clock::now() + timeout;
    while (true) {
      if (phase == Phase::kFailed) {
        // What was handled is kept even though the subscription cannot go on (once: the error
        // is returned again as it is).
        if (!cursor_given_up) {
          cursor_given_up = true;
          if (Status s = WriteCursor(); !s.ok()) {
            error = Status(
                error.code(),
                error.message() + " (and the cursor file was not written: " + s.message() + ")");
          }
        }
        return error;
      }
      Status s = WriteCursorIfDue();
      if (!s.ok()) {
        cursor_given_up = true;
        Fail(s.WithContext("subscription to " + url.ToString()));
        return error;
      }
      if (ready) {
        std::optional<SubscriptionMessage> out = std::move(ready);
        ready.reset();
        returned = out->offset;
        StartRead();
        return out;
      }
      StartRead();
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        WEIR_RETURN_IF_ERROR(PumpOnce(now));
        if (ready || phase == Phase::kFailed) continue;
        return std::optional<SubscriptionMessage>();
      }
      Clock::time_point until = deadline;
      if (CursorDirty()) until = std::min(until, cursor_written_at + options.cursor_interval);
      s = PumpOnce(until);
      if (!s.ok()) {
        Fail(std::move(s));
        return error;
      }
    }
  }

  Status Close() {
    if (phase == Phase::kClosed) return Status::OK();
    Status s = WriteCursor();
    const bool polite = phase == Phase::kStreaming && ws && ws->is_open();
    ++generation;
    phase = Phase::kClosed;
    attempt_timer.cancel();
    backoff_timer.cancel();
    resolver.cancel();
    if (polite) {
      // A pending read sees the server's echo and ends with `closed`; its handler is stale.
      close_done = false;
      ws->async_close(static_cast<uint16_t>(stream_protocol::CloseCode::kNormal),
                      [this](beast::error_code) { close_done = true; });
      const Clock::time_point until = Clock::now() + kCloseWait;
      while (!close_done && Clock::now() < until) {
        if (!PumpOnce(until).ok()) break;
      }
    }
    if (ws) {
      beast::error_code ignored;
      ws->next_layer().close(ignored);
    }
    return s;
  }
};

Subscription::Subscription(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Subscription::~Subscription() { (void)Close(); }

Result<std::unique_ptr<Subscription>> Subscription::Open(SubscriptionOptions options) {
  auto impl = std::make_unique<Impl>();
  WEIR_ASSIGN_OR_RETURN(impl->url, client::ParseStreamUrl(options.url));
  WEIR_ASSIGN_OR_RETURN(impl->start, client::ParseStartPosition(options.start));
  impl->token = !options.token.empty() ? options.token : impl->url.token;
  if (options.connect_timeout.count() <= 0 || options.initial_backoff.count() <= 0 ||
      options.max_backoff < options.initial_backoff || options.idle_timeout.count() < 0 ||
      options.cursor_interval.count() < 0) {
    return Status::InvalidArgument(
        "subscription options: connect_timeout and initial_backoff must be positive, "
        "max_backoff at least initial_backoff, idle_timeout and cursor_interval not negative");
  }
  if (!options.cursor_file.empty()) {
    WEIR_ASSIGN_OR_RETURN(std::optional<client::Cursor> cursor,
                          client::ReadCursorFile(options.cursor_file));
    if (cursor) {
      if (cursor->topic != impl->url.topic || cursor->partition.value() != impl->url.partition) {
        return Status::InvalidArgument(
            "cursor file " + options.cursor_file + " is for topic " + cursor->topic +
            " partition " + std::to_string(cursor->partition.value()) + ", not " + impl->url.topic +
            " partition " + std::to_string(impl->url.partition));
      }
      if (cursor->last.value() == std::numeric_limits<int64_t>::max()) {
        return Status::Corruption("cursor file " + options.cursor_file +
                                  " holds an offset with no next one");
      }
      impl->start = StartPosition{StartPosition::Kind::kAt, cursor->last.value() + 1};
      impl->handled = cursor->last;
      impl->written = cursor->last;
      impl->start_why = "resuming after offset " + std::to_string(cursor->last.value()) +
                        " from cursor file " + options.cursor_file;
    } else {
      WEIR_RETURN_IF_ERROR(client::CheckCursorFileWritable(options.cursor_file));
    }
  }
  impl->options = std::move(options);
  impl->StartConnect();
  while (impl->phase == Impl::Phase::kConnecting) {
    // The attempt timer bounds this.
    WEIR_RETURN_IF_ERROR(impl->PumpOnce(Clock::now() + std::chrono::seconds(1)));
  }
  if (impl->phase == Impl::Phase::kFailed) return impl->error;
  return std::unique_ptr<Subscription>(new Subscription(std::move(impl)));
}

Result<std::optional<SubscriptionMessage>> Subscription::Next(std::chrono::milliseconds timeout) {
  return impl_->Next(timeout);
}

Status Subscription::Commit() {
  if (impl_->phase == Impl::Phase::kClosed) {
    return Status::FailedPrecondition("the subscription is closed");
  }
  impl_->MarkReturnedHandled();
  return impl_->WriteCursor();
}

Status Subscription::Close() { return impl_->Close(); }

const SubscriptionGreeting& Subscription::greeting() const { return impl_->greeting; }

Offset Subscription::next_offset() const {
  return impl_->ready ? impl_->ready->offset : Offset(impl_->expected);
}

int64_t Subscription::reconnects() const { return impl_->reconnect_count; }

}  // namespace weir
