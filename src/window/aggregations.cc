#include "window/aggregations.h"

#include <algorithm>

#include "window/input_aggregator.h"

namespace weir::window {

Aggregations::Aggregations(std::vector<std::pair<std::string, AggregatorPtr>> named,
                           bool single_unnamed)
    : named_(std::move(named)), single_unnamed_(single_unnamed) {
  for (const auto& [name, agg] : named_) {
    readers_.push_back(dynamic_cast<const InputAggregator*>(agg.get()));
    int_folds_.push_back(IntFoldOf(*agg));
  }
}

bool Aggregations::folds_ints() const {
  return !named_.empty() &&
         std::find(int_folds_.begin(), int_folds_.end(), IntFold::kNone) == int_folds_.end();
}

bool Aggregations::mergeable() const {
  for (const auto& [name, agg] : named_) {
    if (!agg->mergeable()) return false;
  }
  return true;
}

bool Aggregations::runs_user_code() const {
  for (const auto& [name, agg] : named_) {
    if (agg->runs_user_code()) return true;
  }
  return false;
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

Value::Array& Aggregations::Normalize(Value& accs) const {
  if (!accs.is_array()) accs = Value(Value::Array());
  Value::Array& a = accs.as_array();
  if (a.size() < named_.size()) a.resize(named_.size());
  return a;
}

void Aggregations::Add(std::span<Value> accs, const Value& record_value,
                       EventTime timestamp) const {
  for (size_t i = 0; i < named_.size(); ++i)
    named_[i].second->Add(accs[i], record_value, timestamp);
}

void Aggregations::Read(const Value& record_value, std::span<const Value*> inputs) const {
  for (size_t i = 0; i < named_.size(); ++i) {
    inputs[i] = readers_[i] != nullptr ? readers_[i]->Read(record_value) : nullptr;
  }
}

void Aggregations::AddRead(std::span<Value> accs, std::span<const Value* const> inputs,
                           const Value& record_value, EventTime timestamp) const {
  for (size_t i = 0; i < named_.size(); ++i) {
    if (readers_[i] == nullptr) {
      named_[i].second->Add(accs[i], record_value, timestamp);
    } else if (inputs[i] != nullptr) {
      readers_[i]->AddInput(accs[i], *inputs[i], timestamp);
    }
  }
}

void Aggregations::MergeInto(std::span<Value> into, std::span<const Value> other) const {
  for (size_t i = 0; i < named_.size(); ++i) into[i] = named_[i].second->Merge(into[i], other[i]);
}

void Aggregations::WriteResults(std::span<const Value> accs, Value::ObjectWriter& out) const {
  for (size_t i = 0; i < named_.size(); ++i) {
    out.Add(single_unnamed_ ? std::string_view("value") : std::string_view(named_[i].first)) =
        named_[i].second->Result(accs[i]);
  }
}

}  // namespace weir::window
