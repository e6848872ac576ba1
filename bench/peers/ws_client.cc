#include "ws_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cstring>
#include <utility>

namespace weir::peers {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

namespace {

constexpr size_t kMinReadSpace = 16 * 1024;

uint64_t NextRandom(uint64_t* state) {  // xorshift64*: mask keys need not be secret here
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545F4914F6CDD1DULL;
}

std::string Base64(const unsigned char* data, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = static_cast<uint32_t>(data[i]) << 16;
    if (i + 1 < n) v |= static_cast<uint32_t>(data[i + 1]) << 8;
    if (i + 2 < n) v |= data[i + 2];
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? kAlphabet[v & 63] : '=');
  }
  return out;
}

}  // namespace

std::optional<WsUrl> ParseWsUrl(std::string_view url) {
  constexpr std::string_view kScheme = "ws://";
  if (url.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  url.remove_prefix(kScheme.size());
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  WsUrl out;
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  out.host = std::string(authority.substr(0, colon));
  int port = std::atoi(std::string(authority.substr(colon + 1)).c_str());
  if (port <= 0 || port > 65535) return std::nullopt;
  out.port = static_cast<uint16_t>(port);
  return out;
}

WsClient::WsClient(asio::io_context& io, WsUrl url, Handlers handlers, size_t read_buffer_bytes)
    : socket_(io),
      url_(std::move(url)),
      handlers_(std::move(handlers)),
      in_(std::max(read_buffer_bytes, 2 * kMinReadSpace)),
      mask_state_(reinterpret_cast<uintptr_t>(this) ^ 0x9E3779B97F4A7C15ULL) {}

void WsClient::Start() {
  tcp::resolver resolver(socket_.get_executor());
  boost::system::error_code ec;
  auto endpoints = resolver.resolve(url_.host, std::to_string(url_.port), ec);
  if (ec) return Fail("resolve " + url_.host + ": " + ec.message());
  asio::async_connect(socket_, endpoints,
                      [this](boost::system::error_code ec, const tcp::endpoint&) {
                        if (ec) return Fail("connect: " + ec.message());
                        OnConnected();
                      });
}

void WsClient::OnConnected() {
  socket_.set_option(tcp::no_delay(true));
  unsigned char nonce[16];
  for (int i = 0; i < 16; i += 8) {
    uint64_t r = NextRandom(&mask_state_);
    std::memcpy(nonce + i, &r, 8);
  }
  request_ = {http::verb::get, url_.target, 11};
  request_.set(http::field::host, url_.host + ":" + std::to_string(url_.port));
  request_.set(http::field::upgrade, "websocket");
  request_.set(http::field::connection, "Upgrade");
  request_.set(http::field::sec_websocket_key, Base64(nonce, sizeof(nonce)));
  request_.set(http::field::sec_websocket_version, "13");
  http::async_write(socket_, request_, [this](boost::system::error_code ec, size_t) {
    if (ec) return Fail("upgrade request: " + ec.message());
    http::async_read(
        socket_, handshake_buffer_, response_, [this](boost::system::error_code ec, size_t) {
          if (ec) return Fail("upgrade response: " + ec.message());
          if (response_.result() != http::status::switching_protocols) {
            return Fail("upgrade refused: HTTP " + std::to_string(response_.result_int()) + " " +
                        response_.body());
          }
          // Frames the server sent right behind its 101 are in the handshake buffer already.
          auto leftover = handshake_buffer_.data();
          if (leftover.size() > in_.size()) in_.resize(leftover.size() * 2);
          std::memcpy(in_.data(), leftover.data(), leftover.size());
          in_end_ = leftover.size();
          open_ = true;
          if (handlers_.on_open) handlers_.on_open();
          Parse();
          if (!done_) ReadMore();
        });
  });
}

void WsClient::ReadMore() {
  if (in_.size() - in_end_ < kMinReadSpace) {
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
    if (in_.size() - in_end_ < kMinReadSpace) in_.resize(in_.size() * 2);
  }
  socket_.async_read_some(asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
                          [this](boost::system::error_code ec, size_t n) {
                            if (done_) return;
                            if (ec) return Fail(ec == asio::error::eof ? "EOF" : ec.message());
                            in_end_ += n;
                            Parse();
                            if (!done_) ReadMore();
                          });
}

void WsClient::Parse() {
  while (!done_) {
    const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + in_begin_);
    size_t avail = in_end_ - in_begin_;
    if (avail < 2) break;
    bool fin = p[0] & 0x80;
    uint8_t opcode = p[0] & 0x0f;
    if (p[0] & 0x70) return Fail("frame with RSV bits (no extension was negotiated)");
    if (p[1] & 0x80) return Fail("masked frame from the server");
    uint64_t len = p[1] & 0x7f;
    size_t header = 2;
    if (len == 126) {
      if (avail < 4) break;
      len = (uint64_t{p[2]} << 8) | p[3];
      header = 4;
    } else if (len == 127) {
      if (avail < 10) break;
      len = 0;
      for (int i = 2; i < 10; ++i) len = (len << 8) | p[i];
      header = 10;
    }
    if (avail < header + len) {
      // Make room for the whole frame, so that ReadMore can complete it.
      if (in_.size() - in_begin_ < header + len)
        in_.resize(in_begin_ + header + len + kMinReadSpace);
      break;
    }
    std::string_view payload(reinterpret_cast<const char*>(p) + header, len);
    in_begin_ += header + len;
    switch (opcode) {
      case 0x0:  // continuation
        if (!in_fragmented_) return Fail("continuation frame outside a message");
        fragments_.append(payload);
        if (fin) {
          in_fragmented_ = false;
          if (handlers_.on_message) handlers_.on_message(fragments_);
        }
        break;
      case 0x1:
      case 0x2:
        if (in_fragmented_) return Fail("data frame inside a fragmented message");
        if (fin) {
          if (handlers_.on_message) handlers_.on_message(payload);
        } else {
          in_fragmented_ = true;
          fragments_.assign(payload);
        }
        break;
      case 0x8: {
        unsigned code = payload.size() >= 2 ? (static_cast<unsigned char>(payload[0]) << 8) |
                                                  static_cast<unsigned char>(payload[1])
                                            : 1005;
        std::string reason(payload.size() > 2 ? payload.substr(2) : std::string_view());
        return Fail("close " + std::to_string(code) + " " + reason);
      }
      case 0x9:
        AppendFrame(0xA, payload);
        Flush();
        break;
      case 0xA:
        break;
      default:
        return Fail("unknown opcode " + std::to_string(opcode));
    }
  }
  if (in_begin_ == in_end_) in_begin_ = in_end_ = 0;
}

