#include "weir/aggregator.h"

#include <gtest/gtest.h>

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

Value Amount(Value a) { return Value::MakeObject({{"amount", std::move(a)}}); }

TEST(Aggregator, SumKeepsIntegersExactAndSwitchesToDoubleWhenNeeded) {
  auto sum = agg::Sum("amount");
  EXPECT_EQ(sum->Result(Fold(*sum, {Amount(1), Amount(2), Amount(3)})), Value(6));
  EXPECT_EQ(sum->Result(Fold(*sum, {Amount(1), Amount(0.5)})), Value(1.5));
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
  for (const AggregatorPtr& agg : {agg::Count(), agg::Sum("amount"), agg::Mean("amount"),
                                   agg::Min("amount"), agg::Max("amount")}) {
    Value acc;  // null, as a stored null would read back
    agg->Add(acc, Amount(5), EventTime(0));
    Value merged = agg->Merge(Value(), acc);
    EXPECT_EQ(agg->Result(merged), agg->Result(acc)) << agg->Describe();
  }
}

TEST(Aggregator, MinAndMaxOfNothingAreNull) {
  EXPECT_TRUE(agg::Min("x")->Result(agg::Min("x")->Initial()).is_null());
  EXPECT_EQ(
      agg::Max("amount")->Result(Fold(*agg::Max("amount"), {Amount(3), Amount(9.5), Amount(-1)})),
      Value(9.5));
}

}  // namespace
}  // namespace weir
