// Value: a JSON document held in memory, parsed once at the edge and written once per output.
//
// A Value is null, bool, int (int64), double, string, array or object. Objects keep their
// members in insertion order (what was published is what is written back) and look members up
// by a linear scan: records have few fields, and a scan of a small vector beats hashing.
// JSON integers that fit int64 are ints; other numbers are doubles (an integer beyond uint64, or
// a number beyond a double's range, is refused: "number out of range"). NaN and infinities are
// written as null, since JSON cannot carry them. Parsed JSON is limited to kMaxJsonBytes and to
// kMaxDepth levels of nesting (the binary form's limit too, so whatever parses can be stored);
// beyond them Parse refuses the document.
//
// Memory: strings, arrays and objects take their memory from a per-thread pool
// (internal::PoolAllocator): blocks freed by values are kept by size and handed to the next
// values built on that thread, so records built and dropped one after another (a Map returning
// a new object per record) stop calling malloc once the pool holds what a batch needs.
//
// Writing in place: AssignJson, AssignString, ObjectWriter and ArrayWriter rewrite a value
// reusing the memory it already holds (string buffers, member and item vectors). Sources fill
// record slots that are reused from batch to batch (dataflow::SourceBatch) this way, so a stream
// of records of one shape makes no heap allocation once the slots have grown to its sizes.
//
// Reading the wrong type: as_int() on a string (and every as_*() accessor on a value of another
// type) throws ValueTypeError. In a function given to a step (Stream::Map, Filter, Apply, ...)
// that sends the record to the dead-letter topic and the pipeline goes on (weir/stream.h). To
// read a field that may be missing or of another type without an exception, use GetInt,
// GetDouble, GetString and GetBool, which return nullopt instead.
// Thread safety: a value type; const access from many threads is safe.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "weir/status.h"

namespace weir {

namespace internal {
// A block of `bytes` from the calling thread's pool (malloc when the pool has none of its size,
// and for blocks over 64 KiB). Any thread may give a block back; it joins that thread's pool,
// which keeps at most about 4 MiB per size and frees the rest. Without a pool under ASan, so
// that it sees every use after free.
void* PoolAllocate(size_t bytes);
void PoolDeallocate(void* block, size_t bytes) noexcept;

// The standard allocator interface over the pool (stateless: any two are equal).
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() noexcept = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(PoolAllocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { PoolDeallocate(p, n * sizeof(T)); }
  template <typename U>
  friend bool operator==(const PoolAllocator&, const PoolAllocator<U>&) {
    return true;
  }
};

template <typename Word>
inline Word LoadWord(const char* p) {
  Word w;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

// Member names are short and mostly differ in length: compared inline rather than through a
// call to memcmp, a name of 4 to 16 bytes as two words that may overlap (never reading past it).
[[gnu::always_inline]] inline bool SameName(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  if (n >= 8) {
    if (n > 16) return std::memcmp(x, y, n) == 0;
    return LoadWord<uint64_t>(x) == LoadWord<uint64_t>(y) &&
           LoadWord<uint64_t>(x + n - 8) == LoadWord<uint64_t>(y + n - 8);
  }
  if (n >= 4) {
    return LoadWord<uint32_t>(x) == LoadWord<uint32_t>(y) &&
           LoadWord<uint32_t>(x + n - 4) == LoadWord<uint32_t>(y + n - 4);
  }
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}
}  // namespace internal

// What an accessor throws when a value holds another type than the one asked for:
// "read as a string, but it holds an integer".
class ValueTypeError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class Value {
 public:
  using String = std::basic_string<char, std::char_traits<char>, internal::PoolAllocator<char>>;
  using Array = std::vector<Value, internal::PoolAllocator<Value>>;
  using Member = std::pair<std::string, Value>;
  using Object = std::vector<Member, internal::PoolAllocator<Member>>;
  enum class Type : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

  Value() = default;
  Value(std::nullptr_t) {}  // NOLINT(google-explicit-constructor)
  Value(bool b) : v_(b) {}  // NOLINT(google-explicit-constructor)
  // Every integer type (int, size_t, long long, uint32_t, ...): an int, or a double for an
  // unsigned value beyond int64 (as JSON numbers beyond int64 parse).
  template <std::integral I>
  requires(!std::same_as<I, bool> && !std::same_as<I, char>)
      Value(I i) {  // NOLINT(google-explicit-constructor)
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(int64_t)) {
      if (i > static_cast<I>(INT64_MAX)) {
        v_ = static_cast<double>(i);
        return;
      }
    }
    v_ = static_cast<int64_t>(i);
  }
  Value(double d) : v_(d) {}               // NOLINT(google-explicit-constructor)
  Value(const char* s) : v_(String(s)) {}  // NOLINT(google-explicit-constructor)
  Value(const std::string& s) : v_(String(s.data(), s.size())) {}  // NOLINT
  Value(std::string_view s) : v_(String(s.data(), s.size())) {}    // NOLINT
  Value(Array a) : v_(std::move(a)) {}   // NOLINT(google-explicit-constructor)
  Value(Object o) : v_(std::move(o)) {}  // NOLINT(google-explicit-constructor)

