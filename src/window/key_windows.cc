#include "window/key_windows.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace weir::window {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Status BadState(const std::string& what) { return Status::Corruption("window state: " + what); }

// A key's state written in another format version than this build's.
Status OtherVersion(int64_t version) {
  return BadState("format version " + std::to_string(version) + " (this build reads " +
                  std::to_string(kWindowStateVersion) +
                  "; state written by another version of weir cannot be resumed)");
}

// A sliding window's kept events: null, or [[ts, value], ...] with ts ascending.
Status CheckKeptEvents(const Value& kept) {
  if (kept.is_null()) return Status::OK();
  if (!kept.is_array()) return BadState("kept events are not an array");
  int64_t previous = std::numeric_limits<int64_t>::min();
  for (const Value& e : kept.as_array()) {
    if (!e.is_array() || e.as_array().size() != 2 || !e.as_array()[0].is_int() ||
        e.as_array()[0].as_int() < previous) {
      return BadState("kept events are not [[ts, value], ...] in time order");
    }
    previous = e.as_array()[0].as_int();
  }
  return Status::OK();
}

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

size_t WindowStateLayout::ExpectedWindows(const WindowDefinition& definition) {
  constexpr int64_t kMostReserved = 8;
  if (definition.kind() != WindowKind::kTumbling && definition.kind() != WindowKind::kHopping) {
    return 1;
  }
  // Windows end step apart; those not yet closed span size + grace past the key's latest event.
  // A grace longer than the size counts as the size: a key with few events holds few of those
  // windows, and a key with many grows past them by doubling. One more: an event opens its
  // newest window before the windows its watermark closes are expired.
  const int64_t open_span =
      AddSaturating(definition.size(), std::min(definition.grace(), definition.size()));
  return static_cast<size_t>(std::min(kMostReserved, open_span / definition.step() + 2));
}

KeyState KeyState::Create(Value& state, const WindowStateLayout& layout, KeySerde serde) {
  char header[kHeaderBytes] = {};
  header[kVersionAt] = static_cast<char>(kWindowStateVersion);
  header[kSerdeAt] = static_cast<char>(serde);
  for (size_t at : {kWatermarkAt, kCloseAt, kLateAt}) std::memcpy(header + at, &kNoBound, 8);
  Value packed{std::string_view()};
  packed.mutable_string().reserve(kHeaderBytes + layout.expected_windows() * layout.stride());
  packed.mutable_string().append(header, kHeaderBytes);
  if (layout.keeps_events()) {
    Value::Array parts;  // built in place: a braced list would copy the string, not its room
    parts.reserve(2);
    parts.push_back(std::move(packed));
    parts.emplace_back();
    state = Value(std::move(parts));
  } else {
    state = std::move(packed);
  }
  return KeyState(state, layout);
}

Result<KeyState> KeyState::Open(Value& state, const WindowStateLayout& layout) {
  const Value* packed = &state;
  size_t boxes = 0;
  if (state.is_array() && !state.as_array().empty()) {
    const Value::Array& parts = state.as_array();
    if (parts[0].is_int()) {  // the layout of version 1: a Value per field, the version first
      return OtherVersion(parts[0].as_int());
    }
    packed = &parts[0];
    if (parts.size() < layout.first_box()) return BadState("sliding windows without kept events");
    if (layout.keeps_events()) WEIR_RETURN_IF_ERROR(CheckKeptEvents(parts[1]));
    boxes = parts.size() - layout.first_box();
  } else if (layout.keeps_events()) {
    return BadState("sliding windows without kept events");
  }
  if (!packed->is_string() || packed->as_string().empty()) {
    return BadState("not a key's windows of a known format version");
  }
  const std::string_view bytes = packed->as_string();
  if (bytes[kVersionAt] != static_cast<char>(kWindowStateVersion)) {
    return OtherVersion(static_cast<uint8_t>(bytes[kVersionAt]));
  }
  if (bytes.size() < kHeaderBytes) return BadState("truncated header");
  if (static_cast<uint8_t>(bytes[kSerdeAt]) > static_cast<uint8_t>(KeySerde::kBytes)) {
    return BadState("unknown key serde " + std::to_string(static_cast<uint8_t>(bytes[kSerdeAt])));
  }
  if ((bytes.size() - kHeaderBytes) % layout.stride() != 0) {
    return BadState(std::to_string(bytes.size() - kHeaderBytes) +
                    " window bytes are not a whole number of windows of " +
                    std::to_string(layout.stride()) + " (another kind of window or aggregations)");
  }
  KeyState key(state, layout);
  size_t boxed = 0;
  if (key.next_event_index() < 0 || key.next_event_index() == INT64_MAX) {
    return BadState("an event index out of range");
  }
  for (size_t i = 0; i < key.windows(); ++i) {
    if (static_cast<uint8_t>(bytes[key.WindowAt(i) + kFiredAt]) > 1) {
      return BadState("window " + std::to_string(i) + " has a fired mark that is not 0 or 1");
    }
    if (key.start(i) >= key.end(i)) {
      return BadState("window " + std::to_string(i) + " does not end after it starts");
    }
    for (size_t a = 0; a < layout.aggregations(); ++a) {
      const auto tag = static_cast<uint8_t>(bytes[key.SlotAt(i, a)]);
      if (tag > kBoxedSlot) {
        return BadState("window " + std::to_string(i) + " has a slot of unknown tag " +
                        std::to_string(tag));
      }
      boxed += tag == kBoxedSlot;
    }
  }
  if (boxed != boxes) {
    return BadState(std::to_string(boxed) + " boxed accumulators with " + std::to_string(boxes) +
                    " boxes");
  }
  return key;
}

