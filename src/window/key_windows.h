// The windows of one key, kept in that key's state value, and the rules that fill and close
// them (include/weir/window.h states the semantics). Pure logic: no store, no I/O; the window
// operator (dataflow/) loads a key's state, calls these, and emits what they report.
//
// A key's state is packed into one string, so that an event costs one state lookup and reads a
// few cache lines (a Value per field made a hopping key's windows 23 lines). Layout, version
// kWindowStateVersion, integers 8 bytes in host order (little-endian on every target):
//   header:  version u8, serde u8, key_watermark, close_bound, late_bound, event_index
//   windows: start, end, fired u8, [count, min_ts, max_ts], slot, slot, ...
// event_index is the index of the key's next event (count windows; 0 for the others). Each
// window is WindowStateLayout::stride() bytes; count windows also keep their count and the
// smallest and largest event time in them, and use event indexes for start and end. Windows are
// sorted by start. A slot holds one aggregation's accumulator: a tag byte (null, false, true,
// int, double, boxed) and 8 bytes of payload. An accumulator that is not a null, bool or number
// (a mean's [sum, count], a collect's entries) is boxed: the state is then an array, [packed,
// box, box, ...], with the boxes in slot order, so window i's boxes follow those of the windows
// before it. Sliding windows keep the events that may still fall into a window, [[ts, value],
// ...] sorted by ts, at index 1 of that array, before the boxes; their state is always an array.
// A stored value of another version or shape is refused with a kCorruption Status when it is
// opened (KeyState::Open, which the window step runs on every value as its store reads it from
// disk), never read as something else.
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
inline constexpr int64_t kWindowStateVersion = 2;

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

// The shape of a key's state for one window step: what it keeps beside its windows and how many
// bytes each window has (see the layout above).
class WindowStateLayout {
 public:
  static constexpr size_t kSlotBytes = 9;  // a tag byte and 8 bytes of payload
  WindowStateLayout(const WindowDefinition& definition, size_t aggregations)
      : counts_events_(definition.is_count()),
        keeps_events_(definition.kind() == WindowKind::kSliding),
        aggregations_(aggregations),
        window_fields_(counts_events_ ? 41 : 17),
        stride_(window_fields_ + aggregations * kSlotBytes),
        expected_windows_(ExpectedWindows(definition)) {}
  bool counts_events() const { return counts_events_; }  // count windows
  bool keeps_events() const { return keeps_events_; }    // sliding windows
  size_t aggregations() const { return aggregations_; }
  // Bytes of a window before its slots: start, end, fired (+ count, min_ts, max_ts).
  size_t window_fields() const { return window_fields_; }
  size_t stride() const { return stride_; }
  // The index in an array-shaped state of the first box (after the packed string, and the kept
  // events of sliding windows).
  size_t first_box() const { return keeps_events_ ? 2 : 1; }
  // How many windows a key's state has room for when it is created, so that it does not grow
  // window by window: for time-aligned windows, (size + min(grace, size)) / step + 2, at most 8:
  // the most a key with steady events holds at once (those holding an event time, and those
  // waiting out their grace), and the one an event opens before the windows its watermark
  // closes are expired; one for the other kinds. A key with few events keeps the room it does
  // not use: up to 7 windows' bytes (a tumbling window with a grace of its size: 3).
  size_t expected_windows() const { return expected_windows_; }

 private:
  static size_t ExpectedWindows(const WindowDefinition& definition);

  bool counts_events_;
  bool keeps_events_;
  size_t aggregations_;
  size_t window_fields_;
  size_t stride_;
  size_t expected_windows_;
};

// A view of a key's state value with named access to its header and its windows. It points into
// the value, and counts its windows when it is made: valid while the value is changed only
// through it (another view that inserts or erases windows, or an assignment to the value, leaves
// it stale).
class KeyState {
 public:
  // Makes `state` (null: the key has no state yet) a key of `serde` with no windows.
  static KeyState Create(Value& state, const WindowStateLayout& layout, KeySerde serde);
  // Opens a stored state: kCorruption naming what is wrong if it is not of this version and
  // layout (another version, windows of another stride, a slot or box that does not fit).
  // Checks the header and every window's tags: a few bytes per window.
  static Result<KeyState> Open(Value& state, const WindowStateLayout& layout);
  // A state that Open accepted (when it was read from the store: the window step checks every
  // value it loads, KeyValueStore::CheckLoadedWith) or Create made, changed since only through
  // KeyStates (or a copy of such a state): viewed without a check, so that an event does not
  // check every window of its key.
  static KeyState Reopen(Value& state, const WindowStateLayout& layout) {
    return KeyState(state, layout);
  }

