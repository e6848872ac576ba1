#include "dataflow/keyed_time_join.h"

#include <algorithm>
#include <vector>

#include "state/key_encoding.h"

namespace weir::dataflow {
namespace {

// The message key a state key encodes, with the serde its events came with.
Result<Key> MessageKey(std::string_view state_key, KeySerde serde) {
  std::optional<std::string_view> bytes = state::ReadMessageKey(state_key);
  if (!bytes) return Status::Corruption("join state key is not an encoded message key");
  return Key::FromBytes(serde, *bytes);
}

}  // namespace

JoinSide::iterator FirstAtOrAfter(JoinSide& side, int64_t t) {
  return std::partition_point(side.begin(), side.end(),
                              [t](const Value& entry) { return EntryTime(entry) < t; });
}

JoinSide::iterator FirstAfter(JoinSide& side, int64_t t) {
  return std::partition_point(side.begin(), side.end(),
                              [t](const Value& entry) { return EntryTime(entry) <= t; });
}

void InsertInTimeOrder(JoinSide& side, Value entry) {
  side.insert(FirstAfter(side, EntryTime(entry)), std::move(entry));
}

bool JoinKeyState::Valid(const Value& stored) {
  if (!stored.is_array()) return false;
  const Value::Array& a = stored.as_array();
  return a.size() == 3 && a[0].is_int() && a[1].is_array() && a[2].is_array();
}

std::string JoinLateTopic(std::string_view option, std::string_view application) {
  return option.empty() ? std::string(application) + ".late" : std::string(option);
}

KeyedTimeJoin::KeyedTimeJoin(const StepContext& context, std::chrono::milliseconds grace,
                             std::string_view late_topic)
    : ctx_(context.task),
      store_(context.task.Store(context.step_name)),
      grace_ms_(grace.count()),
      late_(context.task, late_topic, "") {}

Status KeyedTimeJoin::Restore() {
  bool corrupt = false;
  Status scanned = store_.Scan("", "", false, [&](std::string_view key, const Value& stored) {
    if (!JoinKeyState::Valid(stored)) {
      corrupt = true;
      return false;
    }
    Value copy = stored;  // JoinKeyState views a mutable value
    Reindex(key, std::nullopt, DueAt(JoinKeyState(copy)));
    return true;
  });
  if (!scanned.ok()) return scanned;
  return corrupt ? Status::Corruption("a join state value has the wrong shape") : Status::OK();
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
  if (!value.is_array()) {
    value = Value(Value::Array{Value(static_cast<int64_t>(event.key.serde())),
                               Value(Value::Array{}), Value(Value::Array{})});
  }
  JoinKeyState state(value);
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

void KeyedTimeJoin::Emit(const Key& key, int64_t time, const Value& left, const Value& right) {
  Value& pair = emitted_.value;
  if (!pair.is_object() || pair.as_object().size() != 2 || pair.as_object()[0].first != "left" ||
      pair.as_object()[1].first != "right") {
    pair = Value::MakeObject({{"left", Value()}, {"right", Value()}});
  }
  Value::Object& sides = pair.as_object();
  sides[0].second = left;
  sides[1].second = right;
  emitted_.key = key;
  emitted_.timestamp = EventTime(time);
  emitted_.headers.clear();
  Forward(std::move(emitted_));
}

Result<Value*> KeyedTimeJoin::StateOf(std::string_view state_key) {
  WEIR_ASSIGN_OR_RETURN(Value * stored, store_.Mutate(state_key));
  if (!JoinKeyState::Valid(*stored))
    return Status::Corruption("a join state value has the wrong shape");
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
    JoinKeyState state(**stored);
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
  std::vector<std::string> keys;
  Status scanned = store_.Scan("", "", false, [&](std::string_view key, const Value&) {
    keys.emplace_back(key);
    return true;
  });
  if (!scanned.ok()) return Fail(scanned);
  for (const std::string& state_key : keys) {
    auto stored = StateOf(state_key);
    if (!stored.ok()) return Fail(stored.status());
    JoinKeyState state(**stored);
    auto key = MessageKey(state_key, state.serde());
    if (!key.ok()) return Fail(key.status());
    Close(*key, state);
    store_.Delete(state_key);
  }
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
