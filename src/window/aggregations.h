// Aggregations: the named aggregators of one step (a running Aggregate or a window's .Agg),
// applied together to an accumulator array with one slot per aggregator.
// Thread safety: immutable; shared by every task.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weir/aggregator.h"
#include "weir/value.h"

namespace weir::window {

class InputAggregator;

class Aggregations {
 public:
  // `single_unnamed`: one aggregation whose result is written as "value".
  Aggregations(std::vector<std::pair<std::string, AggregatorPtr>> named, bool single_unnamed);

  size_t size() const { return named_.size(); }
  bool empty() const { return named_.empty(); }
  bool mergeable() const;
  // Whether any aggregator runs user code (Aggregator::runs_user_code).
  bool runs_user_code() const;
  // "count=count sum=sum(amount)": the definition fingerprint.
  std::string Describe() const;

  // OK if every aggregator takes the record value; else the first refusal (-> dead letter).
  Status Accepts(const Value& record_value) const;
  // Accumulators are kept as a run of size() Values (in a key's window, or a state array); a
  // null accumulator is each aggregator's initial one, so fresh windows start as nulls.

  // Makes `accs` an array of size() accumulators (a stored null or a short array is completed
  // with nulls) and returns it.
  Value::Array& Normalize(Value& accs) const;
  // Folds one record into every accumulator. REQUIRES: Accepts(record_value), accs.size() ==
  // size().
  void Add(std::span<Value> accs, const Value& record_value, EventTime timestamp) const;
  // For a record folded into several accumulator arrays (the windows that take it): what each
  // aggregator reads from it (window::InputAggregator::Read; nullptr for any other aggregator,
  // which AddRead hands the record), into `inputs`, of size(). Pointers into record_value.
  void Read(const Value& record_value, std::span<const Value*> inputs) const;
  // Add, with the inputs Read returned for record_value. REQUIRES: as Add's.
  void AddRead(std::span<Value> accs, std::span<const Value* const> inputs,
               const Value& record_value, EventTime timestamp) const;
  // `into` becomes the accumulators of the union of both inputs.
  void MergeInto(std::span<Value> into, std::span<const Value> other) const;
  // Writes the results as the next members: one per name, or "value" for a single unnamed one.
  void WriteResults(std::span<const Value> accs, Value::ObjectWriter& out) const;

 private:
  std::vector<std::pair<std::string, AggregatorPtr>> named_;
  // named_[i] as an InputAggregator, or nullptr if it is not one.
  std::vector<const InputAggregator*> readers_;
  bool single_unnamed_;
};

}  // namespace weir::window
