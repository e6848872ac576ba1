// ColumnBatch: rows built in memory, column by column, for DuckDB to scan through
// Database::RegisterBatchScan (the lake writes topics to Parquet this way).
//
// Contract: Reset() names the columns and their types; each Append* call adds the next value of
// one column. A column's values are stored contiguously in the batch's own buffers (one vector of
// numbers per column; for text one byte arena plus end offsets), so that a scan copies numbers a
// chunk at a time and appending a string allocates nothing once the buffers have grown to the
// batch's size: Clear() drops the rows and keeps the capacity.
// Appending to a column of another type (AppendInt to a kVarchar column), or to a column that does
// not exist, is a bug in the caller and stops the process (WEIR_CHECK). Columns of unequal length
// are not checked here: a statement that scans such a batch fails with kInvalidArgument.
// Text must be UTF-8 for DuckDB; AppendText replaces each byte of an invalid sequence with U+FFFD
// and counts the string in invalid_utf8_strings(), so bad data reaches the file visibly instead of
// corrupting DuckDB's state.
// Thread safety: none; one thread fills a batch, and it must not change while a statement scans
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::sql {

namespace internal {
struct BatchScan;
}

class ColumnBatch {
 public:
  enum class Type : uint8_t {
    kBigInt,       // int64, AppendInt
    kDouble,       // AppendDouble
    kVarchar,      // AppendText
    kBoolean,      // AppendBool
    kTimestampMs,  // AppendInt of milliseconds since the epoch; DuckDB sees a TIMESTAMP
    kJson,         // AppendText of JSON text; DuckDB sees its JSON type (VARCHAR if json is absent)
    kBlob,         // AppendBytes: any bytes, kept as they are; DuckDB sees a BLOB
  };

  ColumnBatch() = default;
  explicit ColumnBatch(std::vector<std::pair<std::string, Type>> columns) {
    Reset(std::move(columns));
  }

  // Defines the columns (names are SQL column names) and drops every row. The same names and
  // types as now only Clear() the batch.
  void Reset(std::vector<std::pair<std::string, Type>> columns);
  // Drops the rows; keeps the columns and the buffers' capacity.
  void Clear();

  // Values in the first column (0 without columns).
  size_t rows() const { return columns_.empty() ? 0 : values(0); }
  size_t columns() const { return columns_.size(); }
  const std::string& name(size_t column) const { return columns_[column].name; }
  Type type(size_t column) const { return columns_[column].type; }
  // Values appended to `column` since the last Clear().
  size_t values(size_t column) const;
  // Strings since the last Clear() that were not valid UTF-8 (stored with U+FFFD).
  size_t invalid_utf8_strings() const { return invalid_utf8_strings_; }

  // kBigInt, kTimestampMs.
  void AppendInt(size_t column, int64_t v) { IntColumn(column).ints.push_back(v); }
  // kDouble.
  void AppendDouble(size_t column, double v) { DoubleColumn(column).doubles.push_back(v); }
  // kBoolean.
  void AppendBool(size_t column, bool v) { BoolColumn(column).bools.push_back(v ? 1 : 0); }
  // kVarchar, kJson. The bytes are copied into the column's arena.
  void AppendText(size_t column, std::string_view v) {
    Storage& c = TextColumn(column);
    if (!IsAscii(v)) [[unlikely]] {
      AppendNonAscii(c, v);
      return;
    }
    c.arena.append(v.data(), v.size());
    c.ends.push_back(c.arena.size());
  }
  // kBlob. The bytes are copied into the column's arena, unchanged.
  void AppendBytes(size_t column, std::string_view v) {
    Storage& c = At(column);
    if (c.type != Type::kBlob) [[unlikely]]
      WrongType(column, "AppendBytes");
    c.arena.append(v.data(), v.size());
    c.ends.push_back(c.arena.size());
  }
  // Any column.
  void AppendNull(size_t column);

 private:
  friend struct internal::BatchScan;

  struct Storage {
    std::string name;
    Type type = Type::kBigInt;
    std::vector<int64_t> ints;    // kBigInt, kTimestampMs
    std::vector<double> doubles;  // kDouble
    std::vector<uint8_t> bools;   // kBoolean: 0 or 1, DuckDB's layout
    std::string arena;            // kVarchar, kJson, kBlob: the strings' bytes, one after another
    std::vector<uint64_t> ends;   // kVarchar, kJson, kBlob: where string i ends in `arena`
    // Bit r % 64 of word r / 64 is clear when value r is null (DuckDB's validity layout). Rows
    // past the last word are valid, so a column without nulls has no words at all.
    std::vector<uint64_t> validity;
  };

  static bool IsAscii(std::string_view v) {
    constexpr uint64_t kHighBits = 0x8080808080808080ULL;
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= v.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, v.data() + i, 8);
      any |= word;
    }
    for (; i < v.size(); ++i) any |= static_cast<uint8_t>(v[i]);
    return (any & kHighBits) == 0;
  }

  Storage& IntColumn(size_t column) {
    Storage& c = At(column);
    if (c.type != Type::kBigInt && c.type != Type::kTimestampMs) [[unlikely]] {
      WrongType(column, "AppendInt");
    }
    return c;
  }
  Storage& DoubleColumn(size_t column) {
    Storage& c = At(column);
    if (c.type != Type::kDouble) [[unlikely]]
      WrongType(column, "AppendDouble");
    return c;
  }
  Storage& BoolColumn(size_t column) {
    Storage& c = At(column);
    if (c.type != Type::kBoolean) [[unlikely]]
      WrongType(column, "AppendBool");
    return c;
  }
  Storage& TextColumn(size_t column) {
    Storage& c = At(column);
    if (c.type != Type::kVarchar && c.type != Type::kJson) [[unlikely]] {
      WrongType(column, "AppendText");
    }
    return c;
  }
  Storage& At(size_t column) {
    if (column >= columns_.size()) [[unlikely]]
      NoSuchColumn(column);
    return columns_[column];
  }
  [[noreturn]] void WrongType(size_t column, const char* append) const;
  [[noreturn]] void NoSuchColumn(size_t column) const;
  void AppendNonAscii(Storage& c, std::string_view v);

  std::vector<Storage> columns_;
  size_t invalid_utf8_strings_ = 0;
};

std::string_view ColumnBatchTypeName(ColumnBatch::Type type);
// The SQL type DuckDB sees a column of `type` as ("TIMESTAMP" for kTimestampMs).
std::string_view ColumnBatchSqlType(ColumnBatch::Type type);

}  // namespace weir::sql
