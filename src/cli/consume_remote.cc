// weir consume TOPIC --server ws://HOST:PORT: one partition through a weir::Subscription.
#include <atomic>
#include <cstdio>

#include "cli/commands.h"
#include "weir/subscription.h"
#include "weir/value.h"

namespace weir::cli {
namespace {

// Lines are written out at least this often without a cursor (with one, after every line).
constexpr int kLinesPerWrite = 4096;
constexpr auto kPollInterval = std::chrono::milliseconds(200);

// `weir consume`'s line, with what the protocol carries: no key, no timestamp.
void AppendRemoteLine(std::string& out, PartitionId p, const SubscriptionMessage& m) {
  out.append("{\"partition\":");
  out.append(std::to_string(p.value()));
  out.append(",\"offset\":");
  out.append(std::to_string(m.offset.value()));
  out.append(",\"value\":");
  if (Value::Parse(m.value).ok()) {
    out.append(m.value);
  } else {
    AppendJsonString(out, m.value);
  }
  out.append("}\n");
}

// ws://HOST[:PORT][/] -> the subscription URL of one partition of `topic`.
Result<std::string> StreamUrlOf(std::string server, const std::string& topic, int32_t partition) {
  while (!server.empty() && server.back() == '/') server.pop_back();
  size_t scheme = server.find("://");
  if (scheme == std::string::npos || server.find_first_of("/?#", scheme + 3) != std::string::npos) {
    return Status::InvalidArgument("--server takes ws://HOST:PORT, not '" + server + "'");
  }
  return server + "/streams/" + topic + "?partition=" + std::to_string(partition);
}

Status WriteOut(std::string& out) {
  if (!out.empty() && std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) {
    return Status::IOError("writing to stdout failed");
  }
  out.clear();
  if (std::fflush(stdout) != 0) return Status::IOError("writing to stdout failed");
  return Status::OK();
}

}  // namespace

int ConsumeRemote(const ConsumeArgs& args) {
  // Ctrl-C stops cleanly in every mode: the cursor then holds the last line printed.
  static std::atomic<bool> stop{false};
  InstallStopHandler([] { stop = true; });
  const PartitionId partition(args.partition < 0 ? 0 : args.partition);
  SubscriptionOptions options;
  auto url = StreamUrlOf(args.server, args.topic, partition.value());
  if (!url.ok()) return Fail(url.status());
  options.url = *url;
  options.cursor_file = args.cursor_file;
  options.start = args.from;
  options.token = args.token;
  if (args.follow) options.max_reconnects = -1;
  auto opened = Subscription::Open(options);
  if (!opened.ok()) return Fail(opened.status());
  Subscription& subscription = **opened;
  // Without --follow, what the partition held when subscribing.
  const Offset end = subscription.greeting().next;

  int64_t printed = 0;
  std::string out;
  auto done = [&] {
    if (args.max_records >= 0 && printed >= args.max_records) return true;
    return !args.follow && subscription.next_offset() >= end;
  };
  while (!stop && !done()) {
    // With a cursor file a line counts as handled once written out: the next Next says so.
    const bool flush = !args.cursor_file.empty() || printed % kLinesPerWrite == 0;
    if (flush) {
      if (Status s = WriteOut(out); !s.ok()) return Fail(s);
    }
    auto message = subscription.Next(std::chrono::milliseconds(0));
    if (message.ok() && !*message) {
      if (Status s = WriteOut(out); !s.ok()) return Fail(s);
      message = subscription.Next(kPollInterval);
    }
    if (!message.ok()) {
      (void)WriteOut(out);
      return Fail(message.status());
    }
    if (!*message) continue;
    AppendRemoteLine(out, partition, **message);
    ++printed;
  }
  if (Status s = WriteOut(out); !s.ok()) return Fail(s);
  Status s = subscription.Commit();
  if (s.ok()) s = subscription.Close();
  if (!s.ok()) return Fail(s);
  return 0;
}

}  // namespace weir::cli