  KeySerde serde() const { return static_cast<KeySerde>(static_cast<uint8_t>(packed()[kSerdeAt])); }
  // The key's own watermark: the largest event time it has seen.
  Watermark watermark() const { return Watermark(Read(kWatermarkAt)); }
  void set_watermark(Watermark wm) { Write(kWatermarkAt, wm.value()); }
  Bounds bounds() const { return Bounds{EventTime(Read(kCloseAt)), EventTime(Read(kLateAt))}; }
  void set_bounds(const Bounds& b);
  // Count windows: the index of the key's next event (0 before its first).
  int64_t next_event_index() const { return Read(kEventIndexAt); }
  void set_next_event_index(int64_t index) { Write(kEventIndexAt, index); }
  // Sliding windows: the events kept for windows later events may define, [[ts, value], ...]
  // sorted by ts (made empty if there were none).
  Value::Array& kept_events();
  void clear_kept_events();

  size_t windows() const { return windows_; }
  int64_t start(size_t i) const { return Read(WindowAt(i) + kStartAt); }
  int64_t end(size_t i) const { return Read(WindowAt(i) + kEndAt); }
  bool fired(size_t i) const { return packed()[WindowAt(i) + kFiredAt] != 0; }
  void set_span(size_t i, int64_t start, int64_t end);
  void set_fired(size_t i) { mutable_packed()[WindowAt(i) + kFiredAt] = 1; }
  // Count windows' fields (REQUIRES: layout().counts_events()).
  int64_t event_count(size_t i) const { return Read(WindowAt(i) + kCountAt); }
  int64_t min_ts(size_t i) const { return Read(WindowAt(i) + kMinTsAt); }
  int64_t max_ts(size_t i) const { return Read(WindowAt(i) + kMaxTsAt); }
  void set_count_fields(size_t i, int64_t count, int64_t min_ts, int64_t max_ts);

  // Window i's accumulators as Values to work on (REQUIRES: into.size() ==
  // layout().aggregations()): a packed one is copied into `into`, a boxed one moved out of its
  // box, which holds a moved-from value until StoreAccumulators(i, into) puts it back. Store packs
  // a null, bool or number into its slot and boxes anything else; a boxed slot stays boxed.
  void LoadAccumulators(size_t i, std::span<Value> into);
  void StoreAccumulators(size_t i, std::span<Value> accumulators);
  // Folds an event into window i's slots where they lie, as Aggregations::AddRead would fold
  // them through Load/StoreAccumulators, when every aggregation is a count (an int or a slot
  // that is not one) or an int fold of an input that is an int or absent (`inputs`, as
  // Aggregations::Read gave them) into an int or a slot that is not a number. Returns false,
  // changing nothing, otherwise: a boxed slot, a double, a sum or count that would overflow, more
  // than kMostFoldsInPlace aggregations. REQUIRES: folds.size() == inputs.size() ==
  // layout().aggregations().
  static constexpr size_t kMostFoldsInPlace = 8;
  bool FoldInts(size_t i, std::span<const IntFold> folds, std::span<const Value* const> inputs);

  // The index of the first window whose start is >= `start`.
  size_t LowerBound(int64_t start) const;
  // Inserts a window at index i (null accumulators, not fired).
  void Insert(size_t i, int64_t start, int64_t end);
  // Removes windows [first, first + count) with their boxes.
  void Erase(size_t first, size_t count = 1);
  // Window i's span, accumulators (moved out, as LoadAccumulators) and fired mark; the window
  // stays, to be erased.
  WindowValue Take(size_t i);
  // No window and nothing kept for future windows (a sliding window's events).
  bool empty() const;

 private:
  // Header fields' byte offsets.
  static constexpr size_t kVersionAt = 0, kSerdeAt = 1, kWatermarkAt = 2, kCloseAt = 10,
                          kLateAt = 18, kEventIndexAt = 26, kHeaderBytes = 34;
  // A window's fields' offsets from its start.
  static constexpr size_t kStartAt = 0, kEndAt = 8, kFiredAt = 16, kCountAt = 17, kMinTsAt = 25,
                          kMaxTsAt = 33;
  enum SlotTag : char { kNullSlot, kFalseSlot, kTrueSlot, kIntSlot, kDoubleSlot, kBoxedSlot };

