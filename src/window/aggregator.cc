// The built-in aggregators. Accumulators are plain Values so state stores them directly:
//   count -> int; sum -> int (or double once a double is added); min/max -> number or null;
//   mean -> [sum (double), count (int)].
#include "weir/aggregator.h"

#include <memory>

#include "weir/stream.h"

namespace weir {
namespace {

// Aggregators over one numeric field: null and missing fields are skipped, as SQL does.
class FieldAggregator : public Aggregator {
 public:
  FieldAggregator(std::string kind, std::string field)
      : kind_(std::move(kind)), field_(std::move(field)) {}
  std::string Describe() const override { return kind_ + "(" + field_ + ")"; }
  Status Accepts(const Value& record_value) const override {
    const Value* v = record_value.FindPath(field_);
    if (v == nullptr || v->is_null() || v->is_number()) return Status::OK();
    return Status::InvalidArgument(Describe() + " cannot take field '" + field_ + "' of type " +
                                   std::string(v->TypeName()));
  }

 protected:
  // The field's number, or nullptr if absent or null.
  const Value* Field(const Value& record_value) const {
    const Value* v = record_value.FindPath(field_);
    return v != nullptr && v->is_number() ? v : nullptr;
  }

 private:
  std::string kind_;
  std::string field_;
};

Value AddNumbers(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) {
    int64_t r;
    if (!__builtin_add_overflow(a.as_int(), b.as_int(), &r)) return Value(r);
  }
  return Value(a.as_number() + b.as_number());
}

class CountAggregator : public Aggregator {
 public:
  std::string Describe() const override { return "count"; }
  Value Initial() const override { return Value(0); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void Add(Value& acc, const Value&, EventTime) const override {
    acc = Value(acc.is_int() ? acc.as_int() + 1 : 1);
  }
  Value Merge(const Value& a, const Value& b) const override {
    return Value((a.is_int() ? a.as_int() : 0) + (b.is_int() ? b.as_int() : 0));
  }
  Value Result(const Value& acc) const override { return acc.is_int() ? acc : Value(0); }
};

class SumAggregator : public FieldAggregator {
 public:
  explicit SumAggregator(std::string field) : FieldAggregator("sum", std::move(field)) {}
  Value Initial() const override { return Value(0); }
  void Add(Value& acc, const Value& record_value, EventTime) const override {
    if (const Value* v = Field(record_value))
      acc = AddNumbers(acc.is_number() ? acc : Value(0), *v);
  }
  Value Merge(const Value& a, const Value& b) const override {
    return AddNumbers(a.is_number() ? a : Value(0), b.is_number() ? b : Value(0));
  }
  Value Result(const Value& acc) const override { return acc.is_number() ? acc : Value(0); }
};

class ExtremumAggregator : public FieldAggregator {
 public:
  ExtremumAggregator(std::string field, bool is_max)
      : FieldAggregator(is_max ? "max" : "min", std::move(field)), is_max_(is_max) {}
  Value Initial() const override { return Value(); }
  void Add(Value& acc, const Value& record_value, EventTime) const override {
    if (const Value* v = Field(record_value)) acc = Pick(acc, *v);
  }
  Value Merge(const Value& a, const Value& b) const override { return Pick(a, b); }
  Value Result(const Value& acc) const override { return acc; }

 private:
  Value Pick(const Value& a, const Value& b) const {
    if (!a.is_number()) return b.is_number() ? b : Value();
    if (!b.is_number()) return a;
    bool b_wins = is_max_ ? b.as_number() > a.as_number() : b.as_number() < a.as_number();
    return b_wins ? b : a;
  }
  bool is_max_;
};

class MeanAggregator : public FieldAggregator {
 public:
  explicit MeanAggregator(std::string field) : FieldAggregator("mean", std::move(field)) {}
  Value Initial() const override { return Value(Value::Array{Value(0.0), Value(0)}); }
  void Add(Value& acc, const Value& record_value, EventTime) const override {
    const Value* v = Field(record_value);
    if (v == nullptr) return;
    auto [sum, count] = Parts(acc);
    acc = Value(Value::Array{Value(sum + v->as_number()), Value(count + 1)});
  }
  Value Merge(const Value& a, const Value& b) const override {
    auto [sa, ca] = Parts(a);
    auto [sb, cb] = Parts(b);
    return Value(Value::Array{Value(sa + sb), Value(ca + cb)});
  }
  Value Result(const Value& acc) const override {
    auto [sum, count] = Parts(acc);
    return count == 0 ? Value() : Value(sum / static_cast<double>(count));
  }

 private:
  static std::pair<double, int64_t> Parts(const Value& acc) {
    if (!acc.is_array() || acc.as_array().size() != 2) return {0.0, 0};
    const Value::Array& a = acc.as_array();
    return {a[0].is_number() ? a[0].as_number() : 0.0, a[1].is_int() ? a[1].as_int() : 0};
  }
};

}  // namespace

namespace agg {
AggregatorPtr Count() { return std::make_shared<CountAggregator>(); }
AggregatorPtr Sum(std::string field) { return std::make_shared<SumAggregator>(std::move(field)); }
AggregatorPtr Mean(std::string field) { return std::make_shared<MeanAggregator>(std::move(field)); }
AggregatorPtr Min(std::string field) {
  return std::make_shared<ExtremumAggregator>(std::move(field), false);
}
AggregatorPtr Max(std::string field) {
  return std::make_shared<ExtremumAggregator>(std::move(field), true);
}
}  // namespace agg

}  // namespace weir
