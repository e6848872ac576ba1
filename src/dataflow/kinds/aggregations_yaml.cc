#include "dataflow/kinds/aggregations_yaml.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace weir::dataflow {
namespace {
constexpr std::string_view kAggregationNames[] = {"count", "sum",  "mean",    "min",     "max",
                                                  "first", "last", "collect", "max_rows"};

// "count, sum, ...": what an unknown aggregation's error lists.
std::string KnownAggregations() {
  std::string known;
  for (std::string_view name : kAggregationNames) {
    if (!known.empty()) known += ", ";
    known += name;
  }
  return known;
}
}  // namespace

bool IsAggregationName(std::string_view name) {
  return std::find(std::begin(kAggregationNames), std::end(kAggregationNames), name) !=
         std::end(kAggregationNames);
}

Result<AggregatorPtr> ParseAggregator(const ConfigNode& node) {
  if (node.IsScalar()) {
    WEIR_ASSIGN_OR_RETURN(std::string kind, node.String());
    if (kind == "count") return agg::Count();
    if (kind == "first") return agg::First();
    if (kind == "last") return agg::Last();
    if (kind == "collect") return agg::Collect();
    if (IsAggregationName(kind)) {
      return node.Error("'" + kind + "' needs a field: {" + kind + ": FIELD}");
    }
    return node.Error("unknown aggregation '" + kind + "' (expected " + KnownAggregations() + ")");
  }
  WEIR_ASSIGN_OR_RETURN(
      auto member,
      node.OnlyMember("count or a map of one aggregation to its field ({sum: amount})"));
  const auto& [kind, field_node] = member;
  if (kind == "count") return agg::Count();
  WEIR_ASSIGN_OR_RETURN(std::string field, field_node.String());
  if (kind == "sum") return agg::Sum(field);
  if (kind == "mean") return agg::Mean(field);
  if (kind == "min") return agg::Min(field);
  if (kind == "max") return agg::Max(field);
  if (kind == "first") return agg::First(field);
  if (kind == "last") return agg::Last(field);
  if (kind == "collect") return agg::Collect(field);
  if (kind == "max_rows") return agg::MaxRows(field);
  return field_node.Error("unknown aggregation '" + kind + "' (expected " + KnownAggregations() +
                          ")");
}

Result<NamedAggregations> ParseNamedAggregations(const ConfigNode& node) {
  if (!node.IsMap() || node.size() == 0) {
    return node.Expected("a map of output names to aggregations ({clicks: count})");
  }
  NamedAggregations aggregations;
  WEIR_ASSIGN_OR_RETURN(auto members, node.Members());
  for (auto& [name, agg_node] : members) {
    WEIR_ASSIGN_OR_RETURN(AggregatorPtr a, ParseAggregator(agg_node));
    aggregations.emplace_back(name, std::move(a));
  }
  return aggregations;
}

Value DescribeAggregations(const NamedAggregations& aggregations) {
  Value described = Value(Value::Object());
  for (const auto& [name, aggregator] : aggregations) {
    described.Set(name, aggregator ? Value(aggregator->Describe()) : Value());
  }
  return described;
}

}  // namespace weir::dataflow
