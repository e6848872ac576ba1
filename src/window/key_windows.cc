#include "window/key_windows.h"

#include <algorithm>

namespace weir::window {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Status BadState(const std::string& what) { return Status::Corruption("window state: " + what); }

}  // namespace

void Bounds::Advance(const WindowDefinition& definition, Watermark wm) {
  if (wm.IsEndOfInput()) {
    close = late = EventTime::Max();
    return;
  }
  const EventTime at(wm.value());
  const std::chrono::milliseconds grace(definition.grace());
  if (definition.kind() == WindowKind::kSession) {
    const std::chrono::milliseconds gap(definition.size());
    late = std::max(late, at - gap - grace);
    close = std::max(close, at - 2 * gap - grace);
  } else {
    close = std::max(close, at - grace);
  }
}

void AddOutcome::Clear() {
  late = false;
  late_by_ms = 0;
  reason.clear();
  current.clear();
  created.clear();
  removed.clear();
  ready.clear();
}

Value EncodePartitionBounds(const Bounds& bounds) {
  return Value(Value::Array{Value(kWindowStateVersion), Value(bounds.close.value()),
                            Value(bounds.late.value())});
}

Result<Bounds> DecodePartitionBounds(const Value& stored) {
  if (!stored.is_array() || stored.as_array().size() != 3) {
    return BadState("a partition's bounds are not [version, close, late]");
  }
  const Value::Array& slots = stored.as_array();
  for (const Value& slot : slots) {
    if (!slot.is_int()) return BadState("a partition's bounds are not [version, close, late]");
  }
  if (slots[0].as_int() != kWindowStateVersion) {
    return BadState("a partition's bounds of format version " + std::to_string(slots[0].as_int()) +
                    " (this build reads " + std::to_string(kWindowStateVersion) + ")");
  }
  return Bounds{EventTime(slots[1].as_int()), EventTime(slots[2].as_int())};
}

KeyState KeyState::Create(Value& state, const WindowStateLayout& layout, KeySerde serde) {
  state = Value(Value::Array{Value(kWindowStateVersion), Value(static_cast<int64_t>(serde)),
                             Value(kNoBound), Value(kNoBound), Value(kNoBound), Value()});
  return KeyState(state, layout);
}

Result<KeyState> KeyState::Open(Value& state, const WindowStateLayout& layout) {
  if (!state.is_array() || state.as_array().empty() || !state.as_array()[kVersion].is_int()) {
    return BadState("not a key's windows of a known format version");
  }
  const Value::Array& slots = state.as_array();
  if (slots[kVersion].as_int() != kWindowStateVersion) {
    return BadState("format version " + std::to_string(slots[kVersion].as_int()) +
                    " (this build reads " + std::to_string(kWindowStateVersion) +
                    "; state written by another version of weir cannot be resumed)");
  }
  if (slots.size() < kHeaderSlots) return BadState("truncated header");
  const std::pair<HeaderSlot, const char*> int_fields[] = {{kSerde, "key serde"},
                                                           {kKeyWatermark, "key watermark"},
                                                           {kCloseBound, "close bound"},
                                                           {kLateBound, "late bound"}};
  for (const auto& [slot, name] : int_fields) {
    if (!slots[slot].is_int()) return BadState(std::string(name) + " is not an integer");
  }
  const Value& kind_state = slots[kKindState];
  const bool kind_state_fits = kind_state.is_null() ||
                               (layout.counts_events() && kind_state.is_int()) ||
                               (layout.keeps_events() && kind_state.is_array());
  if (!kind_state_fits) return BadState("kept events or event index of another kind of window");
  if ((slots.size() - kHeaderSlots) % layout.stride() != 0) {
    return BadState(std::to_string(slots.size() - kHeaderSlots) +
                    " window values are not a whole number of windows of " +
                    std::to_string(layout.stride()) + " (another kind of window or aggregations)");
  }
  for (size_t at = kHeaderSlots; at < slots.size(); at += layout.stride()) {
    const bool fields_fit =
        slots[at + kStart].is_int() && slots[at + kEnd].is_int() && slots[at + kFired].is_bool() &&
        (!layout.counts_events() || (slots[at + kCount].is_int() && slots[at + kMinTs].is_int() &&
                                     slots[at + kMaxTs].is_int()));
    if (!fields_fit) {
      return BadState("window " + std::to_string((at - kHeaderSlots) / layout.stride()) +
                      " has mistyped fields");
    }
  }
  return KeyState(state, layout);
}

KeySerde KeyState::serde() const { return static_cast<KeySerde>(slots()[kSerde].as_int()); }

Bounds KeyState::bounds() const {
  return Bounds{EventTime(slots()[kCloseBound].as_int()), EventTime(slots()[kLateBound].as_int())};
}

