// The built-in aggregators. Accumulators are plain Values so state stores them directly:
//   count -> int; sum -> int (or double once a double is added); min/max -> number or null;
//   mean -> [sum (double), count (int)];
//   first/last -> [event time, value], or null before any value;
//   collect -> [t0, v0, t1, v1, ...], flat and sorted by event time, ties in arrival order;
//   max_rows -> [max, collect's accumulator of the record values holding it], or null before any;
//   reduce -> [user accumulator], or null before any value (so a user accumulator that is
//   itself null is not mistaken for "nothing taken").
// Every Merge equals folding the union of its inputs, whatever subsets they were folded from.
// Where arrival order matters (equal event times in first/last/collect/max_rows), Merge(a, b) takes a's
// events as having arrived before b's; that makes Merge associative, so any merge tree whose
// left-to-right order of inputs follows arrival gives the same result as one fold.
#include "weir/aggregator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "window/aggregations.h"
#include "window/input_aggregator.h"

namespace weir {

namespace window {

FieldPath::FieldPath(const std::string& field) {
  if (field.empty()) return;
  for (size_t from = 0;;) {
    const size_t dot = field.find('.', from);
    names_.push_back(field.substr(from, dot - from));
    if (dot == std::string::npos) break;
    from = dot + 1;
  }
}

const Value* FieldPath::Read(const Value& record_value) const {
  const Value* v = &record_value;
  for (const std::string& name : names_) {
    v = v->Find(name);
    if (v == nullptr) return nullptr;
  }
  return v->is_null() ? nullptr : v;
}

InputAggregator::InputAggregator(std::string field) : field_(std::move(field)), path_(field_) {}

std::string InputAggregator::DescribeAs(const std::string& kind) const {
  return field_.empty() ? kind : kind + "(" + field_ + ")";
}

}  // namespace window

namespace {

// OK for a number or a skipped input (absent or null, `input` nullptr); otherwise the refusal of
// `aggregator` for its `field` ("" for the whole record value). Runs at every record: nothing is
// built unless it refuses.
Status AcceptsNumber(const Value* input, const Aggregator& aggregator, const std::string& field) {
  if (input == nullptr || input->is_number()) [[likely]] return Status::OK();
  const std::string what = field.empty() ? "a record value" : "field '" + field + "'";
  return Status::InvalidArgument(aggregator.Describe() + " cannot take " + what + " of type " +
                                 std::string(input->TypeName()));
}

// Aggregators over one numeric field: null and missing fields are skipped, as SQL does; any
// other value that is not a number is refused (Accepts).
class FieldAggregator : public window::InputAggregator {
 public:
  bool runs_user_code() const override { return false; }
  FieldAggregator(std::string kind, std::string field)
      : InputAggregator(std::move(field)), kind_(std::move(kind)) {}
  std::string Describe() const override { return DescribeAs(kind_); }
  Status Accepts(const Value& record_value) const override {
    return AcceptsNumber(Read(record_value), *this, field());
  }

 private:
  std::string kind_;
};

// -1, 0 or 1 as i is below, equal to or above d, exactly (no rounding of i to a double).
// REQUIRES: d is not NaN.
int CompareIntDouble(int64_t i, double d) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (d >= kTwoTo63) return -1;
  if (d < -kTwoTo63) return 1;
  const double whole = std::trunc(d);
  const auto whole_int = static_cast<int64_t>(whole);  // exact: |whole| <= 2^63, -2^63 included
  if (i != whole_int) return i < whole_int ? -1 : 1;
  const double fraction = d - whole;
  return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0);
}

// Exact numeric order of two numbers, ints and doubles mixed. REQUIRES: neither is NaN.
int CompareNumbers(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int());
  if (a.is_int()) return CompareIntDouble(a.as_int(), b.as_double());
  if (b.is_int()) return -CompareIntDouble(b.as_int(), a.as_double());
  return a.as_double() < b.as_double() ? -1 : (a.as_double() > b.as_double());
}

// acc + v, in acc's memory, with acc read as 0 when it is not a number: an int while both are
// ints and the sum fits, else a double. REQUIRES: v is a number.
void AddNumberInPlace(Value& acc, const Value& v) {
  if (!acc.is_number()) acc = int64_t{0};
  if (acc.is_int() && v.is_int()) {
    int64_t r;
    if (!__builtin_add_overflow(acc.as_int(), v.as_int(), &r)) {
      acc = r;
      return;
    }
  }
  acc = acc.as_number() + v.as_number();
}

