#include "weir/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/binary_value.h"
#include "core/coding.h"
#include "simdjson.h"

namespace weir {

namespace {

// Writes `e` into `target` in place. False if arrays and objects nest deeper than `levels_left`
// (simdjson's own depth limit does not count an innermost empty container).
bool AssignDom(simdjson::dom::element e, Value& target, int levels_left) {
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      target = Value();
      return true;
    case simdjson::dom::element_type::BOOL:
      target = Value(bool(e.get_bool().value_unsafe()));
      return true;
    case simdjson::dom::element_type::INT64:
      target = Value(int64_t(e.get_int64().value_unsafe()));
      return true;
    case simdjson::dom::element_type::UINT64:
      target = Value(double(e.get_uint64().value_unsafe()));
      return true;
    case simdjson::dom::element_type::DOUBLE:
      target = Value(double(e.get_double().value_unsafe()));
      return true;
    case simdjson::dom::element_type::STRING:
      target.AssignString(std::string_view(e.get_string().value_unsafe()));
      return true;
    case simdjson::dom::element_type::ARRAY: {
      if (levels_left == 0) return false;
      simdjson::dom::array array = e.get_array().value_unsafe();
      Value::ArrayWriter items(target);
      for (simdjson::dom::element item : array) {
        if (!AssignDom(item, items.Add(), levels_left - 1)) return false;
      }
      return true;
    }
    case simdjson::dom::element_type::OBJECT: {
      if (levels_left == 0) return false;
      simdjson::dom::object object = e.get_object().value_unsafe();
      Value::ObjectWriter members(target);
      for (simdjson::dom::key_value_pair kv : object) {
        if (!AssignDom(kv.value, members.Add(kv.key), levels_left - 1)) return false;
      }
      return true;
    }
  }
  target = Value();
  return true;
}

enum BinaryTag : uint8_t {
  kTagNull = 0,
  kTagFalse = 1,
  kTagTrue = 2,
  kTagInt = 3,
  kTagDouble = 4,
  kTagString = 5,
  kTagArray = 6,
  kTagObject = 7,
};

constexpr int kMaxBinaryDepth = 512;

// Writes the value at the front of `in` into `target` in place (as AssignDom does), advancing
// `in`. kCorruption naming what is malformed; `target` then holds a partial value.
Status AssignBinaryAt(std::string_view& in, Value& target, int depth) {
  if (in.empty()) return Status::Corruption("value: truncated");
  if (depth > kMaxBinaryDepth) return Status::Corruption("value: nesting too deep");
  uint8_t tag = static_cast<uint8_t>(in[0]);
  in.remove_prefix(1);
  uint64_t n;
  switch (tag) {
    case kTagNull:
      target = Value();
      return Status::OK();
    case kTagFalse:
    case kTagTrue:
      target = tag == kTagTrue;
      return Status::OK();
    case kTagInt:
      if (!coding::GetVarint64(in, n)) return Status::Corruption("value: bad int");
      target = coding::UnZigZag(n);
      return Status::OK();
    case kTagDouble: {
      if (!coding::GetFixed64(in, n)) return Status::Corruption("value: bad double");
      double d;
      std::memcpy(&d, &n, 8);
      target = d;
      return Status::OK();
    }
    case kTagString: {
      std::string_view s;
      if (!coding::GetLengthPrefixed(in, s)) return Status::Corruption("value: bad string");
      target.AssignString(s);
      return Status::OK();
    }
    case kTagArray: {
      // Each item takes at least a byte: a count beyond what is left is corrupt.
      if (!coding::GetVarint64(in, n) || n > in.size()) {
        return Status::Corruption("value: bad array");
      }
      Value::ArrayWriter items(target);
      for (uint64_t i = 0; i < n; ++i) {
        WEIR_RETURN_IF_ERROR(AssignBinaryAt(in, items.Add(), depth + 1));
      }
      return Status::OK();
    }
    case kTagObject: {
      if (!coding::GetVarint64(in, n) || n > in.size()) {
        return Status::Corruption("value: bad object");
      }
      Value::ObjectWriter members(target);
      for (uint64_t i = 0; i < n; ++i) {
        std::string_view name;
        if (!coding::GetLengthPrefixed(in, name)) return Status::Corruption("value: bad member");
        WEIR_RETURN_IF_ERROR(AssignBinaryAt(in, members.Add(name), depth + 1));
      }
      return Status::OK();
    }
    default:
      return Status::Corruption("value: unknown tag " + std::to_string(tag));
  }
}

}  // namespace

