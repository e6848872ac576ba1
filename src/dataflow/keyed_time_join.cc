#include "dataflow/keyed_time_join.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <ranges>
#include <vector>

#include "core/binary_value.h"
#include "state/key_encoding.h"

namespace weir::dataflow {
namespace {

// The message key a state key encodes, with the serde its events came with.
Result<Key> MessageKey(std::string_view state_key, KeySerde serde) {
  std::optional<std::string_view> bytes = state::ReadMessageKey(state_key);
  if (!bytes) return Status::Corruption("join state key is not an encoded message key");
  return Key::FromBytes(serde, *bytes);
}

// Word `word` of entry `entry` of a side's index (JoinSide: 0 its time, 1 its value's end).
int64_t IndexWord(std::string_view index, size_t entry, size_t word) {
  int64_t w;
  std::memcpy(&w, index.data() + entry * JoinSide::kIndexBytes + word * sizeof(w), sizeof(w));
  return w;
}

}  // namespace

int64_t JoinSide::Word(size_t i, size_t word) const { return IndexWord(*index_, i, word); }

std::string_view JoinSide::encoded(size_t i) const {
  const size_t start = ValueStart(i);
  return std::string_view(*values_).substr(start, static_cast<size_t>(Word(i, 1)) - start);
}

template <typename Before>
size_t JoinSide::PartitionPoint(Before before) const {
  const auto entries = std::views::iota(size_t{0}, size());
  return static_cast<size_t>(
      std::ranges::partition_point(entries, [&](size_t i) { return before(time(i)); }) -
      entries.begin());
}

size_t JoinSide::FirstAtOrAfter(int64_t t) const {
  return PartitionPoint([t](int64_t ts) { return ts < t; });
}

size_t JoinSide::FirstAfter(int64_t t) const {
  return PartitionPoint([t](int64_t ts) { return ts <= t; });
}

size_t JoinSide::Insert(int64_t t, const Value& value, std::string& scratch) {
  // Whatever may throw (encoding, growing a string) comes first, so that the index, values and
  // flags never disagree.
  scratch.clear();
  value.AppendBinary(scratch);
  auto room_for = [](Value::String& s, size_t more) {
    if (s.capacity() < s.size() + more) s.reserve(std::max(2 * s.capacity(), s.size() + more));
  };
  room_for(*index_, kIndexBytes);
  room_for(*values_, scratch.size());
  if (flags_ != nullptr) room_for(*flags_, 1);
  const size_t at = FirstAfter(t);
  const size_t start = ValueStart(at);
  values_->insert(start, scratch);
  const int64_t entry[2] = {t, static_cast<int64_t>(start + scratch.size())};
  index_->insert(at * kIndexBytes, reinterpret_cast<const char*>(entry), kIndexBytes);
  ShiftEnds(at + 1, static_cast<int64_t>(scratch.size()));  // the later values moved
  if (flags_ != nullptr) flags_->insert(at, 1, '\0');
  return at;
}

void JoinSide::ShiftEnds(size_t from, int64_t delta) {
  char* words = index_->data();
  for (size_t i = from, n = size(); i < n; ++i) {
    const int64_t end = Word(i, 1) + delta;
    std::memcpy(words + i * kIndexBytes + sizeof(int64_t), &end, sizeof(end));
  }
}

void JoinSide::EraseFirst(size_t n) {
  if (n == 0) return;
  const int64_t cut = Word(n - 1, 1);
  values_->erase(0, static_cast<size_t>(cut));
  index_->erase(0, n * kIndexBytes);
  ShiftEnds(0, -cut);
  if (flags_ != nullptr) flags_->erase(0, n);
}

JoinSide JoinKeyState::Side(int input) const {
  if (input == kLeftInput) {
    return JoinSide(stored_[kLeftIndex].mutable_string(), stored_[kLeftValues].mutable_string(),
                    left_flags_ ? &stored_[kLeftFlags].mutable_string() : nullptr);
  }
  return JoinSide(stored_[kRightIndex].mutable_string(), stored_[kRightValues].mutable_string(),
                  nullptr);
}

Value JoinKeyState::Empty(KeySerde serde) {
  // Each slot made in place, in slot order (assigned after, they cost 2.7% of the interval join
  // bench's task threads, a new key per event or two).
  static_assert(kVersion == 0 && kSerde == 1 && kLeftIndex == 2 && kLeftValues == 3 &&
                kLeftFlags == 4 && kRightIndex == 5 && kRightValues == 6 && kSlots == 7);
  Value::Array stored;
  stored.reserve(kSlots);
  stored.emplace_back(kJoinStateVersion);
  stored.emplace_back(static_cast<int64_t>(serde));
  for (size_t slot = kLeftIndex; slot < kSlots; ++slot) stored.emplace_back("");
  return Value(std::move(stored));
}

Status JoinKeyState::Check(const Value& stored, bool left_flags) {
  if (!stored.is_array()) return Status::Corruption("a join state is not an array");
  const Value::Array& a = stored.as_array();
  auto refused = [](const std::string& version) {
    return Status::Corruption("a join state has layout version " + version + " (this build reads " +
                              std::to_string(kJoinStateVersion) + ")");
  };
  // The first layout, [serde, lefts, rights], had no version (and its serde may equal one).
  if (a.size() == 3) return refused("1");
  auto wrong_shape = [] { return Status::Corruption("a join state value has the wrong shape"); };
  if (a.empty() || !a[kVersion].is_int()) return wrong_shape();
  if (a[kVersion].as_int() != kJoinStateVersion) {
    return refused(std::to_string(a[kVersion].as_int()));
  }
  if (a.size() != kSlots || !a[kSerde].is_int()) return wrong_shape();
  for (size_t slot = kLeftIndex; slot < kSlots; ++slot) {
    if (!a[slot].is_string()) return wrong_shape();
  }
  // The index holds whole entries, the last ending where the values do; one flag per entry.
  auto side_ok = [&a](Slot index, Slot values, std::optional<Slot> flags) {
    const std::string_view words = a[index].as_string();
    if (words.size() % JoinSide::kIndexBytes != 0) return false;
    const size_t n = words.size() / JoinSide::kIndexBytes;
    const int64_t last_end = n == 0 ? 0 : IndexWord(words, n - 1, 1);
    return last_end == static_cast<int64_t>(a[values].as_string().size()) &&
           (!flags || a[*flags].as_string().size() == n);
  };
  if (!side_ok(kLeftIndex, kLeftValues, left_flags ? std::optional(kLeftFlags) : std::nullopt) ||
      (!left_flags && !a[kLeftFlags].as_string().empty()) ||
      !side_ok(kRightIndex, kRightValues, std::nullopt)) {
    return wrong_shape();
  }
  return Status::OK();
}

Status JoinKeyState::CheckEntries(const Value& stored, bool left_flags) {
  WEIR_RETURN_IF_ERROR(Check(stored, left_flags));
  const Value::Array& a = stored.as_array();
  Value decoded;
  struct SideSlots {
    const char* name;
    Slot index, values;
  };
  for (const auto& [side, index, values] : {SideSlots{"left", kLeftIndex, kLeftValues},
                                            SideSlots{"right", kRightIndex, kRightValues}}) {
    const std::string_view words = a[index].as_string(), bytes = a[values].as_string();
    int64_t last_time = std::numeric_limits<int64_t>::min();
    size_t start = 0;
    for (size_t i = 0; i < words.size() / JoinSide::kIndexBytes; ++i) {
      auto entry = [&] {
        return "a join state's " + std::string(side) + " entry " + std::to_string(i);
      };
      const int64_t time = IndexWord(words, i, 0), end = IndexWord(words, i, 1);
      if (time < last_time) return Status::Corruption(entry() + " is out of time order");
      if (end < static_cast<int64_t>(start) || end > static_cast<int64_t>(bytes.size())) {
        return Status::Corruption(entry() + " ends outside its side's values");
      }
      Status read =
          AssignWholeBinary(bytes.substr(start, static_cast<size_t>(end) - start), decoded);
      if (!read.ok()) {
        return Status::Corruption(entry() + " is not one value in the binary form (" +
                                  read.message() + ")");
      }
      last_time = time;
      start = static_cast<size_t>(end);
    }
  }
  return Status::OK();
}

Status PairPart::AssignTo(Value& slot) const {
  if (value_ != nullptr) {
    slot = *value_;
    return Status::OK();
  }
  if (!stored_) {
    slot = Value();
    return Status::OK();
  }
  return AssignWholeBinary(encoded_, slot).WithContext("a join state's entry");
}

std::string JoinLateTopic(std::string_view option, std::string_view application) {
  return option.empty() ? std::string(application) + ".late" : std::string(option);
}

KeyedTimeJoin::KeyedTimeJoin(const StepContext& context, std::chrono::milliseconds grace,
                             std::string_view late_topic, bool left_flags)
    : ctx_(context.task),
      store_(context.task.Store(context.step_name)),
      grace_ms_(grace.count()),
      left_flags_(left_flags),
      late_(context.task, late_topic, "") {}

Status KeyedTimeJoin::Restore() {
  Status invalid;
  Status scanned = store_.Scan("", "", false, [&](std::string_view key, const Value& stored) {
    invalid = JoinKeyState::CheckEntries(stored, left_flags_);
    if (!invalid.ok()) return false;
    Value copy = stored;  // JoinKeyState views a mutable value
    Reindex(key, std::nullopt, DueAt(JoinKeyState(copy, left_flags_)));
    return true;
  });
  if (!scanned.ok()) return scanned;
  return invalid;
}

void KeyedTimeJoin::ProcessInput(int input, Record&& event) {
  // Records this step did not see (another branch, a filter before it) may have moved the
  // watermark: what they made final goes first, so the event meets the state as it now is.
  const Watermark watermark = ctx_.watermark();
  if (watermark.IsEndOfInput()) return late_.Write(event, kInputEndedReason, 0);
  const int64_t horizon = Horizon(watermark);
  Sweep(horizon);
  const int64_t ts = event.timestamp.value();
  if (ts < horizon) {
    late_.Write(event,
                "ts " + std::to_string(ts) + " < watermark " + std::to_string(watermark.value()) +
                    " - grace " + std::to_string(grace_ms_) + " (" + std::to_string(horizon) +
                    "): the join's state for that time has expired",
                horizon - ts);
    return;
  }
  state_key_.clear();
  state::AppendMessageKey(state_key_, event.key.bytes());
  auto stored = store_.Mutate(state_key_);
  if (!stored.ok()) return Fail(stored.status());
  Value& value = **stored;
  // A stored state was checked by Restore (every key, when the task opened); since then the step
  // has only read what it wrote. (Checked here again: 2% of q4's task threads.)
  if (value.is_null()) value = JoinKeyState::Empty(event.key.serde());
  JoinKeyState state(value, left_flags_);
  const std::optional<int64_t> was_due = DueAt(state);
  Add(input, event, state);
  Reindex(state_key_, was_due, DueAt(state));
}

void KeyedTimeJoin::OnWatermark(Watermark watermark) {
  if (watermark.IsEndOfInput()) {
    CloseEveryKey();
  } else {
    Sweep(Horizon(watermark));
  }
  Operator::OnWatermark(watermark);
}

void KeyedTimeJoin::Emit(const Key& key, int64_t time, const PairPart& left,
                         const PairPart& right) {
  Value& pair = emitted_.value;
  if (!pair.is_object() || pair.as_object().size() != 2 || pair.as_object()[0].first != "left" ||
      pair.as_object()[1].first != "right") {
    pair = Value::MakeObject({{"left", Value()}, {"right", Value()}});
  }
  Value::Object& sides = pair.as_object();
  Status assigned = left.AssignTo(sides[0].second);
  if (assigned.ok()) assigned = right.AssignTo(sides[1].second);
  if (!assigned.ok()) return Fail(assigned);
  emitted_.key = key;
  emitted_.timestamp = EventTime(time);
  emitted_.headers.clear();
  Forward(std::move(emitted_));
}

Result<Value*> KeyedTimeJoin::StateOf(std::string_view state_key) {
  WEIR_ASSIGN_OR_RETURN(Value * stored, store_.Mutate(state_key));
  WEIR_RETURN_IF_ERROR(JoinKeyState::Check(*stored, left_flags_));
  return stored;
}

int64_t KeyedTimeJoin::Horizon(Watermark watermark) const {
  return SubtractSaturating(watermark.value(), grace_ms_);
}

void KeyedTimeJoin::Sweep(int64_t horizon) {
  ctx_.CountExpiryVisits(1);  // the index's first entry: due or not
  while (!index_.empty() && index_.begin()->first <= horizon) {
    // The entry leaves the index while the key is expired and goes back with the new horizon:
    // its node, and the key it owns, are reused.
    auto entry = index_.extract(index_.begin());
    const std::string& state_key = entry.value().second;
    ctx_.CountExpiryVisits(1);
    auto stored = StateOf(state_key);
    if (!stored.ok()) return Fail(stored.status());
    JoinKeyState state(**stored, left_flags_);
    auto key = MessageKey(state_key, state.serde());
    if (!key.ok()) return Fail(key.status());
    Expire(*key, horizon, state);
    if (state.empty()) {
      store_.Delete(state_key);
      Retire(std::move(entry));
      continue;
    }
    if (std::optional<int64_t> due = DueAt(state)) {
      entry.value().first = *due;
      index_.insert(std::move(entry));
    } else {
      Retire(std::move(entry));
    }
  }
}

void KeyedTimeJoin::CloseEveryKey() {
  Status closed = store_.MutateEach([&](std::string_view state_key, Value& stored) -> Status {
    WEIR_RETURN_IF_ERROR(JoinKeyState::Check(stored, left_flags_));
    JoinKeyState state(stored, left_flags_);
    WEIR_ASSIGN_OR_RETURN(Key key, MessageKey(state_key, state.serde()));
    Close(key, state);
    store_.Delete(state_key);
    return Status::OK();
  });
  if (!closed.ok()) Fail(closed);
  index_.clear();
}

void KeyedTimeJoin::Reindex(std::string_view state_key, std::optional<int64_t> from,
                            std::optional<int64_t> to) {
  if (from == to) return;
  // The entry is missing only when a sweep failed on this key (the step has failed, the batch
  // goes on): the key is indexed anew, as a new key is.
  auto it =
      from ? index_.find(std::pair<int64_t, std::string_view>(*from, state_key)) : index_.end();
  if (it == index_.end()) {
    if (to) IndexNew(*to, state_key);
    return;
  }
  auto entry = index_.extract(it);
  if (!to) return Retire(std::move(entry));
  entry.value().first = *to;
  index_.insert(std::move(entry));
}

void KeyedTimeJoin::IndexNew(int64_t due, std::string_view state_key) {
  if (spare_nodes_.empty()) {
    index_.emplace(due, std::string(state_key));
    return;
  }
  Index::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.value().first = due;
  node.value().second.assign(state_key);
  index_.insert(std::move(node));
}

void KeyedTimeJoin::Retire(Index::node_type node) {
  if (spare_nodes_.size() < kMaxSpareNodes) spare_nodes_.push_back(std::move(node));
}

}  // namespace weir::dataflow