void KeyState::FindPacked() {
  packed_ =
      state_->is_string() ? &state_->mutable_string() : &state_->as_array()[0].mutable_string();
}

int64_t KeyState::Read(size_t at) const {
  int64_t v;
  std::memcpy(&v, packed().data() + at, sizeof v);
  return v;
}

void KeyState::Write(size_t at, int64_t v) {
  std::memcpy(mutable_packed().data() + at, &v, sizeof v);
}

void KeyState::set_bounds(const Bounds& b) {
  Write(kCloseAt, b.close.value());
  Write(kLateAt, b.late.value());
}

Value::Array& KeyState::kept_events() {
  WEIR_CHECK(layout_.keeps_events(), "events are kept by sliding windows only");
  Value& events = state_->as_array()[1];
  if (!events.is_array()) events = Value(Value::Array());
  return events.as_array();
}

void KeyState::clear_kept_events() { state_->as_array()[1] = Value(); }

void KeyState::set_span(size_t i, int64_t start, int64_t end) {
  Write(WindowAt(i) + kStartAt, start);
  Write(WindowAt(i) + kEndAt, end);
}

void KeyState::set_count_fields(size_t i, int64_t count, int64_t min_ts, int64_t max_ts) {
  Write(WindowAt(i) + kCountAt, count);
  Write(WindowAt(i) + kMinTsAt, min_ts);
  Write(WindowAt(i) + kMaxTsAt, max_ts);
}

size_t KeyState::BoxIndex(size_t slot_at) {
  const std::string_view bytes = packed();
  const size_t window = std::min((slot_at - kHeaderBytes) / layout_.stride(), windows());
  auto boxed_in = [&](size_t i, size_t below) {
    size_t n = 0;
    for (size_t a = 0; a < layout_.aggregations() && SlotAt(i, a) < below; ++a) {
      n += bytes[SlotAt(i, a)] == kBoxedSlot;
    }
    return n;
  };
  if (box_cursor_.window > window) ResetBoxCursor();
  for (; box_cursor_.window < window; ++box_cursor_.window) {
    box_cursor_.first_box += boxed_in(box_cursor_.window, std::string_view::npos);
  }
  return box_cursor_.first_box + (window < windows() ? boxed_in(window, slot_at) : 0);
}

Value::Array& KeyState::AsArray() {
  if (state_->is_string()) {
    Value packed = std::move(*state_);
    *state_ = Value(Value::Array());
    state_->as_array().push_back(std::move(packed));
    FindPacked();
  }
  return state_->as_array();
}

void KeyState::LoadAccumulators(size_t i, std::span<Value> into) {
  const std::string_view bytes = packed();
  for (size_t a = 0; a < into.size(); ++a) {
    const char* slot = bytes.data() + SlotAt(i, a);
    int64_t payload;
    std::memcpy(&payload, slot + 1, sizeof payload);
    switch (static_cast<SlotTag>(slot[0])) {
      case kNullSlot:
        into[a] = Value();
        break;
      case kFalseSlot:
      case kTrueSlot:
        into[a] = slot[0] == kTrueSlot;
        break;
      case kIntSlot:
        into[a] = payload;
        break;
      case kDoubleSlot:
        into[a] = std::bit_cast<double>(payload);
        break;
      case kBoxedSlot:
        into[a] = std::move(state_->as_array()[BoxIndex(SlotAt(i, a))]);
        break;
    }
  }
}

