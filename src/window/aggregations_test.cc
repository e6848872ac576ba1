// Aggregations::Read + AddRead (a record read once, folded into several windows) against Add
// (read at every fold), and InputAggregator's split path against Value::FindPath, over random
// nested records.
#include "window/aggregations.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "weir/aggregator.h"

namespace weir::window {
namespace {

// Names that random records use, the empty one included: dotted paths over them reach every
// shape FindPath handles ("a..b" and "a." look a member "" up).
const char* const kNames[] = {"a", "b", ""};

Value RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 0 ? 6 : 4)) {
    case 0:
      return Value();
    case 1:
      return Value(static_cast<int64_t>(rng() % 7) - 3);
    case 2:
      return Value(static_cast<double>(rng() % 9) / 4 - 1);
    case 3:
      return Value(std::string(1 + rng() % 3, 'x'));
    default: {
      Value::Object members;
      for (const char* name : kNames) {
        if (rng() % 3 != 0) members.emplace_back(name, RandomValue(rng, depth - 1));
      }
      return Value(std::move(members));
    }
  }
}

// A user aggregator (not an InputAggregator): Aggregations hands it the whole record.
class ObjectCount : public Aggregator {
 public:
  std::string Describe() const override { return "objects"; }
  Value Initial() const override { return Value(0); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void Add(Value& acc, const Value& record_value, EventTime) const override {
    acc = (acc.is_int() ? acc.as_int() : 0) + (record_value.is_object() ? 1 : 0);
  }
  Value Merge(const Value& a, const Value& b) const override {
    return Value((a.is_int() ? a.as_int() : 0) + (b.is_int() ? b.as_int() : 0));
  }
  Value Result(const Value& acc) const override { return acc; }
};

TEST(Aggregations, ARecordReadOnceFoldsIntoEveryWindowAsAddDoes) {
  const std::vector<std::string> paths = {"a", "a.b", "a..b", "a.", "b.a.b", ""};
  std::vector<std::pair<std::string, AggregatorPtr>> named;
  for (const std::string& path : paths) {
    named.emplace_back("sum " + path, agg::Sum(path));
    named.emplace_back("min " + path, agg::Min(path));
    named.emplace_back("max " + path, agg::Max(path));
    named.emplace_back("mean " + path, agg::Mean(path));
    named.emplace_back("first " + path, agg::First(path));
    named.emplace_back("last " + path, agg::Last(path));
    named.emplace_back("collect " + path, agg::Collect(path));
  }
  named.emplace_back("count", agg::Count());
  named.emplace_back("objects", std::make_shared<ObjectCount>());
  named.emplace_back(
      "reduce", agg::Reduce(
                    [](const Value& acc, const Value& v) {
                      return Value(acc.as_int() + static_cast<int64_t>(v.ToJson().size()));
                    },
                    [](const Value& v) { return Value(static_cast<int64_t>(v.ToJson().size())); }));
  const Aggregations aggregations(std::move(named), false);
  const size_t n = aggregations.size();

  std::mt19937_64 rng(14);
  Value::Array by_add(n);
  std::vector<Value::Array> windows(3, Value::Array(n));  // folded through Read + AddRead
  std::vector<const Value*> inputs(n);
  int folded = 0;
  for (int i = 0; i < 3000; ++i) {
    const Value record = RandomValue(rng, 3);
    // A record some aggregator refuses is a dead letter for the whole step, as in a window step.
    if (!aggregations.Accepts(record).ok()) continue;
    ++folded;
    const EventTime ts(static_cast<int64_t>(rng() % 5));
    aggregations.Add(by_add, record, ts);
    aggregations.Read(record, inputs);
    for (Value::Array& accs : windows) aggregations.AddRead(accs, inputs, record, ts);
  }
  ASSERT_GT(folded, 300) << "too few records every aggregator takes";
  for (const Value::Array& accs : windows) {
    for (size_t a = 0; a < n; ++a) EXPECT_EQ(accs[a], by_add[a]) << "aggregation " << a;
  }
}

TEST(InputAggregator, ReadsTheValueFindPathFindsSkippingNull) {
  std::mt19937_64 rng(15);
  for (const std::string path : {"a", "a.b", "a..b", "a.", ".a", "b.a.b", ""}) {
    const AggregatorPtr first = agg::First(path);
    for (int i = 0; i < 500; ++i) {
      const Value record = RandomValue(rng, 3);
      Value acc = first->Initial();
      first->Add(acc, record, EventTime(0));
      const Value* found = path.empty() ? &record : record.FindPath(path);
      const Value expected = found != nullptr ? *found : Value();
      EXPECT_EQ(first->Result(acc), expected) << "path '" << path << "' of " << record.ToJson();
    }
  }
}

}  // namespace
}  // namespace weir::window