Result<Value> Value::Parse(std::string_view json) {
  Value value;
  WEIR_RETURN_IF_ERROR(value.AssignJson(json));
  return value;
}

namespace {
Status TooDeep() {
  return Status::InvalidArgument("JSON nested deeper than the limit of " +
                                 std::to_string(Value::kMaxDepth) + " levels");
}
}  // namespace

Status Value::AssignJson(std::string_view json) {
  // One parser per thread: its buffers grow to the largest document seen and are reused.
  thread_local simdjson::dom::parser parser(kMaxJsonBytes);
  // simdjson's depth counts the document itself as a level: kMaxDepth levels of nesting with a
  // value inside need one more.
  thread_local bool limited = parser.allocate(4096, kMaxDepth + 1) == simdjson::SUCCESS;
  simdjson::dom::element root;
  auto error = limited ? parser.parse(json.data(), json.size()).get(root) : simdjson::MEMALLOC;
  if (error) {
    *this = Value();
    if (json.size() > kMaxJsonBytes) {
      return Status::InvalidArgument("JSON document of " + std::to_string(json.size()) +
                                     " bytes is over the limit of " +
                                     std::to_string(kMaxJsonBytes));
    }
    if (error == simdjson::NUMBER_ERROR) {
      return Status::InvalidArgument(
          "malformed JSON: a number out of range (an integer beyond 64 bits or a number beyond a "
          "double's range) or malformed");
    }
    if (error == simdjson::DEPTH_ERROR) return TooDeep();
    return Status::InvalidArgument(std::string("malformed JSON: ") +
                                   simdjson::error_message(error));
  }
  if (!AssignDom(root, *this, kMaxDepth)) {
    *this = Value();
    return TooDeep();
  }
  return Status::OK();
}

void Value::AssignString(std::string_view s) {
  if (String* current = std::get_if<String>(&v_)) {
    current->assign(s.data(), s.size());
  } else {
    v_ = String(s.data(), s.size());
  }
}

Value::ObjectWriter::ObjectWriter(Value& target) {
  if (!target.is_object()) target.v_ = Object();
  members_ = &std::get<Object>(target.v_);
  next_ = members_->data();
  end_ = next_ + members_->size();
}

Value::ObjectWriter::~ObjectWriter() {
  members_->erase(members_->begin() + Used(), members_->end());
}

Value& Value::ObjectWriter::Append(std::string_view name) {
  Value& added = members_->emplace_back(std::string(name), Value()).second;
  next_ = end_ = members_->data() + members_->size();
  return added;
}

Value::ArrayWriter::ArrayWriter(Value& target) {
  if (!target.is_array()) target.v_ = Array();
  items_ = &std::get<Array>(target.v_);
}

Value::ArrayWriter::~ArrayWriter() {
  items_->erase(items_->begin() + static_cast<ptrdiff_t>(used_), items_->end());
}

Value& Value::ArrayWriter::Add() {
  if (used_ == items_->size()) items_->emplace_back(nullptr);
  return (*items_)[used_++];
}

namespace {
std::string_view NameOf(Value::Type type) {
  switch (type) {
    case Value::Type::kNull:
      return "null";
    case Value::Type::kBool:
      return "bool";
    case Value::Type::kInt:
      return "integer";
    case Value::Type::kDouble:
      return "number";
    case Value::Type::kString:
      return "string";
    case Value::Type::kArray:
      return "array";
    case Value::Type::kObject:
      return "object";
  }
  return "unknown";
}
}  // namespace

std::string_view Value::TypeName() const { return NameOf(type()); }

void Value::WrongType(Type wanted) const {
  constexpr size_t kShownBytes = 64;
  std::string shown = ToJson();
  if (shown.size() > kShownBytes) shown.replace(kShownBytes, std::string::npos, "...");
  throw ValueTypeError("read as " + std::string(NameOf(wanted)) + ", but holds " +
                       std::string(TypeName()) + " " + shown);
}