  // REQUIRES: `state` is a string or an array whose first element is one.
  KeyState(Value& state, const WindowStateLayout& layout) : state_(&state), layout_(layout) {
    FindPacked();
    windows_ = (packed().size() - kHeaderBytes) / layout_.stride();
  }
  // The packed string: the state itself, or the first element of an array-shaped state.
  std::string_view packed() const { return *packed_; }
  Value::String& mutable_packed() { return *packed_; }
  // Points packed_ at the packed string again (the state became an array, or its array grew).
  void FindPacked();
  int64_t Read(size_t at) const;
  void Write(size_t at, int64_t v);
  size_t WindowAt(size_t i) const { return kHeaderBytes + i * layout_.stride(); }
  size_t SlotAt(size_t i, size_t aggregation) const {
    return WindowAt(i) + layout_.window_fields() + aggregation * WindowStateLayout::kSlotBytes;
  }
  // The index in the state array of the box of the slot at byte `slot_at`, boxed or about to be:
  // first_box() + the boxed slots before it. Counts on from box_cursor_ when the slot is at or
  // after its window, so visiting an event's windows in order costs one pass, not one per window.
  size_t BoxIndex(size_t slot_at);
  void ResetBoxCursor() { box_cursor_ = {0, layout_.first_box()}; }
  // The state as an array, [packed, (kept events,) boxes...], made so if it was a bare string.
  Value::Array& AsArray();

  Value* state_;
  Value::String* packed_;
  WindowStateLayout layout_;
  // The packed string's windows, counted once (a division by the stride) and kept by Insert and
  // Erase: the loops over an event's windows ask at every step.
  size_t windows_;
  // The first box of window `window` (BoxIndex); reset when windows or boxes move.
  struct BoxCursor {
    size_t window;
    size_t first_box;
  } box_cursor_{0, layout_.first_box()};
};

// The rules of one window definition.
class KeyWindows {
 public:
  using Trigger = std::function<bool(const Value& result)>;
  KeyWindows(WindowDefinition definition, const Aggregations& aggregations, bool emit_current,
             Trigger trigger);

  const WindowDefinition& definition() const { return definition_; }
  const WindowStateLayout& layout() const { return layout_; }
  // A key's state (see KeyState): a null one becomes a key of `serde` with no windows; any other
  // is viewed as it is (KeyState::Reopen). REQUIRES: a state that Open accepted when it was
  // read from the store, changed since only through KeyStates.
  KeyState View(Value& state, KeySerde serde) const;
  // A stored key's state (KeyState::Reopen, with its REQUIRES).
  KeyState View(Value& state) const { return KeyState::Reopen(state, layout_); }

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
  // The same, written into `into`, whose members (an earlier result's) are reused.
  void WriteResult(int64_t start, int64_t end, std::span<const Value> accumulators,
                   Value& into) const;

 private:
  void AddAligned(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddSliding(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddSession(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                  AddOutcome& outcome) const;
  void AddCount(KeyState& key, const Value& value, EventTime ts, AddOutcome& outcome) const;
  // Folds the event into window i's accumulators, with the inputs Add read from it into inputs_:
  // in its packed slots where they lie when folds_in_place_ and KeyState::FoldInts takes them
  // (nothing is reported then: no .Current(), no trigger), else loaded into accumulators_ and
  // stored back. Reports the updated window (start, end as emitted): to `current` (for
  // .Current()), and to the trigger, which may fire it: a fired window goes to `ready` and is
  // kept, marked fired, until it closes.
  void AddTo(KeyState& key, size_t i, int64_t start, int64_t end, const Value& value, EventTime ts,
             AddOutcome& outcome) const;
  void Updated(KeyState& key, size_t i, int64_t start, int64_t end,
               std::span<const Value> accumulators, AddOutcome& outcome) const;

  WindowDefinition definition_;
  const Aggregations& aggregations_;
  WindowStateLayout layout_;
  bool emit_current_;
  Trigger trigger_;
  // Whether AddTo may fold an event into a window's packed slots where they lie
  // (KeyState::FoldInts): every aggregation has an IntFold, there are at most
  // KeyState::kMostFoldsInPlace of them, and nothing looks at a window's accumulators as it is
  // updated (no .Current(), no trigger).
  bool folds_in_place_;
  // A window's accumulators while they are worked on (KeyState::LoadAccumulators), and a second
  // window's for a merge: the per-event path allocates nothing for them.
  mutable Value::Array accumulators_;
  mutable Value::Array merged_;
  // What each aggregation reads from the event being added (Aggregations::Read), read once
  // however many windows take it.
  mutable std::vector<const Value*> inputs_;
};

}  // namespace weir::window
