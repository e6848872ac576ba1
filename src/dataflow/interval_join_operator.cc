// The interval join: a left event L (tl) and a right event R (tr) of one key match when
// tl - lower <= tr <= tl + upper. Each side's events are kept in time order, so the partners of
// an arriving event are one contiguous run of the other side, found by binary search, and the
// events that expire are a prefix of each side: L once tl + upper < horizon (no right event that
// is not late can match it any more), R once tr + lower < horizon. A left entry carries whether
// it has matched, for left_outer.
#include "dataflow/interval_join_operator.h"

#include <algorithm>
#include <utility>

#include "dataflow/keyed_time_join.h"

namespace weir::dataflow {
namespace {

// A left entry: [ts, value, matched].
constexpr size_t kMatched = 2;

EventTime TimeOf(const Value& entry) { return EventTime(EntryTime(entry)); }

class IntervalJoinOperator final : public KeyedTimeJoin {
 public:
  IntervalJoinOperator(const IntervalJoinOptions& options, const StepContext& context)
      : KeyedTimeJoin(context, options.grace,
                      JoinLateTopic(options.late_topic, context.application)),
        lower_(options.lower),
        upper_(options.upper),
        left_outer_(options.left_outer) {}

 private:
  void Add(int input, Record& event, JoinKeyState& state) override {
    const EventTime at = event.timestamp;
    const int64_t t = at.value();
    if (input == kLeftInput) {
      JoinSide& rights = state.side(kRightInput);
      bool matched = false;
      for (auto r = FirstAtOrAfter(rights, (at - lower_).value());
           r != rights.end() && TimeOf(*r) <= at + upper_; ++r) {
        Emit(event.key, std::max(t, EntryTime(*r)), event.value, EntryValue(*r));
        matched = true;
      }
      InsertInTimeOrder(state.side(kLeftInput), Value::MakeArray({t, event.value, matched}));
      return;
    }
    JoinSide& lefts = state.side(kLeftInput);
    for (auto l = FirstAtOrAfter(lefts, (at - upper_).value());
         l != lefts.end() && TimeOf(*l) <= at + lower_; ++l) {
      Emit(event.key, std::max(t, EntryTime(*l)), EntryValue(*l), event.value);
      l->as_array()[kMatched] = Value(true);
    }
    InsertInTimeOrder(state.side(kRightInput), Value::MakeArray({t, event.value}));
  }

  void Expire(const Key& key, int64_t horizon, JoinKeyState& state) override {
    JoinSide& lefts = state.side(kLeftInput);
    auto l = lefts.begin();
    for (; l != lefts.end() && (TimeOf(*l) + upper_).value() < horizon; ++l) {
      EmitIfUnmatched(key, *l);
    }
    lefts.erase(lefts.begin(), l);
    JoinSide& rights = state.side(kRightInput);
    auto r = rights.begin();
    while (r != rights.end() && (TimeOf(*r) + lower_).value() < horizon) ++r;
    rights.erase(rights.begin(), r);
  }

  void Close(const Key& key, JoinKeyState& state) override {
    for (const Value& left : state.side(kLeftInput)) EmitIfUnmatched(key, left);
  }

  std::optional<int64_t> DueAt(const JoinKeyState& state) const override {
    // An entry expires once the horizon is past its last matching instant.
    std::optional<EventTime> last;
    const JoinSide& lefts = state.side(kLeftInput);
    const JoinSide& rights = state.side(kRightInput);
    if (!lefts.empty()) last = TimeOf(lefts.front()) + upper_;
    if (!rights.empty()) {
      const EventTime r = TimeOf(rights.front()) + lower_;
      last = last ? std::min(*last, r) : r;
    }
    if (!last) return std::nullopt;
    return (*last + std::chrono::milliseconds(1)).value();
  }

  void EmitIfUnmatched(const Key& key, const Value& left) {
    if (left_outer_ && !left.as_array()[kMatched].as_bool()) {
      Emit(key, EntryTime(left), EntryValue(left), Value());
    }
  }

  const std::chrono::milliseconds lower_;
  const std::chrono::milliseconds upper_;
  const bool left_outer_;
};

}  // namespace

Result<std::unique_ptr<Operator>> MakeIntervalJoinOperator(const IntervalJoinOptions& options,
                                                           const StepContext& context) {
  return MakeKeyedTimeJoin<IntervalJoinOperator>(options, context);
}

}  // namespace weir::dataflow
