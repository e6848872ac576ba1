// Test support: a real nats-server with JetStream, one per fixture object, plus a client to
// set it up and look at it (streams, publishing, consumer state, plain subscriptions).
//
// Lifecycle: the constructor starts `nats-server -js -a 127.0.0.1 -p -1` (the server picks a
// free port and writes it to a ports file) with its store and log in a fresh temp directory, and
// returns once a client has connected; the destructor kills the server (SIGKILL) and waits for
// it; Restart() kills it and starts it again on the same port and store. The server is also
// killed if the thread that started it dies (a crashed test).
// Errors: std::runtime_error, with the server's log when it did not start (gtest reports it).
// Threads: one test thread; libnats runs its own I/O threads inside.
// Link weir::nats_testing (libnats).
#pragma once

#include <fcntl.h>
#include <nats/nats.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"

namespace weir::testing {

// A message as a plain subscriber sees it.
struct NatsMessage {
  std::string subject;
  std::string data;
  std::map<std::string, std::string> headers;  // the first value of each
};

// A durable consumer as the server sees it.
struct NatsConsumerState {
  int64_t ack_pending = 0;  // delivered, not yet acknowledged
  uint64_t ack_floor = 0;   // stream sequence up to which everything is acknowledged
  int64_t ack_wait_ms = 0;  // the consumer's configuration
  int64_t max_deliver = 0;
};

class NatsServer {
 public:
  NatsServer() { Start("-1"); }
  ~NatsServer() { Stop(); }
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // "nats://127.0.0.1:<port>".
  const std::string& url() const { return url_; }

  // Kills the server (as a crash would) and starts it again on the same port and store.
  void Restart() {
    std::string port = url_.substr(url_.rfind(':') + 1);
    Stop();
    Start(port);
  }

  // A file-stored stream `name` over `subjects`.
  void CreateStream(const std::string& name, const std::vector<std::string>& subjects) {
    std::vector<const char*> subject_names;
    for (const std::string& subject : subjects) subject_names.push_back(subject.c_str());
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = name.c_str();
    config.Subjects = subject_names.data();
    config.SubjectsLen = static_cast<int>(subject_names.size());
    config.Storage = js_FileStorage;
    jsStreamInfo* info = nullptr;
    natsStatus status = js_AddStream(&info, js_, &config, nullptr, nullptr);
    jsStreamInfo_Destroy(info);
    Check(status, "creating stream " + name);
  }

  // Publishes through JetStream, waits for the stream's ack, and returns the stream sequence.
  uint64_t Publish(const std::string& subject, std::string_view data) {
    jsPubAck* ack = nullptr;
    natsStatus status = js_Publish(&ack, js_, subject.c_str(), data.data(),
                                   static_cast<int>(data.size()), nullptr, nullptr);
    uint64_t sequence = status == NATS_OK ? ack->Sequence : 0;
    jsPubAck_Destroy(ack);
    Check(status, "publishing to " + subject);
    return sequence;
  }

  NatsConsumerState Consumer(const std::string& stream, const std::string& durable) {
    jsConsumerInfo* info = nullptr;
    natsStatus status =
        js_GetConsumerInfo(&info, js_, stream.c_str(), durable.c_str(), nullptr, nullptr);
    if (status != NATS_OK) {
      jsConsumerInfo_Destroy(info);
      Check(status, "reading consumer " + durable + " of stream " + stream);
    }
    NatsConsumerState state{info->NumAckPending, info->AckFloor.Stream,
                            info->Config->AckWait / 1'000'000, info->Config->MaxDeliver};
    jsConsumerInfo_Destroy(info);
    return state;
  }

  // A durable pull consumer made outside Weir, to check how a source treats an existing one.
  void CreateConsumer(const std::string& stream, const std::string& durable,
                      std::chrono::milliseconds ack_wait, int64_t max_deliver) {
    jsConsumerConfig config;
    jsConsumerConfig_Init(&config);
    config.Durable = durable.c_str();
    config.AckPolicy = js_AckExplicit;
    config.AckWait = ack_wait.count() * 1'000'000;
    config.MaxDeliver = max_deliver;
    jsConsumerInfo* info = nullptr;
    natsStatus status = js_AddConsumer(&info, js_, stream.c_str(), &config, nullptr, nullptr);
    jsConsumerInfo_Destroy(info);
    Check(status, "creating consumer " + durable + " of stream " + stream);
  }

