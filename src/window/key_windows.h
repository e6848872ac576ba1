// The windows of one key, kept in that key's state value, and the rules that fill and close
// them (include/weir/window.h states the semantics). Pure logic: no store, no I/O; the window
// operator (dataflow/) loads a key's state, calls these, and emits what they report.
//
// A key's state is one flat array, so that an event costs one state lookup and its windows sit
// in one run of memory:
//   [serde, key_watermark, close_bound, late_bound, extra, window, window, ...]
// where each window is `stride` values: start, end, fired, then (count windows) count, min_ts,
// max_ts, then one accumulator per aggregation (null: the aggregation's initial accumulator).
// Windows are sorted by start. Count windows use event indexes for start and end, and keep the
// key's next event index in extra; sliding windows keep in extra the events that may still fall
// into a window, [[ts, value], ...] sorted by ts.
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
#include <span>
#include <string>
#include <vector>

#include "weir/key.h"
#include "weir/types.h"
#include "weir/value.h"
#include "weir/window_definition.h"
#include "window/aggregations.h"

namespace weir::window {

inline constexpr int64_t kNoBound = std::numeric_limits<int64_t>::min();

struct Bounds {
  int64_t close = kNoBound;
  int64_t late = kNoBound;
  // Moves the bounds forward for watermark `wm` (Max: everything closes).
  void Advance(const WindowDefinition& definition, Watermark wm);
};

// A window that was created or removed (for closing by partition's index).
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
  Value::Array accumulators;
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

// A view of a key's state value with typed access to its windows.
class KeyState {
 public:
  // `stride`: values per window (KeyWindows::stride()). With a serde, a null value becomes an
  // empty state for a key of that serde.
  KeyState(Value& state, size_t stride, KeySerde serde);
  KeyState(Value& state, size_t stride);  // REQUIRES: an initialized state

  KeySerde serde() const;
  int64_t watermark() const { return slots()[kWatermark].as_int(); }
  void set_watermark(int64_t wm) { slots()[kWatermark] = Value(wm); }
  Bounds bounds() const;
  void set_bounds(const Bounds& b);
  Value& extra() { return slots()[kExtra]; }

  size_t windows() const { return (slots().size() - kFixedSlots) / stride_; }
  int64_t start(size_t i) const { return At(i, kStart).as_int(); }
  int64_t end(size_t i) const { return At(i, kEnd).as_int(); }
  bool fired(size_t i) const { return At(i, kFired).as_bool(); }
  void set_span(size_t i, int64_t start, int64_t end);
  void set_fired(size_t i);
  // Count windows' fields (REQUIRES: made with count-window strides).
  Value& count_field(size_t i, size_t field) { return At(i, kCountFields + field); }
  std::span<Value> accumulators(size_t i, size_t head);

  // The index of the first window whose start is >= `start`.
  size_t LowerBound(int64_t start) const;
  // Inserts a window at index i (null accumulators, not fired).
  void Insert(size_t i, int64_t start, int64_t end);
  void Erase(size_t first, size_t count = 1);
  // Moves window i out (its span, accumulators and fired mark); the window stays, emptied.
  WindowValue Take(size_t i, size_t head);
  // No window and nothing kept for future windows (a sliding window's events).
  bool empty() const;

 private:
  enum Slot { kSerde, kWatermark, kClose, kLate, kExtra, kFixedSlots };
  enum WindowField { kStart, kEnd, kFired, kCountFields };
  Value::Array& slots() { return state_->as_array(); }
  const Value::Array& slots() const { return state_->as_array(); }
  Value& At(size_t i, size_t field) { return slots()[kFixedSlots + i * stride_ + field]; }
  const Value& At(size_t i, size_t field) const {
    return slots()[kFixedSlots + i * stride_ + field];
  }

  Value* state_;
  size_t stride_;
};

// The rules of one window definition.
class KeyWindows {
 public:
  using Trigger = std::function<bool(const Value& result)>;
  KeyWindows(WindowDefinition definition, const Aggregations& aggregations, bool emit_current,
             Trigger trigger);

  const WindowDefinition& definition() const { return definition_; }
  // A view of a key's state (see KeyState); with a serde, initializes a null state.
  KeyState View(Value& state, KeySerde serde) const { return KeyState(state, stride(), serde); }
  KeyState View(Value& state) const { return KeyState(state, stride()); }

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
  Value Result(int64_t start, int64_t end, std::span<const Value> accumulators) const;

 private:
  // Values before a window's accumulators, and per window.
  size_t head() const { return definition_.is_count() ? 6 : 3; }
  size_t stride() const { return head() + aggregations_.size(); }

  void AddAligned(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddSliding(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddSession(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddCount(KeyState& key, const Value& value, EventTime ts, AddOutcome& outcome) const;
  // Reports an updated window (start, end as emitted): to `current` (for .Current()), and to
  // the trigger, which may fire it: a fired window goes to `ready` and is kept, marked fired,
  // until it closes.
  void Updated(KeyState& key, size_t i, int64_t start, int64_t end, AddOutcome& outcome) const;
  std::span<Value> Accumulators(KeyState& key, size_t i) const {
    return key.accumulators(i, head());
  }

  WindowDefinition definition_;
  const Aggregations& aggregations_;
  bool emit_current_;
  Trigger trigger_;
};

}  // namespace weir::window
