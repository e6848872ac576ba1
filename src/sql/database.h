// Database: an in-process DuckDB database behind its C API, for batch SQL inside Weir (the
// Nexmark reference results, and later SQL over stored data).
//
// Contract: every failure DuckDB reports (bad SQL, a missing table, a value that does not fit a
// column) comes back as a Status with DuckDB's message; nothing throws across this module's edge.
// Every database is opened offline: extensions are never installed or auto-loaded, and the
// extension, secret and spill folders live under the system temp folder, so nothing is written
// to ~/.duckdb and nothing reaches the network.
// Thread safety: one Database (one DuckDB connection) serves one thread at a time; DuckDB itself
// runs each statement on up to `threads` worker threads of its own. An Appender or a Row belongs
// to the thread that made it.
// Lifecycle: the database lives in memory and is gone when the Database is destroyed; Appenders
// must be closed or destroyed before their Database.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weir/status.h"

namespace weir::sql {

// The SQL type of a result column, as far as Weir reads it; kOther for the rest (dates, lists,
// ...).
enum class ColumnType : uint8_t {
  kBoolean,
  kTinyInt,
  kSmallInt,
  kInteger,
  kBigInt,
  kUTinyInt,
  kUSmallInt,
  kUInteger,
  kUBigInt,
  kHugeInt,
  kFloat,
  kDouble,
  kDecimal,
  kVarchar,
  kOther,
};

std::string_view ColumnTypeName(ColumnType type);

namespace internal {
// One column of the chunk a Row reads: DuckDB's vector memory, valid until the next chunk.
struct ColumnView {
  ColumnType type = ColumnType::kOther;
  ColumnType decimal_storage = ColumnType::kOther;  // kSmallInt..kHugeInt, for kDecimal
  uint8_t decimal_scale = 0;
  const void* data = nullptr;
  const uint64_t* validity = nullptr;  // null: every row valid
};
}  // namespace internal

// One row of a query result, valid only during the on_row call that receives it.
// Reading a column as a type it does not hold is a bug in the caller and stops the process
// (WEIR_CHECK), as does Int() of a HUGEINT or UBIGINT beyond int64.
class Row {
 public:
  size_t size() const { return columns_->size(); }
  ColumnType type(size_t i) const { return (*columns_)[i].type; }
  bool IsNull(size_t i) const;
  // Any integer column (TINYINT .. HUGEINT, signed or not) whose value fits int64.
  int64_t Int(size_t i) const;
  // DOUBLE, FLOAT, DECIMAL; integer columns are converted too.
  double Double(size_t i) const;
  // VARCHAR. The view points into DuckDB's chunk: copy it to keep it past the call.
  std::string_view Text(size_t i) const;

 private:
  friend class Database;
  Row(const std::vector<internal::ColumnView>* columns, uint64_t row)
      : columns_(columns), row_(row) {}

  const std::vector<internal::ColumnView>* columns_;
  uint64_t row_;
};

// Appends rows to one table, far faster than INSERT. Values go in column order; EndRow() ends a
// row. The first failure (a value that cannot be cast to its column, too few or too many values
// in a row) is kept: later Append calls do nothing, and EndRow() and Close() return it as
// kInvalidArgument. Rows are visible to queries once Close() has succeeded.
class Appender {
 public:
  Appender(Appender&& other) noexcept;
  Appender& operator=(Appender&& other) noexcept;
  Appender(const Appender&) = delete;
  Appender& operator=(const Appender&) = delete;
  // Flushes what was appended; a failure then is lost: call Close() to see it.
  ~Appender();

  void AppendInt(int64_t value);
  void AppendDouble(double value);
  void AppendText(std::string_view value);
  void AppendNull();
  [[nodiscard]] Status EndRow();
  // Flushes the rows appended so far and releases the table. Further calls return the same
  // Status.
  [[nodiscard]] Status Close();

 private:
  friend class Database;
  struct Handle;
  Appender(std::unique_ptr<Handle> handle, std::string table);
  void Fail(std::string_view what);

  std::unique_ptr<Handle> handle_;
  std::string table_;
  Status status_;
};

class Database {
 public:
  // An empty in-memory database. threads = 0 lets DuckDB use one worker per core.
  static Result<std::unique_ptr<Database>> OpenInMemory(int threads = 0);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more statements (separated by ';') and discards their results.
  // Errors: kInvalidArgument with DuckDB's message (syntax, binding, constraint, cast).
  [[nodiscard]] Status Execute(std::string_view sql);

  // Runs one statement and calls on_row for each row of its result, as DuckDB produces them
  // chunk by chunk: a result of any size is never held whole. Errors as Execute, also those
  // raised while the result streams (on_row may have seen some rows by then).
  [[nodiscard]] Status Query(std::string_view sql, const std::function<void(const Row&)>& on_row);

  // An appender for `table` (of the main schema). kInvalidArgument if there is no such table.
  Result<sql::Appender> Appender(std::string_view table);

 private:
  struct Handles;
  explicit Database(std::unique_ptr<Handles> handles);

  std::unique_ptr<Handles> handles_;
};

}  // namespace weir::sql