void KeyState::set_bounds(const Bounds& b) {
  slots()[kCloseBound] = Value(b.close.value());
  slots()[kLateBound] = Value(b.late.value());
}

int64_t KeyState::next_event_index() const {
  WEIR_CHECK(layout_.counts_events(), "an event index is kept by count windows only");
  const Value& index = slots()[kKindState];
  return index.is_int() ? index.as_int() : 0;
}

void KeyState::set_next_event_index(int64_t index) {
  WEIR_CHECK(layout_.counts_events(), "an event index is kept by count windows only");
  slots()[kKindState] = Value(index);
}

Value::Array& KeyState::kept_events() {
  WEIR_CHECK(layout_.keeps_events(), "events are kept by sliding windows only");
  Value& events = slots()[kKindState];
  if (!events.is_array()) events = Value(Value::Array());
  return events.as_array();
}

void KeyState::clear_kept_events() { slots()[kKindState] = Value(); }

void KeyState::set_span(size_t i, int64_t start, int64_t end) {
  At(i, kStart) = Value(start);
  At(i, kEnd) = Value(end);
}

void KeyState::set_fired(size_t i) { At(i, kFired) = Value(true); }

void KeyState::set_count_fields(size_t i, int64_t count, int64_t min_ts, int64_t max_ts) {
  At(i, kCount) = Value(count);
  At(i, kMinTs) = Value(min_ts);
  At(i, kMaxTs) = Value(max_ts);
}

std::span<Value> KeyState::accumulators(size_t i) {
  return std::span<Value>(&At(i, layout_.window_fields()),
                          layout_.stride() - layout_.window_fields());
}

