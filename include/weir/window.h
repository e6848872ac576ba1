// Windows (docs/architecture.md §6): group a keyed stream's events into windows and aggregate each.
//
//   stream.Window(weir::WindowDefinition::Session(std::chrono::seconds(30)))
//       .Agg({{"clicks", weir::agg::Count()}, {"revenue", weir::agg::Sum("amount")}})
//       .Final();                      // one result per window, when it closes
//
// RESULTS. A result is a record under the original key whose value is
// {"start": S, "end": E, "<name>": <aggregate>, ...} ({"start", "end", "value"} for a single
// unnamed aggregation) and whose timestamp is E - 1, the window's last instant. Intervals are
// half-open [start, end).
//
// PER EVENT, in this order: (1) an aggregation that cannot take the value sends the record to
// the dead-letter topic, and the window step does nothing else with it; (2) the watermarks take
// the event: the partition watermark is the task's (docs/architecture.md §2), for a task reading a
// source partition the largest event time seen in it so far (every record read counts: ones a
// filter before the window dropped, and dead letters); for a task reading a repartition topic
// (after a group_by) the minimum over the producing tasks' watermarks, which each writes into the
// topic as it goes (less the output lag of its own windows and joins, so nothing it emits later is
// behind it); for a task with several inputs (a join) the minimum over its inputs, an ended
// input counting as +infinity. So whichever upstream task runs ahead, an event that was in order
// in its source partition is never late after a repartition. A key's watermark is the largest
// event time seen for that key among the events that reached the window step, capped by the
// partition watermark (reading a source partition the cap never binds; after a repartition it
// keeps a producer that ran ahead from closing the key's windows under the others);
// (3) the event is late, or it is added to its windows (and .Current() emits every window it
// changed, in ascending start order); (4) windows that are now closed are emitted by .Final()
// (a key's in ascending end, then start) and forgotten. Windows closed by records the step does
// not see (filtered out, dead letters) are emitted with the next event that reaches it, at an
// idle tick, or at the end of input. At the end of a bounded input the watermark becomes
// +infinity and every window closes, for good, and the watermark stays +infinity: a later run
// over more input (a file that grew, a bounded topic that did) sends every event that reaches a
// window or a time join to the late output, for every key alike (new keys too), with the reason
// "input ended in an earlier run, which closed every window" and late_by_ms 0. Reset the
// pipeline (Application::Reset(), weir run --reset) to start over.
// `wm` below is the key's watermark under Closing::kKey, the partition's under kPartition.
//
// TIME WINDOWS (event time, milliseconds):
//   - tumbling(size) and hopping(size, step): windows [k*step, k*step + size) for every integer
//     k, aligned to the epoch; an event at t belongs to every one containing t. A window closes
//     when wm >= end + grace. An event is late iff every window containing it has closed, i.e.
//     wm >= (the largest end of a window containing t) + grace; late_by_ms = wm - that - grace.
//   - sliding(size): each event at t defines its window [t - size + 1, t + 1) (the key's events
//     in (t - size, t]); the window holds every admissible event of the key with a time in it,
//     whenever they arrive. It closes when wm >= end + grace. An event is late iff
//     wm >= t + size + grace (no window could still hold it); late_by_ms = wm - (t + size + grace).
//     An admissible event whose own window is already closed still joins the open windows that
//     contain it, and its own window is emitted at once (Final) with every stored event in it:
//     windows are defined per event, so an event at the time of an emitted window makes a new
//     result for that span, now holding it too.
//   - session(gap): an event at t joins a session iff first - gap <= t <= last + gap (it lies
//     within one gap of the session's first or last event, or between them); an event within
//     a gap of two sessions merges them (and their aggregates), and the merged-away
//     session is deleted (.Current() then emits the merged session, with its new start). A
//     session is [first, last + 1). It closes once wm > last + 2*gap + grace. An event is late
//     iff t < wm - gap - grace; late_by_ms = wm - gap - grace - t. So stored sessions are
//     maximal, disjoint and never within one gap of each other (timestamp 0 included).
//   Grace and gap may change across a restart of the application: the bound below which events
//   are late never moves back (a persisted cursor), so a window that was emitted is never
//   emitted again.
//
// COUNT WINDOWS (each key's events in arrival order; no watermark, no lateness, no grace):
//   tumbling(n): events #0..n-1, #n..2n-1, ...; hopping(n, step): windows of n events starting
//   at every step-th event (#0, #step, #2*step, ...); sliding(n) = hopping(n, 1). A window
//   closes when it holds n events. Its start is the smallest event time in it and its end the
//   largest + 1. A window still short of n events at the end of a bounded input is not emitted.
//
// LATE EVENTS are never added to any window and never disappear silently: they are counted,
// written to the late topic if one is set ({"reason", "late_by_ms", "value": <the value>}
// under the original key and timestamp), and passed to OnLate.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "weir/record.h"
#include "weir/status.h"
#include "weir/stream.h"
#include "weir/window_definition.h"

namespace weir {

enum class Closing : uint8_t { kKey, kPartition };

// An event that arrived after every window it belongs to had closed.
struct LateRecord {
  Record record;
  std::string reason;  // "session closed: ts 1000 < watermark 40000 - gap 30000 - grace 0"
  int64_t late_by_ms;  // how far past the admissible bound it is
};

class WindowedStream {
 public:
  // The aggregations of each window, under names: {"<name>": <result>, ...}.
  WindowedStream& Agg(std::vector<std::pair<std::string, AggregatorPtr>> aggregations);
  // One unnamed aggregation: {"start", "end", "value"}.
  WindowedStream& Agg(AggregatorPtr aggregation);
  WindowedStream& Closing(weir::Closing closing);
  // Called on the task's thread for every late event (after it is counted and written to the
  // late topic, if any). Must not block.
  WindowedStream& OnLate(std::function<void(const LateRecord&)> on_late);
  // Late events also go to this topic: {"reason", "late_by_ms", "value"} under the event's key
  // and timestamp (exactly once, like every output).
  WindowedStream& LateTopic(std::string topic);
  // ...or to this file of JSON lines, {"key", "timestamp", "value": {"reason", ...}}.
  WindowedStream& LateFile(std::string path);
  // Early firing: after each update, if `fire(result)` is true the window is emitted and
  // closed at once. Refused on session windows (a bridging event belongs to two sessions, so
  // there is no single current value to fire on) and on sliding windows.
  WindowedStream& Trigger(std::function<bool(const Value& result)> fire);

  // One result per window, when it closes.
  Stream Final();
  // A result on every update of a window (a session merge is an update of the merged session,
  // with its new start).
  Stream Current();

 private:
  friend class Stream;
  WindowedStream(dataflow::Graph* graph, int parent, WindowDefinition definition)
      : graph_(graph), parent_(parent), definition_(std::move(definition)) {}
  Stream Emit(bool final);

  dataflow::Graph* graph_;
  int parent_;
  WindowDefinition definition_;
  std::vector<std::pair<std::string, AggregatorPtr>> aggregations_;
  bool single_unnamed_ = false;
  weir::Closing closing_ = weir::Closing::kKey;
  std::function<void(const LateRecord&)> on_late_;
  std::string late_topic_;
  std::string late_file_;
  std::function<bool(const Value&)> trigger_;
};

}  // namespace weir