const Value* Value::Find(std::string_view name) const {
  const Object* o = std::get_if<Object>(&v_);
  if (o == nullptr) return nullptr;
  for (const Member& m : *o) {
    if (internal::SameName(m.first, name)) return &m.second;
  }
  return nullptr;
}

Value* Value::Find(std::string_view name) {
  return const_cast<Value*>(static_cast<const Value*>(this)->Find(name));
}

const Value* Value::FindPath(std::string_view path) const {
  const Value* v = this;
  while (v != nullptr) {
    size_t dot = path.find('.');
    v = v->Find(path.substr(0, dot));
    if (dot == std::string_view::npos) return v;
    path.remove_prefix(dot + 1);
  }
  return nullptr;
}

namespace {
// The member at `path` read by `read` if `holds` says it has the type; nullopt otherwise.
template <typename T>
std::optional<T> TypedMember(const Value& v, std::string_view path, bool (Value::*holds)() const,
                             T (Value::*read)() const) {
  const Value* member = v.FindPath(path);
  if (member == nullptr || !(member->*holds)()) return std::nullopt;
  return (member->*read)();
}
}  // namespace

std::optional<int64_t> Value::GetInt(std::string_view dotted_path) const {
  return TypedMember(*this, dotted_path, &Value::is_int, &Value::as_int);
}
std::optional<double> Value::GetDouble(std::string_view dotted_path) const {
  return TypedMember(*this, dotted_path, &Value::is_number, &Value::as_double);
}
std::optional<std::string_view> Value::GetString(std::string_view dotted_path) const {
  return TypedMember(*this, dotted_path, &Value::is_string, &Value::as_string);
}
std::optional<bool> Value::GetBool(std::string_view dotted_path) const {
  return TypedMember(*this, dotted_path, &Value::is_bool, &Value::as_bool);
}

Value& Value::Set(std::string_view name, Value value) {
  if (is_null()) v_ = Object();
  if (Value* existing = Find(name)) {
    *existing = std::move(value);
    return *existing;
  }
  Object& o = as_object();
  o.emplace_back(std::string(name), std::move(value));
  return o.back().second;
}

namespace {

// 16 bytes of a string being written, scanned for escapes and stored at the cursor at once: a
// vector register where SSE2 is there.
#if defined(__SSE2__)
using Block16 = __m128i;
[[gnu::always_inline]] inline Block16 LoadBlock16(const char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
// Bytes 0-7 from `low`, 8-15 from `high` (little-endian), built in registers.
[[gnu::always_inline]] inline Block16 MakeBlock16(uint64_t low, uint64_t high) {
  return _mm_set_epi64x(static_cast<int64_t>(high), static_cast<int64_t>(low));
}
[[gnu::always_inline]] inline void StoreBlock16(char* out, Block16 block) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), block);
}
// Bit i set when byte i needs escaping in a JSON string: a control character (< 0x20), '"' or
// '\\'. Exact for every byte value.
[[gnu::always_inline]] inline unsigned EscapeMarks16(Block16 bytes) {
  const __m128i control =
      _mm_cmpeq_epi8(_mm_max_epu8(bytes, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));  // <= 0x1f
  const __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  return static_cast<unsigned>(
      _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash))));
}
#else
struct Block16 {
  char bytes[16];
};
inline Block16 LoadBlock16(const char* p) {
  Block16 block;
  std::memcpy(block.bytes, p, 16);
  return block;
}
inline Block16 MakeBlock16(uint64_t low, uint64_t high) {
  Block16 block;
  for (int i = 0; i < 8; ++i) {
    block.bytes[i] = static_cast<char>(low >> (8 * i));
    block.bytes[8 + i] = static_cast<char>(high >> (8 * i));
  }
  return block;
}
inline void StoreBlock16(char* out, const Block16& block) { std::memcpy(out, block.bytes, 16); }
inline unsigned EscapeMarks16(const Block16& block) {
  unsigned marks = 0;
  for (unsigned i = 0; i < 16; ++i) {
    const auto c = static_cast<unsigned char>(block.bytes[i]);
    if (c < 0x20 || c == '"' || c == '\\') marks |= 1U << i;
  }
  return marks;
}
#endif

