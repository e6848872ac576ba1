#include "window/aggregations.h"

namespace weir::window {

Aggregations::Aggregations(std::vector<std::pair<std::string, AggregatorPtr>> named,
                           bool single_unnamed)
    : named_(std::move(named)), single_unnamed_(single_unnamed) {}

bool Aggregations::mergeable() const {
  for (const auto& [name, agg] : named_) {
    if (!agg->mergeable()) return false;
  }
  return true;
}

std::string Aggregations::Describe() const {
  std::string d;
  for (const auto& [name, agg] : named_) {
    d += (d.empty() ? "" : " ") + (single_unnamed_ ? std::string("value") : name) + "=" +
         agg->Describe();
  }
  return d;
}

Status Aggregations::Accepts(const Value& record_value) const {
  for (const auto& [name, agg] : named_) WEIR_RETURN_IF_ERROR(agg->Accepts(record_value));
  return Status::OK();
}

Value Aggregations::Initial() const {
  Value::Array accs;
  accs.reserve(named_.size());
  for (const auto& [name, agg] : named_) accs.push_back(agg->Initial());
  return Value(std::move(accs));
}

Value::Array& Aggregations::Normalize(Value& accs) const {
  if (!accs.is_array()) accs = Value(Value::Array());
  Value::Array& a = accs.as_array();
  if (a.size() < named_.size()) a.resize(named_.size());
  for (size_t i = 0; i < named_.size(); ++i) {
    if (a[i].is_null()) a[i] = named_[i].second->Initial();
  }
  return a;
}

void Aggregations::Add(Value& accs, const Value& record_value, EventTime timestamp) const {
  Value::Array& a = Normalize(accs);
  for (size_t i = 0; i < named_.size(); ++i) named_[i].second->Add(a[i], record_value, timestamp);
}

Value Aggregations::Merge(const Value& a, const Value& b) const {
  Value::Array merged;
  merged.reserve(named_.size());
  auto slot = [](const Value& accs, size_t i) -> const Value& {
    static const Value kNull;
    return accs.is_array() && i < accs.as_array().size() ? accs.as_array()[i] : kNull;
  };
  for (size_t i = 0; i < named_.size(); ++i) {
    merged.push_back(named_[i].second->Merge(slot(a, i), slot(b, i)));
  }
  return Value(std::move(merged));
}

void Aggregations::AppendResults(const Value& accs, Value::Object& out) const {
  for (size_t i = 0; i < named_.size(); ++i) {
    const AggregatorPtr& agg = named_[i].second;
    const bool have = accs.is_array() && i < accs.as_array().size();
    Value result = agg->Result(have ? accs.as_array()[i] : agg->Initial());
    out.emplace_back(single_unnamed_ ? std::string("value") : named_[i].first, std::move(result));
  }
}

}  // namespace weir::window