void KeyState::StoreAccumulators(size_t i, std::span<Value> accumulators) {
  for (size_t a = 0; a < accumulators.size(); ++a) {
    Value& acc = accumulators[a];
    const size_t at = SlotAt(i, a);
    char* slot = mutable_packed().data() + at;
    int64_t payload = 0;
    if (slot[0] == kBoxedSlot) {
      state_->as_array()[BoxIndex(at)] = std::move(acc);
      continue;
    }
    switch (acc.type()) {
      case Value::Type::kNull:
        slot[0] = kNullSlot;
        break;
      case Value::Type::kBool:
        slot[0] = acc.as_bool() ? kTrueSlot : kFalseSlot;
        break;
      case Value::Type::kInt:
        slot[0] = kIntSlot;
        payload = acc.as_int();
        break;
      case Value::Type::kDouble:
        slot[0] = kDoubleSlot;
        payload = std::bit_cast<int64_t>(acc.as_double());
        break;
      default: {
        const size_t index = BoxIndex(at);
        Value::Array& parts = AsArray();
        parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(index), std::move(acc));
        ResetBoxCursor();  // the boxes of later windows moved up
        FindPacked();      // the array may have moved the packed string
        mutable_packed()[at] = kBoxedSlot;
        continue;
      }
    }
    std::memcpy(slot + 1, &payload, sizeof payload);
  }
}

bool KeyState::FoldInts(size_t i, std::span<const IntFold> folds,
                        std::span<const Value* const> inputs) {
  // Every slot's new tag and payload first, so that a slot that cannot be folded here leaves the
  // window as it was for the fold through Values.
  if (folds.size() > kMostFoldsInPlace) return false;
  char tags[kMostFoldsInPlace];
  int64_t payloads[kMostFoldsInPlace];
  const size_t first_slot = SlotAt(i, 0);
  for (size_t a = 0; a < folds.size(); ++a) {
    const char* slot = packed().data() + first_slot + a * WindowStateLayout::kSlotBytes;
    const char tag = slot[0];
    int64_t acc;
    std::memcpy(&acc, slot + 1, sizeof acc);
    tags[a] = tag;
    payloads[a] = acc;
    if (folds[a] != IntFold::kCount && inputs[a] == nullptr) continue;  // skipped, as SQL does
    if (tag == kBoxedSlot) return false;
    tags[a] = kIntSlot;
    if (folds[a] == IntFold::kCount) {  // an int + 1; anything else counts as none
      if (__builtin_add_overflow(tag == kIntSlot ? acc : 0, 1, &payloads[a])) return false;
      continue;
    }
    if (tag == kDoubleSlot || !inputs[a]->is_int()) return false;
    const int64_t v = inputs[a]->as_int();
    if (tag != kIntSlot) {  // a null or bool: not a number yet, so the input is the first
      payloads[a] = v;
      continue;
    }
    switch (folds[a]) {
      case IntFold::kSum:
        if (__builtin_add_overflow(acc, v, &payloads[a])) return false;  // becomes a double
        break;
      case IntFold::kMin:
        payloads[a] = std::min(acc, v);
        break;
      case IntFold::kMax:
        payloads[a] = std::max(acc, v);
        break;
      case IntFold::kCount:
      case IntFold::kNone:
        return false;
    }
  }
  char* slot = mutable_packed().data() + first_slot;
  for (size_t a = 0; a < folds.size(); ++a, slot += WindowStateLayout::kSlotBytes) {
    slot[0] = tags[a];
    std::memcpy(slot + 1, &payloads[a], sizeof payloads[a]);
  }
  return true;
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
  ResetBoxCursor();
  mutable_packed().insert(WindowAt(i), layout_.stride(), '\0');  // null slots, not fired
  ++windows_;
  set_span(i, start, end);
}

void KeyState::Erase(size_t first, size_t count) {
  if (count == 0) return;
  if (state_->is_array()) {
    // Their boxes are the run between the boxes of the windows before and those after.
    const size_t from = BoxIndex(WindowAt(first));
    const size_t to = BoxIndex(WindowAt(first + count));
    Value::Array& parts = state_->as_array();
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(from),
                parts.begin() + static_cast<std::ptrdiff_t>(to));
    ResetBoxCursor();
  }
  mutable_packed().erase(WindowAt(first), count * layout_.stride());
  windows_ -= count;
}

WindowValue KeyState::Take(size_t i) {
  WindowValue w{start(i), end(i), Value::Array(layout_.aggregations()), fired(i)};
  LoadAccumulators(i, w.accumulators);
  return w;
}

bool KeyState::empty() const {
  if (windows() != 0) return false;
  if (!layout_.keeps_events()) return true;
  const Value& kept = state_->as_array()[1];
  return !(kept.is_array() && !kept.as_array().empty());
}

