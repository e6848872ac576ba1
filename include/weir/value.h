// Value: a JSON document held in memory, parsed once at the edge and written once per output.
//
// A Value is null, bool, int (int64), double, string, array or object. Objects keep their
// members in insertion order (what was published is what is written back) and look members up
// by a linear scan: records have few fields, and a scan of a small vector beats hashing.
// JSON integers that fit int64 are ints; other numbers are doubles. NaN and infinities are
// written as null, since JSON cannot carry them.
// Thread safety: a value type; const access from many threads is safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "weir/status.h"

namespace weir {

class Value {
 public:
  using Array = std::vector<Value>;
  using Member = std::pair<std::string, Value>;
  using Object = std::vector<Member>;
  enum class Type : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

  Value() = default;
  Value(std::nullptr_t) {}                           // NOLINT(google-explicit-constructor)
  Value(bool b) : v_(b) {}                           // NOLINT(google-explicit-constructor)
  Value(int i) : v_(int64_t{i}) {}                   // NOLINT(google-explicit-constructor)
  Value(int64_t i) : v_(i) {}                        // NOLINT(google-explicit-constructor)
  Value(double d) : v_(d) {}                         // NOLINT(google-explicit-constructor)
  Value(const char* s) : v_(std::string(s)) {}       // NOLINT(google-explicit-constructor)
  Value(std::string s) : v_(std::move(s)) {}         // NOLINT(google-explicit-constructor)
  Value(std::string_view s) : v_(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Value(Array a) : v_(std::move(a)) {}               // NOLINT(google-explicit-constructor)
  Value(Object o) : v_(std::move(o)) {}              // NOLINT(google-explicit-constructor)

  // {"a": 1, "b": "x"} as MakeObject({{"a", 1}, {"b", "x"}}).
  static Value MakeObject(std::initializer_list<Member> members) { return Value(Object(members)); }

  // Parses one JSON document (RFC 8259; trailing whitespace allowed, nothing else after it).
  // Errors are kInvalidArgument with the parser's reason.
  static Result<Value> Parse(std::string_view json);

  Type type() const { return static_cast<Type>(v_.index()); }
  std::string_view TypeName() const;
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_double() const { return type() == Type::kDouble; }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Accessors: REQUIRES the matching type (checked).
  bool as_bool() const { return Get<bool>(); }
  int64_t as_int() const { return Get<int64_t>(); }
  double as_double() const { return Get<double>(); }
  // An int or a double as a double.
  double as_number() const { return is_int() ? static_cast<double>(as_int()) : as_double(); }
  const std::string& as_string() const { return Get<std::string>(); }
  const Array& as_array() const { return Get<Array>(); }
  Array& as_array() { return Get<Array>(); }
  const Object& as_object() const { return Get<Object>(); }
  Object& as_object() { return Get<Object>(); }

  // The member `name` of an object; nullptr if this is not an object or has no such member.
  const Value* Find(std::string_view name) const;
  Value* Find(std::string_view name);
  // A member by dotted path ("user.address.city"); nullptr if any step is missing.
  const Value* FindPath(std::string_view dotted_path) const;
  // Sets member `name` (replacing an existing one). REQUIRES: object or null (null becomes {}).
  Value& Set(std::string_view name, Value value);

  // Appends the JSON text of this value to `out` (compact, no spaces).
  void AppendJson(std::string& out) const;
  std::string ToJson() const;

  // A compact binary form for state stores: smaller and faster than JSON text for numbers.
  void AppendBinary(std::string& out) const;
  // Decodes one value from the front of `in`, advancing it. kCorruption on malformed bytes.
  static Result<Value> ReadBinary(std::string_view& in);

  friend bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

 private:
  [[noreturn]] void WrongType() const;
  template <typename T>
  const T& Get() const {
    const T* p = std::get_if<T>(&v_);
    if (p == nullptr) [[unlikely]]
      WrongType();
    return *p;
  }
  template <typename T>
  T& Get() {
    T* p = std::get_if<T>(&v_);
    if (p == nullptr) [[unlikely]]
      WrongType();
    return *p;
  }

  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v_{nullptr};
};

// Appends `s` to `out` as a JSON string literal, with quotes and escapes.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace weir
