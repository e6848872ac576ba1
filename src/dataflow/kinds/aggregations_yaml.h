// The forms of aggregations that the aggregate and window kinds share: their YAML
// (`count`, `{sum: amount}`, `{name: aggregation, ...}`) and their fingerprint.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config_node.h"
#include "weir/aggregator.h"

namespace weir::dataflow {

using NamedAggregations = std::vector<std::pair<std::string, AggregatorPtr>>;

// Whether `name` is one of the built-in aggregations' YAML names (count, sum, ...).
bool IsAggregationName(std::string_view name);
// count | first | last | collect (of the whole value), or {kind: field}.
Result<AggregatorPtr> ParseAggregator(const ConfigNode& node);
// {name: aggregation, ...}
Result<NamedAggregations> ParseNamedAggregations(const ConfigNode& node);
// {"<name>": "<aggregator's Describe()>", ...} for a fingerprint.
Value DescribeAggregations(const NamedAggregations& aggregations);

}  // namespace weir::dataflow
