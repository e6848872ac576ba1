// FieldPath: a field of a record by dotted path, split once. InputAggregator: a built-in
// aggregator that folds one input read from a record, a field by dotted path or the whole value.
// Its path is split once, when it is made; and a step whose record goes into several windows
// (hopping: size / step of them) reads the input once per record (Aggregations::Read) and folds
// what it read into each window (AddInput), instead of looking the field up once per window.
// Thread safety: immutable; shared by every task.
#pragma once

#include <string>
#include <vector>

#include "weir/aggregator.h"

namespace weir::window {

// A field of a record by dotted path ("user.address.city"), split once when it is made; empty for
// the whole record value.
class FieldPath {
 public:
  explicit FieldPath(const std::string& field);
  // The field of `record_value`: nullptr when it is absent or null.
  const Value* Read(const Value& record_value) const;

 private:
  std::vector<std::string> names_;  // the field split at its dots; empty for the whole value
};

class InputAggregator : public Aggregator {
 public:
  // `field`: a dotted path ("user.address.city"); empty for the whole record value.
  explicit InputAggregator(std::string field);

  // The input of a record: nullptr when it is absent or null (skipped, as SQL's aggregates do).
  const Value* Read(const Value& record_value) const { return path_.Read(record_value); }
  // Folds an input Read returned (not null) into the accumulator.
  virtual void AddInput(Value& acc, const Value& input, EventTime timestamp) const = 0;
  // Aggregator::Add: Read, then AddInput.
  void Add(Value& acc, const Value& record_value, EventTime timestamp) const final {
    if (const Value* input = Read(record_value)) AddInput(acc, *input, timestamp);
  }

 protected:
  // "kind(field)", or "kind" for the whole record value.
  std::string DescribeAs(const std::string& kind) const;
  const std::string& field() const { return field_; }

 private:
  std::string field_;
  FieldPath path_;
};

}  // namespace weir::window
