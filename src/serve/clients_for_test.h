// Tests only: clients of the server (src/serve/README.md) with a deadline on every network
// operation, so that a server that hangs fails a test instead of stalling it. A WebSocket client
// (Boost.Beast, as a real client), an HTTP/1.1 client, and a raw TCP socket for clients that
// misbehave on purpose, with a decoder of the server's (unmasked) frames.
//
// Each client owns its io_context and runs it only inside its own calls: one client per thread.
// Failures (a refused connection, a timeout, an unexpected error) throw std::runtime_error,
// which gtest reports as a failure of the test; threads catch it themselves.
#pragma once

#include <utility>  // Before Asio: Boost 1.74 with GCC 12 in C++20 needs std::exchange early.
//
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "serve/websocket_frame.h"

namespace weir::serve::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

// How long one network operation may take before the test calls it a hang: generous, for
// loaded machines and sanitizers.
// "[OFFSET,MESSAGE]" -> (OFFSET, MESSAGE); throws if it is not that.
inline std::pair<int64_t, std::string> ParseMessage(const std::string& text) {
  const size_t comma = text.find(',');
  int64_t offset = -1;
  if (text.size() < 4 || text.front() != '[' || text.back() != ']' || comma == std::string::npos ||
      std::from_chars(text.data() + 1, text.data() + comma, offset).ptr != text.data() + comma) {
    throw std::runtime_error("not a message frame: " + text);
  }
  return {offset, text.substr(comma + 1, text.size() - comma - 2)};
}

// The integer member `name` of a flat JSON object (throws if absent).
inline int64_t JsonInt(std::string_view json, std::string_view name) {
  const std::string key = "\"" + std::string(name) + "\":";
  const size_t at = json.find(key);
  int64_t value = 0;
  if (at == std::string_view::npos ||
      std::from_chars(json.data() + at + key.size(), json.data() + json.size(), value).ec !=
          std::errc()) {
    throw std::runtime_error("no integer \"" + std::string(name) + "\" in " + std::string(json));
  }
  return value;
}

inline constexpr std::chrono::seconds kHangDeadline{30};

// Starts an asynchronous operation (`start` is given its completion handler) and runs `io` until
// it completes. Past `deadline`, `cancel` (which closes the socket) ends it and this throws.
template <typename Start, typename Cancel>
beast::error_code AwaitOperation(asio::io_context& io, std::string_view what, Start&& start,
                                 Cancel&& cancel,
                                 std::chrono::steady_clock::duration deadline = kHangDeadline) {
  bool done = false;
  beast::error_code result;
  start([&done, &result](beast::error_code ec, auto&&...) {
    done = true;
    result = ec;
  });
  io.restart();
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done && std::chrono::steady_clock::now() < until) io.run_one_until(until);
  if (!done) {
    cancel();
    io.restart();
    while (!done && io.run_one() > 0) {
    }
    throw std::runtime_error(
        std::string(what) + ": nothing happened for " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline).count()) + " s");
  }
  return result;
}

inline tcp::endpoint Loopback(uint16_t port) {
  return tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), port);
}

// A connected TCP socket with a receive buffer of `rcvbuf` bytes (0: the system's default),
// set before connecting so that the window is small from the start.
inline void Connect(asio::io_context& io, tcp::socket& socket, uint16_t port, int rcvbuf) {
  socket.open(tcp::v4());
  if (rcvbuf > 0) socket.set_option(asio::socket_base::receive_buffer_size(rcvbuf));
  auto ec = AwaitOperation(
      io, "connect", [&](auto handler) { socket.async_connect(Loopback(port), handler); },
      [&] { socket.close(); });
  if (ec) throw std::runtime_error("connect to port " + std::to_string(port) + ": " + ec.message());
}

// How a WebSocket connection ended.
struct Ending {
  uint16_t code = 0;        // the close frame's code; 0 if the connection ended without one
  std::string reason;       // the close frame's reason
  beast::error_code error;  // websocket::error::closed after a clean closing handshake
};

