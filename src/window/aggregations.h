// Aggregations: the named aggregators of one step (a running Aggregate or a window's .Agg),
// applied together to an accumulator array with one slot per aggregator.
// Thread safety: immutable; shared by every task.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weir/aggregator.h"
#include "weir/value.h"

namespace weir::window {

class InputAggregator;

// How a built-in aggregation folds an event into a scalar accumulator when the event's input is
// an int (or absent) and the accumulator an int (or not yet a number), so that a window's packed
// slot can be folded where it lies (KeyState::FoldInts) instead of through a Value: count, and
// sum, min and max of a field. kNone: every other aggregation (mean, first, collect, user code).
enum class IntFold : uint8_t { kNone, kCount, kSum, kMin, kMax };
// The fold of a built-in, kNone for any other (defined beside the built-ins, aggregator.cc).
IntFold IntFoldOf(const Aggregator& aggregator);

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
  // Each aggregation's IntFold, in order.
  std::span<const IntFold> int_folds() const { return int_folds_; }
  // Whether every aggregation has one (so a window's slots may all be folded in place).
  bool folds_ints() const;
  // Writes the results as the next members: one per name, or "value" for a single unnamed one.
  void WriteResults(std::span<const Value> accs, Value::ObjectWriter& out) const;

 private:
  std::vector<std::pair<std::string, AggregatorPtr>> named_;
  // named_[i] as an InputAggregator, or nullptr if it is not one.
  std::vector<const InputAggregator*> readers_;
  std::vector<IntFold> int_folds_;
  bool single_unnamed_;
};

}  // namespace weir::window
