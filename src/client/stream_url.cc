#include "client/stream_url.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/names.h"
#include "core/parse.h"
#include "stream_protocol/stream_protocol.h"

namespace weir::client {
namespace {

// ParseStreamUrl's steps, in its order. Each error is only what is wrong ("no host"): the
// caller names the URL around it.
//
// What follows "ws://" (any case); refuses another scheme and a fragment.
Result<std::string_view> AfterScheme(std::string_view url) {
  size_t colon = url.find("://");
  if (colon == std::string_view::npos) return Status::InvalidArgument("no scheme");
  std::string scheme(url.substr(0, colon));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "wss") return Status::InvalidArgument("wss:// (TLS) is not supported; use ws://");
  if (scheme != "ws") {
    return Status::InvalidArgument("the scheme must be ws://, not " + scheme + "://");
  }
  std::string_view rest = url.substr(colon + 3);
  if (rest.find('#') != std::string_view::npos) {
    return Status::InvalidArgument("a fragment (#) has no meaning here");
  }
  return rest;
}

// HOST[:PORT] or [IPV6][:PORT] into out.host and out.port.
Status ParseAuthority(std::string_view authority, StreamUrl& out) {
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("user info (user@host) is not supported; pass a token instead");
  }
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("unterminated [IPv6] host");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument("garbage after the [IPv6] host");
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    size_t c = authority.find(':');
    out.host = std::string(authority.substr(0, c));
    if (c != std::string_view::npos) {
      port_text = authority.substr(c + 1);
      has_port = true;
    }
  }
  if (out.host.empty()) return Status::InvalidArgument("no host");
  for (char c : out.host) {
    // A host name's characters are a name's; ':' and '%' are an IPv6 address's and its zone's.
    if (!(IsNameChar(c) || c == ':' || c == '%')) {
      return Status::InvalidArgument("the host contains '" + std::string(1, c) + "'");
    }
  }
  if (has_port) {
    auto port = ParseUnsigned(port_text, "port", 65535);
    if (!port.ok() || *port == 0) {
      return Status::InvalidArgument("the port must be 1-65535, not '" + std::string(port_text) +
                                     "'");
    }
    out.port = static_cast<uint16_t>(*port);
  }
  return Status::OK();
}

// /streams/TOPIC into out.topic. The topic name is CheckName's (core/names.h), worded here to
// say which rule it breaks.
Status ParseStreamPath(std::string_view path, StreamUrl& out) {
  constexpr std::string_view kStreams = "/streams/";
  if (path.substr(0, kStreams.size()) != kStreams) {
    return Status::InvalidArgument("the path must be /streams/TOPIC, not '" + std::string(path) +
                                   "'");
  }
  std::string_view topic = path.substr(kStreams.size());
  if (!CheckName(topic, "topic name").ok()) {
    if (topic.empty() || topic.size() > kMaxNameLength) {
      return Status::InvalidArgument("the topic name must be 1-" + std::to_string(kMaxNameLength) +
                                     " characters");
    }
    auto bad_char = std::find_if_not(topic.begin(), topic.end(), IsNameChar);
    if (bad_char == topic.end()) {
      return Status::InvalidArgument("the topic name may not be '.' or '..'");
    }
    return Status::InvalidArgument("the topic name may hold only A-Z a-z 0-9 . _ -, not '" +
                                   std::string(1, *bad_char) + "'");
  }
  out.topic = std::string(topic);
  return Status::OK();
}

// The query string after '?': partition and token, each at most once, into `out`.
Status ParseQuery(std::string_view query, StreamUrl& out) {
  bool seen_partition = false, seen_token = false;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = param.find('=');
    std::string_view name = param.substr(0, eq);
    std::string value;
    if (eq == std::string_view::npos ||
        !stream_protocol::PercentDecode(param.substr(eq + 1), value) || value.empty()) {
      return Status::InvalidArgument("the query parameter '" + std::string(name) +
                                     "' needs a value");
    }
    if (name == "partition") {
      if (seen_partition) return Status::InvalidArgument("partition is given twice");
      seen_partition = true;
      auto partition = ParseUnsigned(value, "partition", std::numeric_limits<int32_t>::max());
      if (!partition.ok()) {
        return Status::InvalidArgument("the partition must be a number 0-2147483647, not '" +
                                       value + "'");
      }
      out.partition = static_cast<int32_t>(*partition);
    } else if (name == "token") {
      if (seen_token) return Status::InvalidArgument("token is given twice");
      seen_token = true;
      out.token = std::move(value);
    } else if (name == "offset") {
      return Status::InvalidArgument(
          "the start offset is not part of the URL: set the start (--from) instead");
    } else {
      return Status::InvalidArgument("unknown query parameter '" + std::string(name) + "'");
    }
  }
  return Status::OK();
}

}  // namespace

std::string StreamUrl::HostHeader() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string StreamUrl::ToString() const {
  return "ws://" + HostHeader() + "/streams/" + topic + "?partition=" + std::to_string(partition);
}

Result<StreamUrl> ParseStreamUrl(std::string_view url) {
  StreamUrl out;
  Result<std::string_view> rest = AfterScheme(url);
  Status status = rest.status();
  if (status.ok()) {
    size_t path_at = rest->find_first_of("/?");
    std::string_view target =
        path_at == std::string_view::npos ? std::string_view() : rest->substr(path_at);
    size_t query_at = target.find('?');
    status = ParseAuthority(rest->substr(0, path_at), out);
    if (status.ok()) status = ParseStreamPath(target.substr(0, query_at), out);
    if (status.ok() && query_at != std::string_view::npos) {
      status = ParseQuery(target.substr(query_at + 1), out);
    }
  }
  if (!status.ok()) {
    return Status::InvalidArgument("subscription URL '" + std::string(url) +
                                   "': " + status.message() +
                                   " (expected ws://HOST[:PORT]/streams/TOPIC[?partition=P])");
  }
  return out;
}

std::string StartPosition::QueryValue() const {
  switch (kind) {
    case Kind::kEarliest:
      return "earliest";
    case Kind::kLatest:
      return "latest";
    case Kind::kAt:
      break;
  }
  return std::to_string(offset);
}

Result<StartPosition> ParseStartPosition(std::string_view text) {
  StartPosition start;
  if (text == "earliest") return start;
  if (text == "latest") {
    start.kind = StartPosition::Kind::kLatest;
    return start;
  }
  start.kind = StartPosition::Kind::kAt;
  auto offset = ParseUnsigned(text, "start", std::numeric_limits<int64_t>::max());
  if (!offset.ok()) {
    return Status::InvalidArgument(
        "the start must be earliest, latest or an offset (0 or more), "
        "not '" +
        std::string(text) + "'");
  }
  start.offset = static_cast<int64_t>(*offset);
  return start;
}

std::string StreamTarget(const StreamUrl& url, const StartPosition& start) {
  return "/streams/" + url.topic + "?partition=" + std::to_string(url.partition) +
         "&offset=" + start.QueryValue();
}

}  // namespace weir::client