  // A plain (core NATS) subscription; interest is registered with the server on return.
  class Subscription {
   public:
    explicit Subscription(natsSubscription* subscription) : subscription_(subscription) {}
    ~Subscription() { natsSubscription_Destroy(subscription_); }
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

    // The next message, or nullopt if none comes within `timeout`.
    std::optional<NatsMessage> Next(std::chrono::milliseconds timeout) {
      natsMsg* message = nullptr;
      natsStatus status = natsSubscription_NextMsg(&message, subscription_, timeout.count());
      if (status == NATS_TIMEOUT) return std::nullopt;
      Check(status, "receiving a message");
      NatsMessage result{natsMsg_GetSubject(message),
                         std::string(natsMsg_GetData(message),
                                     static_cast<size_t>(natsMsg_GetDataLength(message))),
                         {}};
      const char** keys = nullptr;
      int count = 0;
      if (natsMsgHeader_Keys(message, &keys, &count) == NATS_OK) {
        for (int i = 0; i < count; ++i) {
          const char* value = nullptr;
          if (natsMsgHeader_Get(message, keys[i], &value) == NATS_OK) {
            result.headers[keys[i]] = value;
          }
        }
        std::free(keys);
      }
      natsMsg_Destroy(message);
      return result;
    }

   private:
    natsSubscription* subscription_;
  };

  std::unique_ptr<Subscription> Subscribe(const std::string& subject) {
    natsSubscription* subscription = nullptr;
    Check(natsConnection_SubscribeSync(&subscription, connection_, subject.c_str()),
          "subscribing to " + subject);
    auto result = std::make_unique<Subscription>(subscription);
    Check(natsConnection_FlushTimeout(connection_, 5000), "registering the subscription");
    return result;
  }

 private:
  static void Check(natsStatus status, const std::string& what) {
    if (status == NATS_OK) return;
    natsStatus last = NATS_OK;
    const char* detail = nats_GetLastError(&last);
    throw std::runtime_error(
        what + ": " + natsStatus_GetText(status) +
        (last == status && detail != nullptr ? std::string(" (") + detail + ")" : std::string()));
  }

  std::string Log() const {
    std::ifstream in(dir_ / "server.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Starts the server on `port` ("-1": any free one) and connects to it.
  void Start(const std::string& port) {
    std::vector<std::string> args = {
        "nats-server", "-js", "-a",           "127.0.0.1",        "-p",
        port,          "-sd", dir_ / "store", "--ports_file_dir", dir_.path().string()};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::string log = dir_ / "server.log";
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
    if (pid_ == 0) {
      // The server dies with the test (even a crashed one) and keeps off the test's stdout, so
      // that nothing is left holding ctest's pipes.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      execvp("nats-server", argv.data());
      static const char kFailed[] = "cannot run nats-server (is it installed? see dev)\n";
      (void)!write(STDERR_FILENO, kFailed, sizeof(kFailed) - 1);
      _exit(127);
    }
    // The server writes its ports file once it listens for clients.
    const std::filesystem::path ports_file =
        dir_.path() / ("nats-server_" + std::to_string(pid_) + ".ports");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      std::ifstream in(ports_file);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      size_t begin = text.find("nats://");
      size_t end = text.find('"', begin);
      if (begin != std::string::npos && end != std::string::npos) {
        url_ = text.substr(begin, end - begin);
        break;
      }
      int wait_status = 0;
      if (waitpid(pid_, &wait_status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("nats-server exited at start:\n" + Log());
      }
      if (std::chrono::steady_clock::now() > deadline) {
        Kill();
        throw std::runtime_error("nats-server did not listen within 10 s:\n" + Log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    try {
      Check(natsConnection_ConnectTo(&connection_, url_.c_str()), "connecting to " + url_);
      Check(natsConnection_JetStream(&js_, connection_, nullptr), "a JetStream context");
    } catch (...) {
      Stop();
      throw;
    }
  }

  void Stop() {
    jsCtx_Destroy(js_);
    js_ = nullptr;
    natsConnection_Destroy(connection_);
    connection_ = nullptr;
    Kill();
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int wait_status = 0;
    waitpid(pid_, &wait_status, 0);
    pid_ = -1;
  }

  TempDir dir_;
  pid_t pid_ = -1;
  std::string url_;
  natsConnection* connection_ = nullptr;
  jsCtx* js_ = nullptr;
};

}  // namespace weir::testing