// The first `n` (1 to 15) bytes at `p`, then bytes that need no escape ('a'), without reading
// past p + n. Built from loads of 8 or 4 bytes combined in registers: written to the stack as
// pieces and read back as one 16-byte block, it stalled on store forwarding (a third of the
// time of writing a Nexmark bid's strings).
[[gnu::always_inline]] inline Block16 LoadShort16(const char* p, size_t n) {
  constexpr uint64_t kFill = 0x6161'6161'6161'6161;  // "aaaaaaaa"
  using internal::LoadWord;
  if (n >= 8) {
    // Bytes 8..n-1 are the top n-8 bytes of the word that ends at p + n.
    const unsigned high_bytes = static_cast<unsigned>(n - 8);
    const uint64_t high = high_bytes == 0
                              ? kFill
                              : (LoadWord<uint64_t>(p + n - 8) >> (8 * (8 - high_bytes))) |
                                    (kFill << (8 * high_bytes));
    return MakeBlock16(LoadWord<uint64_t>(p), high);
  }
  uint64_t low;
  if (n >= 4) {
    // Two words of 4 that overlap on equal bytes when n < 8.
    low = uint64_t{LoadWord<uint32_t>(p)} |
          (uint64_t{LoadWord<uint32_t>(p + n - 4)} << (8 * (n - 4)));
  } else {
    low = 0;
    for (size_t i = 0; i < n; ++i) low |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  }
  return MakeBlock16(low | (kFill << (8 * n)), kFill);
}

// The 8 decimal digits of n < 10^8, zero-padded, as ASCII in the bytes of a word (the first digit
// in the lowest byte) without a division: n splits into two halves of 4 digits in 32-bit lanes,
// each into two pairs in 16-bit lanes, each into a digit per byte, every split a multiply and a
// shift (x * 10486 >> 20 is x / 100 below 10^4; x * 103 >> 10 is x / 10 below 100) that keeps each
// lane's product inside the lane. Lemire's "fast integer formatting" method.
inline uint64_t EightDigits(uint32_t n) {
  const uint64_t halves = (n / 10000) | (uint64_t{n % 10000} << 32);
  const uint64_t high_pairs = ((halves * 10486) >> 20) & 0x0000'007F'0000'007F;
  const uint64_t pairs = high_pairs | ((halves - 100 * high_pairs) << 16);
  const uint64_t tens = ((pairs * 103) >> 10) & 0x000F'000F'000F'000F;
  const uint64_t digits = tens | ((pairs - 10 * tens) << 8);
  return digits;
}

