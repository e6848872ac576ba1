// Database: an in-process DuckDB database behind its C API, for batch SQL inside Weir (the
// Nexmark reference results, and the lake's Parquet views of topics).
//
// Contract: every failure DuckDB reports comes back as a Status with DuckDB's message; nothing
// throws across this module's edge. Bad SQL, a missing table, a value that does not fit a column:
// kInvalidArgument; a statement stopped by Interrupt(): kCancelled; DuckDB's I/O errors: kIOError
// (kResourceExhausted for a full disk); out of memory: kResourceExhausted; a conflict between
// transactions of two connections: kAborted (retry); DuckDB's fatal and internal errors:
// kInternal. Every database is opened offline: extensions are never installed or auto-loaded,
// and the extension, secret and spill folders live under the system temp folder, so nothing is
// written to ~/.duckdb and nothing reaches the network.
// Thread safety: one Database is one DuckDB connection and serves one thread at a time, except
// Interrupt(), which any thread may call. Connect() gives another connection to the same
// database for another thread. DuckDB runs each statement on up to `threads` worker threads of
// its own. An Appender or a Row belongs to the thread that made it.
// Lifecycle: a database lives as long as any Database connected to it; then an in-memory one is
// gone and a file is checkpointed and closed. Appenders must be closed or destroyed before their
// Database.
// Durability: OpenFile's database is DuckDB's single file plus its write-ahead log: by DuckDB's
// design a committed transaction survives a crash, and one rolled back or never committed is not
// there after reopening.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sql/column_batch.h"
#include "weir/status.h"

namespace weir::sql {

// The SQL type of a result column, as far as Weir reads it; kOther for the rest (dates, lists,
// other timestamps, ...).
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
  kTimestamp,  // TIMESTAMP: microseconds since the epoch
  kJson,       // DuckDB's JSON type: VARCHAR holding JSON text
  kBlob,       // BLOB: any bytes
  kOther,
};

std::string_view ColumnTypeName(ColumnType type);

// A result column, as Query's on_columns sees it.
struct Column {
  std::string name;
  ColumnType type = ColumnType::kOther;
};

// What a statement does, as DuckDB's parser and binder see it (Database::Classify).
enum class StatementKind : uint8_t {
  kSelect,  // SELECT, WITH ... SELECT, VALUES, FROM t, DESCRIBE, SUMMARIZE, SHOW
  kInsert,
  kUpdate,
  kDelete,
  kCreate,  // CREATE TABLE / VIEW / SCHEMA / MACRO / FUNCTION ...
  kDrop,
  kAlter,
  kCopy,     // COPY ... TO / FROM
  kExplain,  // EXPLAIN, EXPLAIN ANALYZE
  kAttach,
  kDetach,
  kPragma,       // a PRAGMA that is not a query (PRAGMA show_tables reads as kSelect)
  kSet,          // SET, RESET, SET VARIABLE
  kLoad,         // LOAD, INSTALL
  kTransaction,  // BEGIN, COMMIT, ROLLBACK
  kCall,         // CALL, CHECKPOINT
  kExport,       // EXPORT DATABASE
  kOther,        // PREPARE, EXECUTE, VACUUM, ANALYZE, ...
};

std::string_view StatementKindName(StatementKind kind);

