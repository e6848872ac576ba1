// Durable append + replay against nats-server JetStream (file storage), with cnats.
//
// Appends: `--messages` messages of `--size` bytes published with js_PublishAsync to a fresh
// one-replica file-storage stream, at most `--inflight` unacknowledged (the library stalls
// beyond), then js_PublishAsyncComplete; appends/s counts from the first publish to the last
// ack. Every ack must be positive and carry the next stream sequence. A JetStream ack means the
// message is written to the stream's file (page cache): nats-server 2.9 fsyncs file stores on a
// timer (sync_interval, 2 minutes, not settable in 2.9), not before it acks.
// Replay: an ordered consumer (ephemeral, flow-controlled push, no acks) from the first
// message; each message must be the exact bytes published for its sequence, in order.
#include <nats/nats.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "bench_common.h"

namespace weir::peers {
namespace {

constexpr const char* kStream = "BENCH";
constexpr const char* kSubject = "bench";

void Check(natsStatus s, const std::string& what) {
  if (s != NATS_OK) {
    Die(what + ": " + natsStatus_GetText(s) + " " + nats_GetLastError(nullptr));
  }
}

struct AckState {
  std::atomic<uint64_t> acked{0};
  std::atomic<bool> failed{false};
  std::string error;  // written once, before failed is set
};

void OnAck(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
  auto* state = static_cast<AckState*>(closure);
  uint64_t expect = state->acked.load(std::memory_order_relaxed) + 1;
  if (pa == nullptr || pa->Sequence != expect) {
    if (!state->failed.exchange(true)) {
      state->error = pae != nullptr
                         ? std::string(pae->ErrText != nullptr ? pae->ErrText : "")
                         : "ack with sequence " + std::to_string(pa != nullptr ? pa->Sequence : 0) +
                               ", expected " + std::to_string(expect);
    }
  } else {
    state->acked.store(expect, std::memory_order_release);
  }
  natsMsg_Destroy(msg);
}

}  // namespace
}  // namespace weir::peers

int main(int argc, char** argv) {
  using namespace weir::peers;
  Flags flags(argc, argv, {"server", "messages", "inflight", "size", "timeout", "label"});
  std::string url = "nats://" + flags.Required("server");
  uint64_t messages = static_cast<uint64_t>(flags.Int("messages", 100000));
  int64_t inflight = flags.Int("inflight", 4096);
  size_t size = static_cast<size_t>(flags.Int("size", 100));
  int64_t timeout_ms = flags.Int("timeout", 120) * 1000;
  std::string label = flags.Str("label", "jetstream");

  natsConnection* nc = nullptr;
  Check(natsConnection_ConnectTo(&nc, url.c_str()), "connect " + url);

  AckState acks;
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.PublishAsync.MaxPending = inflight;
  js_options.PublishAsync.AckHandler = OnAck;
  js_options.PublishAsync.AckHandlerClosure = &acks;
  js_options.PublishAsync.StallWait = timeout_ms;
  jsCtx* js = nullptr;
  Check(natsConnection_JetStream(&js, nc, &js_options), "JetStream context");

  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  const char* subjects[] = {kSubject};
  config.Name = kStream;
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.Replicas = 1;
  jsErrCode err = static_cast<jsErrCode>(0);
  js_DeleteStream(js, kStream, nullptr, nullptr);  // absent in a fresh store dir
  jsStreamInfo* info = nullptr;
  Check(js_AddStream(&info, js, &config, nullptr, &err),
        "add stream (err " + std::to_string(err) + ")");
  jsStreamInfo_Destroy(info);

  std::string message;
  uint64_t t0 = NowNs();
  for (uint64_t seq = 0; seq < messages; ++seq) {
    MakeMessage(seq, 0, size, &message);
    Check(js_PublishAsync(js, kSubject, message.data(), static_cast<int>(message.size()), nullptr),
          "publish " + std::to_string(seq));
    if (acks.failed.load()) Die("publish: " + acks.error);
  }
  jsPubOptions wait;
  jsPubOptions_Init(&wait);
  wait.MaxWait = timeout_ms;
  Check(js_PublishAsyncComplete(js, &wait), "waiting for acks");
  uint64_t t1 = NowNs();
  if (acks.failed.load()) Die("publish: " + acks.error);
  if (acks.acked.load() != messages) {
    Die("publish: " + std::to_string(acks.acked.load()) + " acks for " + std::to_string(messages) +
        " messages");
  }
  Check(js_GetStreamInfo(&info, js, kStream, nullptr, &err), "stream info");
  if (info->State.Msgs != messages) {
    Die("stream holds " + std::to_string(info->State.Msgs) + " messages, expected " +
        std::to_string(messages));
  }
  jsStreamInfo_Destroy(info);

  jsSubOptions sub_options;
  jsSubOptions_Init(&sub_options);
  sub_options.Stream = kStream;
  sub_options.Ordered = true;
  natsSubscription* sub = nullptr;
  uint64_t t2 = NowNs();
  Check(js_SubscribeSync(&sub, js, kSubject, nullptr, &sub_options, &err), "ordered consumer");
  std::string expected;
  for (uint64_t seq = 0; seq < messages; ++seq) {
    natsMsg* msg = nullptr;
    Check(natsSubscription_NextMsg(&msg, sub, timeout_ms), "replay at " + std::to_string(seq));
    MakeMessage(seq, 0, size, &expected);
    std::string_view got(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
    if (got != expected) {
      Die("replay message " + std::to_string(seq) + " is " + std::string(got) + ", expected " +
          expected);
    }
    natsMsg_Destroy(msg);
  }
  uint64_t t3 = NowNs();
  natsSubscription_Unsubscribe(sub);
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  nats_Close();

  std::printf("%s: %llu messages of %zu bytes, %lld async publishes in flight\n", label.c_str(),
              static_cast<unsigned long long>(messages), size, static_cast<long long>(inflight));
  ReportDurable(label, messages, static_cast<double>(t1 - t0) * 1e-9,
                static_cast<double>(t3 - t2) * 1e-9, "acked when written; fsync every 2 min",
                "ordered consumer");
  return 0;
}
