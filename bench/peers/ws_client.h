// A WebSocket client connection for the load drivers (RFC 6455, client side, no extensions).
//
// Beast writes the upgrade request and parses the HTTP response; frames are then decoded here
// straight out of one read buffer per connection, several per read, with no allocation per
// message, so that one thread can keep a thousand subscriber sockets drained and the driver is
// not what limits a fan-out figure. Outgoing frames are masked and coalesced: frames sent while
// a write is in flight go out together in the next write (pipelining).
//
// Single-threaded: every method and handler runs on the io_context's one thread. A WsClient
// must outlive the io_context's run(); handlers may call Send and Close.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp needs std::exchange
#include <vector>

namespace weir::peers {

struct WsUrl {
  std::string host;
  uint16_t port = 0;
  std::string target;  // path and query
};

// Parses ws://HOST:PORT/PATH?QUERY (HOST numeric or a name the resolver knows).
std::optional<WsUrl> ParseWsUrl(std::string_view url);

class WsClient {
 public:
  struct Handlers {
    std::function<void()> on_open;                             // upgrade answered with 101
    std::function<void(std::string_view message)> on_message;  // a whole text/binary message
    // A close frame ("close CODE REASON"), a refused upgrade, a socket error or EOF. Called once.
    std::function<void(const std::string& why)> on_close;
  };

  WsClient(boost::asio::io_context& io, WsUrl url, Handlers handlers,
           size_t read_buffer_bytes = 64 * 1024);
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  void Start();
  void Send(std::string_view text);  // one masked text frame
  // Starts the closing handshake (1000) and closes the socket; no handler is called after.
  void Close();
  bool open() const { return open_; }

 private:
  void OnConnected();
  void ReadMore();
  void Parse();
  void AppendFrame(uint8_t opcode, std::string_view payload);
  void Flush();
  void Fail(const std::string& why);

  boost::asio::ip::tcp::socket socket_;
  WsUrl url_;
  Handlers handlers_;
  bool open_ = false;
  bool done_ = false;

  boost::beast::http::request<boost::beast::http::empty_body> request_;
  boost::beast::http::response<boost::beast::http::string_body> response_;
  boost::beast::flat_buffer handshake_buffer_;

  std::vector<char> in_;  // bytes [in_begin_, in_end_) are read and not yet decoded
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  std::string fragments_;  // a fragmented message's payload so far
  bool in_fragmented_ = false;

  std::string out_pending_;  // frames waiting for the write in flight
  std::string out_writing_;
  bool writing_ = false;
  uint64_t mask_state_;
};

}  // namespace weir::peers
