// The windows of one key, kept in that key's state value, and the rules that fill and close
// them (include/weir/window.h states the semantics). Pure logic: no store, no I/O; the window
// operator (dataflow/) loads a key's state, calls these, and emits what they report.
//
// A key's state is one flat array, so that an event costs one state lookup and its windows sit
// in one run of memory. Its layout, version kWindowStateVersion:
//   [version, serde, key_watermark, close_bound, late_bound, kind_state, window, window, ...]
// kind_state is what the kind of window keeps beside its windows: count windows, the index of
// the key's next event; sliding windows, the events that may still fall into a window,
// [[ts, value], ...] sorted by ts; null for the others. Each window is
// WindowStateLayout::stride() values: start, end, fired, then (count windows) count, min_ts,
// max_ts, then one accumulator per aggregation (null: the aggregation's initial accumulator).
// Windows are sorted by start; count windows use event indexes for start and end. A stored
// value of another version or shape is refused with a kCorruption Status when it is opened
// (KeyState::Open), never read as something else.
//
// Bounds only move forward. close_bound: every window with end <= close_bound has closed.
// late_bound (sessions): events before it are late. They are derived from the watermark and
// the current grace/gap, but kept as the maximum ever reached, so a restart with a larger grace
// or gap never reopens what was emitted. Closing by partition keeps them per partition instead,
// in a value of their own (EncodePartitionBounds).
// Thread safety: none; a task's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "weir/key.h"
#include "weir/status.h"
#include "weir/types.h"
#include "weir/value.h"
#include "weir/window_definition.h"
#include "window/aggregations.h"

namespace weir::window {

inline constexpr int64_t kNoBound = std::numeric_limits<int64_t>::min();
// The version of the stored layouts above; a value of another is refused.
inline constexpr int64_t kWindowStateVersion = 1;

// A key's or a partition's bounds (see above), event times.
struct Bounds {
  EventTime close = EventTime::Min();
  EventTime late = EventTime::Min();
  // Whether a time window ending at `window_end` has closed.
  bool Closes(int64_t window_end) const { return window_end <= close.value(); }
  // Moves the bounds forward for watermark `wm` (Max: everything closes).
  void Advance(const WindowDefinition& definition, Watermark wm);
};

// A partition's bounds as stored (closing by partition): [version, close_bound, late_bound].
Value EncodePartitionBounds(const Bounds& bounds);
// kCorruption naming what is wrong if `stored` is not that.
Result<Bounds> DecodePartitionBounds(const Value& stored);

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

// The shape of a key's state for one window step: what kind_state holds and how many values
// each window has (see the layout above).
class WindowStateLayout {
 public:
  WindowStateLayout(const WindowDefinition& definition, size_t aggregations)
      : counts_events_(definition.is_count()),
        keeps_events_(definition.kind() == WindowKind::kSliding),
        aggregations_(aggregations) {}
  bool counts_events() const { return counts_events_; }  // count windows
  bool keeps_events() const { return keeps_events_; }    // sliding windows
  // Values of a window before its accumulators: start, end, fired (+ count, min_ts, max_ts).
  size_t window_fields() const { return counts_events_ ? 6 : 3; }
  size_t stride() const { return window_fields() + aggregations_; }

 private:
  bool counts_events_;
  bool keeps_events_;
  size_t aggregations_;
};

// A view of a key's state value with named access to its header and its windows.
class KeyState {
 public:
  // Makes `state` (null: the key has no state yet) a key of `serde` with no windows.
  static KeyState Create(Value& state, const WindowStateLayout& layout, KeySerde serde);
  // Opens a stored state: kCorruption naming what is wrong if it is not of this version and
  // layout (another version, a header field of the wrong type, windows of another stride).
  static Result<KeyState> Open(Value& state, const WindowStateLayout& layout);

  KeySerde serde() const;
  // The key's own watermark: the largest event time it has seen.
  Watermark watermark() const { return Watermark(slots()[kKeyWatermark].as_int()); }
  void set_watermark(Watermark wm) { slots()[kKeyWatermark] = Value(wm.value()); }
  Bounds bounds() const;
  void set_bounds(const Bounds& b);
  // Count windows: the index of the key's next event (0 before its first).
  int64_t next_event_index() const;
  void set_next_event_index(int64_t index);
  // Sliding windows: the events kept for windows later events may define, [[ts, value], ...]
  // sorted by ts (made empty if there were none).
  Value::Array& kept_events();
  void clear_kept_events();

  size_t windows() const { return (slots().size() - kHeaderSlots) / layout_.stride(); }
  int64_t start(size_t i) const { return At(i, kStart).as_int(); }
  int64_t end(size_t i) const { return At(i, kEnd).as_int(); }
  bool fired(size_t i) const { return At(i, kFired).as_bool(); }
  void set_span(size_t i, int64_t start, int64_t end);
  void set_fired(size_t i);
  // Count windows' fields (REQUIRES: layout().counts_events()).
  int64_t event_count(size_t i) const { return At(i, kCount).as_int(); }
  int64_t min_ts(size_t i) const { return At(i, kMinTs).as_int(); }
  int64_t max_ts(size_t i) const { return At(i, kMaxTs).as_int(); }
  void set_count_fields(size_t i, int64_t count, int64_t min_ts, int64_t max_ts);
  std::span<Value> accumulators(size_t i);

  // The index of the first window whose start is >= `start`.
  size_t LowerBound(int64_t start) const;
  // Inserts a window at index i (null accumulators, not fired).
  void Insert(size_t i, int64_t start, int64_t end);
  void Erase(size_t first, size_t count = 1);
  // Moves window i out (its span, accumulators and fired mark); the window stays, emptied.
  WindowValue Take(size_t i);
  // No window and nothing kept for future windows (a sliding window's events).
  bool empty() const;

 private:
  enum HeaderSlot { kVersion, kSerde, kKeyWatermark, kCloseBound, kLateBound, kKindState };
  static constexpr size_t kHeaderSlots = kKindState + 1;
  enum WindowField { kStart, kEnd, kFired, kCount, kMinTs, kMaxTs };

  KeyState(Value& state, const WindowStateLayout& layout) : state_(&state), layout_(layout) {}
  Value::Array& slots() { return state_->as_array(); }
  const Value::Array& slots() const { return state_->as_array(); }
  Value& At(size_t i, size_t field) { return slots()[kHeaderSlots + i * layout_.stride() + field]; }
  const Value& At(size_t i, size_t field) const {
    return slots()[kHeaderSlots + i * layout_.stride() + field];
  }

  Value* state_;
  WindowStateLayout layout_;
};

// The rules of one window definition.
class KeyWindows {
 public:
  using Trigger = std::function<bool(const Value& result)>;
  KeyWindows(WindowDefinition definition, const Aggregations& aggregations, bool emit_current,
             Trigger trigger);

  const WindowDefinition& definition() const { return definition_; }
  const WindowStateLayout& layout() const { return layout_; }
  // A key's state (see KeyState): a null one becomes a key of `serde` with no windows; a stored
  // one is opened, kCorruption if it is not of this layout.
  weir::Result<KeyState> View(Value& state, KeySerde serde) const;
  // A stored key's state (KeyState::Open).
  weir::Result<KeyState> View(Value& state) const { return KeyState::Open(state, layout_); }

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

  WindowDefinition definition_;
  const Aggregations& aggregations_;
  WindowStateLayout layout_;
  bool emit_current_;
  Trigger trigger_;
};

}  // namespace weir::window
