// Subscription: reads one partition of a topic from a Weir server over WebSocket
// (src/serve/README.md is the protocol), in offset order, with no gap and no duplicate, across
// reconnections, and optionally across restarts of the consumer through a cursor file.
//
//   weir::SubscriptionOptions options;
//   options.url = "ws://127.0.0.1:8080/streams/clicks?partition=0";
//   options.cursor_file = "clicks.cursor";
//   WEIR_ASSIGN_OR_RETURN(auto subscription, weir::Subscription::Open(options));
//   while (running) {
//     WEIR_ASSIGN_OR_RETURN(auto message, subscription->Next(std::chrono::seconds(1)));
//     if (message) Handle(message->offset, message->value);
//   }
//   WEIR_RETURN_IF_ERROR(subscription->Commit());  // the last message is handled too
//
// Handled messages. A message returned by Next counts as handled when Next is called again (or
// at Commit). The cursor file holds the last handled offset: a consumer that restarts with the
// same cursor file resumes at the message after it. A message that Next returned and the
// consumer never finished (it crashed, or threw and destroyed the Subscription) is delivered
// again after a restart: at-least-once across crashes, exactly-once across clean stops that call
// Commit() after handling the last message.
//
// Cursor file. One line of JSON, {"topic":T,"partition":P,"last":L}, replaced atomically (write
// FILE.tmp, fsync, rename, fsync the directory) at most every `cursor_interval` while Next is
// running, at Commit and at Close/destruction. A missing file means "start at `start`"; an
// unreadable, malformed or other topic's/partition's file fails Open with an error naming the
// file: a Subscription never restarts from `start` when a cursor exists. One Subscription (one
// process) per cursor file.
//
// Reconnection. A connection closed by the server for being too slow (4408 too_slow), shut down
// (1001), refused for a moment (4429 too_many_subscribers, HTTP 503), or lost (reset, EOF, no
// data or pong within `idle_timeout`) is reopened with offset = the next expected offset, after
// a backoff (initial_backoff doubling to max_backoff, +-20% jitter), invisibly to the caller.
// After `max_reconnects` failed attempts in a row Next returns kUnavailable with the last error.
// Open does not retry: the first connection either works or Open says why.
//
// Errors (all carry the URL and, for refusals, the server's close reason JSON verbatim):
//   kInvalidArgument  bad URL, start or options; bad_request (4400); an HTTP 4xx to the upgrade
//   kNotFound         not_found (4404): unknown topic or partition
//   kIOError          archive_unreadable (4500): the server's archive could not serve a catch-up
//   kOutOfRange       too_old (4413), evicted (4410), ahead (4416), empty (4204): the offset
//                     asked for (from the cursor, start or a resume) is not served any more or
//                     not yet; never skipped silently
//   kFailedPrecondition  unauthorized (4401); the Subscription was closed
//   kCorruption       the server broke the protocol: a gap or duplicate offset (with the
//                     numbers), a malformed greeting or frame; or a corrupt cursor file
//   kUnavailable      cannot connect (Open), or reconnection gave up (Next)
//   kIOError, kResourceExhausted (disk full), kNotFound (its directory went away): writing the
//                     cursor file failed; the message names the file
//   kInternal         a close code the protocol does not define (1003 subscriber_sent_data...)
// An error from Next is final: every later Next returns it again.
//
// Threads: a Subscription belongs to one thread at a time; all network I/O runs on the caller's
// thread inside Open, Next, Commit and Close (nothing runs in between: a consumer that does not
// call Next for long lets the server's backlog grow, and the server may close it as too_slow,
// which costs a reconnection but loses nothing).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "weir/status.h"
#include "weir/types.h"

namespace weir {

struct SubscriptionOptions {
  // ws://HOST[:PORT]/streams/TOPIC[?partition=P][&token=T]. PORT defaults to 80, P to 0. HOST is
  // a name, an IPv4 address or a bracketed IPv6 address. The start offset is not part of the
  // URL (see `start`). wss:// is not supported.
  std::string url{};
  // Where the last handled offset is kept; empty: no cursor. The directory must exist.
  std::string cursor_file{};
  // Where to start when there is no cursor file: "earliest" (all the log still holds), "latest"
  // (only messages appended from now on) or a decimal offset.
  std::string start = "earliest";
  // Sent as `Authorization: Bearer TOKEN`; empty: none (or the URL's ?token=).
  std::string token{};
  // TCP connect + WebSocket handshake + greeting, per attempt.
  std::chrono::milliseconds connect_timeout{10'000};
  // With nothing received for half of this, a ping is sent; with nothing for all of it the
  // connection counts as lost (and is reopened). Zero: never.
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5'000};
  // Failed reconnection attempts in a row before Next gives up; -1: never give up.
  int max_reconnects = 20;
  // How often at most the cursor file is rewritten while messages are being handled.
  std::chrono::milliseconds cursor_interval{100};
};

// What the server said when the subscription (or its latest reconnection) was accepted.
struct SubscriptionGreeting {
  std::string topic;
  PartitionId partition;
  Offset first;  // the partition's first retained offset then
  Offset next;   // the partition's next offset then: what was in the log when subscribing
  Offset start;  // the first message this connection delivers
  int64_t max_replay = 0;
  int64_t max_backlog = 0;
  // The first offset the partition's archive holds, if it has one: messages below `first` down
  // to it are served from the archive (a catch-up past retention).
  std::optional<Offset> archive_first;
};

struct SubscriptionMessage {
  Offset offset;
  std::string value;  // the record's value byte for byte (the JSON that was published)
};

class Subscription {
 public:
  // Validates the options, reads the cursor file, connects and reads the greeting. The first
  // message is the one after the cursor's last offset if there is a cursor file, else `start`.
  static Result<std::unique_ptr<Subscription>> Open(SubscriptionOptions options);
  // Close(), ignoring its status.
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Marks the message returned by the previous call as handled, then returns the next message,
  // or nullopt if none arrived within `timeout` (zero: only what has already arrived). Reconnects
  // as described above while it waits; a reconnection may overrun `timeout` by up to
  // connect_timeout.
  Result<std::optional<SubscriptionMessage>> Next(std::chrono::milliseconds timeout);

  // Marks the message last returned by Next as handled and writes the cursor file now.
  Status Commit();

  // Writes the cursor file (up to the last handled message: the one Next returned before the
  // latest, unless Commit() was called after it), closes the connection politely (waiting up to
  // a second for the server's close), and makes every later Next fail. Idempotent.
  Status Close();

  // The greeting of the current connection (of the latest reconnection).
  const SubscriptionGreeting& greeting() const;
  // The offset the next message will have.
  Offset next_offset() const;
  // Connections reopened after a drop, too_slow or shutdown, since Open.
  int64_t reconnects() const;

  struct Impl;

 private:
  explicit Subscription(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