// How OpenFile configures DuckDB.
struct DatabaseOptions {
  int threads = 0;           // DuckDB's worker threads; 0: one per core
  std::string memory_limit;  // e.g. "512MB"; empty: DuckDB's default (80% of RAM)
};

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
  // BOOLEAN.
  bool Bool(size_t i) const;
  // TIMESTAMP, as microseconds since the epoch.
  int64_t TimestampMicros(size_t i) const;
  // VARCHAR, JSON, BLOB (its bytes as they are). The view points into DuckDB's chunk: copy it
  // to keep it past the call.
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
  // The database stored in `path`, created if missing (its folder must exist). Offline like
  // OpenInMemory. kUnavailable with DuckDB's lock message if another process has it open;
  // kIOError for the rest (not a DuckDB file, a newer storage version, a folder missing).
  // A file is opened once per process (two DuckDB instances on one file would overwrite each
  // other): kUnavailable while this process has it open; Connect() gives more connections.
  static Result<std::unique_ptr<Database>> OpenFile(const std::filesystem::path& path,
                                                    DatabaseOptions options = {});

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Another connection to the same database (the same DuckDB instance), for another thread. Its
  // transactions are its own: each connection sees the others' committed changes.
  Result<std::unique_ptr<Database>> Connect();

  // Stops the statement running on this connection, if any: it returns kCancelled. Any thread
  // may call it. With nothing running, it does nothing (the next statement runs normally).
  void Interrupt();

  // Runs one or more statements (separated by ';') and discards their results.
  [[nodiscard]] Status Execute(std::string_view sql);

  // Runs one statement and calls on_row for each row of its result, as DuckDB produces them
  // chunk by chunk: a result of any size is never held whole. Errors also include those raised
  // while the result streams (on_row may have seen some rows by then).
  [[nodiscard]] Status Query(std::string_view sql, const std::function<void(const Row&)>& on_row);
  // The same, first calling on_columns once with the result's columns (before any row).
  [[nodiscard]] Status Query(std::string_view sql,
                             const std::function<void(std::span<const Column>)>& on_columns,
                             const std::function<void(const Row&)>& on_row);

  // The kind of each statement in `sql`, in order, without running any: each is parsed and bound
  // (prepared) on this connection, so a statement that names a table an earlier one in `sql`
  // would create does not bind. kInvalidArgument with DuckDB's message for one that does not
  // parse or bind. Empty for text without statements.
  Result<std::vector<StatementKind>> Classify(std::string_view sql);

  // Registers the table function `name`() whose result is the rows of `*batch`, in the batch's
  // order (one scanning thread). The name belongs to the whole database (every connection sees
  // it; DuckDB ignores its case) until the database closes: registering it again, from any
  // connection, points it at another batch. kAlreadyExists if DuckDB has a table function of
  // that name of its own (range, read_parquet, ...).
  // A statement binds the batch's columns when it is prepared and reads the batch the name
  // points at when it runs: fill the batch before running the statement, and keep it unchanged
  // and alive while the statement runs. A batch whose columns changed since the statement was
  // prepared, or whose columns hold unequal numbers of values, fails the statement with
  // kInvalidArgument.
  // With `refill`, a scan that has given every row of the batch calls it (on the thread running
  // the statement, which the caller is blocked in): it refills the batch (same columns, of equal
  // lengths) and the scan goes on from its first row; the scan ends when the batch is left empty.
  // So a statement can read more rows than are ever in memory at once. An error from refill
  // fails the statement with its message. Registering the name again replaces the refill too:
  // do that only while no statement reads the name.
  [[nodiscard]] Status RegisterBatchScan(std::string_view name, const ColumnBatch* batch,
                                         std::function<Status()> refill = {});
  // Detaches `name` from its batch, which may then be destroyed: statements that name it fail
  // with kInvalidArgument until it is registered again. kNotFound if it was never registered.
  [[nodiscard]] Status UnregisterBatchScan(std::string_view name);

  // An appender for `table` (of the main schema). kInvalidArgument if there is no such table.
  Result<sql::Appender> Appender(std::string_view table);

 private:
  struct Handles;
  explicit Database(std::unique_ptr<Handles> handles);
  static Result<std::unique_ptr<Database>> Open(const char* path, const DatabaseOptions& options);
  Status Run(std::string_view sql, const std::function<void(std::span<const Column>)>* on_columns,
             const std::function<void(const Row&)>& on_row);

  std::unique_ptr<Handles> handles_;
};

}  // namespace weir::sql
