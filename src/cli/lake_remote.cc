// Asking the process that holds a data directory (lake_cli.h): where it listens from
// <data-dir>/server.json, then one HTTP/1.1 request over a blocking TCP socket, its answer
// streamed (chunked, with the X-Weir-Error trailer of src/serve/README.md) or read whole.
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/lake_cli.h"
#include "core/files.h"

namespace weir::cli {
namespace {

// A connected socket, closed at the end.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  Status WriteAll(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return Status::IOError(std::string("sending the request: ") + std::strerror(errno));
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Status::OK();
  }

  // Reads more into `in`; false at the end of the connection.
  Result<bool> ReadMore() {
    char chunk[64 << 10];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(std::string("reading the answer: ") + std::strerror(errno));
      in.append(chunk, static_cast<size_t>(n));
      return n > 0;
    }
  }

  // The next line (without its CRLF).
  Result<std::string> Line() {
    for (;;) {
      const size_t end = in.find("\r\n");
      if (end != std::string::npos) {
        std::string line = in.substr(0, end);
        in.erase(0, end + 2);
        return line;
      }
      WEIR_ASSIGN_OR_RETURN(bool more, ReadMore());
      if (!more) return Status::IOError("the server ended the connection mid-answer");
    }
  }

  std::string in;  // read, not yet taken

 private:
  int fd_;
};

// HOST:PORT (HOST may be [v6]); a wildcard host is asked on the loopback.
Result<Socket*> Connect(const std::string& listen, std::unique_ptr<Socket>& out) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("not HOST:PORT");
  std::string host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::Unavailable(::gai_strerror(rc));
  }
  int error = 0;
  for (addrinfo* a = found; a != nullptr && !out; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
    } else if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      ::close(fd);
    } else {
      out = std::make_unique<Socket>(fd);
    }
  }
  ::freeaddrinfo(found);
  if (!out) return Status::Unavailable(std::strerror(error));
  return out.get();
}

// The Status a server's {"error": ..., "code": ...} stands for.
Status ServerError(int http_status, const std::string& body) {
  auto json = Value::Parse(body);
  const std::string message(json.ok() && json->GetString("error") ? *json->GetString("error")
                                                                  : std::string_view(body));
  const std::string_view code_name =
      json.ok() ? json->GetString("code").value_or(std::string_view()) : std::string_view();
  for (int c = static_cast<int>(StatusCode::kInvalidArgument);
       c <= static_cast<int>(StatusCode::kCancelled); ++c) {
    if (StatusCodeName(static_cast<StatusCode>(c)) == code_name) {
      return Status(static_cast<StatusCode>(c), message);
    }
  }
  switch (http_status) {
    case 401:
      return Status::InvalidArgument(
          "the server wants its subscribe token: pass --token or set $WEIR_TOKEN");
    case 413:
      return Status::InvalidArgument("the request is larger than the server's --max-frame-bytes");
    case 503:
      return Status::Unavailable("the server runs as many queries as it may (" + message +
                                 "); try again");
    default:
      return Status::Unavailable("the server answered " + std::to_string(http_status) + ": " +
                                 message);
  }
}

// Passes body bytes on but the last line, held back: it is the error line when the trailer
// says the answer failed.
class HoldLastLine {
 public:
  explicit HoldLastLine(const std::function<void(std::string_view)>& out) : out_(out) {}
  void Add(std::string_view bytes) {
    held_.append(bytes);
    const size_t last_end = held_.rfind('\n');
    if (last_end == std::string::npos || last_end == 0) return;
    const size_t last_start = held_.rfind('\n', last_end - 1);
    if (last_start == std::string::npos) return;
    out_(std::string_view(held_).substr(0, last_start + 1));
    held_.erase(0, last_start + 1);
  }
  void Finish(bool drop_last_line) {
    if (drop_last_line) {
      const size_t end = held_.empty() ? 0 : held_.rfind('\n', held_.size() - 2);
      held_.resize(end == std::string::npos ? 0 : end + 1);
    }
    if (!held_.empty()) out_(held_);
  }

 private:
  const std::function<void(std::string_view)>& out_;
  std::string held_;
};

