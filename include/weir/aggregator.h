// Aggregator: a mergeable aggregation over the values of one key (running aggregates now,
// windows later). The engine owns the accumulator (a Value, stored in state at checkpoints);
// an aggregator is stateless and shared by every task.
#pragma once

#include <string>

#include "weir/status.h"
#include "weir/types.h"
#include "weir/value.h"

namespace weir {

class Aggregator {
 public:
  virtual ~Aggregator() = default;
  // "sum(amount)": for errors and for the pipeline's definition fingerprint.
  virtual std::string Describe() const = 0;
  // The accumulator before any record.
  virtual Value Initial() const = 0;
  // OK if Add can take this record value; kInvalidArgument with the reason otherwise (the
  // record then goes to the dead-letter topic and no aggregator of the step sees it).
  virtual Status Accepts(const Value& record_value) const = 0;
  // Folds a record into the accumulator. REQUIRES: Accepts(record_value) is OK. A null
  // accumulator (a stored null) is taken as Initial().
  virtual void Add(Value& acc, const Value& record_value, EventTime timestamp) const = 0;
  // The accumulator of the union of two inputs; nulls are taken as Initial().
  virtual Value Merge(const Value& a, const Value& b) const = 0;
  // What is emitted.
  virtual Value Result(const Value& acc) const = 0;
  // Whether Merge is real. Session windows merge accumulators and refuse an aggregation that
  // cannot (a Reduce without a merger) when the application is defined.
  virtual bool mergeable() const { return true; }
};

}  // namespace weir
