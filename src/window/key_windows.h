// The windows of one key, kept in that key's state value, and the rules that fill and close
// them (include/weir/window.h states the semantics). Pure logic: no store, no I/O; the window
// operator (dataflow/) loads a key's state, calls these, and emits what they report.
//
// A key's state is one Value, so that an event costs one state lookup:
//   [serde, key_watermark, close_bound, late_bound, windows, extra]
// windows: [[start, end, accumulators, fired], ...] sorted by start. Count windows use event
// indexes for start and end and add [count, min_ts, max_ts] to each window; their extra is the
// key's next event index. Sliding windows keep in extra the events that may still fall into a
// window: [[ts, value], ...] sorted by ts.
//
// Bounds only move forward. close_bound: every window with end <= close_bound has closed.
// late_bound (sessions): events before it are late. They are derived from the watermark and
// the current grace/gap, but kept as the maximum ever reached, so a restart with a larger grace
// or gap never reopens what was emitted.
// Thread safety: none; a task's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "weir/key.h"
#include "weir/types.h"
#include "weir/value.h"
#include "weir/window.h"
#include "window/aggregations.h"

namespace weir::window {

inline constexpr int64_t kNoBound = std::numeric_limits<int64_t>::min();

struct Bounds {
  int64_t close = kNoBound;
  int64_t late = kNoBound;
  // Moves the bounds forward for watermark `wm` (Max: everything closes).
  void Advance(const WindowDefinition& definition, Watermark wm);
};

// A window that changed, was created, was removed, or closed.
struct WindowSpan {
  int64_t start;
  int64_t end;
  friend bool operator==(const WindowSpan&, const WindowSpan&) = default;
};

// A window's span and accumulators, as emitted (count windows: the smallest event time in it
// and the largest + 1).
struct WindowValue {
  int64_t start;
  int64_t end;
  Value accumulators;
  bool fired = false;  // closed windows only: already emitted by a trigger, close silently
};

// What one event did.
struct AddOutcome {
  bool late = false;
  int64_t late_by_ms = 0;
  std::string reason;  // why it is late
  // Windows whose value changed, ascending start, with their new accumulators (filled only
  // when the KeyWindows were made for .Current() emission).
  std::vector<WindowValue> current;
  std::vector<WindowSpan> created;  // windows that now exist and did not before
  std::vector<WindowSpan> removed;  // windows that no longer exist (merged away, re-keyed)
  // Windows complete now, to emit as final results: count windows that reached n events (and
  // are removed), windows a trigger fired (kept, marked fired, until they close).
  std::vector<WindowValue> ready;
  void Clear();
};

// A view of a key's state value with typed access. Constructing it on a null value makes an
// empty state for a key of `serde`.
class KeyState {
 public:
  KeyState(Value& state, KeySerde serde);
  explicit KeyState(Value& state);  // REQUIRES: an initialized state

  KeySerde serde() const;
  int64_t watermark() const { return slots()[kWatermark].as_int(); }
  void set_watermark(int64_t wm) { slots()[kWatermark] = Value(wm); }
  Bounds bounds() const;
  void set_bounds(const Bounds& b);
  Value::Array& windows() { return slots()[kWindows].as_array(); }
  const Value::Array& windows() const { return slots()[kWindows].as_array(); }
  Value& extra() { return slots()[kExtra]; }
  // No window and nothing kept for future windows (a sliding window's events).
  bool empty() const {
    const Value& extra = slots()[kExtra];
    return windows().empty() && !(extra.is_array() && !extra.as_array().empty());
  }
  // The window starting at `start`, or nullptr.
  Value::Array* Find(int64_t start);

  static int64_t Start(const Value& w) { return w.as_array()[0].as_int(); }
  static int64_t End(const Value& w) { return w.as_array()[1].as_int(); }
  static const Value& Accumulators(const Value& w) { return w.as_array()[2]; }
  static bool Fired(const Value& w) { return w.as_array()[3].as_bool(); }

 private:
  enum Slot { kSerde, kWatermark, kClose, kLate, kWindows, kExtra, kSlotCount };
  Value::Array& slots() { return state_->as_array(); }
  const Value::Array& slots() const { return state_->as_array(); }
  Value* state_;
};

// The rules of one window definition.
class KeyWindows {
 public:
  using Trigger = std::function<bool(const Value& result)>;
  KeyWindows(WindowDefinition definition, const Aggregations& aggregations, bool emit_current,
             Trigger trigger);

  const WindowDefinition& definition() const { return definition_; }

  // Adds an event to the key's windows under `bounds` (the key's or the partition's, already
  // advanced for this event). REQUIRES: aggregations.Accepts(value).
  void Add(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
           AddOutcome& outcome) const;
  // Removes the windows that `bounds` close, appending them to `closed` in ascending end, then
  // start. Count windows never close this way.
  void Expire(KeyState& key, const Bounds& bounds, std::vector<WindowValue>& closed) const;
  // Every window of the key, removed, as at the end of input: time windows close; count windows
  // short of n events are dropped (they are not emitted).
  void CloseAll(KeyState& key, std::vector<WindowValue>& closed) const;

  // The result value of a window: {"start", "end", <aggregates>...}.
  Value Result(int64_t start, int64_t end, const Value& accumulators) const;

 private:
  void AddAligned(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddSliding(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddSession(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddCount(KeyState& key, const Value& value, EventTime ts, AddOutcome& outcome) const;
  // Reports an updated window: to `current` (for .Current()), and to the trigger, which may fire
  // it: a fired window goes to `ready` and is kept, marked fired, until it closes.
  void Updated(Value::Array& window, AddOutcome& outcome) const;

  WindowDefinition definition_;
  const Aggregations& aggregations_;
  bool emit_current_;
  Trigger trigger_;
};

}  // namespace weir::window