// A chunked body to `body`; its end's status (the X-Weir-Error trailer).
Status ReadChunked(Socket& socket, HoldLastLine& body) {
  for (;;) {
    WEIR_ASSIGN_OR_RETURN(std::string size_line, socket.Line());
    size_t size = 0;
    try {
      size = std::stoul(size_line, nullptr, 16);
    } catch (const std::exception&) {
      return Status::IOError("a malformed chunk in the server's answer: '" + size_line + "'");
    }
    if (size == 0) break;
    while (socket.in.size() < size + 2) {
      WEIR_ASSIGN_OR_RETURN(bool more, socket.ReadMore());
      if (!more) return Status::IOError("the server ended the connection mid-answer");
    }
    body.Add(std::string_view(socket.in).substr(0, size));
    socket.in.erase(0, size + 2);
  }
  Status end;
  for (;;) {
    WEIR_ASSIGN_OR_RETURN(std::string trailer, socket.Line());
    if (trailer.empty()) break;
    constexpr std::string_view kError = "x-weir-error:";
    if (trailer.size() > kError.size() &&
        strncasecmp(trailer.c_str(), kError.data(), kError.size()) == 0) {
      end = ServerError(400, trailer.substr(kError.size() + 1));
    }
  }
  body.Finish(/*drop_last_line=*/!end.ok());
  return end;
}

Status Ask(Socket& socket, const std::string& listen, const RemoteRequest& request,
           const std::function<void(std::string_view)>& on_body) {
  std::string text = request.method + " " + request.target + " HTTP/1.1\r\nHost: " + listen +
                     "\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(request.body.size()) + "\r\n";
  if (!request.token.empty()) text += "Authorization: Bearer " + request.token + "\r\n";
  text += "\r\n" + request.body;
  WEIR_RETURN_IF_ERROR(socket.WriteAll(text));

  WEIR_ASSIGN_OR_RETURN(std::string status_line, socket.Line());
  int http_status = 0;
  if (std::sscanf(status_line.c_str(), "HTTP/1.%*d %d", &http_status) != 1) {
    return Status::IOError("not an HTTP answer: '" + status_line + "'");
  }
  bool chunked = false;
  for (;;) {
    WEIR_ASSIGN_OR_RETURN(std::string header, socket.Line());
    if (header.empty()) break;
    for (char& c : header) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    chunked |=
        header.starts_with("transfer-encoding:") && header.find("chunked") != std::string::npos;
  }
  if (http_status == 200 && chunked) {
    HoldLastLine body(on_body);
    return ReadChunked(socket, body);
  }
  // A whole answer (an error, with Content-Length and Connection: close): read to the end.
  for (;;) {
    WEIR_ASSIGN_OR_RETURN(bool more, socket.ReadMore());
    if (!more) break;
  }
  if (http_status != 200) return ServerError(http_status, socket.in);
  on_body(socket.in);
  return Status::OK();
}

std::string Trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

Status AskHolder(const std::string& data_dir, const RemoteRequest& request,
                 const std::function<void(std::string_view)>& on_body) {
  const std::filesystem::path dir(data_dir);
  auto lock = ReadFile(dir / "LOCK");
  const std::string pid = lock.ok() ? Trimmed(*lock) : "";
  const std::string server_file = (dir / "server.json").string();
  auto refuse = [&](const std::string& why) {
    return Status::Unavailable(
        "data directory " + data_dir + " is in use by another process" +
        (pid.empty() ? "" : " (pid " + pid + ")") + ", which serves no queries: " + why +
        ". To query while it runs, start it with --listen HOST:PORT (`weir run FILE --listen "
        "127.0.0.1:8080`, or `weir serve`), or stop it");
  };
  auto text = ReadFile(server_file);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return refuse(server_file + " does not exist");
  }
  if (!text.ok()) return text.status();
  auto json = Value::Parse(*text);
  auto listen = json.ok() ? json->GetString("listen") : std::nullopt;
  auto server_pid = json.ok() ? json->GetInt("pid") : std::nullopt;
  if (!listen || !server_pid) return refuse(server_file + " is not {\"listen\":...,\"pid\":...}");
  if (!pid.empty() && std::to_string(*server_pid) != pid) {
    return refuse(server_file + " was left by pid " + std::to_string(*server_pid));
  }
  const std::string address(*listen);
  std::unique_ptr<Socket> socket;
  if (auto connected = Connect(address, socket); !connected.ok()) {
    return refuse(server_file + " names " + address + ", which does not answer (" +
                  connected.status().message() + ")");
  }
  return Ask(*socket, address, request, on_body);
}

}  // namespace weir::cli
