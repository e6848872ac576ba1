#include "weir/aggregator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "weir/stream.h"

namespace weir {
namespace {

Value Fold(const Aggregator& agg, const std::vector<Value>& values) {
  Value acc = agg.Initial();
  for (const Value& v : values) {
    EXPECT_TRUE(agg.Accepts(v).ok()) << v.ToJson();
    agg.Add(acc, v, EventTime(0));
  }
  return acc;
}

struct Event {
  int64_t time;
  Value value;
};

Value FoldTimed(const Aggregator& agg, const std::vector<Event>& events, Value acc) {
  for (const Event& e : events) {
    EXPECT_TRUE(agg.Accepts(e.value).ok()) << e.value.ToJson();
    agg.Add(acc, e.value, EventTime(e.time));
  }
  return acc;
}

Value FoldTimed(const Aggregator& agg, const std::vector<Event>& events) {
  return FoldTimed(agg, events, agg.Initial());
}

Value ResultOf(const Aggregator& agg, const std::vector<Event>& events) {
  return agg.Result(FoldTimed(agg, events));
}

Value Amount(Value a) { return Value::MakeObject({{"amount", std::move(a)}}); }
Value Page(Value p) { return Value::MakeObject({{"page", std::move(p)}}); }

// A Reduce that counts records and sums their "id" ([count, sum]); order-insensitive, so its
// merger is exact. `in_place`: the same fold as an agg::ReduceInPlace.
AggregatorPtr CountAndSumIds(bool with_merger = true, bool in_place = false) {
  auto id = [](const Value& v) {
    const Value* i = v.Find("id");
    return i != nullptr && i->is_int() ? i->as_int() : int64_t{0};
  };
  agg::Merger merger = [](const Value& a, const Value& b) {
    return Value(Value::Array{Value(a.as_array()[0].as_int() + b.as_array()[0].as_int()),
                              Value(a.as_array()[1].as_int() + b.as_array()[1].as_int())});
  };
  agg::Initializer initializer = [id](const Value& v) {
    return Value(Value::Array{Value(1), Value(id(v))});
  };
  if (in_place) {
    return agg::ReduceInPlace(
        [id](Value& acc, const Value& v) {
          Value::Array& count_and_sum = acc.as_array();
          count_and_sum[0] = Value(count_and_sum[0].as_int() + 1);
          count_and_sum[1] = Value(count_and_sum[1].as_int() + id(v));
        },
        initializer, with_merger ? merger : nullptr);
  }
  return agg::Reduce(
      [id](const Value& acc, const Value& v) {
        return Value(Value::Array{Value(acc.as_array()[0].as_int() + 1),
                                  Value(acc.as_array()[1].as_int() + id(v))});
      },
      initializer, with_merger ? merger : nullptr);
}

using Reference = std::function<Value(const std::vector<Event>&)>;
// Every built-in (a Reduce with a merger among them) beside a brute-force reference of it.
std::vector<std::pair<AggregatorPtr, Reference>> BuiltInsWithReferences();

std::vector<AggregatorPtr> AllBuiltIns() {
  std::vector<AggregatorPtr> all;
  for (auto& [agg, reference] : BuiltInsWithReferences()) all.push_back(agg);
  return all;
}

TEST(Aggregator, SumKeepsIntegersExactAndSwitchesToDoubleWhenNeeded) {
  auto sum = agg::Sum("amount");
  EXPECT_EQ(sum->Result(Fold(*sum, {Amount(1), Amount(2), Amount(3)})), Value(6));
  EXPECT_EQ(sum->Result(Fold(*sum, {Amount(1), Amount(0.5)})), Value(1.5));
}

// A count can only come near 2^63 from a crafted stored state; it then holds at the end of the
// range instead of overflowing.
TEST(Aggregator, ACountHoldsAtTheEndOfTheIntRange) {
  constexpr int64_t kMost = std::numeric_limits<int64_t>::max();
  constexpr int64_t kLeast = std::numeric_limits<int64_t>::min();
  AggregatorPtr count = agg::Count();
  Value acc(kMost - 1);
  count->Add(acc, Value(), EventTime(0));
  count->Add(acc, Value(), EventTime(0));
  EXPECT_EQ(acc, Value(kMost));
  EXPECT_EQ(count->Merge(Value(kMost), Value(kMost)), Value(kMost));
  EXPECT_EQ(count->Merge(Value(kLeast), Value(int64_t{-1})), Value(kLeast));
  EXPECT_EQ(count->Merge(Value(int64_t{2}), Value(int64_t{3})), Value(int64_t{5}));
}

TEST(Aggregator, NullAndMissingFieldsAreSkippedLikeSql) {
  auto sum = agg::Sum("amount");
  auto mean = agg::Mean("amount");
  std::vector<Value> values = {Amount(4), Amount(Value()), Value::MakeObject({{"other", 1}}),
                               Amount(2)};
  EXPECT_EQ(sum->Result(Fold(*sum, values)), Value(6));
  EXPECT_EQ(mean->Result(Fold(*mean, values)), Value(3.0));
}

TEST(Aggregator, AStringIsRefusedWithTheFieldNamed) {
  Status s = agg::Sum("amount")->Accepts(Amount("12"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "sum(amount) cannot take field 'amount' of type string");
}

TEST(Aggregator, AnEmptyFieldAggregatesTheWholeRecordValue) {
  auto sum = agg::Sum("");
  EXPECT_EQ(sum->Describe(), "sum");
  EXPECT_EQ(sum->Result(Fold(*sum, {Value(2), Value(), Value(5)})), Value(7));
  Status s = sum->Accepts(Value("x"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "sum cannot take a record value of type string");
}

TEST(Aggregator, MergeOfTwoHalvesEqualsTheWhole) {
  std::vector<Value> values;
  for (int i = 0; i < 20; ++i) values.push_back(Amount(i % 3 == 0 ? Value(i * 1.5) : Value(i - 7)));
  for (const AggregatorPtr& agg : {agg::Count(), agg::Sum("amount"), agg::Mean("amount"),
                                   agg::Min("amount"), agg::Max("amount")}) {
    Value whole = Fold(*agg, values);
    Value left = Fold(*agg, {values.begin(), values.begin() + 8});
    Value right = Fold(*agg, {values.begin() + 8, values.end()});
    EXPECT_EQ(agg->Result(agg->Merge(left, right)), agg->Result(whole)) << agg->Describe();
  }
}

TEST(Aggregator, StoredNullAccumulatorReaggregatesAndMerges) {
  for (const AggregatorPtr& agg : AllBuiltIns()) {
    const Value record =
        Value::MakeObject({{"id", 3}, {"v", 5}, {"n", Value::MakeObject({{"v", 1}})}});
    Value fresh = agg->Initial();
    agg->Add(fresh, record, EventTime(10));
    Value acc;  // null, as a stored null would read back
    agg->Add(acc, record, EventTime(10));
    EXPECT_EQ(agg->Result(acc), agg->Result(fresh)) << agg->Describe();
    EXPECT_EQ(agg->Result(agg->Merge(Value(), acc)), agg->Result(fresh)) << agg->Describe();
    EXPECT_EQ(agg->Result(agg->Merge(acc, Value())), agg->Result(fresh)) << agg->Describe();
    EXPECT_EQ(agg->Result(agg->Merge(Value(), Value())), agg->Result(agg->Initial()))
        << agg->Describe();
    EXPECT_EQ(agg->Result(Value()), agg->Result(agg->Initial())) << agg->Describe();
  }
}

TEST(Aggregator, MinAndMaxOfNothingAreNull) {
  EXPECT_TRUE(agg::Min("x")->Result(agg::Min("x")->Initial()).is_null());
  EXPECT_EQ(
      agg::Max("amount")->Result(Fold(*agg::Max("amount"), {Amount(3), Amount(9.5), Amount(-1)})),
      Value(9.5));
}

TEST(Aggregator, MinAndMaxOfEqualNumbersPickTheSameValueWhateverTheOrder) {
  for (const AggregatorPtr& agg : {agg::Min("amount"), agg::Max("amount")}) {
    EXPECT_EQ(agg->Result(Fold(*agg, {Amount(2.0), Amount(2)})), Value(2)) << agg->Describe();
    EXPECT_EQ(agg->Result(Fold(*agg, {Amount(2), Amount(2.0)})), Value(2)) << agg->Describe();
  }
  auto zero = [](const AggregatorPtr& agg, std::vector<Value> values) {
    return std::signbit(agg->Result(Fold(*agg, values)).as_double());
  };
  EXPECT_TRUE(zero(agg::Min("amount"), {Amount(0.0), Amount(-0.0)}));
  EXPECT_TRUE(zero(agg::Min("amount"), {Amount(-0.0), Amount(0.0)}));
  EXPECT_FALSE(zero(agg::Max("amount"), {Amount(-0.0), Amount(0.0)}));
  EXPECT_FALSE(zero(agg::Max("amount"), {Amount(0.0), Amount(-0.0)}));
}

TEST(Aggregator, MinAndMaxCompareLargeIntegersExactly) {
  const int64_t big = int64_t{1} << 53;
  auto max = agg::Max("amount");
  auto min = agg::Min("amount");
  // As doubles, 2^53 + 1 and 2^53 are equal.
  EXPECT_EQ(max->Result(Fold(*max, {Amount(big + 1), Amount(big), Amount(double(big))})),
            Value(big + 1));
  EXPECT_EQ(min->Result(Fold(*min, {Amount(double(big)), Amount(big + 1)})), Value(double(big)));
  EXPECT_EQ(max->Result(Fold(*max, {Amount(std::numeric_limits<int64_t>::max()),
                                    Amount(9223372036854775808.0)})),
            Value(9223372036854775808.0));
}

TEST(Aggregator, MinAndMaxSkipNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto min = agg::Min("amount");
  EXPECT_EQ(min->Result(Fold(*min, {Amount(nan), Amount(3), Amount(nan), Amount(1)})), Value(1));
}

TEST(Aggregator, DescribeNamesTheKindAndTheField) {
  EXPECT_EQ(agg::First("amount")->Describe(), "first(amount)");
  EXPECT_EQ(agg::First()->Describe(), "first");
  EXPECT_EQ(agg::Last("a.b")->Describe(), "last(a.b)");
  EXPECT_EQ(agg::Last()->Describe(), "last");
  EXPECT_EQ(agg::Collect("page")->Describe(), "collect(page)");
  EXPECT_EQ(agg::Collect()->Describe(), "collect");
  EXPECT_EQ(CountAndSumIds()->Describe(), "reduce");
}

TEST(Aggregator, FirstLastCollectAndReduceAcceptAnyJson) {
  for (const AggregatorPtr& agg :
       {agg::First("x"), agg::Last("x"), agg::Collect("x"), agg::First(), CountAndSumIds()}) {
    for (const Value& v : {Value(), Value("s"), Value(true), Value(Value::Array{Value(1)}),
                           Value::MakeObject({{"x", "str"}})}) {
      EXPECT_TRUE(agg->Accepts(v).ok()) << agg->Describe() << " " << v.ToJson();
    }
  }
}

TEST(First, TakesTheEarliestEventTimeNotTheFirstToArrive) {
  EXPECT_EQ(ResultOf(*agg::First("page"), {{5, Page("a")}, {3, Page("b")}, {7, Page("c")}}),
            Value("b"));
}

TEST(Last, TakesTheLatestEventTimeNotTheLastToArrive) {
  EXPECT_EQ(ResultOf(*agg::Last("page"), {{5, Page("a")}, {9, Page("b")}, {7, Page("c")}}),
            Value("b"));
}

TEST(First, OnEqualEventTimesKeepsTheFirstToArrive) {
  EXPECT_EQ(ResultOf(*agg::First("page"), {{5, Page("a")}, {4, Page("b")}, {4, Page("c")}}),
            Value("b"));
}

TEST(Last, OnEqualEventTimesTakesTheLastToArrive) {
  EXPECT_EQ(ResultOf(*agg::Last("page"), {{5, Page("a")}, {5, Page("b")}, {4, Page("c")}}),
            Value("b"));
}

TEST(First, SkipsEventsWithoutTheFieldOrWithANullOne) {
  std::vector<Event> events = {
      {1, Value::MakeObject({{"other", 1}})}, {2, Page(Value())}, {3, Page("kept")}, {9, Value()}};
  EXPECT_EQ(ResultOf(*agg::First("page"), events), Value("kept"));
  EXPECT_EQ(ResultOf(*agg::Last("page"), events), Value("kept"));
}

TEST(First, TakesTheWholeRecordValueWithoutAFieldAndANestedOneByDottedPath) {
  Value nested = Value::MakeObject({{"user", Value::MakeObject({{"name", "ann"}})}});
  std::vector<Event> events = {{7, Page("late")}, {2, nested}};
  EXPECT_EQ(ResultOf(*agg::First(), events), nested);
  EXPECT_EQ(ResultOf(*agg::First("user.name"), events), Value("ann"));
  EXPECT_EQ(ResultOf(*agg::Last(), events), Page("late"));
}

TEST(First, NullRecordValuesAreSkippedWithoutAField) {
  EXPECT_EQ(ResultOf(*agg::Last(), {{1, Value(4)}, {2, Value()}}), Value(4));
}

TEST(First, ResultIsNullWhenNothingWasTaken) {
  EXPECT_TRUE(ResultOf(*agg::First("page"), {}).is_null());
  EXPECT_TRUE(ResultOf(*agg::Last("page"), {{1, Amount(1)}}).is_null());
}

TEST(First, MergeOnEqualEventTimesTakesTheLeftInputAsArrivingFirst) {
  auto first = agg::First("page");
  auto last = agg::Last("page");
  std::vector<Event> left = {{4, Page("left")}};
  std::vector<Event> right = {{4, Page("right")}};
  EXPECT_EQ(first->Result(first->Merge(FoldTimed(*first, left), FoldTimed(*first, right))),
            Value("left"));
  EXPECT_EQ(first->Result(first->Merge(FoldTimed(*first, right), FoldTimed(*first, left))),
            Value("right"));
  EXPECT_EQ(last->Result(last->Merge(FoldTimed(*last, left), FoldTimed(*last, right))),
            Value("right"));
  EXPECT_EQ(last->Result(last->Merge(FoldTimed(*last, right), FoldTimed(*last, left))),
            Value("left"));
}

TEST(First, MergeTakesTheEarliestOfInterleavedInputs) {
  auto first = agg::First("page");
  auto last = agg::Last("page");
  std::vector<Event> a = {{2, Page("a2")}, {8, Page("a8")}};
  std::vector<Event> b = {{1, Page("b1")}, {5, Page("b5")}, {9, Page("b9")}};
  EXPECT_EQ(first->Result(first->Merge(FoldTimed(*first, a), FoldTimed(*first, b))), Value("b1"));
  EXPECT_EQ(last->Result(last->Merge(FoldTimed(*last, b), FoldTimed(*last, a))), Value("b9"));
}

TEST(Collect, ListsValuesInEventTimeOrderWithTiesInArrivalOrder) {
  EXPECT_EQ(ResultOf(*agg::Collect("page"), {{5, Page("a")},
                                             {3, Page("b")},
                                             {5, Page("c")},
                                             {3, Page("d")},
                                             {9, Page("e")},
                                             {1, Page("f")}}),
            Value(Value::Array{"f", "b", "d", "a", "c", "e"}));
}

TEST(Collect, SkipsEventsWithoutTheFieldAndTakesWholeValuesWithoutOne) {
  std::vector<Event> events = {{2, Page("x")}, {1, Amount(3)}, {3, Page(Value())}, {0, Value()}};
  EXPECT_EQ(ResultOf(*agg::Collect("page"), events), Value(Value::Array{"x"}));
  EXPECT_EQ(ResultOf(*agg::Collect(), events),
            Value(Value::Array{Amount(3), Page("x"), Page(Value())}));
}

TEST(Collect, ResultIsAnEmptyArrayWhenNothingWasTaken) {
  EXPECT_EQ(ResultOf(*agg::Collect("page"), {}), Value(Value::Array()));
  EXPECT_EQ(agg::Collect()->Result(Value()), Value(Value::Array()));
}

TEST(Collect, MergeInterleavesByEventTimeWithTheLeftInputFirstOnTies) {
  auto collect = agg::Collect("page");
  Value a = FoldTimed(*collect, {{1, Page("a1")}, {4, Page("a4")}, {4, Page("a4'")}});
  Value b = FoldTimed(*collect, {{0, Page("b0")}, {4, Page("b4")}, {6, Page("b6")}});
  EXPECT_EQ(collect->Result(collect->Merge(a, b)),
            Value(Value::Array{"b0", "a1", "a4", "a4'", "b4", "b6"}));
  EXPECT_EQ(collect->Result(collect->Merge(b, a)),
            Value(Value::Array{"b0", "a1", "b4", "a4", "a4'", "b6"}));
}

TEST(MaxRows, KeepsEveryRecordHoldingTheLargestFieldAndDropsTheRest) {
  const AggregatorPtr top = agg::MaxRows("price");
  EXPECT_EQ(top->Describe(), "max_rows(price)");
  EXPECT_FALSE(top->runs_user_code());
  Value acc = top->Initial();
  EXPECT_EQ(top->Result(acc), Value(Value::Array()));
  auto bid = [](int id, Value price) { return Value::MakeObject({{"id", id}, {"price", price}}); };
  top->Add(acc, bid(1, 5), EventTime(10));
  top->Add(acc, bid(2, 3), EventTime(11));        // below: not kept
  top->Add(acc, bid(3, 5.0), EventTime(9));       // ties 5, earlier event time
  top->Add(acc, bid(4, Value()), EventTime(12));  // null: skipped
  top->Add(acc, Value::MakeObject({{"id", 5}}), EventTime(12));  // missing: skipped
  top->Add(acc, bid(6, 5), EventTime(10));        // ties, same time as 1: after it
  EXPECT_EQ(top->Result(acc).ToJson(),
            R"([{"id":3,"price":5.0},{"id":1,"price":5},{"id":6,"price":5}])");
  top->Add(acc, bid(7, 8), EventTime(1));  // above: the only one left
  EXPECT_EQ(top->Result(acc).ToJson(), R"([{"id":7,"price":8}])");
}

// Past 2^53 an int and a double that would round to it are not equal: the int is larger.
TEST(MaxRows, ComparesLargeIntsAndDoublesExactlyAndKeepsTheMaxAcrossANaN) {
  const AggregatorPtr top = agg::MaxRows("v");
  Value acc = top->Initial();
  top->Add(acc, Value::MakeObject({{"v", 9007199254740992.0}}), EventTime(1));
  top->Add(acc, Value::MakeObject({{"v", int64_t{9007199254740993}}}), EventTime(2));
  top->Add(acc, Value::MakeObject({{"v", std::nan("")}}), EventTime(3));
  EXPECT_EQ(top->Result(acc).ToJson(), R"([{"v":9007199254740993}])");
  EXPECT_EQ(agg::MaxRows("")->Describe(), "max_rows");
}

TEST(MaxRows, RefusesAFieldThatIsNotANumberAndSkipsNaN) {
  const AggregatorPtr top = agg::MaxRows("price");
  const Status refused = top->Accepts(Value::MakeObject({{"price", "high"}}));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("max_rows(price) cannot take field 'price' of type string"),
            std::string::npos)
      << refused.ToString();
  EXPECT_TRUE(top->Accepts(Value::MakeObject({{"price", Value()}})).ok());
  Value acc = top->Initial();
  top->Add(acc, Value::MakeObject({{"price", std::nan("")}}), EventTime(1));
  EXPECT_EQ(top->Result(acc), Value(Value::Array()));
}

TEST(Reduce, TheFirstValueGoesThroughTheInitializerAndTheRestThroughTheReducer) {
  auto concat = agg::Reduce(
      [](const Value& acc, const Value& v) {
        return Value(std::string(acc.as_string()) + "," + v.ToJson());
      },
      [](const Value& v) { return Value("<" + v.ToJson()); });
  EXPECT_EQ(ResultOf(*concat, {{3, Value(1)}, {1, Value(2)}, {2, Value()}, {2, Value("x")}}),
            Value("<1,2,\"x\""));
}

TEST(Reduce, ResultIsNullWhenNothingWasTaken) {
  EXPECT_TRUE(ResultOf(*CountAndSumIds(), {}).is_null());
  EXPECT_TRUE(ResultOf(*CountAndSumIds(), {{1, Value()}}).is_null());
}

TEST(Reduce, AFoldThatReturnsNullKeepsFoldingInsteadOfStartingAgain) {
  int initialized = 0;
  auto agg = agg::Reduce([](const Value&, const Value&) { return Value(); },
                         [&initialized](const Value&) {
                           ++initialized;
                           return Value();
                         });
  EXPECT_TRUE(ResultOf(*agg, {{1, Value(1)}, {2, Value(2)}, {3, Value(3)}}).is_null());
  EXPECT_EQ(initialized, 1);
}

TEST(Reduce, IsMergeableOnlyWithAMerger) {
  EXPECT_FALSE(CountAndSumIds(false)->mergeable());
  EXPECT_TRUE(CountAndSumIds(true)->mergeable());
  for (const AggregatorPtr& agg : AllBuiltIns()) EXPECT_TRUE(agg->mergeable()) << agg->Describe();
}

TEST(Reduce, MergeCallsTheMergerOnlyWhenBothSidesHoldAValue) {
  int merges = 0;
  auto sum =
      agg::Reduce([](const Value& acc, const Value& v) { return Value(acc.as_int() + v.as_int()); },
                  [](const Value& v) { return v; },
                  [&merges](const Value& a, const Value& b) {
                    ++merges;
                    return Value(a.as_int() + b.as_int());
                  });
  Value some = FoldTimed(*sum, {{1, Value(2)}, {2, Value(3)}});
  EXPECT_EQ(sum->Result(sum->Merge(some, sum->Initial())), Value(5));
  EXPECT_EQ(sum->Result(sum->Merge(Value(), some)), Value(5));
  EXPECT_EQ(merges, 0);
  EXPECT_EQ(sum->Result(sum->Merge(some, FoldTimed(*sum, {{0, Value(10)}}))), Value(15));
  EXPECT_EQ(merges, 1);
}

TEST(Reduce, WithoutAMergerAnEmptySideStillMerges) {
  auto agg = CountAndSumIds(false);
  Value some = FoldTimed(*agg, {{1, Value::MakeObject({{"id", 4}})}});
  EXPECT_EQ(agg->Result(agg->Merge(Value(), some)), Value(Value::Array{1, 4}));
  EXPECT_EQ(agg->Result(agg->Merge(some, agg->Initial())), Value(Value::Array{1, 4}));
}

TEST(ReduceInPlace, TheUpdaterChangesTheAccumulatorWhereItIs) {
  auto collect = agg::ReduceInPlace([](Value& acc, const Value& v) { acc.as_array().push_back(v); },
                                    [](const Value& v) {
                                      Value::Array values;
                                      values.reserve(8);
                                      values.push_back(v);
                                      return Value(std::move(values));
                                    });
  Value acc = collect->Initial();
  collect->Add(acc, Value(1), EventTime(1));
  const Value* first_slot = &acc.as_array()[0].as_array()[0];
  for (int i = 2; i <= 5; ++i) collect->Add(acc, Value(i), EventTime(i));
  collect->Add(acc, Value(), EventTime(6));  // a null value is skipped, as by Reduce
  EXPECT_EQ(collect->Result(acc), Value(Value::Array{1, 2, 3, 4, 5}));
  // The rows were appended to the one array: a fold that returned a copy would have moved them.
  EXPECT_EQ(&acc.as_array()[0].as_array()[0], first_slot);
}

TEST(ReduceInPlace, FoldsAndMergesAsTheSameReduce) {
  std::vector<Value> values;
  for (int i = 0; i < 9; ++i) values.push_back(Value::MakeObject({{"id", i * 7 % 5}}));
  AggregatorPtr in_place = CountAndSumIds(true, /*in_place=*/true);
  AggregatorPtr returning = CountAndSumIds(true);
  EXPECT_EQ(in_place->Result(Fold(*in_place, values)), returning->Result(Fold(*returning, values)));
  Value left = Fold(*in_place, {values.begin(), values.begin() + 4});
  Value right = Fold(*in_place, {values.begin() + 4, values.end()});
  EXPECT_EQ(in_place->Result(in_place->Merge(left, right)), Value(Value::Array{9, 17}));
  EXPECT_FALSE(CountAndSumIds(false, /*in_place=*/true)->mergeable());
}

TEST(ReduceDeathTest, AReduceInPlaceWithoutAnUpdaterStopsTheProcess) {
  EXPECT_DEATH(agg::ReduceInPlace(nullptr, [](const Value& v) { return v; }), "an updater");
}

TEST(ReduceDeathTest, MergingTwoTakenAccumulatorsWithoutAMergerStopsTheProcess) {
  auto agg = CountAndSumIds(false);
  Value some = FoldTimed(*agg, {{1, Value::MakeObject({{"id", 4}})}});
  EXPECT_DEATH(agg->Merge(some, some), "without a merger");
}

// ---- Property: merging accumulators of any disjoint subsets equals one fold. ----

// Events with few distinct times (many ties); "v" and "n.v" are often missing or null, and
// numerically equal ints and doubles (2 and 2.0, 0.0 and -0.0) are common. Doubles are multiples
// of 0.5 and ints small, so every sum is exact whatever the association: floating-point
// rounding is the one thing the order of merges may legitimately change.
std::vector<Event> RandomEvents(std::mt19937& rng) {
  std::uniform_int_distribution<int> count(0, 24);
  std::uniform_int_distribution<int> times(1, 6);
  const int n = count(rng);
  const int distinct_times = times(rng);
  auto number = [&rng]() -> Value {
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
      case 0:
        return Value();
      case 1:
        return Value(-0.0);
      case 2:
      case 3:
      case 4:
        return Value(std::uniform_int_distribution<int>(-4, 4)(rng) * 0.5);
      default:
        return Value(std::uniform_int_distribution<int>(-3, 3)(rng));
    }
  };
  std::vector<Event> events;
  for (int i = 0; i < n; ++i) {
    Event e;
    e.time = std::uniform_int_distribution<int>(0, distinct_times - 1)(rng) * 1000 - 2000;
    if (std::uniform_int_distribution<int>(0, 29)(rng) == 0) {
      events.push_back(std::move(e));  // a null record value
      continue;
    }
    e.value = Value::MakeObject({{"id", i}});
    if (std::uniform_int_distribution<int>(0, 3)(rng) != 0) e.value.Set("v", number());
    if (std::uniform_int_distribution<int>(0, 1)(rng) != 0) {
      e.value.Set("n", Value::MakeObject({{"v", number()}}));
    }
    events.push_back(std::move(e));
  }
  return events;
}

// Folds one subset, sometimes from a stored null, and sometimes passes the accumulator through
// the state's binary form, as a checkpoint and a restart would.
Value FoldSubset(const Aggregator& agg, const std::vector<Event>& events, std::mt19937& rng) {
  Value start = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? Value() : agg.Initial();
  Value acc = FoldTimed(agg, events, std::move(start));
  if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
    std::string bytes;
    acc.AppendBinary(bytes);
    std::string_view in = bytes;
    Result<Value> back = Value::ReadBinary(in);
    EXPECT_TRUE(back.ok()) << agg.Describe();
    if (back.ok()) acc = std::move(back).value();
  }
  return acc;
}

// Merges the accumulators pairwise, always two neighbours, in random order: every association
// of the sequence (every tree shape) happens, and the left-to-right order is kept.
Value MergeInRandomAssociation(const Aggregator& agg, std::vector<Value> accs, std::mt19937& rng) {
  while (accs.size() > 1) {
    size_t i = std::uniform_int_distribution<size_t>(0, accs.size() - 2)(rng);
    accs[i] = agg.Merge(accs[i], accs[i + 1]);
    accs.erase(accs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
  return accs.front();
}

std::string Describe(const std::vector<std::vector<Event>>& subsets) {
  std::string out;
  for (const auto& subset : subsets) {
    out += "[";
    for (const Event& e : subset) out += std::to_string(e.time) + ":" + e.value.ToJson() + " ";
    out += "] ";
  }
  return out;
}

// The reference: each built-in written as a short brute-force computation over the events.
const Value* Taken(const Event& e, const std::string& field) {
  const Value* v = field.empty() ? &e.value : e.value.FindPath(field);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

// The taken values, stably sorted by event time: ties stay in arrival order.
Value::Array InEventTimeOrder(const std::vector<Event>& events, const std::string& field) {
  std::vector<Event> taken;
  for (const Event& e : events) {
    if (const Value* v = Taken(e, field)) taken.push_back({e.time, *v});
  }
  std::stable_sort(taken.begin(), taken.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  Value::Array values;
  for (Event& e : taken) values.push_back(std::move(e.value));
  return values;
}

std::vector<Value> Numbers(const std::vector<Event>& events, const std::string& field) {
  std::vector<Value> numbers;
  for (const Event& e : events) {
    if (const Value* v = Taken(e, field); v != nullptr && v->is_number()) numbers.push_back(*v);
  }
  return numbers;
}

// The extremum of small numbers; of equal ones an int, then -0.0 for min and 0.0 for max.
Value Extremum(std::vector<Value> numbers, bool is_max) {
  if (numbers.empty()) return Value();
  auto rank = [is_max](const Value& v) {
    const double sign = is_max ? 1.0 : -1.0;
    const bool negative_zero = v.is_double() && v.as_double() == 0 && std::signbit(v.as_double());
    return std::make_tuple(sign * v.as_number(), v.is_int(), negative_zero != is_max);
  };
  return *std::max_element(numbers.begin(), numbers.end(),
                           [&](const Value& a, const Value& b) { return rank(a) < rank(b); });
}

std::vector<std::pair<AggregatorPtr, Reference>> BuiltInsWithReferences() {
  auto sum = [](const std::string& field) {
    return [field](const std::vector<Event>& events) {
      int64_t ints = 0;
      double doubles = 0;
      bool any_double = false;
      for (const Value& v : Numbers(events, field)) {
        if (v.is_int()) ints += v.as_int();
        if (v.is_double()) {
          doubles += v.as_double();
          any_double = true;
        }
      }
      return any_double ? Value(static_cast<double>(ints) + doubles) : Value(ints);
    };
  };
  auto first = [](const std::string& field, bool last) {
    return [field, last](const std::vector<Event>& events) {
      Value::Array values = InEventTimeOrder(events, field);
      if (values.empty()) return Value();
      return last ? values.back() : values.front();
    };
  };
  auto collect = [](const std::string& field) {
    return [field](const std::vector<Event>& events) {
      return Value(InEventTimeOrder(events, field));
    };
  };
  // The whole values whose field equals the largest number, by event time (ties in arrival order).
  auto max_rows = [](const std::string& field) {
    return [field](const std::vector<Event>& events) {
      const std::vector<Value> numbers = Numbers(events, field);
      if (numbers.empty()) return Value(Value::Array());
      double largest = numbers.front().as_number();
      for (const Value& v : numbers) largest = std::max(largest, v.as_number());
      std::vector<Event> holding;
      for (const Event& e : events) {
        const Value* v = Taken(e, field);
        if (v != nullptr && v->is_number() && v->as_number() == largest) holding.push_back(e);
      }
      return Value(InEventTimeOrder(holding, ""));
    };
  };
  Reference count_and_sum_ids = [](const std::vector<Event>& events) {
    int64_t count = 0;
    int64_t ids = 0;
    for (const Event& e : events) {
      if (e.value.is_null()) continue;
      ++count;
      ids += e.value.Find("id")->as_int();
    }
    return count == 0 ? Value() : Value(Value::Array{Value(count), Value(ids)});
  };
  return {
      {agg::Count(),
       [](const std::vector<Event>& e) { return Value(static_cast<int64_t>(e.size())); }},
      {agg::Sum("v"), sum("v")},
      {agg::Sum("n.v"), sum("n.v")},
      {agg::Mean("v"),
       [](const std::vector<Event>& events) {
         std::vector<Value> numbers = Numbers(events, "v");
         double total = 0;
         for (const Value& v : numbers) total += v.as_number();
         return numbers.empty() ? Value() : Value(total / static_cast<double>(numbers.size()));
       }},
      {agg::Min("v"), [](const std::vector<Event>& e) { return Extremum(Numbers(e, "v"), false); }},
      {agg::Max("v"), [](const std::vector<Event>& e) { return Extremum(Numbers(e, "v"), true); }},
      {agg::First(), first("", false)},
      {agg::First("v"), first("v", false)},
      {agg::First("n.v"), first("n.v", false)},
      {agg::Last(), first("", true)},
      {agg::Last("v"), first("v", true)},
      {agg::Last("n.v"), first("n.v", true)},
      {agg::Collect(), collect("")},
      {agg::Collect("v"), collect("v")},
      {agg::MaxRows("v"), max_rows("v")},
      {agg::MaxRows("n.v"), max_rows("n.v")},
      {CountAndSumIds(), count_and_sum_ids},
      {CountAndSumIds(true, /*in_place=*/true), count_and_sum_ids},
  };
}

TEST(AggregatorProperty, OneFoldMatchesABruteForceReference) {
  const auto built_ins = BuiltInsWithReferences();
  for (uint32_t seed = 0; seed < 4000; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Event> events = RandomEvents(rng);
    for (const auto& [agg, reference] : built_ins) {
      ASSERT_EQ(ResultOf(*agg, events).ToJson(), reference(events).ToJson())
          << agg->Describe() << " seed " << seed << " events " << Describe({events});
    }
  }
}

// Subsets that split the events of each event time in arrival order (the earlier arrivals of a
// time in a lower subset), but otherwise interleave at random: merging them in their order
// then follows arrival on every tie, so the result must equal one fold in arrival order. A
// random suffix of the arrivals is added after the merge, as events reaching a merged session.
TEST(AggregatorProperty, MergingRandomDisjointSubsetsEqualsFoldingEverythingInArrivalOrder) {
  for (uint32_t seed = 0; seed < 4000; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Event> events = RandomEvents(rng);
    const size_t k = std::uniform_int_distribution<size_t>(2, 4)(rng);
    const size_t tail = std::uniform_int_distribution<size_t>(0, events.size() / 3)(rng);
    const size_t merged_count = events.size() - tail;

    std::map<int64_t, std::vector<size_t>> by_time;
    for (size_t i = 0; i < merged_count; ++i) by_time[events[i].time].push_back(i);
    std::vector<size_t> subset_of(merged_count);
    for (const auto& [time, arrivals] : by_time) {
      std::vector<size_t> picks(arrivals.size());
      for (size_t& p : picks) p = std::uniform_int_distribution<size_t>(0, k - 1)(rng);
      std::sort(picks.begin(), picks.end());
      for (size_t j = 0; j < arrivals.size(); ++j) subset_of[arrivals[j]] = picks[j];
    }
    std::vector<std::vector<Event>> subsets(k);
    for (size_t i = 0; i < merged_count; ++i) subsets[subset_of[i]].push_back(events[i]);
    const std::vector<Event> tail_events(events.begin() + static_cast<std::ptrdiff_t>(merged_count),
                                         events.end());

    for (const AggregatorPtr& agg : AllBuiltIns()) {
      std::vector<Value> accs;
      for (const auto& subset : subsets) accs.push_back(FoldSubset(*agg, subset, rng));
      Value merged = FoldTimed(*agg, tail_events, MergeInRandomAssociation(*agg, accs, rng));
      ASSERT_EQ(agg->Result(merged).ToJson(), ResultOf(*agg, events).ToJson())
          << agg->Describe() << " seed " << seed << " subsets " << Describe(subsets) << " tail "
          << Describe({tail_events});
      ASSERT_EQ(agg->Result(merged), ResultOf(*agg, events)) << agg->Describe() << " seed " << seed;
    }
  }
}

// Any split and any order of the subsets: the documented rule says Merge(a, b) takes a's events
// as arriving before b's on equal times, so the result must equal one fold of the subsets
// concatenated in merge order (and, for every aggregator that does not look at arrival order,
// the fold in arrival order).
TEST(AggregatorProperty, MergeInAnyOrderTakesTheLeftInputAsArrivingFirst) {
  for (uint32_t seed = 0; seed < 4000; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Event> events = RandomEvents(rng);
    const size_t k = std::uniform_int_distribution<size_t>(2, 4)(rng);
    std::vector<std::vector<Event>> subsets(k);
    for (const Event& e : events) {
      subsets[std::uniform_int_distribution<size_t>(0, k - 1)(rng)].push_back(e);
    }
    std::vector<Event> concatenated;
    for (const auto& subset : subsets) {
      concatenated.insert(concatenated.end(), subset.begin(), subset.end());
    }

    for (const AggregatorPtr& agg : AllBuiltIns()) {
      std::vector<Value> accs;
      for (const auto& subset : subsets) accs.push_back(FoldSubset(*agg, subset, rng));
      const Value result = agg->Result(MergeInRandomAssociation(*agg, accs, rng));
      ASSERT_EQ(result.ToJson(), ResultOf(*agg, concatenated).ToJson())
          << agg->Describe() << " seed " << seed << " subsets " << Describe(subsets);
      ASSERT_EQ(result, ResultOf(*agg, concatenated)) << agg->Describe() << " seed " << seed;
      const std::string kind = agg->Describe();
      const bool order_sensitive =
          kind.starts_with("first") || kind.starts_with("last") || kind.starts_with("collect") ||
          kind.starts_with("max_rows");
      if (!order_sensitive) {
        ASSERT_EQ(result, ResultOf(*agg, events)) << agg->Describe() << " seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace weir