KeyWindows::KeyWindows(WindowDefinition definition, const Aggregations& aggregations,
                       bool emit_current, Trigger trigger)
    : definition_(definition),
      aggregations_(aggregations),
      layout_(definition, aggregations.size()),
      emit_current_(emit_current),
      trigger_(std::move(trigger)),
      folds_in_place_(aggregations.folds_ints() &&
                      aggregations.size() <= KeyState::kMostFoldsInPlace && !emit_current_ &&
                      !trigger_),
      accumulators_(aggregations.size()),
      merged_(aggregations.size()),
      inputs_(aggregations.size()) {}

KeyState KeyWindows::View(Value& state, KeySerde serde) const {
  if (state.is_null()) return KeyState::Create(state, layout_, serde);
  return KeyState::Reopen(state, layout_);
}

Value KeyWindows::Result(int64_t start, int64_t end, std::span<const Value> accumulators) const {
  Value result;
  WriteResult(start, end, accumulators, result);
  return result;
}

void KeyWindows::WriteResult(int64_t start, int64_t end, std::span<const Value> accumulators,
                             Value& into) const {
  Value::ObjectWriter fields(into);
  fields.Add("start") = start;
  fields.Add("end") = end;
  aggregations_.WriteResults(accumulators, fields);
}

void KeyWindows::AddTo(KeyState& key, size_t i, int64_t start, int64_t end, const Value& value,
                       EventTime ts, AddOutcome& outcome) const {
  if (folds_in_place_ && key.FoldInts(i, aggregations_.int_folds(), inputs_)) return;
  key.LoadAccumulators(i, accumulators_);
  aggregations_.AddRead(accumulators_, inputs_, value, ts);
  Updated(key, i, start, end, accumulators_, outcome);
  key.StoreAccumulators(i, accumulators_);
}

void KeyWindows::Updated(KeyState& key, size_t i, int64_t start, int64_t end,
                         std::span<const Value> accs, AddOutcome& outcome) const {
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
  aggregations_.Read(value, inputs_);  // for AddTo
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
  size_t i = key.LowerBound(first_k * step);  // the windows of later k follow it in start order
  for (int64_t k = first_k; k <= last_k; ++k) {
    const int64_t start = k * step, end = start + size;
    if (bounds.Closes(end)) continue;  // this one closed; a later one still takes the event
    while (i < key.windows() && key.start(i) < start) ++i;
    if (i == key.windows() || key.start(i) != start) {
      key.Insert(i, start, end);
      outcome.created.push_back({start, end});
    }
    if (key.fired(i)) continue;
    AddTo(key, i, start, end, value, ts, outcome);
    taken = true;
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
    if (start <= t && t < end && !bounds.Closes(end)) AddTo(key, i, start, end, value, ts, outcome);
  }
  // Its own window, (t - size, t], with every stored event in it, unless one exists already.
  const int64_t start = t - size + 1, end = t + 1;
  size_t i = key.LowerBound(start);
  if (i == key.windows() || key.start(i) != start) {
    key.Insert(i, start, end);
    key.LoadAccumulators(i, accumulators_);
    for (const Value& e : key.kept_events()) {
      const int64_t et = e.as_array()[0].as_int();
      if (et >= start && et < end) aggregations_.Add(accumulators_, e.as_array()[1], EventTime(et));
    }
    outcome.created.push_back({start, end});
    Updated(key, i, start, end, accumulators_, outcome);
    key.StoreAccumulators(i, accumulators_);
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
    outcome.created.push_back({t, t + 1});
    AddTo(key, after, t, t + 1, value, ts, outcome);
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
    key.LoadAccumulators(into, accumulators_);
    key.LoadAccumulators(later, merged_);
    aggregations_.MergeInto(accumulators_, merged_);
    key.StoreAccumulators(into, accumulators_);
    key.Erase(later);
  }
  if (start != before.start || end != before.end) {
    outcome.removed.push_back(before);
    outcome.created.push_back({start, end});
    key.set_span(into, start, end);
  }
  AddTo(key, into, start, end, value, ts, outcome);
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
        WindowValue full = key.Take(i);
        aggregations_.AddRead(full.accumulators, inputs_, value, ts);
        full.start = min_ts;
        full.end = max_ts + 1;
        if (emit_current_) outcome.current.push_back(full);
        outcome.ready.push_back(std::move(full));
      }
      key.Erase(i);
      continue;
    }
    // Count windows report event times.
    if (!key.fired(i)) AddTo(key, i, min_ts, max_ts + 1, value, ts, outcome);
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
