// Fan-out load driver: one publisher WebSocket, N subscriber WebSockets, one thread.
//
// Publishes `--messages` JSON objects of `--size` bytes, each carrying its sequence number and
// its send time (steady_clock ns; driver and server share the machine), either at a fixed
// `--rate` per second or, with `--rate 0`, as fast as the server delivers them with at most
// `--window` messages not yet received by every subscriber (and then for `--seconds` at most).
// Every subscriber must receive every message exactly once and in order (for Weir also with
// consecutive offsets), or the run fails. A warm-up of `--warmup` messages goes first and is not
// measured.
//
// Measured between the first measured publish and the last delivery: deliveries per second,
// the server's CPU seconds (utime + stime of --server-pid from /proc), deliveries per server
// CPU-second, and publish-to-receive latency percentiles over every measured delivery.
//
//   --format weir: subscribers get a greeting, then `[OFFSET,MESSAGE]` frames; the publisher
//                  gets `{"ack":n,...}` for each frame, checked in order.
//   --format raw:  subscribers get the published bytes as they are (the ws broadcast server).
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>  // before Asio (DEPENDENCIES.md)
#include <vector>

#include "bench_common.h"
#include "ws_client.h"

namespace weir::peers {
namespace {

namespace asio = boost::asio;

struct Config {
  std::string system;
  WsUrl sub_url;
  WsUrl pub_url;
  bool weir_format = false;
  int64_t subscribers = 0;
  uint64_t messages = 0;
  uint64_t warmup = 0;
  size_t size = 100;
  int64_t rate = 0;  // messages per second; 0 = saturation
  uint64_t window = 0;
  int64_t seconds = 0;  // saturation: stop publishing after this long (0: after `messages`)
  int64_t server_pid = 0;
  int64_t timeout_s = 0;
  int64_t connect_parallel = 0;
};

struct Subscriber {
  std::unique_ptr<WsClient> ws;
  bool ready = false;
  uint64_t next_seq = 0;
  int64_t next_offset = -1;  // Weir: from the greeting's "start"
};

class FanoutRun {
 public:
  FanoutRun(asio::io_context& io, Config config)
      : io_(io), config_(std::move(config)), publish_timer_(io), deadline_(io) {}

  void Start() {
    t_connect_ = NowNs();
    deadline_.expires_after(std::chrono::seconds(config_.timeout_s));
    deadline_.async_wait([this](boost::system::error_code ec) {
      if (!ec) TimedOut();
    });
    publisher_ = std::make_unique<WsClient>(
        io_, config_.pub_url,
        WsClient::Handlers{.on_open = [this] { MaybeBegin(); },
                           .on_message = [this](std::string_view m) { OnAck(m); },
                           .on_close = [](const std::string& why) { Die("publisher: " + why); }},
        64 * 1024);
    publisher_->Start();
    subscribers_.resize(static_cast<size_t>(config_.subscribers));
    for (size_t i = 0; i < subscribers_.size(); ++i) {
      subscribers_[i].ws = std::make_unique<WsClient>(
          io_, config_.sub_url,
          WsClient::Handlers{.on_open =
                                 [this, i] {
                                   if (!config_.weir_format) SubscriberReady(i);
                                 },
                             .on_message = [this, i](std::string_view m) { OnDelivery(i, m); },
                             .on_close =
                                 [i](const std::string& why) {
                                   Die("subscriber " + std::to_string(i) + ": " + why);
                                 }},
          16 * 1024);
    }
    StartMoreSubscribers();
  }

  bool finished() const { return phase_ == Phase::kDone; }

 private:
  enum class Phase { kConnecting, kWarmup, kMeasure, kDone };

  void StartMoreSubscribers() {
    while (connecting_ < config_.connect_parallel && next_to_start_ < subscribers_.size()) {
      ++connecting_;
      subscribers_[next_to_start_++].ws->Start();
    }
  }

  void SubscriberReady(size_t i) {
    subscribers_[i].ready = true;
    --connecting_;
    ++ready_;
    StartMoreSubscribers();
    MaybeBegin();
  }

