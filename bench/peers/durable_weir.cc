// Durable append + replay against `weir serve` (src/serve/README.md), one thread.
//
// Appends: `--messages` JSON objects of `--size` bytes to an empty topic over the /publish
// WebSocket, `--batch` JSON lines per frame, with at most `--inflight` frames sent and not yet
// acknowledged. An ack means the frame's records are durable (group-commit fdatasync), so
// appends/s counts from the first frame sent to the last ack. Every ack is checked: in order,
// `count` = the frame's lines, `first` = the offsets that follow the previous frame's.
// Replay: a subscriber with offset=0 reads everything back; each `[OFFSET,MESSAGE]` frame must
// carry the next offset and the exact bytes that were published for it.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>  // before Asio (DEPENDENCIES.md)

#include "bench_common.h"
#include "ws_client.h"

namespace weir::peers {
namespace {

namespace asio = boost::asio;

struct Config {
  std::string host_port;
  std::string topic;
  uint64_t messages = 0;
  uint64_t batch = 0;
  uint64_t inflight = 0;
  size_t size = 100;
  int64_t timeout_s = 0;
};

WsUrl Url(const Config& config, const std::string& target) {
  auto url = ParseWsUrl("ws://" + config.host_port + target);
  if (!url) Die("--server is not HOST:PORT");
  return *url;
}

// Returns seconds from the first frame sent to the last ack.
double Append(const Config& config) {
  asio::io_context io(1);
  uint64_t frames = (config.messages + config.batch - 1) / config.batch;
  uint64_t sent = 0, acked = 0;
  uint64_t t_connect = NowNs(), t_start = 0, t_end = 0;
  std::unique_ptr<WsClient> ws;
  std::string frame, line;
  auto pump = [&] {
    while (sent < frames && sent - acked < config.inflight) {
      frame.clear();
      for (uint64_t seq = sent * config.batch;
           seq < std::min(config.messages, (sent + 1) * config.batch); ++seq) {
        MakeMessage(seq, 0, config.size, &line);
        if (!frame.empty()) frame.push_back('\n');
        frame += line;
      }
      ws->Send(frame);
      ++sent;
    }
  };
  auto on_ack = [&](std::string_view m) {
    uint64_t n = 0, first = 0, count = 0;
    if (!FindNumber(m, "{\"ack\":", &n) || !FindNumber(m, "\"first\":", &first) ||
        !FindNumber(m, "\"count\":", &count)) {
      Die("publish: not an ack: " + std::string(m));
    }
    uint64_t expect_count = std::min(config.messages, (n + 1) * config.batch) - n * config.batch;
    if (n != acked || first != n * config.batch || count != expect_count) {
      Die("publish: ack " + std::string(m) + " for frame " + std::to_string(acked) +
          " (expected first " + std::to_string(acked * config.batch) + ", count " +
          std::to_string(expect_count) + "; is the topic empty?)");
    }
    if (++acked == frames) {
      t_end = NowNs();
      ws->Close();
      io.stop();
      return;
    }
    pump();
  };
  ws = std::make_unique<WsClient>(
      io, Url(config, "/publish/" + config.topic),
      WsClient::Handlers{.on_open =
                             [&] {
                               t_start = NowNs();
                               std::printf("publisher connected in %.2f s\n",
                                           static_cast<double>(t_start - t_connect) * 1e-9);
                               pump();
                             },
                         .on_message = on_ack,
                         .on_close = [](const std::string& why) { Die("publish: " + why); }});
  ws->Start();
  asio::steady_timer deadline(io, std::chrono::seconds(config.timeout_s));
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec)
      Die("publish timed out: " + std::to_string(acked) + " of " + std::to_string(frames) +
          " frames acknowledged");
  });
  io.run();
  return static_cast<double>(t_end - t_start) * 1e-9;
}

// Returns seconds from the subscription request to the last message.
double Replay(const Config& config) {
  asio::io_context io(1);
  uint64_t next = 0;
  bool greeted = false;
  uint64_t t_start = NowNs(), t_end = 0;
  std::string expected;
  std::unique_ptr<WsClient> ws;
  auto on_message = [&](std::string_view m) {
    if (!greeted) {
      uint64_t first = 0, next_offset = 0, start = 1;
      if (!FindNumber(m, "\"first\":", &first) || !FindNumber(m, "\"next\":", &next_offset) ||
          !FindNumber(m, "\"start\":", &start) || first != 0 || start != 0 ||
          next_offset != config.messages) {
        Die("replay: unexpected greeting " + std::string(m));
      }
      greeted = true;
      return;
    }
    size_t comma = m.find(',');
    uint64_t offset = 0;
    if (m.size() < 4 || m[0] != '[' || m.back() != ']' || comma == std::string_view::npos ||
        !FindNumber(m.substr(0, comma), "[", &offset)) {
      Die("replay: not [OFFSET,MESSAGE]: " + std::string(m));
    }
    MakeMessage(next, 0, config.size, &expected);
    if (offset != next || m.substr(comma + 1, m.size() - comma - 2) != expected) {
      Die("replay: expected [" + std::to_string(next) + "," + expected + "], got " +
          std::string(m));
    }
    if (++next == config.messages) {
      t_end = NowNs();
      ws->Close();
      io.stop();
    }
  };
  ws = std::make_unique<WsClient>(
      io, Url(config, "/streams/" + config.topic + "?offset=0"),
      WsClient::Handlers{.on_message = on_message,
                         .on_close = [](const std::string& why) { Die("replay: " + why); }},
      256 * 1024);
  ws->Start();
  asio::steady_timer deadline(io, std::chrono::seconds(config.timeout_s));
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) Die("replay timed out at offset " + std::to_string(next));
  });
  io.run();
  return static_cast<double>(t_end - t_start) * 1e-9;
}

}  // namespace
}  // namespace weir::peers

int main(int argc, char** argv) {
  using namespace weir::peers;
  Flags flags(argc, argv,
              {"server", "topic", "messages", "batch", "inflight", "size", "timeout", "label"});
  Config config{
      .host_port = flags.Required("server"),
      .topic = flags.Required("topic"),
      .messages = static_cast<uint64_t>(flags.Int("messages", 100000)),
      .batch = static_cast<uint64_t>(flags.Int("batch", 100)),
      .inflight = static_cast<uint64_t>(flags.Int("inflight", 64)),
      .size = static_cast<size_t>(flags.Int("size", 100)),
      .timeout_s = flags.Int("timeout", 120),
  };
  if (config.messages < 1 || config.batch < 1 || config.inflight < 1) {
    Die("--messages, --batch and --inflight must be >= 1");
  }
  std::string label = flags.Str("label", "weir");
  setvbuf(stdout, nullptr, _IOLBF, 0);
  double append_s = Append(config);
  double replay_s = Replay(config);
  std::printf("%s: %llu messages of %zu bytes, %llu per frame, %llu frames in flight\n",
              label.c_str(), static_cast<unsigned long long>(config.messages), config.size,
              static_cast<unsigned long long>(config.batch),
              static_cast<unsigned long long>(config.inflight));
  ReportDurable(label, config.messages, append_s, replay_s, "every frame acked after fdatasync",
                "/streams offset=0, offsets checked");
  return 0;
}
