// The as-of join: each key's left events wait in time order until the horizon (watermark -
// grace) is past their time: from then on every right event at or before it that is not late
// has arrived (a later one would be late). The key's right events are kept in time order too,
// so a left's partner is found by binary search. Once a left due is emitted, right events older
// than the latest one at or before the horizon can never be a partner again (every left still
// to come or held is at or after the horizon) and are dropped.
#include "dataflow/asof_join_operator.h"

#include <algorithm>
#include <utility>

#include "dataflow/keyed_time_join.h"

namespace weir::dataflow {
namespace {

class AsOfJoinOperator final : public KeyedTimeJoin {
 public:
  AsOfJoinOperator(const AsOfJoinOptions& options, const StepContext& context)
      : KeyedTimeJoin(context, options.grace,
                      JoinLateTopic(options.late_topic, context.application)),
        lookback_(options.lookback) {}

 private:
  void Add(int input, Record& event, JoinKeyState& state) override {
    InsertInTimeOrder(state.side(input),
                      Value::MakeArray({event.timestamp.value(), event.value}));
  }

  void Expire(const Key& key, int64_t horizon, JoinKeyState& state) override {
    JoinSide& lefts = state.side(kLeftInput);
    JoinSide& rights = state.side(kRightInput);
    auto due_end = FirstAtOrAfter(lefts, horizon);
    for (auto l = lefts.begin(); l != due_end; ++l) EmitWithPartner(key, *l, rights);
    lefts.erase(lefts.begin(), due_end);
    auto after = FirstAfter(rights, horizon);
    if (after - rights.begin() >= 2) rights.erase(rights.begin(), after - 1);
  }

  void Close(const Key& key, JoinKeyState& state) override {
    for (const Value& left : state.side(kLeftInput)) {
      EmitWithPartner(key, left, state.side(kRightInput));
    }
  }

  std::optional<int64_t> DueAt(const JoinKeyState& state) const override {
    std::optional<int64_t> due;
    const JoinSide& lefts = state.side(kLeftInput);
    const JoinSide& rights = state.side(kRightInput);
    // A left is due once the horizon is past its time; the oldest right can go once the one
    // after it is at or before the horizon.
    if (!lefts.empty()) {
      due = (EventTime(EntryTime(lefts.front())) + std::chrono::milliseconds(1)).value();
    }
    if (rights.size() >= 2) due = due ? std::min(*due, EntryTime(rights[1])) : EntryTime(rights[1]);
    return due;
  }

  // Emits a left with the last right at or before its time (the last to arrive among equal
  // times), if that is within the lookback; else with null.
  void EmitWithPartner(const Key& key, const Value& left, JoinSide& rights) {
    const int64_t t = EntryTime(left);
    auto after = FirstAfter(rights, t);
    if (after != rights.begin() &&
        (lookback_.count() == 0 || EntryTime(*(after - 1)) >= (EventTime(t) - lookback_).value())) {
      return Emit(key, t, EntryValue(left), EntryValue(*(after - 1)));
    }
    Emit(key, t, EntryValue(left), Value());
  }

  const std::chrono::milliseconds lookback_;
};

}  // namespace

Result<std::unique_ptr<Operator>> MakeAsOfJoinOperator(const AsOfJoinOptions& options,
                                                       const StepContext& context) {
  return MakeKeyedTimeJoin<AsOfJoinOperator>(options, context);
}

}  // namespace weir::dataflow