class WsClient {
 public:
  // Connects and upgrades to `target` (e.g. "/streams/t?offset=0"). `authorization` is sent as
  // the Authorization header if not empty. A refusal after the upgrade is a close frame that
  // Read() reports; an HTTP answer other than 101 throws.
  WsClient(uint16_t port, const std::string& target, const std::string& authorization = "",
           int rcvbuf = 0)
      : ws_(io_) {
    Connect(io_, ws_.next_layer(), port, rcvbuf);
    ws_.auto_fragment(false);
    if (!authorization.empty()) {
      ws_.set_option(
          websocket::stream_base::decorator([authorization](websocket::request_type& request) {
            request.set(http::field::authorization, authorization);
          }));
    }
    auto ec = Await("upgrade " + target,
                    [&](auto handler) { ws_.async_handshake("127.0.0.1", target, handler); });
    if (ec) throw std::runtime_error("upgrade " + target + ": " + ec.message());
  }

  // The next message, or nullopt once the connection has ended (ending() says how).
  std::optional<std::string> Read() {
    buffer_.clear();
    auto ec = Await("read", [&](auto handler) { ws_.async_read(buffer_, handler); });
    if (ec) {
      // A close frame that arrived counts even if the closing handshake failed after it.
      ending_.error = ec;
      ending_.code = ws_.reason().code;
      ending_.reason = std::string(ws_.reason().reason.data(), ws_.reason().reason.size());
      return std::nullopt;
    }
    return beast::buffers_to_string(buffer_.data());
  }

  // Sends one text (or binary) message as one frame.
  void Send(std::string_view message, bool binary = false) {
    ws_.binary(binary);
    auto ec = Await("write", [&](auto handler) {
      ws_.async_write(asio::buffer(message.data(), message.size()), handler);
    });
    if (ec) throw std::runtime_error("write: " + ec.message());
  }

  // The closing handshake (1000), waiting for the server's answer; errors are ignored (the
  // server may have gone).
  void Close() {
    if (!ws_.is_open()) return;
    Await("close", [&](auto handler) { ws_.async_close(websocket::close_code::normal, handler); });
  }

  // Drops the connection without a closing handshake.
  void Abandon() {
    beast::error_code ignored;
    ws_.next_layer().close(ignored);
  }

  const Ending& ending() const { return ending_; }

 private:
  template <typename Start>
  beast::error_code Await(std::string_view what, Start&& start) {
    return AwaitOperation(io_, what, std::forward<Start>(start), [this] { Abandon(); });
  }

  asio::io_context io_;
  websocket::stream<tcp::socket> ws_;
  beast::flat_buffer buffer_;
  Ending ending_;
};

struct HttpAnswer {
  int status = 0;
  std::string body;
  bool keep_alive = false;
};

// HTTP/1.1 requests on one connection (keep-alive).
class HttpClient {
 public:
  explicit HttpClient(uint16_t port) : socket_(io_) { Connect(io_, socket_, port, 0); }

  // `origin`, if not empty, is sent as the Origin header (as a browser page would).
  HttpAnswer Request(http::verb method, const std::string& target, const std::string& body = "",
                     const std::string& authorization = "", const std::string& origin = "") {
    http::request<http::string_body> request(method, target, 11);
    request.set(http::field::host, "127.0.0.1");
    if (!authorization.empty()) request.set(http::field::authorization, authorization);
    if (!origin.empty()) request.set(http::field::origin, origin);
    if (method == http::verb::post) {
      request.set(http::field::content_type, "application/json");
      request.body() = body;
      request.prepare_payload();
    }
    auto ec =
        Await("send request", [&](auto handler) { http::async_write(socket_, request, handler); });
    if (ec) throw std::runtime_error("send " + target + ": " + ec.message());
    http::response<http::string_body> response;
    ec = Await("read answer",
               [&](auto handler) { http::async_read(socket_, buffer_, response, handler); });
    if (ec) throw std::runtime_error("answer to " + target + ": " + ec.message());
    return {static_cast<int>(response.result_int()), response.body(), response.keep_alive()};
  }

  HttpAnswer Post(const std::string& target, const std::string& body,
                  const std::string& authorization = "", const std::string& origin = "") {
    return Request(http::verb::post, target, body, authorization, origin);
  }