  // Assigning a number or a bool writes it in place when this already holds that type (a
  // record slot rewritten event after event), without building a Value to move in.
  template <std::integral I>
  requires(!std::same_as<I, bool> && !std::same_as<I, char>) Value& operator=(I i) {
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(int64_t)) {
      if (i > static_cast<I>(INT64_MAX)) return *this = static_cast<double>(i);
    }
    Assign<int64_t>(static_cast<int64_t>(i));
    return *this;
  }
  // (Exactly double and bool: a pointer or a float must not pick these by conversion.)
  template <std::same_as<double> D>
  Value& operator=(D d) {
    Assign<double>(d);
    return *this;
  }
  template <std::same_as<bool> B>
  Value& operator=(B b) {
    Assign<bool>(b);
    return *this;
  }

  // Exchanges two values without copying what they hold (a string's, an array's or an object's
  // memory changes hands).
  friend void swap(Value& a, Value& b) noexcept {
    if (a.v_.index() == b.v_.index()) {
      // The common case (a record's field and the one before it) without the variant's visit.
      if (int64_t* i = std::get_if<int64_t>(&a.v_)) {
        return std::swap(*i, *std::get_if<int64_t>(&b.v_));
      }
      if (String* s = std::get_if<String>(&a.v_)) return s->swap(*std::get_if<String>(&b.v_));
    }
    a.v_.swap(b.v_);
  }

  // {"a": 1, "b": "x"} as MakeObject({{"a", 1}, {"b", "x"}}). Each value is copied (or
  // converted) once, into the list, and moved out of it; Object{{...}} copies it twice.
  struct MemberInit;
  static Value MakeObject(std::initializer_list<MemberInit> members);
  // [1, "x"] as MakeArray({1, "x"}), each element copied (or converted) once, as by MakeObject;
  // Array{...} copies it twice.
  struct ElementInit;
  static Value MakeArray(std::initializer_list<ElementInit> elements);

  static constexpr size_t kMaxJsonBytes = size_t{64} << 20;
  static constexpr int kMaxDepth = 512;

  // Parses one JSON document (RFC 8259; trailing whitespace allowed, nothing else after it).
  // Errors are kInvalidArgument with the parser's reason (malformed, invalid UTF-8, too deep,
  // too large).
  static Result<Value> Parse(std::string_view json);
  // The same, into this value, reusing its memory. On error this value is null.
  Status AssignJson(std::string_view json);
  // Makes this the string `s`, reusing this string's buffer if this is a string.
  void AssignString(std::string_view s);

  // Rewrites an object member by member, in order, reusing the member that already sits at each
  // position (its name's and its value's memory). Members past the last one added are dropped
  // when the writer is destroyed.
  //   { Value::ObjectWriter w(v); w.Add("id") = 7; w.Add("name").AssignString(name); }
  class ObjectWriter {
   public:
    // Makes `target` an object (keeping its members for reuse if it is one).
    explicit ObjectWriter(Value& target);
    ~ObjectWriter();
    ObjectWriter(const ObjectWriter&) = delete;
    ObjectWriter& operator=(const ObjectWriter&) = delete;
    // The value of the next member, named `name`: the reused slot's old value until written.
    // Inline: a source writes every member of every record through it.
    Value& Add(std::string_view name) {
      if (next_ == end_) [[unlikely]]
        return Append(name);
      Member& member = *next_++;
      if (!internal::SameName(member.first, name)) member.first.assign(name);
      return member.second;
    }

   private:
    Value& Append(std::string_view name);  // a member past those the object had
    ptrdiff_t Used() const { return next_ - members_->data(); }
    Object* members_;
    Member* next_;  // the member the next Add reuses
    Member* end_;   // past the last member the object had (or appended)
  };
  // The same for the items of an array.
  class ArrayWriter {
   public:
    explicit ArrayWriter(Value& target);
    ~ArrayWriter();
    ArrayWriter(const ArrayWriter&) = delete;
    ArrayWriter& operator=(const ArrayWriter&) = delete;
    Value& Add();

   private:
    Array* items_;
    size_t used_ = 0;
  };

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

