// Aggregator: a mergeable aggregation over the values of one key (running aggregates now,
// windows later). The engine owns the accumulator (a Value, stored in state at checkpoints);
// an aggregator is stateless and shared by every task.
#pragma once

#include <functional>
#include <memory>
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
  // Whether Add, Merge or Result run code that may throw (a user's function: agg::Reduce or ReduceInPlace, or
  // an Aggregator of the user's own). The step then keeps a copy of a key's accumulators while
  // a record is added, so that a call that throws changes nothing and only sends the record to
  // the dead-letter topic (weir/stream.h). The built-ins say false.
  virtual bool runs_user_code() const { return true; }
};

using AggregatorPtr = std::shared_ptr<const Aggregator>;

// The building blocks of running and windowed aggregations. Every
// built-in is mergeable. Null and missing fields are skipped (as SQL's aggregates do); a value
// an aggregation cannot take (summing a string) is a dead letter. An empty field means the
// whole record value.
namespace agg {
AggregatorPtr Count();
AggregatorPtr Sum(std::string field);
AggregatorPtr Mean(std::string field);
AggregatorPtr Min(std::string field);
AggregatorPtr Max(std::string field);
// The value (or field) of the event with the smallest / largest event time; ties go to the
// first / last to arrive. Null if no event had the field. A null record value counts as missing.
// Arrival order across a merge (sessions joined by a bridging event): Aggregator::Merge(a, b)
// takes a's events as having arrived before b's when event times are equal. Merge is
// associative, so any merge tree whose inputs, left to right, follow arrival gives one fold's
// result.
AggregatorPtr First(std::string field = "");
AggregatorPtr Last(std::string field = "");
// Every value (or field) in event-time order (ties in arrival order, across merges as for
// First); a JSON array, [] if nothing was taken.
AggregatorPtr Collect(std::string field = "");
// The whole record values whose `field` (a number) is the largest: a JSON array in event-time
// order (ties in arrival order, across merges as for First), [] if none took part. Numerically
// equal fields (2 and 2.0) tie; null, missing and NaN fields are skipped, and any other value
// that is not a number is refused. Nexmark q7's highest bids, SQL's
// `WHERE price = (SELECT MAX(price) ...)`; a record below the largest is not kept.
AggregatorPtr MaxRows(std::string field);
// A user fold over whole record values (null ones skipped): `initializer(first value)` starts
// the accumulator, `reducer(acc, value)` folds each further value in; null if nothing was
// taken. Mergeable only with a `merger(a, b)` (session windows need it), called when both sides
// took a value. The order of values reaching the reducer is arrival order, not event time.
using Reducer = std::function<Value(const Value& accumulator, const Value& value)>;
using Initializer = std::function<Value(const Value& first_value)>;
using Merger = std::function<Value(const Value& a, const Value& b)>;
AggregatorPtr Reduce(Reducer reducer, Initializer initializer, Merger merger = nullptr);
// Reduce with a fold that changes the accumulator where it is instead of returning a new one:
// `updater(acc, value)` folds value into acc, so the fold does not copy an accumulator that
// grows (a list of rows). Otherwise as Reduce. An updater that throws after changing acc
// changes nothing: the step restores the key's accumulators and sends the record to the
// dead-letter topic. For that, a step that runs user code (this, Reduce, a trigger) copies the
// key's state before each record, growing accumulators included: where a built-in does the job
// (agg::MaxRows, agg::Collect), it is cheaper.
using Updater = std::function<void(Value& accumulator, const Value& value)>;
AggregatorPtr ReduceInPlace(Updater updater, Initializer initializer, Merger merger = nullptr);
}  // namespace agg

}  // namespace weir