 private:
  template <typename Start>
  beast::error_code Await(std::string_view what, Start&& start) {
    return AwaitOperation(io_, what, std::forward<Start>(start), [this] {
      beast::error_code ignored;
      socket_.close(ignored);
    });
  }

  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

// A TCP connection that sends and reads exactly the bytes a test says.
class RawClient {
 public:
  explicit RawClient(uint16_t port, int rcvbuf = 0) : socket_(io_) {
    Connect(io_, socket_, port, rcvbuf);
  }

  void Write(std::string_view bytes) {
    auto ec = Await("raw write", [&](auto handler) {
      asio::async_write(socket_, asio::buffer(bytes.data(), bytes.size()), handler);
    });
    if (ec) throw std::runtime_error("raw write: " + ec.message());
  }

  // Reads until `delimiter` has arrived; returns everything up to and including it (what came
  // after stays for the next read). Throws if the connection ends first.
  std::string ReadUntil(std::string_view delimiter) {
    for (;;) {
      const size_t at = pending_.find(delimiter);
      if (at != std::string::npos) {
        std::string out = pending_.substr(0, at + delimiter.size());
        pending_.erase(0, at + delimiter.size());
        return out;
      }
      if (!ReadMore())
        throw std::runtime_error("connection ended before '" + std::string(delimiter) +
                                 "': " + pending_);
    }
  }

  // Reads at least one more byte into the pending bytes. False once the connection has ended
  // (EOF or reset).
  bool ReadMore(std::chrono::steady_clock::duration deadline = kHangDeadline) {
    char chunk[64 << 10];
    size_t n = 0;
    auto ec = AwaitOperation(
        io_, "raw read",
        [&](auto handler) {
          socket_.async_read_some(asio::buffer(chunk),
                                  [&n, handler](beast::error_code ec, size_t got) mutable {
                                    n = got;
                                    handler(ec);
                                  });
        },
        [this] { Close(); }, deadline);
    pending_.append(chunk, n);
    return !ec;
  }

  // Everything until the peer ends the connection.
  std::string ReadToEnd() {
    while (ReadMore()) {
    }
    return std::exchange(pending_, {});
  }

  // The bytes read and not yet taken.
  std::string& pending() { return pending_; }

  void Close() {
    beast::error_code ignored;
    socket_.close(ignored);
  }

  tcp::socket& socket() { return socket_; }

 private:
  template <typename Start>
  beast::error_code Await(std::string_view what, Start&& start) {
    return AwaitOperation(io_, what, std::forward<Start>(start), [this] { Close(); });
  }

  asio::io_context io_;
  tcp::socket socket_;
  std::string pending_;
};

// The text of a WebSocket upgrade request for `target`.
inline std::string UpgradeRequest(const std::string& target,
                                  const std::string& extra_headers = "") {
  return "GET " + target +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
         extra_headers + "\r\n";
}

// One frame as the server sends it (unmasked).
struct ServerFrame {
  Opcode opcode;
  std::string payload;
  // For a close frame: its code and reason.
  uint16_t close_code() const {
    return payload.size() < 2 ? 0
                              : static_cast<uint16_t>(static_cast<unsigned char>(payload[0]) << 8 |
                                                      static_cast<unsigned char>(payload[1]));
  }
  std::string close_reason() const { return payload.size() < 2 ? "" : payload.substr(2); }
};

// Takes the whole frames off the front of `bytes` (a partial frame stays).
inline std::vector<ServerFrame> TakeServerFrames(std::string& bytes) {
  std::vector<ServerFrame> frames;
  size_t at = 0;
  for (;;) {
    if (bytes.size() - at < 2) break;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    if (p[1] & 0x80) throw std::runtime_error("the server sent a masked frame");
    uint64_t length = p[1] & 0x7F;
    size_t header = 2;
    if (length == 126) {
      header = 4;
      if (bytes.size() - at < header) break;
      length = static_cast<uint64_t>(p[2]) << 8 | p[3];
    } else if (length == 127) {
      header = 10;
      if (bytes.size() - at < header) break;
      length = 0;
      for (int i = 0; i < 8; ++i) length = length << 8 | p[2 + i];
    }
    if (bytes.size() - at < header + length) break;
    frames.push_back({static_cast<Opcode>(p[0] & 0x0F), bytes.substr(at + header, length)});
    at += header + length;
  }
  bytes.erase(0, at);
  return frames;
}

}  // namespace weir::serve::testing
