// What the interval join and the as-of join (weir/join.h) share: a step with two inputs (0: left,
// 1: right) that joins events by message key and event time.
//
// State: each key's events in one value of the step's store (JoinKeyState below), each side's
// entries (a time, a value in the binary form, maybe a flag) in time order (ties: arrival order).
// The store caches it and writes it behind at the checkpoint, so state and outputs are exactly once
// together.
//
// Lateness: the horizon is watermark - grace; an event with ts < horizon when it arrives is
// late: it goes to the late topic ({reason, late_by_ms, value}) and is counted, never joined.
//
// Expiry: an in-memory index orders the keys by the horizon at which their state next needs the
// join (an event to drop, a left to emit). It is rebuilt from the store when the task opens, and
// a move of the horizon costs O(log n) per key that is due, never a scan of the stored keys. At
// the end of input (Watermark::Max()) every key is closed and the state is cleared.
//
// Per event the store is looked up once (the event's key) and once per key that falls due (plus
// a delete when its state empties); the index holds each key's due horizon, which is DueAt of its
// state, so an event's old entry is found from the state it is about to change.
//
// Threads: the task's. Lifecycle: built by the join's factory, which calls Restore.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataflow/kind.h"
#include "dataflow/late_output.h"
#include "dataflow/operators.h"
#include "dataflow/task_context.h"

namespace weir::dataflow {

inline constexpr int kLeftInput = 0;
inline constexpr int kRightInput = 1;

// The version of the stored layout below; a value of another version or shape is refused
// (kCorruption) when the task opens (KeyedTimeJoin::Restore), never read as something else.
inline constexpr int64_t kJoinStateVersion = 3;

// One side's entries, in time order (ties: arrival order), viewed in a key's state
// (JoinKeyState): their index, a string of 16 bytes per entry (its time, and the end of its value
// in the side's bytes: two 8-byte integers in host order, little-endian on every target); their
// values in the binary form (Value::AppendBinary), one after another in one string; and maybe
// their flags, a string of one byte per entry (an interval join's lefts: whether the entry
// matched). A binary search reads the times in place; an entry inserted out of order moves the
// later entries' bytes, and an expiry erases a prefix of bytes, with no Value to move or free.
// (Values in an array, one per entry, at version 2: moving and freeing them was 16% of q4's task
// threads. An array per entry, at version 1: q4's join spent 10% of its task's samples reaching a
// probed entry's time through its array.)
class JoinSide {
 public:
  // REQUIRES: the strings are a side of a state that passed JoinKeyState::CheckEntries when it
  // was read, and has been changed since only through JoinSide.
  JoinSide(Value::String& index, Value::String& values, Value::String* flags)
      : index_(&index), values_(&values), flags_(flags) {}

  size_t size() const { return index_->size() / kIndexBytes; }
  bool empty() const { return index_->empty(); }
  int64_t time(size_t i) const { return Word(i, 0); }
  // Entry i's value in the binary form: decode it with Value::AssignBinary, or emit it as a
  // PairPart::Stored.
  std::string_view encoded(size_t i) const;
  // REQUIRES: the side has flags.
  bool flagged(size_t i) const { return (*flags_)[i] != 0; }
  void Flag(size_t i) { (*flags_)[i] = 1; }

  // The first entry with ts >= t, and with ts > t (size() if none).
  size_t FirstAtOrAfter(int64_t t) const;
  size_t FirstAfter(int64_t t) const;
  // Adds an entry after every entry of its time or earlier, with `value` encoded (through
  // `scratch`, whose memory is kept for the next) and its flag clear. Returns its index. If it
  // throws (bad_alloc), the side is as it was.
  size_t Insert(int64_t t, const Value& value, std::string& scratch);
  // Drops the first n entries (REQUIRES: n <= size()).
  void EraseFirst(size_t n);

  static constexpr size_t kIndexBytes = 16;

 private:
  template <typename Before>
  size_t PartitionPoint(Before before) const;
  // Word 0 of entry i's index is its time, word 1 the end of its value.
  int64_t Word(size_t i, size_t word) const;
  // Adds delta to the ends of entries [from, size()).
  void ShiftEnds(size_t from, int64_t delta);
  size_t ValueStart(size_t i) const { return i == 0 ? 0 : static_cast<size_t>(Word(i - 1, 1)); }

  Value::String* index_;
  Value::String* values_;
  Value::String* flags_;  // nullptr: the side has none
};

// A key's stored state, viewed in place: one array, [kJoinStateVersion, serde, left index, left
// values, left flags, right index, right values] (JoinSide; one array, so that a new key costs
// one allocation). The left flags are empty if the join keeps none (`left_flags`).
class JoinKeyState {
 public:
  // A new key's state.
  static Value Empty(KeySerde serde);
  // OK if `stored` is a key's state with `left_flags`; else kCorruption saying what is wrong
  // (another layout: its version). Reads the slots' types and sizes and each side's last end,
  // not the entries (O(1)): a shape check for a state this step has been keeping.
  static Status Check(const Value& stored, bool left_flags);
  // Check, and every entry as well: times in order, ends ascending within the side's values,
  // every value decoding to exactly its bytes (O(state); for a state read from the store).
  static Status CheckEntries(const Value& stored, bool left_flags);
  // REQUIRES: as JoinSide's.
  JoinKeyState(Value& stored, bool left_flags)
      : stored_(stored.as_array()), left_flags_(left_flags) {}
  KeySerde serde() const { return static_cast<KeySerde>(stored_[kSerde].as_int()); }
  JoinSide side(int input) { return Side(input); }
  const JoinSide side(int input) const { return Side(input); }
  bool empty() const {
    return stored_[kLeftIndex].as_string().empty() && stored_[kRightIndex].as_string().empty();
  }