  void MaybeBegin() {
    if (phase_ != Phase::kConnecting || !publisher_->open() ||
        ready_ != static_cast<int64_t>(subscribers_.size())) {
      return;
    }
    // A subscriber the server has answered may still be joining its fan-out set on another
    // thread; the warm-up messages are received by all before anything is measured anyway.
    phase_ = Phase::kWarmup;
    std::printf("%s: %zu subscribers connected in %.2f s, warming up with %llu messages\n",
                config_.system.c_str(), subscribers_.size(),
                static_cast<double>(NowNs() - t_connect_) * 1e-9,
                static_cast<unsigned long long>(config_.warmup));
    BeginPhase(config_.warmup);
  }

  // Publishes seq [sent_, phase_end) at the configured rate or window.
  void BeginPhase(uint64_t phase_end) {
    phase_end_ = phase_end;
    phase_start_sent_ = sent_;
    phase_t0_ = NowNs();
    if (phase_end_ == sent_) return PhaseComplete();
    Pump();
  }

  void Pump() {
    if (config_.rate == 0) {
      if (phase_ == Phase::kMeasure && config_.seconds > 0 &&
          NowNs() - t_start_ >= static_cast<uint64_t>(config_.seconds) * 1'000'000'000) {
        phase_end_ = sent_;  // time is up: what is sent is the run
        if (frontier_ == phase_end_) PhaseComplete();
        return;
      }
      while (sent_ < phase_end_ && sent_ - frontier_ < config_.window) Publish();
      return;
    }
    uint64_t elapsed = NowNs() - phase_t0_;
    uint64_t due = phase_start_sent_ +
                   static_cast<uint64_t>(static_cast<double>(elapsed) *
                                         static_cast<double>(config_.rate) / 1e9) +
                   1;
    while (sent_ < phase_end_ && sent_ < due) Publish();
    if (sent_ < phase_end_) {
      uint64_t next_ns = static_cast<uint64_t>(static_cast<double>(sent_ - phase_start_sent_) *
                                               1e9 / static_cast<double>(config_.rate));
      publish_timer_.expires_at(
          asio::steady_timer::time_point(std::chrono::nanoseconds(phase_t0_ + next_ns)));
      publish_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) Pump();
      });
    }
  }

  void Publish() {
    uint64_t now = NowNs();
    MakeMessage(sent_, now, config_.size, &message_);
    publisher_->Send(message_);
    received_by_.push_back(0);
    sent_at_.push_back(now);
    ++sent_;
  }

  void OnAck(std::string_view m) {
    if (!config_.weir_format) Die("publisher got an unexpected message: " + std::string(m));
    uint64_t n = 0, count = 0;
    if (!FindNumber(m, "{\"ack\":", &n) || !FindNumber(m, "\"count\":", &count)) {
      Die("publisher: not an ack: " + std::string(m));
    }
    if (n != acked_ || count != 1) Die("publisher: ack out of order: " + std::string(m));
    if (phase_ == Phase::kMeasure && n >= config_.warmup) ack_latency_.Add(NowNs() - sent_at_[n]);
    ++acked_;
    MaybeFinish();
  }

  void OnDelivery(size_t i, std::string_view m) {
    Subscriber& sub = subscribers_[i];
    std::string_view message = m;
    if (config_.weir_format) {
      if (!sub.ready) {
        uint64_t start = 0;
        if (m.rfind("{\"type\":\"greeting\"", 0) != 0 || !FindNumber(m, "\"start\":", &start)) {
          Die("subscriber " + std::to_string(i) + ": expected a greeting, got " + std::string(m));
        }
        sub.next_offset = static_cast<int64_t>(start);
        return SubscriberReady(i);
      }
      uint64_t offset = 0;
      size_t comma = m.find(',');
      if (m.size() < 4 || m[0] != '[' || m.back() != ']' || comma == std::string_view::npos ||
          !FindNumber(m.substr(0, comma), "[", &offset)) {
        Die("subscriber " + std::to_string(i) + ": not [OFFSET,MESSAGE]: " + std::string(m));
      }
      if (static_cast<int64_t>(offset) != sub.next_offset) {
        Die("subscriber " + std::to_string(i) + ": offset " + std::to_string(offset) +
            ", expected " + std::to_string(sub.next_offset));
      }
      ++sub.next_offset;
      message = m.substr(comma + 1, m.size() - comma - 2);
    }
    uint64_t now = NowNs();
    uint64_t seq = 0, t = 0;
    if (message.size() != config_.size || !FindNumber(message, "{\"seq\":", &seq) ||
        !FindNumber(message, "\"t\":", &t)) {
      Die("subscriber " + std::to_string(i) + ": not a published message: " + std::string(m));
    }
    if (seq >= sent_)
      Die("subscriber " + std::to_string(i) + ": got seq " + std::to_string(seq) +
          ", which was not published yet");
    if (seq != sub.next_seq) {
      Die("subscriber " + std::to_string(i) + ": got seq " + std::to_string(seq) + ", expected " +
          std::to_string(sub.next_seq) +
          (seq < sub.next_seq ? " (duplicate or reordered)" : " (a message was lost)"));
    }
    ++sub.next_seq;
    if (phase_ == Phase::kMeasure) {
      latency_.Add(now - t);
      ++measured_deliveries_;
    }
    if (++received_by_[seq] == subscribers_.size()) {
      while (frontier_ < sent_ && received_by_[frontier_] == subscribers_.size()) ++frontier_;
      if (frontier_ == phase_end_) {
        PhaseComplete();
      } else if (config_.rate == 0) {
        Pump();
      }
    }
  }

  void PhaseComplete() {
    if (phase_ == Phase::kWarmup) {
      phase_ = Phase::kMeasure;
      t_start_ = NowNs();
      server_cpu_start_ = ProcessCpuSeconds(config_.server_pid);
      self_cpu_start_ = SelfCpuSeconds();
      BeginPhase(config_.warmup + config_.messages);
      return;
    }
    if (phase_ == Phase::kMeasure && t_end_ == 0) {
      t_end_ = NowNs();
      server_cpu_end_ = ProcessCpuSeconds(config_.server_pid);
      self_cpu_end_ = SelfCpuSeconds();
      MaybeFinish();
    }
  }

  void MaybeFinish() {
    if (phase_ != Phase::kMeasure || t_end_ == 0) return;
    if (config_.weir_format && acked_ != sent_) return;  // wait for the last acks
    phase_ = Phase::kDone;
    Report();
    publish_timer_.cancel();
    deadline_.cancel();
    publisher_->Close();
    for (auto& s : subscribers_) s.ws->Close();
    io_.stop();
  }

  void Report() const {
    double seconds = static_cast<double>(t_end_ - t_start_) * 1e-9;
    double server_cpu = server_cpu_end_ - server_cpu_start_;
    double self_cpu = self_cpu_end_ - self_cpu_start_;
    double deliveries = static_cast<double>(measured_deliveries_);
    auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
    std::string mode =
        config_.rate == 0 ? "saturation" : "rate " + std::to_string(config_.rate) + "/s";
    uint64_t messages = sent_ - config_.warmup;
    std::printf("%s fan-out: %zu subscribers, %llu messages of %zu bytes, %s\n",
                config_.system.c_str(), subscribers_.size(),
                static_cast<unsigned long long>(messages), config_.size, mode.c_str());
    std::printf("  deliveries   %.0f in %.2f s = %.0f/s, all in order, none lost or repeated\n",
                deliveries, seconds, deliveries / seconds);
    std::printf("  server CPU   %.2f s (%.0f%% of a core) = %.0f deliveries per CPU-second\n",
                server_cpu, 100 * server_cpu / seconds,
                server_cpu > 0 ? deliveries / server_cpu : 0.0);
    std::printf("  driver CPU   %.0f%% of a core\n", 100 * self_cpu / seconds);
    std::printf("  latency      p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us\n",
                us(latency_.Quantile(0.5)), us(latency_.Quantile(0.99)),
                us(latency_.Quantile(0.999)), us(latency_.Max()));
    if (config_.weir_format) {
      std::printf("  acks         p50 %.0f us, p99 %.0f us (publish to durable ack)\n",
                  us(ack_latency_.Quantile(0.5)), us(ack_latency_.Quantile(0.99)));
    }
    ResultLine()
        .Add("bench", "fanout")
        .Add("system", config_.system)
        .Add("subscribers", static_cast<double>(subscribers_.size()))
        .Add("mode", config_.rate == 0 ? "saturation" : "rate")
        .Add("rate", static_cast<double>(config_.rate))
        .Add("messages", static_cast<double>(messages))
        .Add("deliveries", deliveries)
        .Add("seconds", seconds)
        .Add("deliveries_per_s", deliveries / seconds)
        .Add("server_cpu_s", server_cpu)
        .Add("deliveries_per_cpu_s", server_cpu > 0 ? deliveries / server_cpu : 0.0)
        .Add("driver_cpu_pct", 100 * self_cpu / seconds)
        .Add("p50_us", us(latency_.Quantile(0.5)))
        .Add("p99_us", us(latency_.Quantile(0.99)))
        .Add("p999_us", us(latency_.Quantile(0.999)))
        .Add("max_us", us(latency_.Max()))
        .Add("ack_p50_us", us(ack_latency_.Quantile(0.5)))
        .Add("ack_p99_us", us(ack_latency_.Quantile(0.99)))
        .Print();
  }

  void TimedOut() const {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& s : subscribers_) {
      lo = std::min(lo, s.next_seq);
      hi = std::max(hi, s.next_seq);
    }
    Die(config_.system + ": timed out after " + std::to_string(config_.timeout_s) +
        " s: " + std::to_string(ready_) + " subscribers ready, " + std::to_string(sent_) +
        " sent, " + std::to_string(acked_) + " acked, each subscriber received between " +
        std::to_string(subscribers_.empty() ? 0 : lo) + " and " + std::to_string(hi));
  }

  asio::io_context& io_;
  const Config config_;
  std::unique_ptr<WsClient> publisher_;
  std::vector<Subscriber> subscribers_;
  size_t next_to_start_ = 0;
  int64_t connecting_ = 0;
  int64_t ready_ = 0;

  Phase phase_ = Phase::kConnecting;
  std::vector<uint32_t> received_by_;  // per seq sent: how many subscribers have it
  std::vector<uint64_t> sent_at_;      // per seq sent: when
  uint64_t frontier_ = 0;              // every seq below it is received by all
  uint64_t sent_ = 0;
  uint64_t acked_ = 0;
  uint64_t phase_end_ = 0;
  uint64_t phase_start_sent_ = 0;
  uint64_t phase_t0_ = 0;
  std::string message_;
  asio::steady_timer publish_timer_;
  asio::steady_timer deadline_;

  uint64_t t_connect_ = 0, t_start_ = 0, t_end_ = 0;
  double server_cpu_start_ = 0, server_cpu_end_ = 0;
  double self_cpu_start_ = 0, self_cpu_end_ = 0;
  uint64_t measured_deliveries_ = 0;
  Histogram latency_;
  Histogram ack_latency_;  // Weir: publish to ack (durable)
};

