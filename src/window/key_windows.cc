#include "window/key_windows.h"

#include <algorithm>

namespace weir::window {
namespace {

// Saturating arithmetic: watermarks start at INT64_MIN and end at INT64_MAX.
int64_t SatSub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b > 0 ? kNoBound : std::numeric_limits<int64_t>::max())
                                          : r;
}
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? std::numeric_limits<int64_t>::max() : kNoBound)
                                          : r;
}
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

enum WindowField { kStart, kEnd, kAccs, kFired, kCount, kMinTs, kMaxTs };

Value NewWindow(int64_t start, int64_t end, Value accumulators) {
  return Value(Value::Array{Value(start), Value(end), std::move(accumulators), Value(false)});
}

// The index of the first window whose start is >= `start`.
size_t LowerBound(const Value::Array& windows, int64_t start) {
  return std::lower_bound(windows.begin(), windows.end(), start,
                          [](const Value& w, int64_t s) { return KeyState::Start(w) < s; }) -
         windows.begin();
}

WindowValue Take(Value& window) {
  Value::Array& w = window.as_array();
  return WindowValue{w[kStart].as_int(), w[kEnd].as_int(), std::move(w[kAccs]),
                     w[kFired].as_bool()};
}

}  // namespace

void Bounds::Advance(const WindowDefinition& definition, Watermark wm) {
  if (wm.IsEndOfInput()) {
    close = late = std::numeric_limits<int64_t>::max();
    return;
  }
  if (definition.kind() == WindowKind::kSession) {
    const int64_t gap = definition.size();
    late = std::max(late, SatSub(SatSub(wm.value(), gap), definition.grace()));
    close = std::max(close, SatSub(SatSub(wm.value(), 2 * gap), definition.grace()));
  } else {
    close = std::max(close, SatSub(wm.value(), definition.grace()));
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

KeyState::KeyState(Value& state, KeySerde serde) : state_(&state) {
  if (!state.is_array() || state.as_array().size() != kSlotCount) {
    state = Value(Value::Array{Value(static_cast<int64_t>(serde)), Value(kNoBound), Value(kNoBound),
                               Value(kNoBound), Value(Value::Array()), Value()});
  }
}

KeyState::KeyState(Value& state) : state_(&state) {}

KeySerde KeyState::serde() const { return static_cast<KeySerde>(slots()[kSerde].as_int()); }

Bounds KeyState::bounds() const {
  return Bounds{slots()[kClose].as_int(), slots()[kLate].as_int()};
}

void KeyState::set_bounds(const Bounds& b) {
  slots()[kClose] = Value(b.close);
  slots()[kLate] = Value(b.late);
}

Value::Array* KeyState::Find(int64_t start) {
  Value::Array& w = windows();
  size_t i = LowerBound(w, start);
  return i < w.size() && Start(w[i]) == start ? &w[i].as_array() : nullptr;
}

KeyWindows::KeyWindows(WindowDefinition definition, const Aggregations& aggregations,
                       bool emit_current, Trigger trigger)
    : definition_(definition),
      aggregations_(aggregations),
      emit_current_(emit_current),
      trigger_(std::move(trigger)) {}

Value KeyWindows::Result(int64_t start, int64_t end, const Value& accumulators) const {
  Value::Object fields;
  fields.reserve(2 + aggregations_.size());
  fields.emplace_back("start", Value(start));
  fields.emplace_back("end", Value(end));
  aggregations_.AppendResults(accumulators, fields);
  return Value(std::move(fields));
}

void KeyWindows::Updated(Value::Array& w, AddOutcome& outcome) const {
  // Count windows report event times, not the event indexes they are kept by.
  const bool count = definition_.is_count();
  const int64_t start = count ? w[kMinTs].as_int() : w[kStart].as_int();
  const int64_t end = count ? w[kMaxTs].as_int() + 1 : w[kEnd].as_int();
  if (emit_current_) outcome.current.push_back(WindowValue{start, end, w[kAccs]});
  if (!trigger_ || !trigger_(Result(start, end, w[kAccs]))) return;
  outcome.ready.push_back(WindowValue{start, end, w[kAccs]});
  w[kFired] = Value(true);
  w[kAccs] = Value();
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
  const int64_t first_k = FloorDiv(SatSub(t, size), step) + 1;
  const int64_t latest_end = SatAdd(last_k * step, size);
  if (latest_end <= bounds.close) {
    outcome.late = true;
    outcome.late_by_ms = bounds.close - latest_end;
    outcome.reason = "every window holding ts " + std::to_string(t) + " has closed (latest end " +
                     std::to_string(latest_end) + " + grace " +
                     std::to_string(definition_.grace()) + " <= watermark)";
    return;
  }
  Value::Array& windows = key.windows();
  bool taken = false;
  for (int64_t k = first_k; k <= last_k; ++k) {
    const int64_t start = k * step, end = start + size;
    if (end <= bounds.close) continue;  // this one closed; a later one still takes the event
    size_t i = LowerBound(windows, start);
    if (i == windows.size() || KeyState::Start(windows[i]) != start) {
      windows.insert(windows.begin() + i, NewWindow(start, end, aggregations_.Initial()));
      outcome.created.push_back({start, end});
    }
    Value::Array& w = windows[i].as_array();
    if (w[kFired].as_bool()) continue;
    aggregations_.Add(w[kAccs], value, ts);
    taken = true;
    Updated(w, outcome);
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
  if (SatAdd(t, size) <= bounds.close) {
    outcome.late = true;
    outcome.late_by_ms = bounds.close - SatAdd(t, size);
    outcome.reason = "ts " + std::to_string(t) + " + size " + std::to_string(size) + " + grace " +
                     std::to_string(definition_.grace()) + " <= watermark: no window can hold it";
    return;
  }
  // Keep the event: windows defined by later events may hold it.
  if (!key.extra().is_array()) key.extra() = Value(Value::Array());
  Value::Array& events = key.extra().as_array();
  auto at = std::upper_bound(events.begin(), events.end(), t, [](int64_t x, const Value& e) {
    return x < e.as_array()[0].as_int();
  });
  events.insert(at, Value(Value::Array{Value(t), value}));

  // Every open window holding t takes it.
  Value::Array& windows = key.windows();
  for (Value& window : windows) {
    Value::Array& w = window.as_array();
    const int64_t start = w[kStart].as_int(), end = w[kEnd].as_int();
    if (start <= t && t < end && end > bounds.close) {
      aggregations_.Add(w[kAccs], value, ts);
      Updated(w, outcome);
    }
  }
  // Its own window, (t - size, t], with every stored event in it, unless one exists already.
  const int64_t start = t - size + 1, end = t + 1;
  size_t i = LowerBound(windows, start);
  if (i == windows.size() || KeyState::Start(windows[i]) != start) {
    Value accs = aggregations_.Initial();
    for (const Value& e : events) {
      const int64_t et = e.as_array()[0].as_int();
      if (et >= start && et < end) aggregations_.Add(accs, e.as_array()[1], EventTime(et));
    }
    windows.insert(windows.begin() + i, NewWindow(start, end, std::move(accs)));
    outcome.created.push_back({start, end});
    Updated(windows[i].as_array(), outcome);
    // Every other window holding t starts after its own, (t - size, t]: report that one first.
    std::rotate(outcome.current.begin(), outcome.current.end() - (emit_current_ ? 1 : 0),
                outcome.current.end());
  }
  // Forget events no admissible event's window can reach: t' > close - size holds
  // e only if e > t' - size > close - 2 * size.
  const int64_t keep_after = SatSub(bounds.close, 2 * size);
  auto first_kept = std::find_if(events.begin(), events.end(), [&](const Value& e) {
    return e.as_array()[0].as_int() > keep_after;
  });
  events.erase(events.begin(), first_kept);
}

void KeyWindows::AddSession(KeyState& key, const Bounds& bounds, const Value& value, EventTime ts,
                            AddOutcome& outcome) const {
  const int64_t t = ts.value(), gap = definition_.size();
  if (t < bounds.late) {
    outcome.late = true;
    outcome.late_by_ms = bounds.late - t;
    outcome.reason = "ts " + std::to_string(t) + " < watermark - gap " + std::to_string(gap) +
                     " - grace " + std::to_string(definition_.grace()) + " (" +
                     std::to_string(bounds.late) + ")";
    return;
  }
  // Sessions are disjoint and more than a gap apart, so at most two can be within a gap of t:
  // the last one starting at or before t + gap, and the one before it.
  Value::Array& sessions = key.windows();
  size_t after = LowerBound(sessions, SatAdd(t, gap) == std::numeric_limits<int64_t>::max()
                                          ? std::numeric_limits<int64_t>::max()
                                          : t + gap + 1);
  auto reaches = [&](size_t i) { return KeyState::End(sessions[i]) - 1 + gap >= t; };
  const bool a = after >= 1 && reaches(after - 1);
  const bool b = a && after >= 2 && reaches(after - 2);
  if (!a) {
    sessions.insert(sessions.begin() + after, NewWindow(t, t + 1, aggregations_.Initial()));
    Value::Array& w = sessions[after].as_array();
    aggregations_.Add(w[kAccs], value, ts);
    outcome.created.push_back({t, t + 1});
    if (emit_current_) outcome.current.push_back(WindowValue{t, t + 1, w[kAccs]});
    return;
  }
  // One session takes the event, or two merge through it (the earlier absorbs the later).
  const size_t into = b ? after - 2 : after - 1;
  Value::Array& w = sessions[into].as_array();
  const WindowSpan before{w[kStart].as_int(), w[kEnd].as_int()};
  int64_t start = std::min(before.start, t);
  int64_t end = std::max(before.end, t + 1);
  if (b) {
    Value::Array& later = sessions[after - 1].as_array();
    outcome.removed.push_back({later[kStart].as_int(), later[kEnd].as_int()});
    end = std::max(end, later[kEnd].as_int());
    w[kAccs] = aggregations_.Merge(w[kAccs], later[kAccs]);
    sessions.erase(sessions.begin() + (after - 1));
  }
  aggregations_.Add(w[kAccs], value, ts);
  if (start != before.start || end != before.end) {
    outcome.removed.push_back(before);
    outcome.created.push_back({start, end});
    w[kStart] = Value(start);
    w[kEnd] = Value(end);
  }
  if (emit_current_) outcome.current.push_back(WindowValue{start, end, w[kAccs]});
}

void KeyWindows::AddCount(KeyState& key, const Value& value, EventTime ts,
                          AddOutcome& outcome) const {
  const int64_t n = definition_.size(), step = definition_.step();
  const int64_t i = key.extra().is_int() ? key.extra().as_int() : 0;
  key.extra() = Value(i + 1);
  // Windows of events [k * step, k * step + n) holding event i.
  const int64_t first_k = std::max<int64_t>(0, FloorDiv(i - n, step) + 1);
  const int64_t last_k = i / step;
  Value::Array& windows = key.windows();
  for (int64_t k = first_k; k <= last_k; ++k) {
    const int64_t start = k * step;
    size_t at = LowerBound(windows, start);
    if (at == windows.size() || KeyState::Start(windows[at]) != start) {
      Value window = NewWindow(start, start + n, aggregations_.Initial());
      window.as_array().insert(window.as_array().end(),
                               {Value(0), Value(ts.value()), Value(ts.value())});
      windows.insert(windows.begin() + at, std::move(window));
    }
    Value::Array& w = windows[at].as_array();
    const int64_t count = w[kCount].as_int() + 1;
    w[kCount] = Value(count);
    w[kMinTs] = Value(std::min(w[kMinTs].as_int(), ts.value()));
    w[kMaxTs] = Value(std::max(w[kMaxTs].as_int(), ts.value()));
    if (count == n) {
      // Full: its final result; with .Current() the update that filled it is reported too.
      if (!w[kFired].as_bool()) {
        aggregations_.Add(w[kAccs], value, ts);
        if (emit_current_) {
          outcome.current.push_back(
              WindowValue{w[kMinTs].as_int(), w[kMaxTs].as_int() + 1, w[kAccs]});
        }
        outcome.ready.push_back(
            WindowValue{w[kMinTs].as_int(), w[kMaxTs].as_int() + 1, std::move(w[kAccs])});
      }
      windows.erase(windows.begin() + at);
      continue;
    }
    if (!w[kFired].as_bool()) {
      aggregations_.Add(w[kAccs], value, ts);
      Updated(w, outcome);
    }
  }
}

void KeyWindows::Expire(KeyState& key, const Bounds& bounds,
                        std::vector<WindowValue>& closed) const {
  if (definition_.is_count()) return;
  Value::Array& windows = key.windows();
  // Windows sorted by start close in that order: fixed-size windows end in start order, and
  // sessions are disjoint.
  size_t n = 0;
  while (n < windows.size() && KeyState::End(windows[n]) <= bounds.close) {
    closed.push_back(Take(windows[n]));
    ++n;
  }
  windows.erase(windows.begin(), windows.begin() + n);
  if (definition_.kind() == WindowKind::kSliding && n > 0 && key.extra().is_array()) {
    Value::Array& events = key.extra().as_array();
    const int64_t keep_after = SatSub(bounds.close, 2 * definition_.size());
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
  key.windows().clear();
  if (definition_.kind() == WindowKind::kSliding) key.extra() = Value();
}

}  // namespace weir::window