// The digits of 0 < n < 10^8 without leading zeros at `out`; returns their end. Stores 8 bytes.
inline char* WriteUpToEightDigits(char* out, uint32_t n) {
  const uint64_t digits = EightDigits(n);
  // The leading zero digits are the lowest zero bytes; n > 0 has a non-zero one.
  const int leading_zeros = __builtin_ctzll(digits) / 8;
  const uint64_t ascii = (digits + 0x3030'3030'3030'3030) >> (8 * leading_zeros);
  std::memcpy(out, &ascii, 8);
  return out + 8 - leading_zeros;
}

inline char* WriteEightDigits(char* out, uint32_t n) {
  const uint64_t ascii = EightDigits(n) + 0x3030'3030'3030'3030;
  std::memcpy(out, &ascii, 8);
  return out + 8;
}

// The decimal form of `v` at `out` (std::to_chars's digits); returns its end. Stores up to
// kMostDecimalBytes bytes from `out`, past the end it returns.
constexpr size_t kMostDecimalBytes = 20;
inline char* WriteDecimal(char* out, int64_t v) {
  uint64_t magnitude = static_cast<uint64_t>(v);
  if (v < 0) {
    *out++ = '-';
    magnitude = 0 - magnitude;  // INT64_MIN's magnitude too
  }
  constexpr uint64_t kEight = 100'000'000;
  if (magnitude < kEight) {
    if (magnitude == 0) {
      *out = '0';
      return out + 1;
    }
    return WriteUpToEightDigits(out, static_cast<uint32_t>(magnitude));
  }
  const uint64_t high = magnitude / kEight;
  const auto low = static_cast<uint32_t>(magnitude % kEight);
  if (high < kEight) {
    out = WriteUpToEightDigits(out, static_cast<uint32_t>(high));
  } else {
    out = WriteUpToEightDigits(out, static_cast<uint32_t>(high / kEight));  // < 10^4
    out = WriteEightDigits(out, static_cast<uint32_t>(high % kEight));
  }
  return WriteEightDigits(out, low);
}

// Writes at the end of a std::string through a raw cursor. Room is made ahead (the string grows
// past what is written, then is cut back to it when the writer goes), so that a byte written is
// a store: std::string's push_back and append are calls (libstdc++ instantiates std::string
// once, out of line), each with its capacity check and length update.
class CursorWriter {
 public:
  CursorWriter(const CursorWriter&) = delete;
  CursorWriter& operator=(const CursorWriter&) = delete;

 protected:
  explicit CursorWriter(std::string& out) : out_(out), start_(out.size()) { Grow(kFirstRoom); }
  ~CursorWriter() { out_.resize(static_cast<size_t>(cursor_ - out_.data())); }

  static constexpr size_t kFirstRoom = 256;

  // At least `n` bytes writable at the cursor.
  [[gnu::always_inline]] void Room(size_t n) {
    if (static_cast<size_t>(end_ - cursor_) < n) [[unlikely]]
      Grow(n);
  }
  void Grow(size_t n) {
    const size_t used = cursor_ == nullptr ? start_ : static_cast<size_t>(cursor_ - out_.data());
    // Room doubles with what this writer has written, never with what `out` held before it.
    out_.resize(used + std::max({n, kFirstRoom, used - start_}));
    cursor_ = out_.data() + used;
    end_ = out_.data() + out_.size();
  }
  [[gnu::always_inline]] void Byte(char c) {
    Room(1);
    *cursor_++ = c;
  }
  [[gnu::always_inline]] void Bytes(const char* data, size_t n) {
    Room(n);
    std::memcpy(cursor_, data, n);
    cursor_ += n;
  }

  std::string& out_;
  size_t start_;  // where this writer began in `out`
  char* cursor_ = nullptr;
  char* end_ = nullptr;
};

// JSON text (Value::AppendJson, AppendJsonString).
class JsonWriter : public CursorWriter {
 public:
  explicit JsonWriter(std::string& out) : CursorWriter(out) {}

  void String(std::string_view s);
  void Value(const weir::Value& v);

 private:
  void Int(int64_t i) {
    Room(kMostDecimalBytes);
    cursor_ = WriteDecimal(cursor_, i);
  }
  void Double(double d);
  // The escape of `c`, a byte that needs one.
  void Escape(unsigned char c);
};

// The binary form (Value::AppendBinary): a tag byte, then varints, fixed 64-bit doubles and
// length-prefixed bytes (ReadBinaryAt's format).
class BinaryWriter : public CursorWriter {
 public:
  explicit BinaryWriter(std::string& out) : CursorWriter(out) {}

  void Value(const weir::Value& v);

 private:
  [[gnu::always_inline]] void Tag(BinaryTag tag) { Byte(static_cast<char>(tag)); }
  [[gnu::always_inline]] void Varint(uint64_t v) {
    Room(10);
    cursor_ = coding::EncodeVarint64(cursor_, v);
  }
  [[gnu::always_inline]] void LengthPrefixed(std::string_view s) {
    Varint(s.size());
    Bytes(s.data(), s.size());
  }
};

void BinaryWriter::Value(const weir::Value& v) {
  switch (v.type()) {
    case weir::Value::Type::kNull:
      return Tag(kTagNull);
    case weir::Value::Type::kBool:
      return Tag(v.as_bool() ? kTagTrue : kTagFalse);
    case weir::Value::Type::kInt:
      Tag(kTagInt);
      return Varint(coding::ZigZag(v.as_int()));
    case weir::Value::Type::kDouble: {
      Tag(kTagDouble);
      const double d = v.as_double();
      return Bytes(reinterpret_cast<const char*>(&d), 8);
    }
    case weir::Value::Type::kString:
      Tag(kTagString);
      return LengthPrefixed(v.as_string());
    case weir::Value::Type::kArray:
      Tag(kTagArray);
      Varint(v.as_array().size());
      for (const weir::Value& item : v.as_array()) Value(item);
      return;
    case weir::Value::Type::kObject:
      Tag(kTagObject);
      Varint(v.as_object().size());
      for (const weir::Value::Member& m : v.as_object()) {
        LengthPrefixed(m.first);
        Value(m.second);
      }
      return;
  }
}

void JsonWriter::Double(double d) {
  if (!std::isfinite(d)) {
    Bytes("null", 4);
    return;
  }
  Room(34);
  char* const begin = cursor_;
  cursor_ = std::to_chars(cursor_, cursor_ + 32, d).ptr;
  // An integral double keeps a ".0" so that it reads back as a double, not an int.
  if (std::find_if(begin, cursor_, [](char c) { return c == '.' || c == 'e'; }) == cursor_) {
    *cursor_++ = '.';
    *cursor_++ = '0';
  }
}

void JsonWriter::Escape(unsigned char c) {
  static constexpr std::string_view kShort = "\"\\\n\r\t\b\f";  // written as \ + kLetter
  static constexpr std::string_view kLetter = "\"\\nrtbf";
  static constexpr char kHex[] = "0123456789abcdef";
  if (const size_t at = kShort.find(static_cast<char>(c)); at != std::string_view::npos) {
    const char esc[2] = {'\\', kLetter[at]};
    Bytes(esc, 2);
  } else {
    const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
    Bytes(esc, 6);
  }
}

void JsonWriter::String(std::string_view s) {
  const char* data = s.data();
  size_t left = s.size();
  // Scans and copies 16 bytes at a time in one pass: a block is stored whole at the cursor,
  // which then moves past the bytes before the first one that needs escaping. So room for what
  // is left unescaped, one block past it and the closing quote; made again after each escape.
  Room(left + 2 + 16);
  *cursor_++ = '"';
  while (left > 0) {
    const Block16 block = left >= 16 ? LoadBlock16(data) : LoadShort16(data, left);
    StoreBlock16(cursor_, block);
    const unsigned marks = EscapeMarks16(block);
    const size_t clean = marks == 0 ? 16 : static_cast<size_t>(__builtin_ctz(marks));
    if (clean >= left) {
      cursor_ += left;
      break;
    }
    cursor_ += clean;
    data += clean;
    left -= clean;
    if (clean == 16) continue;
    Escape(static_cast<unsigned char>(*data));
    ++data;
    --left;
    Room(left + 1 + 16);
  }
  *cursor_++ = '"';
}

void JsonWriter::Value(const weir::Value& v) {
  switch (v.type()) {
    case weir::Value::Type::kNull:
      Bytes("null", 4);
      return;
    case weir::Value::Type::kBool:
      if (v.as_bool()) {
        Bytes("true", 4);
      } else {
        Bytes("false", 5);
      }
      return;
    case weir::Value::Type::kInt:
      Int(v.as_int());
      return;
    case weir::Value::Type::kDouble:
      Double(v.as_double());
      return;
    case weir::Value::Type::kString:
      String(v.as_string());
      return;
    case weir::Value::Type::kArray: {
      Byte('[');
      bool first = true;
      for (const weir::Value& item : v.as_array()) {
        if (!first) Byte(',');
        first = false;
        Value(item);
      }
      Byte(']');
      return;
    }
    case weir::Value::Type::kObject: {
      Byte('{');
      bool first = true;
      for (const weir::Value::Member& m : v.as_object()) {
        if (!first) Byte(',');
        first = false;
        String(m.first);
        Byte(':');
        Value(m.second);
      }
      Byte('}');
      return;
    }
  }
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) { JsonWriter(out).String(s); }

void Value::AppendJson(std::string& out) const { JsonWriter(out).Value(*this); }

std::string Value::ToJson() const {
  std::string out;
  AppendJson(out);
  return out;
}

void Value::AppendBinary(std::string& out) const { BinaryWriter(out).Value(*this); }

Result<Value> Value::ReadBinary(std::string_view& in) {
  Value value;
  WEIR_RETURN_IF_ERROR(value.AssignBinary(in));
  return value;
}

Status Value::AssignBinary(std::string_view& in) {
  Status s = AssignBinaryAt(in, *this, 0);
  if (!s.ok()) *this = Value();
  return s;
}

Status AssignWholeBinary(std::string_view bytes, Value& into) {
  WEIR_RETURN_IF_ERROR(into.AssignBinary(bytes));
  if (bytes.empty()) return Status::OK();
  into = Value();
  return Status::Corruption("bytes after the value");
}

}  // namespace weir