WsUrl UrlFlag(const Flags& flags, const std::string& name) {
  auto url = ParseWsUrl(flags.Required(name));
  if (!url) Die("--" + name + " is not ws://HOST:PORT/PATH");
  return *url;
}

}  // namespace
}  // namespace weir::peers

int main(int argc, char** argv) {
  using namespace weir::peers;
  Flags flags(argc, argv,
              {"system", "sub-url", "pub-url", "format", "subscribers", "messages", "warmup",
               "size", "rate", "window", "seconds", "server-pid", "timeout", "connect-parallel"});
  Config config{
      .system = flags.Str("system", "server"),
      .sub_url = UrlFlag(flags, "sub-url"),
      .pub_url = UrlFlag(flags, "pub-url"),
      .weir_format = flags.Required("format") == "weir",
      .subscribers = flags.Int("subscribers", 100),
      .messages = static_cast<uint64_t>(flags.Int("messages", 10000)),
      .warmup = static_cast<uint64_t>(flags.Int("warmup", 200)),
      .size = static_cast<size_t>(flags.Int("size", 100)),
      .rate = flags.Int("rate", 1000),
      .window = static_cast<uint64_t>(flags.Int("window", 64)),
      .seconds = flags.Int("seconds", 0),
      .server_pid = std::stoll(flags.Required("server-pid")),
      .timeout_s = flags.Int("timeout", 60),
      .connect_parallel = flags.Int("connect-parallel", 64),
  };
  if (flags.Required("format") != "weir" && flags.Required("format") != "raw") {
    Die("--format is weir or raw");
  }
  if (config.subscribers < 1 || config.messages < 1 || config.window < 1 || config.rate < 0) {
    Die("--subscribers, --messages and --window must be >= 1, --rate >= 0");
  }
  ProcessCpuSeconds(config.server_pid);  // fails now if the PID is wrong

  setvbuf(stdout, nullptr, _IOLBF, 0);
  boost::asio::io_context io(1);
  FanoutRun run(io, config);
  run.Start();
  io.run();
  return run.finished() ? 0 : 1;
}