size_t KeyState::LowerBound(int64_t start) const {
  size_t lo = 0, hi = windows();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (this->start(mid) < start) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void KeyState::Insert(size_t i, int64_t start, int64_t end) {
  Value::Array& s = slots();
  auto at = s.begin() + static_cast<std::ptrdiff_t>(kHeaderSlots + i * layout_.stride());
  at = s.insert(at, layout_.stride(), Value());
  at[kStart] = Value(start);
  at[kEnd] = Value(end);
  at[kFired] = Value(false);
}

void KeyState::Erase(size_t first, size_t count) {
  Value::Array& s = slots();
  auto at = s.begin() + static_cast<std::ptrdiff_t>(kHeaderSlots + first * layout_.stride());
  s.erase(at, at + static_cast<std::ptrdiff_t>(count * layout_.stride()));
}

WindowValue KeyState::Take(size_t i) {
  WindowValue w{start(i), end(i), {}, fired(i)};
  std::span<Value> accs = accumulators(i);
  w.accumulators.reserve(accs.size());
  for (Value& a : accs) w.accumulators.push_back(std::move(a));
  return w;
}

bool KeyState::empty() const {
  const Value& kept = slots()[kKindState];
  return windows() == 0 && !(kept.is_array() && !kept.as_array().empty());
}

KeyWindows::KeyWindows(WindowDefinition definition, const Aggregations& aggregations,
                       bool emit_current, Trigger trigger)
    : definition_(definition),
      aggregations_(aggregations),
      layout_(definition, aggregations.size()),
      emit_current_(emit_current),
      trigger_(std::move(trigger)) {}

Result<KeyState> KeyWindows::View(Value& state, KeySerde serde) const {
  if (state.is_null()) return KeyState::Create(state, layout_, serde);
  return KeyState::Open(state, layout_);
}

Value KeyWindows::Result(int64_t start, int64_t end, std::span<const Value> accumulators) const {
  Value::Object fields;
  fields.reserve(2 + aggregations_.size());
  fields.emplace_back("start", Value(start));
  fields.emplace_back("end", Value(end));
  aggregations_.AppendResults(accumulators, fields);
  return Value(std::move(fields));
}

void KeyWindows::Updated(KeyState& key, size_t i, int64_t start, int64_t end,
                         AddOutcome& outcome) const {
  std::span<Value> accs = key.accumulators(i);
  if (emit_current_) {
    outcome.current.push_back(WindowValue{start, end, Value::Array(accs.begin(), accs.end())});
  }
  if (!trigger_ || !trigger_(Result(start, end, accs))) return;
  outcome.ready.push_back(WindowValue{start, end, Value::Array(accs.begin(), accs.end())});
  key.set_fired(i);
}

void KeyWindows::Add(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                     AddOutcome& outcome) const {
  outcome.Clear();
  switch (definition_.kind()) {
    case WindowKind::kTumbling:
    case WindowKind::kHopping:
      return AddAligned(key, bounds, value, ts, outcome);
    case WindowKind::kSliding:
      return AddSliding(key, bounds, value, ts, outcome);
    case WindowKind::kSession:
      return AddSession(key, bounds, value, ts, outcome);
    case WindowKind::kCountTumbling:
    case WindowKind::kCountHopping:
    case WindowKind::kCountSliding:
      return AddCount(key, value, ts, outcome);
  }
}

void KeyWindows::AddAligned(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                            AddOutcome& outcome) const {
  const int64_t t = ts.value(), size = definition_.size(), step = definition_.step();
  // The windows holding t start at k * step for k in (t - size) / step < k <= t / step.
  const int64_t last_k = FloorDiv(t, step);
  const int64_t first_k = FloorDiv(SubtractSaturating(t, size), step) + 1;
  const int64_t latest_end = AddSaturating(last_k * step, size);
  if (bounds.Closes(latest_end)) {
    outcome.late = true;
    outcome.late_by_ms = bounds.close.value() - latest_end;
    outcome.reason = "every window holding ts " + std::to_string(t) + " has closed (latest end " +
                     std::to_string(latest_end) + " + grace " +
                     std::to_string(definition_.grace()) + " <= watermark)";
    return;
  }
  bool taken = false;
  for (int64_t k = first_k; k <= last_k; ++k) {
    const int64_t start = k * step, end = start + size;
    if (bounds.Closes(end)) continue;  // this one closed; a later one still takes the event
    size_t i = key.LowerBound(start);
    if (i == key.windows() || key.start(i) != start) {
      key.Insert(i, start, end);
      outcome.created.push_back({start, end});
    }
    if (key.fired(i)) continue;
    aggregations_.Add(key.accumulators(i), value, ts);
    taken = true;
    Updated(key, i, start, end, outcome);
  }
  if (!taken) {
    outcome.late = true;
    outcome.reason =
        "every open window holding ts " + std::to_string(t) + " was already fired by its trigger";
  }
}

void KeyWindows::AddSliding(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                            AddOutcome& outcome) const {
  const int64_t t = ts.value(), size = definition_.size();
  if (bounds.Closes(AddSaturating(t, size))) {
    outcome.late = true;
    outcome.late_by_ms = bounds.close.value() - AddSaturating(t, size);
    outcome.reason = "ts " + std::to_string(t) + " + size " + std::to_string(size) + " + grace " +
                     std::to_string(definition_.grace()) + " <= watermark: no window can hold it";
    return;
  }
  // Keep the event: windows defined by later events may hold it.
  Value::Array& events = key.kept_events();
  auto at = std::upper_bound(events.begin(), events.end(), t, [](int64_t x, const Value& e) {
    return x < e.as_array()[0].as_int();
  });
  events.insert(at, Value::MakeArray({t, value}));

  // Every open window holding t takes it.
  for (size_t i = 0; i < key.windows(); ++i) {
    const int64_t start = key.start(i), end = key.end(i);
    if (start <= t && t < end && !bounds.Closes(end)) {
      aggregations_.Add(key.accumulators(i), value, ts);
      Updated(key, i, start, end, outcome);
    }
  }
  // Its own window, (t - size, t], with every stored event in it, unless one exists already.
  const int64_t start = t - size + 1, end = t + 1;
  size_t i = key.LowerBound(start);
  if (i == key.windows() || key.start(i) != start) {
    key.Insert(i, start, end);
    std::span<Value> accs = key.accumulators(i);
    for (const Value& e : key.kept_events()) {
      const int64_t et = e.as_array()[0].as_int();
      if (et >= start && et < end) aggregations_.Add(accs, e.as_array()[1], EventTime(et));
    }
    outcome.created.push_back({start, end});
    Updated(key, i, start, end, outcome);
    // Every other window holding t starts after its own, (t - size, t]: report that one first.
    std::rotate(outcome.current.begin(), outcome.current.end() - (emit_current_ ? 1 : 0),
                outcome.current.end());
  }
  // Forget events no admissible event's window can reach: t' > close - size holds
  // e only if e > t' - size > close - 2 * size.
  const int64_t keep_after = SubtractSaturating(bounds.close.value(), 2 * size);
  Value::Array& kept = key.kept_events();
  auto first_kept = std::find_if(kept.begin(), kept.end(), [&](const Value& e) {
    return e.as_array()[0].as_int() > keep_after;
  });
  kept.erase(kept.begin(), first_kept);
}

void KeyWindows::AddSession(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                            AddOutcome& outcome) const {
  const int64_t t = ts.value(), gap = definition_.size();
  if (ts < bounds.late) {
    outcome.late = true;
    outcome.late_by_ms = bounds.late.value() - t;
    outcome.reason = "ts " + std::to_string(t) + " < watermark - gap " + std::to_string(gap) +
                     " - grace " + std::to_string(definition_.grace()) + " (" +
                     std::to_string(bounds.late.value()) + ")";
    return;
  }
  // Sessions are disjoint and more than a gap apart, so at most two can be within a gap of t:
  // the last one starting at or before t + gap, and the one before it.
  const size_t after = key.LowerBound(AddSaturating(AddSaturating(t, gap), 1));
  auto reaches = [&](size_t i) { return key.end(i) - 1 + gap >= t; };
  const bool a = after >= 1 && reaches(after - 1);
  const bool b = a && after >= 2 && reaches(after - 2);
  if (!a) {
    key.Insert(after, t, t + 1);
    aggregations_.Add(key.accumulators(after), value, ts);
    outcome.created.push_back({t, t + 1});
    Updated(key, after, t, t + 1, outcome);
    return;
  }
  // One session takes the event, or two merge through it (the earlier absorbs the later).
  const size_t into = b ? after - 2 : after - 1;
  const WindowSpan before{key.start(into), key.end(into)};
  int64_t start = std::min(before.start, t);
  int64_t end = std::max(before.end, t + 1);
  if (b) {
    const size_t later = after - 1;
    outcome.removed.push_back({key.start(later), key.end(later)});
    end = std::max(end, key.end(later));
    aggregations_.MergeInto(key.accumulators(into), key.accumulators(later));
    key.Erase(later);
  }
  aggregations_.Add(key.accumulators(into), value, ts);
  if (start != before.start || end != before.end) {
    outcome.removed.push_back(before);
    outcome.created.push_back({start, end});
    key.set_span(into, start, end);
  }
  Updated(key, into, start, end, outcome);
}

void KeyWindows::AddCount(KeyState& key, const Value& value, EventTime ts,
                          AddOutcome& outcome) const {
  const int64_t n = definition_.size(), step = definition_.step();
  const int64_t index = key.next_event_index();
  key.set_next_event_index(index + 1);
  // Windows of events [k * step, k * step + n) holding this event.
  const int64_t first_k = std::max<int64_t>(0, FloorDiv(index - n, step) + 1);
  const int64_t last_k = index / step;
  for (int64_t k = first_k; k <= last_k; ++k) {
    const int64_t start = k * step;
    size_t i = key.LowerBound(start);
    if (i == key.windows() || key.start(i) != start) {
      key.Insert(i, start, start + n);
      key.set_count_fields(i, 0, ts.value(), ts.value());
    }
    const int64_t count = key.event_count(i) + 1;
    const int64_t min_ts = std::min(key.min_ts(i), ts.value());
    const int64_t max_ts = std::max(key.max_ts(i), ts.value());
    key.set_count_fields(i, count, min_ts, max_ts);
    if (count == n) {
      // Full: its final result; with .Current() the update that filled it is reported too.
      if (!key.fired(i)) {
        aggregations_.Add(key.accumulators(i), value, ts);
        WindowValue full = key.Take(i);
        full.start = min_ts;
        full.end = max_ts + 1;
        if (emit_current_) outcome.current.push_back(full);
        outcome.ready.push_back(std::move(full));
      }
      key.Erase(i);
      continue;
    }
    if (!key.fired(i)) {
      aggregations_.Add(key.accumulators(i), value, ts);
      Updated(key, i, min_ts, max_ts + 1, outcome);  // count windows report event times
    }
  }
}

void KeyWindows::Expire(KeyState& key, const Bounds& bounds,
                        std::vector<WindowValue>& closed) const {
  if (definition_.is_count()) return;
  // Windows sorted by start close in that order: fixed-size windows end in start order, and
  // sessions are disjoint.
  size_t n = 0;
  while (n < key.windows() && bounds.Closes(key.end(n))) {
    closed.push_back(key.Take(n));
    ++n;
  }
  if (n == 0) return;
  key.Erase(0, n);
  if (layout_.keeps_events()) {
    Value::Array& events = key.kept_events();
    const int64_t keep_after = SubtractSaturating(bounds.close.value(), 2 * definition_.size());
    auto first_kept = std::find_if(events.begin(), events.end(), [&](const Value& e) {
      return e.as_array()[0].as_int() > keep_after;
    });
    events.erase(events.begin(), first_kept);
  }
}

void KeyWindows::CloseAll(KeyState& key, std::vector<WindowValue>& closed) const {
  if (!definition_.is_count()) {
    Bounds everything;
    everything.Advance(definition_, Watermark::Max());
    Expire(key, everything, closed);
  }
  key.Erase(0, key.windows());
  if (layout_.keeps_events()) key.clear_kept_events();
}

}  // namespace weir::window