 private:
  enum Slot : size_t {
    kVersion,
    kSerde,
    kLeftIndex,
    kLeftValues,
    kLeftFlags,
    kRightIndex,
    kRightValues,
    kSlots
  };
  JoinSide Side(int input) const;

  Value::Array& stored_;
  const bool left_flags_;
};

// One side of a pair that KeyedTimeJoin::Emit builds: an arriving event's value, a stored entry's
// (JoinSide::encoded, decoded into the pair), or null (an outer join's missing partner).
class PairPart {
 public:
  PairPart() = default;                             // null
  PairPart(const Value& value) : value_(&value) {}  // NOLINT(google-explicit-constructor)
  static PairPart Stored(std::string_view encoded) {
    PairPart part;
    part.encoded_ = encoded;
    part.stored_ = true;
    return part;
  }
  // Makes `slot` this part: a copy, a decoding (kCorruption if the bytes are not exactly one
  // value) or null.
  Status AssignTo(Value& slot) const;

 private:
  const Value* value_ = nullptr;
  std::string_view encoded_;
  bool stored_ = false;
};

class KeyedTimeJoin : public MultiInputOperator {
 public:
  // Rebuilds the index from the store, checking every stored state (JoinKeyState::CheckEntries):
  // the per-event path relies on it. kCorruption/kIOError from the store.
  Status Restore();

  void ProcessInput(int input, Record&& event) final;
  void OnWatermark(Watermark watermark) final;

 protected:
  // `left_flags`: whether the left entries have a flag (JoinKeyState).
  KeyedTimeJoin(const StepContext& context, std::chrono::milliseconds grace,
                std::string_view late_topic, bool left_flags);

  // An event of `input` that is not late, with its key's state (created empty if new).
  virtual void Add(int input, Record& event, JoinKeyState& state) = 0;
  // The horizon has reached DueAt(state): drop and emit what it makes final.
  virtual void Expire(const Key& key, int64_t horizon, JoinKeyState& state) = 0;
  // The end of input: emit what the state still holds back (the state is deleted after).
  virtual void Close(const Key& key, JoinKeyState& state) = 0;
  // The smallest horizon at which Expire has something to do for this state; nullopt: none.
  virtual std::optional<int64_t> DueAt(const JoinKeyState& state) const = 0;

  // Forwards {"left": left, "right": right} under `key` at `time`. The pair is built in a record
  // the step keeps (emitted_): the steps after a join mostly read it (a filter, a map), so the next
  // match is copied or decoded over the objects, strings and arrays this one left there
  // (allocating only where it is larger). A step that took the pair, or left it in another shape
  // than an object of exactly "left" and "right", costs the next match a fresh one. A stored part
  // that does not decode fails the step (kCorruption).
  void Emit(const Key& key, int64_t time, const PairPart& left, const PairPart& right);
  // The memory an Insert encodes through (JoinSide::Insert's scratch).
  std::string& encoding_scratch() { return encoding_scratch_; }

 private:
  int64_t Horizon(Watermark watermark) const;
  // The stored state of a key that has one. kCorruption if it is not a join state of this layout.
  Result<Value*> StateOf(std::string_view state_key);
  void Sweep(int64_t horizon);
  void CloseEveryKey();
  // Moves a key's index entry from due horizon `from` to `to` (nullopt: not indexed).
  void Reindex(std::string_view state_key, std::optional<int64_t> from, std::optional<int64_t> to);

  TaskContext& ctx_;
  state::KeyValueStore& store_;
  const int64_t grace_ms_;
  const bool left_flags_;
  LateOutput late_;
  // (due horizon, state key) of every key whose state has one: DueAt of the state as stored.
  // Ordered by horizon, then key; found by either half as a view (no key is copied to look).
  using IndexEntry = std::pair<int64_t, std::string>;
  struct DueOrder {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      if (a.first != b.first) return a.first < b.first;
      return std::string_view(a.second) < std::string_view(b.second);
    }
  };
  using Index = std::set<IndexEntry, DueOrder>;
  // An entry for `state_key` due at `due`, in a node that left the index before if there is one
  // (a key that leaves for good keeps its node for the next new key: no allocation per key).
  void IndexNew(int64_t due, std::string_view state_key);
  void Retire(Index::node_type node);

  Index index_;
  std::vector<Index::node_type> spare_nodes_;  // at most kMaxSpareNodes
  static constexpr size_t kMaxSpareNodes = 4096;
  std::string state_key_;
  Record emitted_;  // Emit's output, kept for the memory of its value
  std::string encoding_scratch_;
};

// The late topic of a join: its option, or "<application>.late".
std::string JoinLateTopic(std::string_view option, std::string_view application);

// Builds a join operator (constructed from its options and the context) and restores its index
// from the task's store. kCorruption/kIOError from the store.
template <typename JoinOperator, typename Options>
Result<std::unique_ptr<Operator>> MakeKeyedTimeJoin(const Options& options,
                                                    const StepContext& context) {
  auto op = std::make_unique<JoinOperator>(options, context);
  WEIR_RETURN_IF_ERROR(
      op->Restore().WithContext("restoring join step " + std::string(context.step_name)));
  return std::unique_ptr<Operator>(std::move(op));
}

}  // namespace weir::dataflow
