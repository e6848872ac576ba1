// The interval join: a left event L (tl) and a right event R (tr) of one key match when
// tl - lower <= tr <= tl + upper. Each side's events are kept in time order, so the partners of
// an arriving event are one contiguous run of the other side, found by binary search, and the
// events that expire are a prefix of each side: L once tl + upper < horizon (no right event that
// is not late can match it any more), R once tr + lower < horizon. A left entry carries whether
// it has matched (its flag), for left_outer.
#include "dataflow/interval_join_operator.h"

#include <algorithm>
#include <utility>

#include "dataflow/keyed_time_join.h"

namespace weir::dataflow {
namespace {

class IntervalJoinOperator final : public KeyedTimeJoin {
 public:
  IntervalJoinOperator(const IntervalJoinOptions& options, const StepContext& context)
      : KeyedTimeJoin(context, options.grace,
                      JoinLateTopic(options.late_topic, context.application),
                      /*left_flags=*/true),  // whether the left matched
        lower_(options.lower),
        upper_(options.upper),
        left_outer_(options.left_outer) {}

 private:
  void Add(int input, Record& event, JoinKeyState& state) override {
    const EventTime at = event.timestamp;
    const int64_t t = at.value();
    if (input == kLeftInput) {
      const JoinSide rights = state.side(kRightInput);
      bool matched = false;
      for (size_t r = rights.FirstAtOrAfter((at - lower_).value());
           r < rights.size() && EventTime(rights.time(r)) <= at + upper_; ++r) {
        Emit(event.key, std::max(t, rights.time(r)), event.value,
             PairPart::Stored(rights.encoded(r)));
        matched = true;
      }
      JoinSide lefts = state.side(kLeftInput);
      const size_t inserted = lefts.Insert(t, event.value, encoding_scratch());
      if (matched) lefts.Flag(inserted);
      return;
    }
    JoinSide lefts = state.side(kLeftInput);
    for (size_t l = lefts.FirstAtOrAfter((at - upper_).value());
         l < lefts.size() && EventTime(lefts.time(l)) <= at + lower_; ++l) {
      Emit(event.key, std::max(t, lefts.time(l)), PairPart::Stored(lefts.encoded(l)), event.value);
      lefts.Flag(l);
    }
    state.side(kRightInput).Insert(t, event.value, encoding_scratch());
  }

  void Expire(const Key& key, int64_t horizon, JoinKeyState& state) override {
    JoinSide lefts = state.side(kLeftInput);
    size_t l = 0;
    for (; l < lefts.size() && (EventTime(lefts.time(l)) + upper_).value() < horizon; ++l) {
      EmitIfUnmatched(key, lefts, l);
    }
    lefts.EraseFirst(l);
    JoinSide rights = state.side(kRightInput);
    size_t r = 0;
    while (r < rights.size() && (EventTime(rights.time(r)) + lower_).value() < horizon) ++r;
    rights.EraseFirst(r);
  }

  void Close(const Key& key, JoinKeyState& state) override {
    const JoinSide lefts = state.side(kLeftInput);
    for (size_t l = 0; l < lefts.size(); ++l) EmitIfUnmatched(key, lefts, l);
  }

  std::optional<int64_t> DueAt(const JoinKeyState& state) const override {
    // An entry expires once the horizon is past its last matching instant.
    std::optional<EventTime> last;
    const JoinSide lefts = state.side(kLeftInput);
    const JoinSide rights = state.side(kRightInput);
    if (!lefts.empty()) last = EventTime(lefts.time(0)) + upper_;
    if (!rights.empty()) {
      const EventTime r = EventTime(rights.time(0)) + lower_;
      last = last ? std::min(*last, r) : r;
    }
    if (!last) return std::nullopt;
    return (*last + std::chrono::milliseconds(1)).value();
  }

  void EmitIfUnmatched(const Key& key, const JoinSide& lefts, size_t l) {
    if (left_outer_ && !lefts.flagged(l)) {
      Emit(key, lefts.time(l), PairPart::Stored(lefts.encoded(l)), PairPart());
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