  // Accessors: ValueTypeError if the value holds another type. as_double() widens an int (the
  // JSON number 1 is an int); nothing else converts.
  bool as_bool() const { return Get<bool>(); }
  int64_t as_int() const { return Get<int64_t>(); }
  double as_double() const {
    if (const int64_t* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
    return Get<double>();
  }
  double as_number() const { return as_double(); }
  std::string_view as_string() const { return Get<String>(); }
  // The string itself, to change in place (a packed state rewritten event after event).
  String& mutable_string() { return Get<String>(); }
  const Array& as_array() const { return Get<Array>(); }
  Array& as_array() { return Get<Array>(); }
  const Object& as_object() const { return Get<Object>(); }
  Object& as_object() { return Get<Object>(); }

  // The member `name` of an object; nullptr if this is not an object or has no such member.
  const Value* Find(std::string_view name) const;
  Value* Find(std::string_view name);
  // A member by dotted path ("user.address.city"); nullptr if any step is missing.
  const Value* FindPath(std::string_view dotted_path) const;
  // The member at `dotted_path` if it has the type asked for (GetDouble: an int or a double);
  // nullopt if this is not an object, the member is missing, or it holds another type.
  //   double amount = v.GetDouble("amount").value_or(0);
  std::optional<int64_t> GetInt(std::string_view dotted_path) const;
  std::optional<double> GetDouble(std::string_view dotted_path) const;
  std::optional<std::string_view> GetString(std::string_view dotted_path) const;
  std::optional<bool> GetBool(std::string_view dotted_path) const;
  // Sets member `name` (replacing an existing one). REQUIRES: object or null (null becomes {}).
  Value& Set(std::string_view name, Value value);

  // Appends the JSON text of this value to `out` (compact, no spaces).
  void AppendJson(std::string& out) const;
  std::string ToJson() const;

  // A compact binary form for state stores and internal topics: smaller than JSON text, and read
  // without a parse (a tag byte, then varints and length-prefixed bytes).
  void AppendBinary(std::string& out) const;
  // Decodes one value from the front of `in`, advancing it. kCorruption on malformed bytes.
  static Result<Value> ReadBinary(std::string_view& in);
  // The same into this value, reusing its memory as AssignJson does. On error this value is null
  // and `in` is somewhere past where it started.
  Status AssignBinary(std::string_view& in);

  friend bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

 private:
  // Throws ValueTypeError: read as `wanted`, but holds TypeName().
  [[noreturn]] void WrongType(Type wanted) const;
  template <typename T>
  const T& Get() const {
    const T* p = std::get_if<T>(&v_);
    if (p == nullptr) [[unlikely]]
      WrongType(TypeOf<T>());
    return *p;
  }
  template <typename T>
  T& Get() {
    T* p = std::get_if<T>(&v_);
    if (p == nullptr) [[unlikely]]
      WrongType(TypeOf<T>());
    return *p;
  }
  template <typename T>
  void Assign(T scalar) {
    if (T* p = std::get_if<T>(&v_)) {
      *p = scalar;
    } else {
      v_.template emplace<T>(scalar);
    }
  }
  template <typename T>
  static constexpr Type TypeOf() {
    if constexpr (std::is_same_v<T, bool>) return Type::kBool;
    if constexpr (std::is_same_v<T, int64_t>) return Type::kInt;
    if constexpr (std::is_same_v<T, double>) return Type::kDouble;
    if constexpr (std::is_same_v<T, String>) return Type::kString;
    if constexpr (std::is_same_v<T, Array>) return Type::kArray;
    if constexpr (std::is_same_v<T, Object>) return Type::kObject;
    return Type::kNull;
  }

  std::variant<std::nullptr_t, bool, int64_t, double, String, Array, Object> v_{nullptr};
};

// One member of MakeObject's list: a name and anything a Value is made of. The value is mutable
// so that MakeObject can move it out of the list, whose elements are const.
struct Value::MemberInit {
  template <typename T>
  MemberInit(std::string_view member_name, T&& member_value)  // NOLINT(google-explicit-constructor)
      : name(member_name), value(std::forward<T>(member_value)) {}
  std::string_view name;
  mutable Value value;
};

inline Value Value::MakeObject(std::initializer_list<MemberInit> members) {
  Object object;
  object.reserve(members.size());
  for (const MemberInit& m : members) object.emplace_back(std::string(m.name), std::move(m.value));
  return Value(std::move(object));
}

// One element of MakeArray's list, moved out of it as a MemberInit's value is.
struct Value::ElementInit {
  template <typename T>
    requires std::constructible_from<Value, T&&>
  ElementInit(T&& element)  // NOLINT(google-explicit-constructor)
      : value(std::forward<T>(element)) {}
  mutable Value value;
};

inline Value Value::MakeArray(std::initializer_list<ElementInit> elements) {
  Array array;
  array.reserve(elements.size());
  for (const ElementInit& e : elements) array.push_back(std::move(e.value));
  return Value(std::move(array));
}

// Appends `s` to `out` as a JSON string literal, with quotes and escapes.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace weir