// acc = v for a number v, without a copy of a Value. REQUIRES: v is a number.
void AssignNumber(Value& acc, const Value& v) {
  if (v.is_int()) {
    acc = v.as_int();
  } else {
    acc = v.as_double();
  }
}

bool IsComparableNumber(const Value& v) {
  return v.is_int() || (v.is_double() && !std::isnan(v.as_double()));
}

class CountAggregator : public Aggregator {
 public:
  bool runs_user_code() const override { return false; }
  std::string Describe() const override { return "count"; }
  Value Initial() const override { return Value(0); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void Add(Value& acc, const Value&, EventTime) const override {
    acc = acc.is_int() ? AddCounts(acc.as_int(), 1) : int64_t{1};
  }
  Value Merge(const Value& a, const Value& b) const override {
    return Value(AddCounts(a.is_int() ? a.as_int() : 0, b.is_int() ? b.as_int() : 0));
  }
  Value Result(const Value& acc) const override { return acc.is_int() ? acc : Value(0); }

 private:
  // a + b, held at the end of the range where it would overflow (a stored count near it can
  // only be a crafted state, never 2^63 events).
  static int64_t AddCounts(int64_t a, int64_t b) {
    int64_t sum;
    if (!__builtin_add_overflow(a, b, &sum)) return sum;
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
};

class SumAggregator : public FieldAggregator {
 public:
  explicit SumAggregator(std::string field) : FieldAggregator("sum", std::move(field)) {}
  Value Initial() const override { return Value(0); }
  void AddInput(Value& acc, const Value& v, EventTime) const override {
    if (v.is_number()) AddNumberInPlace(acc, v);
  }
  Value Merge(const Value& a, const Value& b) const override {
    Value sum = a;
    AddNumberInPlace(sum, b.is_number() ? b : Value(0));
    return sum;
  }
  Value Result(const Value& acc) const override { return acc.is_number() ? acc : Value(0); }
};

// Min and max pick by a total order on distinct values, so the pick depends neither on arrival
// nor on merge order: numbers compare exactly (a large int against a double included); of
// numerically equal values an int beats a double, and -0.0 beats 0.0 for min (0.0 for max).
// NaN (which JSON cannot carry, but a user's map could) is skipped.
class ExtremumAggregator : public FieldAggregator {
 public:
  ExtremumAggregator(std::string field, bool is_max)
      : FieldAggregator(is_max ? "max" : "min", std::move(field)), is_max_(is_max) {}
  Value Initial() const override { return Value(); }
  void AddInput(Value& acc, const Value& v, EventTime) const override {
    // Pick(acc, v), in acc's memory.
    if (!v.is_number()) return;
    if (!IsComparableNumber(acc)) {
      if (IsComparableNumber(v)) {
        AssignNumber(acc, v);
      } else {
        acc = Value();
      }
    } else if (IsComparableNumber(v) && Beats(v, acc)) {
      AssignNumber(acc, v);
    }
  }
  Value Merge(const Value& a, const Value& b) const override { return Pick(a, b); }
  Value Result(const Value& acc) const override { return acc; }
  bool is_max() const { return is_max_; }

 private:
  Value Pick(const Value& a, const Value& b) const {
    if (!IsComparableNumber(a)) return IsComparableNumber(b) ? b : Value();
    if (!IsComparableNumber(b)) return a;
    return Beats(b, a) ? b : a;
  }
  bool Beats(const Value& x, const Value& y) const {
    const int c = CompareNumbers(x, y);
    if (c != 0) return is_max_ ? c > 0 : c < 0;
    if (x.is_int() != y.is_int()) return x.is_int();
    if (x.is_double() && y.is_double()) {
      const bool x_negative = std::signbit(x.as_double());
      return x_negative != std::signbit(y.as_double()) && x_negative != is_max_;
    }
    return false;
  }
  bool is_max_;
};

class MeanAggregator : public FieldAggregator {
 public:
  explicit MeanAggregator(std::string field) : FieldAggregator("mean", std::move(field)) {}
  Value Initial() const override { return Value(Value::Array{Value(0.0), Value(0)}); }
  void AddInput(Value& acc, const Value& v, EventTime) const override {
    if (!v.is_number()) return;
    auto [sum, count] = Parts(acc);
    if (!acc.is_array() || acc.as_array().size() != 2) acc = Initial();
    Value::Array& parts = acc.as_array();  // updated in place: no array per record
    parts[0] = sum + v.as_number();
    parts[1] = count + 1;
  }
  Value Merge(const Value& a, const Value& b) const override {
    auto [sa, ca] = Parts(a);
    auto [sb, cb] = Parts(b);
    return Value(Value::Array{Value(sa + sb), Value(ca + cb)});
  }
  Value Result(const Value& acc) const override {
    auto [sum, count] = Parts(acc);
    return count == 0 ? Value() : Value(sum / static_cast<double>(count));
  }

 private:
  static std::pair<double, int64_t> Parts(const Value& acc) {
    if (!acc.is_array() || acc.as_array().size() != 2) return {0.0, 0};
    const Value::Array& a = acc.as_array();
    return {a[0].is_number() ? a[0].as_number() : 0.0, a[1].is_int() ? a[1].as_int() : 0};
  }
};

// The event time stored beside a value. A malformed stored time (never written by this code)
// reads as the earliest time rather than stopping the process.
int64_t StoredTime(const Value& t) { return t.is_int() ? t.as_int() : EventTime::Min().value(); }

// First and last by event time. The accumulator is [t, value] of the event taken so far.
class FirstLastAggregator : public window::InputAggregator {
 public:
  bool runs_user_code() const override { return false; }
  FirstLastAggregator(std::string field, bool is_last)
      : InputAggregator(std::move(field)), is_last_(is_last) {}
  std::string Describe() const override { return DescribeAs(is_last_ ? "last" : "first"); }
  Value Initial() const override { return Value(); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void AddInput(Value& acc, const Value& v, EventTime timestamp) const override {
    const Value* taken = Taken(acc);
    if (taken == nullptr) {
      acc = Value::MakeArray({timestamp.value(), v});
    } else if (Supersedes(timestamp.value(), StoredTime(taken[0]))) {
      // In place: a string of the same kind reuses its memory (Last replaces at every event).
      Value::Array& entry = acc.as_array();
      entry[0] = timestamp.value();
      entry[1] = v;
    }
  }
  Value Merge(const Value& a, const Value& b) const override {
    const Value* in_a = Taken(a);
    const Value* in_b = Taken(b);
    if (in_b == nullptr) return in_a != nullptr ? a : Value();
    if (in_a == nullptr) return b;
    return Supersedes(StoredTime(in_b[0]), StoredTime(in_a[0])) ? b : a;
  }
  Value Result(const Value& acc) const override {
    const Value* taken = Taken(acc);
    return taken != nullptr ? taken[1] : Value();
  }

 private:
  // {time, value} of the accumulator, or nullptr if it holds nothing.
  static const Value* Taken(const Value& acc) {
    return acc.is_array() && acc.as_array().size() == 2 ? acc.as_array().data() : nullptr;
  }
  // Whether an event at `later_arrival`, arriving after the one at `earlier_arrival`, replaces
  // it: first keeps the earlier arrival on a tie, last takes the later.
  bool Supersedes(int64_t later_arrival, int64_t earlier_arrival) const {
    return is_last_ ? later_arrival >= earlier_arrival : later_arrival < earlier_arrival;
  }

  bool is_last_;
};

// Every value in event-time order. The accumulator is flat, [t0, v0, t1, v1, ...], sorted by
// time with ties in arrival order: half the arrays of [[t, v], ...], and events arriving in
// time order append at the end.
class CollectAggregator : public window::InputAggregator {
 public:
  bool runs_user_code() const override { return false; }
  explicit CollectAggregator(std::string field) : InputAggregator(std::move(field)) {}
  std::string Describe() const override { return DescribeAs("collect"); }
  Value Initial() const override { return Value(Value::Array()); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void AddInput(Value& acc, const Value& v, EventTime timestamp) const override {
    if (!IsEntries(acc)) acc = Initial();
    Value::Array& entries = acc.as_array();
    const int64_t t = timestamp.value();
    // After every entry at or before t: a tie goes after the events that arrived before it.
    size_t low = 0;
    size_t high = entries.size() / 2;
    if (high > 0 && StoredTime(entries[2 * (high - 1)]) <= t) low = high;
    while (low < high) {
      const size_t mid = low + (high - low) / 2;
      if (StoredTime(entries[2 * mid]) <= t) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(2 * low), {Value(t), v});
  }
  Value Merge(const Value& a, const Value& b) const override {
    static const Value::Array kNone;
    const Value::Array& x = IsEntries(a) ? a.as_array() : kNone;
    const Value::Array& y = IsEntries(b) ? b.as_array() : kNone;
    Value::Array merged;
    merged.reserve(x.size() + y.size());
    size_t i = 0;
    size_t j = 0;
    while (i < x.size() || j < y.size()) {
      // On equal times a's entries first: a's events count as having arrived before b's.
      const bool from_b = i == x.size() || (j < y.size() && StoredTime(y[j]) < StoredTime(x[i]));
      const Value::Array& from = from_b ? y : x;
      size_t& k = from_b ? j : i;
      merged.push_back(from[k]);
      merged.push_back(from[k + 1]);
      k += 2;
    }
    return Value(std::move(merged));
  }
  Value Result(const Value& acc) const override {
    Value::Array values;
    if (!IsEntries(acc)) return Value(std::move(values));
    const Value::Array& entries = acc.as_array();
    values.reserve(entries.size() / 2);
    for (size_t i = 1; i < entries.size(); i += 2) values.push_back(entries[i]);
    return Value(std::move(values));
  }

 private:
  static bool IsEntries(const Value& acc) {
    return acc.is_array() && acc.as_array().size() % 2 == 0;
  }
};

// The record values whose field is the largest number: [max, collected], collected as Collect
// keeps them ([t0, v0, t1, v1, ...] by event time, ties in arrival order), or null before any.
// Numerically equal fields (2 and 2.0) tie; the max kept is the first one's. A NaN field is
// skipped, as Max skips it; a field that is not a number is refused. A record below the max is
// neither copied nor kept: the fold of Nexmark q7's highest bids without a user function, so a
// step without other user code (Aggregator::runs_user_code, a trigger) copies nothing per record.
class MaxRowsAggregator : public Aggregator {
 public:
  explicit MaxRowsAggregator(std::string field) : field_(std::move(field)), path_(field_) {}
  bool runs_user_code() const override { return false; }
  std::string Describe() const override {
    return field_.empty() ? "max_rows" : "max_rows(" + field_ + ")";
  }
  Value Initial() const override { return Value(); }
  Status Accepts(const Value& record_value) const override {
    return AcceptsNumber(path_.Read(record_value), *this, field_);
  }
  void Add(Value& acc, const Value& record_value, EventTime timestamp) const override {
    const Value* input = path_.Read(record_value);
    if (input == nullptr || !IsComparableNumber(*input)) return;
    if (!Holds(acc)) {
      acc = Value::MakeArray({*input, Value(Value::Array())});
    } else if (const int order = CompareNumbers(*input, acc.as_array()[0]); order < 0) {
      return;
    } else if (order > 0) {
      Value::Array& parts = acc.as_array();
      AssignNumber(parts[0], *input);
      parts[1].as_array().clear();  // in place: the rows' memory is reused
    }
    rows_.Add(acc.as_array()[1], record_value, timestamp);
  }
  Value Merge(const Value& a, const Value& b) const override {
    if (!Holds(b)) return Holds(a) ? a : Value();
    if (!Holds(a)) return b;
    const int order = CompareNumbers(a.as_array()[0], b.as_array()[0]);
    if (order != 0) return order > 0 ? a : b;
    return Value::MakeArray(
        {a.as_array()[0], rows_.Merge(a.as_array()[1], b.as_array()[1])});
  }
  Value Result(const Value& acc) const override {
    return Holds(acc) ? rows_.Result(acc.as_array()[1]) : Value(Value::Array());
  }

 private:
  // Whether `acc` is [max, collected] with a max taken.
  static bool Holds(const Value& acc) {
    return acc.is_array() && acc.as_array().size() == 2 &&
           IsComparableNumber(acc.as_array()[0]) && acc.as_array()[1].is_array();
  }

  std::string field_;
  window::FieldPath path_;
  CollectAggregator rows_{""};  // the whole record values
};

// A user fold over whole record values (null ones skipped), by an updater that changes the
// accumulator in place (agg::Reduce's reducer is one that assigns what it returns). The
// accumulator is [user accumulator] once a value was taken, null before.
class ReduceAggregator : public window::InputAggregator {
 public:
  ReduceAggregator(agg::Updater updater, agg::Initializer initializer, agg::Merger merger)
      : InputAggregator(""),
        updater_(std::move(updater)),
        initializer_(std::move(initializer)),
        merger_(std::move(merger)) {
    WEIR_CHECK(updater_ != nullptr, "agg::ReduceInPlace needs an updater");
    WEIR_CHECK(initializer_ != nullptr, "agg::Reduce needs an initializer");
  }
  std::string Describe() const override { return "reduce"; }
  Value Initial() const override { return Value(); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void AddInput(Value& acc, const Value& v, EventTime) const override {
    if (Folded(acc) == nullptr) {
      acc = Value::MakeArray({initializer_(v)});
      return;
    }
    updater_(acc.as_array()[0], v);
  }
  Value Merge(const Value& a, const Value& b) const override {
    const Value* in_a = Folded(a);
    const Value* in_b = Folded(b);
    if (in_b == nullptr) return in_a != nullptr ? a : Value();
    if (in_a == nullptr) return b;
    // Session windows refuse a non-mergeable aggregation before anything runs.
    WEIR_CHECK(merger_ != nullptr, "agg::Reduce without a merger cannot merge two accumulators");
    return Value::MakeArray({merger_(*in_a, *in_b)});
  }
  Value Result(const Value& acc) const override {
    const Value* folded = Folded(acc);
    return folded != nullptr ? *folded : Value();
  }
  bool mergeable() const override { return merger_ != nullptr; }

 private:
  static const Value* Folded(const Value& acc) {
    return acc.is_array() && acc.as_array().size() == 1 ? &acc.as_array()[0] : nullptr;
  }

  agg::Updater updater_;
  agg::Initializer initializer_;
  agg::Merger merger_;
};

}  // namespace

namespace window {

IntFold IntFoldOf(const Aggregator& aggregator) {
  if (dynamic_cast<const CountAggregator*>(&aggregator) != nullptr) return IntFold::kCount;
  if (dynamic_cast<const SumAggregator*>(&aggregator) != nullptr) return IntFold::kSum;
  if (const auto* extremum = dynamic_cast<const ExtremumAggregator*>(&aggregator)) {
    return extremum->is_max() ? IntFold::kMax : IntFold::kMin;
  }
  return IntFold::kNone;
}

}  // namespace window

namespace agg {
AggregatorPtr Count() { return std::make_shared<CountAggregator>(); }
AggregatorPtr Sum(std::string field) { return std::make_shared<SumAggregator>(std::move(field)); }
AggregatorPtr Mean(std::string field) { return std::make_shared<MeanAggregator>(std::move(field)); }
AggregatorPtr Min(std::string field) {
  return std::make_shared<ExtremumAggregator>(std::move(field), false);
}
AggregatorPtr Max(std::string field) {
  return std::make_shared<ExtremumAggregator>(std::move(field), true);
}
AggregatorPtr First(std::string field) {
  return std::make_shared<FirstLastAggregator>(std::move(field), false);
}
AggregatorPtr Last(std::string field) {
  return std::make_shared<FirstLastAggregator>(std::move(field), true);
}
AggregatorPtr Collect(std::string field) {
  return std::make_shared<CollectAggregator>(std::move(field));
}
AggregatorPtr MaxRows(std::string field) {
  return std::make_shared<MaxRowsAggregator>(std::move(field));
}
AggregatorPtr Reduce(Reducer reducer, Initializer initializer, Merger merger) {
  WEIR_CHECK(reducer != nullptr, "agg::Reduce needs a reducer");
  return ReduceInPlace(
      [reducer = std::move(reducer)](Value& acc, const Value& v) { acc = reducer(acc, v); },
      std::move(initializer), std::move(merger));
}
AggregatorPtr ReduceInPlace(Updater updater, Initializer initializer, Merger merger) {
  return std::make_shared<ReduceAggregator>(std::move(updater), std::move(initializer),
                                            std::move(merger));
}
}  // namespace agg

}  // namespace weir