void WsClient::AppendFrame(uint8_t opcode, std::string_view payload) {
  unsigned char header[14];
  size_t n = 0;
  header[n++] = static_cast<unsigned char>(0x80 | opcode);
  if (payload.size() < 126) {
    header[n++] = static_cast<unsigned char>(0x80 | payload.size());
  } else if (payload.size() <= 0xffff) {
    header[n++] = 0x80 | 126;
    header[n++] = static_cast<unsigned char>(payload.size() >> 8);
    header[n++] = static_cast<unsigned char>(payload.size());
  } else {
    header[n++] = 0x80 | 127;
    for (int shift = 56; shift >= 0; shift -= 8) {
      header[n++] = static_cast<unsigned char>(static_cast<uint64_t>(payload.size()) >> shift);
    }
  }
  uint32_t key32 = static_cast<uint32_t>(NextRandom(&mask_state_));
  unsigned char key[4];
  std::memcpy(key, &key32, 4);
  std::memcpy(header + n, key, 4);
  n += 4;
  out_pending_.append(reinterpret_cast<const char*>(header), n);
  size_t start = out_pending_.size();
  out_pending_.append(payload);
  char* data = out_pending_.data() + start;
  uint64_t key64;
  for (int i = 0; i < 8; ++i) reinterpret_cast<unsigned char*>(&key64)[i] = key[i % 4];
  size_t i = 0;
  for (; i + 8 <= payload.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    word ^= key64;
    std::memcpy(data + i, &word, 8);
  }
  for (; i < payload.size(); ++i) data[i] = static_cast<char>(data[i] ^ key[i % 4]);
}

void WsClient::Send(std::string_view text) {
  if (done_) return;
  AppendFrame(0x1, text);
  Flush();
}

void WsClient::Flush() {
  if (writing_ || out_pending_.empty()) return;
  std::swap(out_pending_, out_writing_);
  out_pending_.clear();
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_writing_),
                    [this](boost::system::error_code ec, size_t) {
                      writing_ = false;
                      if (done_) {
                        boost::system::error_code ignored;
                        socket_.close(ignored);
                        return;
                      }
                      if (ec) return Fail("write: " + ec.message());
                      Flush();
                    });
}

void WsClient::Close() {
  if (done_) return;
  const char code[2] = {0x03, static_cast<char>(0xE8)};  // 1000
  if (open_) AppendFrame(0x8, std::string_view(code, 2));
  done_ = true;
  open_ = false;
  if (!writing_ && !out_pending_.empty()) {
    Flush();
  } else if (!writing_) {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
}

void WsClient::Fail(const std::string& why) {
  if (done_) return;
  done_ = true;
  open_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (handlers_.on_close) handlers_.on_close(why);
}

}  // namespace weir::peers
