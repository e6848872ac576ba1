// Durable append + replay against redis-server Streams, with hiredis.
//
// Appends: `--messages` XADDs of one field holding `--size` bytes, pipelined: at most
// `--pipeline` commands sent and not yet answered. With `appendonly yes` redis writes the AOF
// before it replies; with `appendfsync always` it also fsyncs it before replying (once per
// event-loop pass, covering every command of the pass); with `everysec` a background fsync runs
// once a second. The server's settings are run.sh's.
// Every reply must be a stream ID, and XLEN must match at the end.
// Replay: XRANGE in batches of `--replay-batch` from the start (exclusive start after the
// first batch); each entry must hold the exact bytes published for its position.
#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "bench_common.h"

namespace weir::peers {
namespace {

constexpr const char* kKey = "bench";

struct FreeReply {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, FreeReply>;

Reply Command(redisContext* c, const char* format, const char* key) {
  Reply r(static_cast<redisReply*>(redisCommand(c, format, key)));
  if (r.get() == nullptr) Die(std::string("redis: ") + c->errstr);
  if (r->type == REDIS_REPLY_ERROR) Die(std::string("redis: ") + r->str);
  return r;
}

}  // namespace
}  // namespace weir::peers

int main(int argc, char** argv) {
  using namespace weir::peers;
  Flags flags(argc, argv,
              {"server", "messages", "pipeline", "replay-batch", "size", "timeout", "label"});
  std::string server = flags.Required("server");
  size_t colon = server.rfind(':');
  if (colon == std::string::npos) Die("--server is HOST:PORT");
  std::string host = server.substr(0, colon);
  int port = std::stoi(server.substr(colon + 1));
  uint64_t messages = static_cast<uint64_t>(flags.Int("messages", 100000));
  uint64_t pipeline = static_cast<uint64_t>(flags.Int("pipeline", 1000));
  int64_t replay_batch = flags.Int("replay-batch", 10000);
  size_t size = static_cast<size_t>(flags.Int("size", 100));
  int64_t timeout_s = flags.Int("timeout", 120);
  std::string label = flags.Str("label", "redis");
  if (pipeline < 1 || replay_batch < 1) Die("--pipeline and --replay-batch must be >= 1");

  timeval tv{.tv_sec = timeout_s, .tv_usec = 0};
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, tv);
  if (c == nullptr || c->err) Die("redis connect " + server + ": " + (c ? c->errstr : "no memory"));
  redisSetTimeout(c, tv);
  Command(c, "DEL %s", kKey);

  std::string message;
  uint64_t t0 = NowNs();
  // A sliding window: redisGetReply writes every command appended so far before it blocks on a
  // read, so up to `pipeline` commands are on their way while replies come back.
  uint64_t sent = 0;
  for (uint64_t got = 0; got < messages; ++got) {
    for (; sent < messages && sent - got < pipeline; ++sent) {
      MakeMessage(sent, 0, size, &message);
      if (redisAppendCommand(c, "XADD %s * d %b", kKey, message.data(), message.size()) !=
          REDIS_OK) {
        Die(std::string("redis append: ") + c->errstr);
      }
    }
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK) Die(std::string("redis XADD: ") + c->errstr);
    Reply r(static_cast<redisReply*>(raw));
    if (r->type != REDIS_REPLY_STRING) {
      Die("XADD " + std::to_string(got) + ": " +
          (r->type == REDIS_REPLY_ERROR ? r->str : "not a stream ID"));
    }
  }
  uint64_t t1 = NowNs();
  {
    Reply len = Command(c, "XLEN %s", kKey);
    if (len->type != REDIS_REPLY_INTEGER || static_cast<uint64_t>(len->integer) != messages) {
      Die("XLEN is " + std::to_string(len->integer) + ", expected " + std::to_string(messages));
    }
  }

  uint64_t t2 = NowNs();
  std::string start = "-";
  std::string expected;
  uint64_t seq = 0;
  while (seq < messages) {
    Reply r(
        static_cast<redisReply*>(redisCommand(c, "XRANGE %s %s + COUNT %lld", kKey, start.c_str(),
                                              static_cast<long long>(replay_batch))));
    if (r.get() == nullptr) Die(std::string("redis XRANGE: ") + c->errstr);
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
      Die("XRANGE ended at " + std::to_string(seq) + " of " + std::to_string(messages));
    }
    for (size_t i = 0; i < r->elements; ++i, ++seq) {
      redisReply* entry = r->element[i];
      if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
          entry->element[1]->elements != 2) {
        Die("XRANGE: malformed entry at " + std::to_string(seq));
      }
      redisReply* value = entry->element[1]->element[1];
      MakeMessage(seq, 0, size, &expected);
      if (std::string_view(value->str, value->len) != expected) {
        Die("replay entry " + std::to_string(seq) + " is " + std::string(value->str, value->len) +
            ", expected " + expected);
      }
    }
    start = "(" + std::string(r->element[r->elements - 1]->element[0]->str);
  }
  uint64_t t3 = NowNs();
  redisFree(c);

  std::printf("%s: %llu messages of %zu bytes, at most %llu XADDs in flight\n", label.c_str(),
              static_cast<unsigned long long>(messages), size,
              static_cast<unsigned long long>(pipeline));
  ReportDurable(label, messages, static_cast<double>(t1 - t0) * 1e-9,
                static_cast<double>(t3 - t2) * 1e-9, "acked per the server's appendfsync",
                "XRANGE COUNT " + std::to_string(replay_batch));
  return 0;
}
