#include "sql/column_batch.h"

#include <string>

#include "weir/status.h"

namespace weir::sql {
namespace {

// The length of the valid UTF-8 sequence at the start of `p` (n > 0 bytes), or 0 if there is none
// (a stray continuation byte, a truncated sequence, an overlong form, a surrogate, or a code point
// beyond U+10FFFF).
size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  const unsigned char b = p[0];
  if (b < 0x80) return 1;
  size_t length = 0;
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3;
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4;
  } else {
    return 0;
  }
  if (n < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
  }
  if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] > 0x9F) || (b == 0xF0 && p[1] < 0x90) ||
      (b == 0xF4 && p[1] > 0x8F)) {
    return 0;
  }
  return length;
}

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

}  // namespace

std::string_view ColumnBatchTypeName(ColumnBatch::Type type) {
  switch (type) {
    case ColumnBatch::Type::kBigInt:
      return "BIGINT";
    case ColumnBatch::Type::kDouble:
      return "DOUBLE";
    case ColumnBatch::Type::kVarchar:
      return "VARCHAR";
    case ColumnBatch::Type::kBoolean:
      return "BOOLEAN";
    case ColumnBatch::Type::kTimestampMs:
      return "TIMESTAMP (ms)";
    case ColumnBatch::Type::kJson:
      return "JSON";
    case ColumnBatch::Type::kBlob:
      return "BLOB";
  }
  return "?";
}

std::string_view ColumnBatchSqlType(ColumnBatch::Type type) {
  return type == ColumnBatch::Type::kTimestampMs ? "TIMESTAMP" : ColumnBatchTypeName(type);
}

void ColumnBatch::Reset(std::vector<std::pair<std::string, Type>> columns) {
  bool same = columns.size() == columns_.size();
  for (size_t i = 0; same && i < columns.size(); ++i) {
    same = columns[i].first == columns_[i].name && columns[i].second == columns_[i].type;
  }
  if (same) {
    Clear();
    return;
  }
  columns_.clear();
  columns_.resize(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    columns_[i].name = std::move(columns[i].first);
    columns_[i].type = columns[i].second;
  }
  invalid_utf8_strings_ = 0;
}

void ColumnBatch::Clear() {
  for (Storage& c : columns_) {
    c.ints.clear();
    c.doubles.clear();
    c.bools.clear();
    c.arena.clear();
    c.ends.clear();
    c.validity.clear();
  }
  invalid_utf8_strings_ = 0;
}

size_t ColumnBatch::values(size_t column) const {
  const Storage& c = columns_[column];
  switch (c.type) {
    case Type::kBigInt:
    case Type::kTimestampMs:
      return c.ints.size();
    case Type::kDouble:
      return c.doubles.size();
    case Type::kBoolean:
      return c.bools.size();
    case Type::kVarchar:
    case Type::kJson:
    case Type::kBlob:
      return c.ends.size();
  }
  return 0;
}

void ColumnBatch::AppendNull(size_t column) {
  Storage& c = At(column);
  const size_t row = values(column);
  switch (c.type) {
    case Type::kBigInt:
    case Type::kTimestampMs:
      c.ints.push_back(0);
      break;
    case Type::kDouble:
      c.doubles.push_back(0);
      break;
    case Type::kBoolean:
      c.bools.push_back(0);
      break;
    case Type::kVarchar:
    case Type::kJson:
    case Type::kBlob:
      c.ends.push_back(c.arena.size());
      break;
  }
  const size_t word = row / 64;
  if (c.validity.size() <= word) c.validity.resize(word + 1, ~uint64_t{0});
  c.validity[word] &= ~(uint64_t{1} << (row % 64));
}

void ColumnBatch::WrongType(size_t column, const char* append) const {
  WEIR_CHECK(false, std::string("ColumnBatch::") + append + " to column " + columns_[column].name +
                        " of type " + std::string(ColumnBatchTypeName(columns_[column].type)));
  __builtin_unreachable();
}

void ColumnBatch::NoSuchColumn(size_t column) const {
  WEIR_CHECK(false, "ColumnBatch: no column " + std::to_string(column) + " (the batch has " +
                        std::to_string(columns_.size()) + ")");
  __builtin_unreachable();
}

void ColumnBatch::AppendNonAscii(Storage& c, std::string_view v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  size_t i = 0;
  while (i < v.size()) {
    size_t length = Utf8SequenceLength(p + i, v.size() - i);
    if (length == 0) break;
    i += length;
  }
  if (i == v.size()) {
    c.arena.append(v.data(), v.size());
    c.ends.push_back(c.arena.size());
    return;
  }
  ++invalid_utf8_strings_;
  c.arena.append(v.data(), i);
  while (i < v.size()) {
    size_t length = Utf8SequenceLength(p + i, v.size() - i);
    if (length == 0) {
      c.arena.append(kReplacementCharacter);
      ++i;
    } else {
      c.arena.append(v.data() + i, length);
      i += length;
    }
  }
  c.ends.push_back(c.arena.size());
}

}  // namespace weir::sql
