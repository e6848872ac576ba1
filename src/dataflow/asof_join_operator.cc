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
                      JoinLateTopic(options.late_topic, context.application), /*left_flags=*/false),
        lookback_(options.lookback) {}

 private:
  void Add(int input, Record& event, JoinKeyState& state) override {
    state.side(input).Insert(event.timestamp.value(), event.value, encoding_scratch());
  }

  void Expire(const Key& key, int64_t horizon, JoinKeyState& state) override {
    JoinSide lefts = state.side(kLeftInput);
    JoinSide rights = state.side(kRightInput);
    const size_t due_end = lefts.FirstAtOrAfter(horizon);
    for (size_t l = 0; l < due_end; ++l) EmitWithPartner(key, lefts, l, rights);
    lefts.EraseFirst(due_end);
    const size_t after = rights.FirstAfter(horizon);
    if (after >= 2) rights.EraseFirst(after - 1);
  }

  void Close(const Key& key, JoinKeyState& state) override {
    const JoinSide lefts = state.side(kLeftInput);
    for (size_t l = 0; l < lefts.size(); ++l) {
      EmitWithPartner(key, lefts, l, state.side(kRightInput));
    }
  }

  std::optional<int64_t> DueAt(const JoinKeyState& state) const override {
    std::optional<int64_t> due;
    const JoinSide lefts = state.side(kLeftInput);
    const JoinSide rights = state.side(kRightInput);
    // A left is due once the horizon is past its time; the oldest right can go once the one
    // after it is at or before the horizon.
    if (!lefts.empty()) {
      due = (EventTime(lefts.time(0)) + std::chrono::milliseconds(1)).value();
    }
    if (rights.size() >= 2) due = due ? std::min(*due, rights.time(1)) : rights.time(1);
    return due;
  }

  // Emits left l with the last right at or before its time (the last to arrive among equal
  // times), if that is within the lookback; else with null.
  void EmitWithPartner(const Key& key, const JoinSide& lefts, size_t l, const JoinSide& rights) {
    const int64_t t = lefts.time(l);
    const size_t after = rights.FirstAfter(t);
    if (after > 0 &&
        (lookback_.count() == 0 || rights.time(after - 1) >= (EventTime(t) - lookback_).value())) {
      return Emit(key, t, PairPart::Stored(lefts.encoded(l)),
                  PairPart::Stored(rights.encoded(after - 1)));
    }
    Emit(key, t, PairPart::Stored(lefts.encoded(l)), PairPart());
  }

  const std::chrono::milliseconds lookback_;
};

}  // namespace

Result<std::unique_ptr<Operator>> MakeAsOfJoinOperator(const AsOfJoinOptions& options,
                                                       const StepContext& context) {
  return MakeKeyedTimeJoin<AsOfJoinOperator>(options, context);
}

}  // namespace weir::dataflow
