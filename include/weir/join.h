// Joins (docs/architecture.md §7): nodes with several parent streams.
//
// Input-group assembly: `app.Join({{"camera", cam}, {"lidar", lidar}}, options)` assembles
// one group per correlation id (trace mode) or per instant of event time (time mode) and emits
// one record per ready group:
//
//   {"trace_id" | "group_id": "...", "seq": N, "event_ts": T,
//    "<parent>": <value> | [<value>, ...] (a collect parent's samples) | null (missing), ...}
//
// keyed by the group id, timestamped with the group's time (the smallest member time).
//
// Rules (each has a named test in src/join/assembler_test.cc):
// - Trace mode: a group is the messages with one correlation id (`trace_field`, or the record
//   key). It is ready when every parent has a message in it.
// - Time mode: a message of a synchronized parent joins the pending group nearest its event time
//   within `tolerance` among the groups not yet holding that parent (ties: the older group);
//   otherwise it seeds a new group. A group's time is the smallest time of its members.
//   A message whose value lacks `time_field` (when one is given) uses its record timestamp.
// - Collect parents (time mode; `collect` maps a parent to its window): their messages are
//   buffered per parent (at most `collect_cap`; beyond it the oldest is acknowledged and
//   dropped) and attached when a group is emitted, as the list of the samples whose time lies
//   within the window of the group's time (|t - group time| <= window), oldest first. A sample
//   goes to one group at most. A sample no group claimed is dropped once the join's clock is
//   past its time + timeout + settle.
// - Settle: a complete time group is emitted only once the join's clock has passed its time by
//   the largest collect window, so that its collect samples have arrived.
// - Timeout (`timeout`, event time): once the join's clock has passed a group's time by the
//   timeout, a time group with at least `quorum` synchronized parents is emitted with the
//   missing parents null; any other group is evicted by the missing policy. 0: no timeout.
// - The join's clock is the largest event time it has seen on any parent (parents are read
//   merged in event-time order); at the end of input it is +infinity: every group is settled or
//   timed out (the drain), and the task does not finish before staged groups are emitted.
// - Eviction, by the missing policy: kDrop sends each member to the dead-letter topic with the
//   reason and acknowledges it; kError negatively acknowledges it, so the source redelivers it
//   (up to `max_deliver` deliveries, then it is a dead letter). `max_pending` caps the pending
//   groups: beyond it the oldest is evicted as kDrop.
// - Delivery: a member stays unacknowledged (its offset does not commit, JetStream does not get
//   its ack) until the group it is in has been processed by the steps after the join and that
//   processing is checkpointed; a redelivered message that is still buffered supersedes its old
//   copy (the old delivery is terminated). Group ids and seqs are deterministic: the same
//   members give the same group. When an input is a broker that redelivers by itself
//   (JetStream), a group id the join already emitted (within `dedup` of event time) is not
//   emitted again, so a redelivery after a crash between checkpoint and ack is deduplicated.
//   (Embedded inputs need no dedup: a crash rolls the outputs back with the held deliveries.)
//
// Interval join: `left.IntervalJoin(right, {.lower = 5s, .upper = 10s})` pairs each left event
// with every right event of the same key with left.ts - lower <= right.ts <= left.ts + upper
// (both bounds are distances back and forward from the left time, >= 0). Flink's
// `between(-5s, +10s)` is `IntervalJoinOptions::Between(-5s, 10s)`.
// Output {"left": v, "right": v}, at max(left.ts, right.ts); with `left_outer`, a left event that
// found no match is emitted with "right": null once no right event can still match it.
//
// As-of join: `left.AsOfJoin(right, {.lookback = 60s})` emits, for each left event, the latest
// right value of the same key at or before the left time (and within `lookback` if given, else
// null):
// {"left": v, "right": v | null}. A left event is emitted once the watermark has reached its
// time, so a right event that arrives out of order (within `grace`) is still seen.
//
// Both keep their state per key in the step's store (exactly once), expire it by watermark, and
// send an event that arrives after its state has expired (ts < watermark - grace) to
// `late_topic` (or `<application>.late` if empty), never silently dropping it. The watermark is
// the task's: the minimum over the join's inputs (each the largest event time read from it, or
// the minimum over its producers after a group_by; +infinity once an input has ended), so an
// input that is ahead never makes the other's events late. After the end of input in an earlier
// run, every event is late (window.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace weir {

enum class JoinMode { kTrace, kTime };
enum class MissingPolicy { kDrop, kError };

struct JoinOptions {
  JoinMode mode = JoinMode::kTrace;
  std::string name{};  // the step name; empty: "join-<index>"
  // Trace mode: the value field holding the correlation id (string or integer); empty: the
  // record key. A message without it is a dead letter.
  std::string trace_field{};
  // Time mode: the value field with the event time in ms; empty or absent: the record timestamp.
  std::string time_field{};
  std::chrono::milliseconds tolerance{0};  // time mode: REQUIRED > 0
  std::chrono::milliseconds timeout{0};    // event time; 0: none (wait for the end of input)
  int quorum = 0;                          // time mode; 0: every synchronized parent
  std::map<std::string, std::chrono::milliseconds> collect{};  // time mode: parent -> window
  MissingPolicy missing = MissingPolicy::kDrop;
  int64_t max_pending = 10'000;
  int64_t collect_cap = 0;  // per collect parent; 0: max(1024, 16 * max_pending)
  int max_deliver = 5;      // deliveries of a nak'd message before it is a dead letter
  std::chrono::milliseconds dedup{std::chrono::minutes(10)};  // event time
};

struct IntervalJoinOptions {
  // Flink's between(from, to): left.ts + from <= right.ts <= left.ts + to. The window must hold
  // the left time (from <= 0 <= to); Run() refuses any other.
  static IntervalJoinOptions Between(std::chrono::milliseconds from, std::chrono::milliseconds to) {
    IntervalJoinOptions options;
    options.lower = -from;
    options.upper = to;
    return options;
  }

  std::string name{};
  std::chrono::milliseconds lower{0};  // right.ts >= left.ts - lower
  std::chrono::milliseconds upper{0};  // right.ts <= left.ts + upper
  bool left_outer = false;
  std::chrono::milliseconds grace{0};  // out-of-orderness accepted before an event is late
  std::string late_topic{};            // empty: "<application>.late"
};

struct AsOfJoinOptions {
  std::string name{};
  std::chrono::milliseconds lookback{0};  // 0: unbounded (the latest right value of the key)
  std::chrono::milliseconds grace{0};
  std::string late_topic{};
};

}  // namespace weir
