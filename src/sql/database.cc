#include "sql/database.h"

#include <duckdb.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <utility>

namespace weir::sql {
namespace {

ColumnType FromDuckType(duckdb_type type) {
  switch (type) {
    case DUCKDB_TYPE_BOOLEAN:
      return ColumnType::kBoolean;
    case DUCKDB_TYPE_TINYINT:
      return ColumnType::kTinyInt;
    case DUCKDB_TYPE_SMALLINT:
      return ColumnType::kSmallInt;
    case DUCKDB_TYPE_INTEGER:
      return ColumnType::kInteger;
    case DUCKDB_TYPE_BIGINT:
      return ColumnType::kBigInt;
    case DUCKDB_TYPE_UTINYINT:
      return ColumnType::kUTinyInt;
    case DUCKDB_TYPE_USMALLINT:
      return ColumnType::kUSmallInt;
    case DUCKDB_TYPE_UINTEGER:
      return ColumnType::kUInteger;
    case DUCKDB_TYPE_UBIGINT:
      return ColumnType::kUBigInt;
    case DUCKDB_TYPE_HUGEINT:
      return ColumnType::kHugeInt;
    case DUCKDB_TYPE_FLOAT:
      return ColumnType::kFloat;
    case DUCKDB_TYPE_DOUBLE:
      return ColumnType::kDouble;
    case DUCKDB_TYPE_DECIMAL:
      return ColumnType::kDecimal;
    case DUCKDB_TYPE_VARCHAR:
      return ColumnType::kVarchar;
    case DUCKDB_TYPE_BLOB:
      return ColumnType::kBlob;
    case DUCKDB_TYPE_TIMESTAMP:
      return ColumnType::kTimestamp;
    default:
      return ColumnType::kOther;
  }
}

// The ColumnType of a logical type: FromDuckType, and JSON for a VARCHAR aliased JSON.
ColumnType FromLogicalType(duckdb_logical_type logical) {
  ColumnType type = FromDuckType(duckdb_get_type_id(logical));
  if (type == ColumnType::kVarchar) {
    char* alias = duckdb_logical_type_get_alias(logical);
    if (alias != nullptr) {
      if (std::string_view(alias) == "JSON") type = ColumnType::kJson;
      duckdb_free(alias);
    }
  }
  return type;
}

// Reads an integer stored as `storage` (an integer ColumnType) at row `row` of `data`.
// Returns false when the value does not fit int64.
bool ReadInteger(ColumnType storage, const void* data, uint64_t row, int64_t* out) {
  switch (storage) {
    case ColumnType::kTinyInt:
      *out = static_cast<const int8_t*>(data)[row];
      return true;
    case ColumnType::kSmallInt:
      *out = static_cast<const int16_t*>(data)[row];
      return true;
    case ColumnType::kInteger:
      *out = static_cast<const int32_t*>(data)[row];
      return true;
    case ColumnType::kBigInt:
      *out = static_cast<const int64_t*>(data)[row];
      return true;
    case ColumnType::kUTinyInt:
      *out = static_cast<const uint8_t*>(data)[row];
      return true;
    case ColumnType::kUSmallInt:
      *out = static_cast<const uint16_t*>(data)[row];
      return true;
    case ColumnType::kUInteger:
      *out = static_cast<const uint32_t*>(data)[row];
      return true;
    case ColumnType::kUBigInt: {
      uint64_t v = static_cast<const uint64_t*>(data)[row];
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(v);
      return true;
    }
    case ColumnType::kHugeInt: {
      duckdb_hugeint v = static_cast<const duckdb_hugeint*>(data)[row];
      bool fits =
          (v.upper == 0 && v.lower <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) ||
          (v.upper == -1 && v.lower >= (uint64_t{1} << 63));
      if (!fits) return false;
      *out = static_cast<int64_t>(v.lower);
      return true;
    }
    default:
      return false;
  }
}

bool IsInteger(ColumnType t) { return t >= ColumnType::kTinyInt && t <= ColumnType::kHugeInt; }

std::string ErrorText(const char* message) {
  return message != nullptr ? std::string(message) : std::string("unknown DuckDB error");
}

// DuckDB's error as a Status whose code says what the caller can do (database.h).
Status ErrorStatus(duckdb_error_type type, const char* message) {
  std::string text = ErrorText(message);
  switch (type) {
    case DUCKDB_ERROR_INTERRUPT:
      return Status::Cancelled(std::move(text));
    case DUCKDB_ERROR_IO:
      if (text.find("No space left on device") != std::string::npos ||
          text.find("Disk quota exceeded") != std::string::npos) {
        return Status::ResourceExhausted(std::move(text) + " (disk full)");
      }
      return Status::IOError(std::move(text));
    case DUCKDB_ERROR_OUT_OF_MEMORY:
      return Status::ResourceExhausted(std::move(text));
    case DUCKDB_ERROR_TRANSACTION:
      return Status::Aborted(std::move(text));
    case DUCKDB_ERROR_FATAL:
    case DUCKDB_ERROR_INTERNAL:
      return Status::Internal(std::move(text));
    default:
      return Status::InvalidArgument(std::move(text));
  }
}

// For the calls that report only a message ("<Type> Error: ..."): its type read from the prefix.
Status ErrorStatus(const char* message) {
  std::string_view text = message != nullptr ? message : "";
  duckdb_error_type type = DUCKDB_ERROR_INVALID;
  if (text.starts_with("INTERRUPT Error")) {
    type = DUCKDB_ERROR_INTERRUPT;
  } else if (text.starts_with("IO Error")) {
    type = DUCKDB_ERROR_IO;
  } else if (text.starts_with("Out of Memory Error")) {
    type = DUCKDB_ERROR_OUT_OF_MEMORY;
  } else if (text.starts_with("TransactionContext Error")) {
    type = DUCKDB_ERROR_TRANSACTION;
  } else if (text.starts_with("FATAL Error")) {
    type = DUCKDB_ERROR_FATAL;
  } else if (text.starts_with("INTERNAL Error")) {
    type = DUCKDB_ERROR_INTERNAL;
  }
  return ErrorStatus(type, message);
}

Status ResultError(duckdb_result* result) {
  return ErrorStatus(duckdb_result_error_type(result), duckdb_result_error(result));
}

// DuckDB's function names ignore case.
std::string BatchScanKey(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

StatementKind FromStatementType(duckdb_statement_type type) {
  switch (type) {
    case DUCKDB_STATEMENT_TYPE_SELECT:
      return StatementKind::kSelect;
    case DUCKDB_STATEMENT_TYPE_INSERT:
      return StatementKind::kInsert;
    case DUCKDB_STATEMENT_TYPE_UPDATE:
      return StatementKind::kUpdate;
    case DUCKDB_STATEMENT_TYPE_DELETE:
      return StatementKind::kDelete;
    case DUCKDB_STATEMENT_TYPE_CREATE:
    case DUCKDB_STATEMENT_TYPE_CREATE_FUNC:
      return StatementKind::kCreate;
    case DUCKDB_STATEMENT_TYPE_DROP:
      return StatementKind::kDrop;
    case DUCKDB_STATEMENT_TYPE_ALTER:
      return StatementKind::kAlter;
    case DUCKDB_STATEMENT_TYPE_COPY:
      return StatementKind::kCopy;
    case DUCKDB_STATEMENT_TYPE_EXPLAIN:
      return StatementKind::kExplain;
    case DUCKDB_STATEMENT_TYPE_ATTACH:
      return StatementKind::kAttach;
    case DUCKDB_STATEMENT_TYPE_DETACH:
      return StatementKind::kDetach;
    case DUCKDB_STATEMENT_TYPE_PRAGMA:
      return StatementKind::kPragma;
    case DUCKDB_STATEMENT_TYPE_SET:
    case DUCKDB_STATEMENT_TYPE_VARIABLE_SET:
      return StatementKind::kSet;
    case DUCKDB_STATEMENT_TYPE_LOAD:
      return StatementKind::kLoad;
    case DUCKDB_STATEMENT_TYPE_TRANSACTION:
      return StatementKind::kTransaction;
    case DUCKDB_STATEMENT_TYPE_CALL:
      return StatementKind::kCall;
    case DUCKDB_STATEMENT_TYPE_EXPORT:
      return StatementKind::kExport;
    default:
      return StatementKind::kOther;
  }
}

// Where DuckDB may write: extensions (never installed here), persistent secrets, spills.
std::filesystem::path DuckDbScratchDir() {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  return base / ("weir-duckdb-" + std::to_string(::getpid()));
}

// Where one database spills: its own folder beside the scratch folder, so that DuckDB, which
// creates it, removes it on close without touching another database's spills.
std::filesystem::path SpillDir() {
  static std::atomic<uint64_t> next{0};
  std::filesystem::path scratch = DuckDbScratchDir();
  return scratch.parent_path() /
         (scratch.filename().string() + "-spill-" + std::to_string(next.fetch_add(1)));
}

}  // namespace

std::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kBoolean:
      return "BOOLEAN";
    case ColumnType::kTinyInt:
      return "TINYINT";
    case ColumnType::kSmallInt:
      return "SMALLINT";
    case ColumnType::kInteger:
      return "INTEGER";
    case ColumnType::kBigInt:
      return "BIGINT";
    case ColumnType::kUTinyInt:
      return "UTINYINT";
    case ColumnType::kUSmallInt:
      return "USMALLINT";
    case ColumnType::kUInteger:
      return "UINTEGER";
    case ColumnType::kUBigInt:
      return "UBIGINT";
    case ColumnType::kHugeInt:
      return "HUGEINT";
    case ColumnType::kFloat:
      return "FLOAT";
    case ColumnType::kDouble:
      return "DOUBLE";
    case ColumnType::kDecimal:
      return "DECIMAL";
    case ColumnType::kVarchar:
      return "VARCHAR";
    case ColumnType::kTimestamp:
      return "TIMESTAMP";
    case ColumnType::kJson:
      return "JSON";
    case ColumnType::kBlob:
      return "BLOB";
    case ColumnType::kOther:
      return "OTHER";
  }
  return "OTHER";
}

std::string_view StatementKindName(StatementKind kind) {
  switch (kind) {
    case StatementKind::kSelect:
      return "SELECT";
    case StatementKind::kInsert:
      return "INSERT";
    case StatementKind::kUpdate:
      return "UPDATE";
    case StatementKind::kDelete:
      return "DELETE";
    case StatementKind::kCreate:
      return "CREATE";
    case StatementKind::kDrop:
      return "DROP";
    case StatementKind::kAlter:
      return "ALTER";
    case StatementKind::kCopy:
      return "COPY";
    case StatementKind::kExplain:
      return "EXPLAIN";
    case StatementKind::kAttach:
      return "ATTACH";
    case StatementKind::kDetach:
      return "DETACH";
    case StatementKind::kPragma:
      return "PRAGMA";
    case StatementKind::kSet:
      return "SET";
    case StatementKind::kLoad:
      return "LOAD";
    case StatementKind::kTransaction:
      return "TRANSACTION";
    case StatementKind::kCall:
      return "CALL";
    case StatementKind::kExport:
      return "EXPORT";
    case StatementKind::kOther:
      return "OTHER";
  }
  return "OTHER";
}

// ---- Row

bool Row::IsNull(size_t i) const {
  const uint64_t* validity = (*columns_)[i].validity;
  return validity != nullptr &&
         !duckdb_validity_row_is_valid(const_cast<uint64_t*>(validity), row_);
}

int64_t Row::Int(size_t i) const {
  const internal::ColumnView& c = (*columns_)[i];
  WEIR_CHECK(IsInteger(c.type), "Row::Int of a " + std::string(ColumnTypeName(c.type)) + " column");
  int64_t v = 0;
  WEIR_CHECK(ReadInteger(c.type, c.data, row_, &v), "Row::Int: value beyond int64");
  return v;
}

double Row::Double(size_t i) const {
  const internal::ColumnView& c = (*columns_)[i];
  switch (c.type) {
    case ColumnType::kDouble:
      return static_cast<const double*>(c.data)[row_];
    case ColumnType::kFloat:
      return static_cast<const float*>(c.data)[row_];
    case ColumnType::kDecimal: {
      double scale = std::pow(10.0, c.decimal_scale);
      if (c.decimal_storage == ColumnType::kHugeInt) {
        duckdb_hugeint v = static_cast<const duckdb_hugeint*>(c.data)[row_];
        return (static_cast<double>(v.upper) * 18446744073709551616.0 +
                static_cast<double>(v.lower)) /
               scale;
      }
      int64_t v = 0;
      ReadInteger(c.decimal_storage, c.data, row_, &v);
      return static_cast<double>(v) / scale;
    }
    case ColumnType::kHugeInt: {
      duckdb_hugeint v = static_cast<const duckdb_hugeint*>(c.data)[row_];
      return static_cast<double>(v.upper) * 18446744073709551616.0 + static_cast<double>(v.lower);
    }
    case ColumnType::kUBigInt:
      return static_cast<double>(static_cast<const uint64_t*>(c.data)[row_]);
    default: {
      WEIR_CHECK(IsInteger(c.type),
                 "Row::Double of a " + std::string(ColumnTypeName(c.type)) + " column");
      int64_t v = 0;
      ReadInteger(c.type, c.data, row_, &v);
      return static_cast<double>(v);
    }
  }
}

bool Row::Bool(size_t i) const {
  const internal::ColumnView& c = (*columns_)[i];
  WEIR_CHECK(c.type == ColumnType::kBoolean,
             "Row::Bool of a " + std::string(ColumnTypeName(c.type)) + " column");
  return static_cast<const bool*>(c.data)[row_];
}

int64_t Row::TimestampMicros(size_t i) const {
  const internal::ColumnView& c = (*columns_)[i];
  WEIR_CHECK(c.type == ColumnType::kTimestamp,
             "Row::TimestampMicros of a " + std::string(ColumnTypeName(c.type)) + " column");
  return static_cast<const int64_t*>(c.data)[row_];
}

std::string_view Row::Text(size_t i) const {
  const internal::ColumnView& c = (*columns_)[i];
  WEIR_CHECK(
      c.type == ColumnType::kVarchar || c.type == ColumnType::kJson || c.type == ColumnType::kBlob,
      "Row::Text of a " + std::string(ColumnTypeName(c.type)) + " column");
  auto* s = const_cast<duckdb_string_t*>(static_cast<const duckdb_string_t*>(c.data) + row_);
  return {duckdb_string_t_data(s), duckdb_string_t_length(*s)};
}

// ---- Appender

struct Appender::Handle {
  duckdb_appender appender = nullptr;
  ~Handle() {
    if (appender != nullptr) duckdb_appender_destroy(&appender);
  }
};

Appender::Appender(std::unique_ptr<Handle> handle, std::string table)
    : handle_(std::move(handle)), table_(std::move(table)) {}
Appender::Appender(Appender&& other) noexcept = default;
Appender& Appender::operator=(Appender&& other) noexcept = default;
Appender::~Appender() = default;

void Appender::Fail(std::string_view what) {
  if (!status_.ok()) return;
  duckdb_error_data error = duckdb_appender_error_data(handle_->appender);
  status_ = Status::InvalidArgument("appending to " + table_ + ": " + std::string(what) + ": " +
                                    ErrorText(duckdb_error_data_message(error)));
  duckdb_destroy_error_data(&error);
}

void Appender::AppendInt(int64_t value) {
  if (status_.ok() && duckdb_append_int64(handle_->appender, value) != DuckDBSuccess) {
    Fail("an integer");
  }
}

void Appender::AppendDouble(double value) {
  if (status_.ok() && duckdb_append_double(handle_->appender, value) != DuckDBSuccess) {
    Fail("a double");
  }
}

void Appender::AppendText(std::string_view value) {
  if (status_.ok() && duckdb_append_varchar_length(handle_->appender, value.data(), value.size()) !=
                          DuckDBSuccess) {
    Fail("a text");
  }
}

void Appender::AppendNull() {
  if (status_.ok() && duckdb_append_null(handle_->appender) != DuckDBSuccess) Fail("a null");
}

Status Appender::EndRow() {
  if (status_.ok() && duckdb_appender_end_row(handle_->appender) != DuckDBSuccess) {
    Fail("ending a row");
  }
  return status_;
}

Status Appender::Close() {
  if (handle_ == nullptr) return status_;
  if (status_.ok() && duckdb_appender_close(handle_->appender) != DuckDBSuccess) {
    Fail("closing");
  }
  handle_.reset();
  return status_;
}

// ---- Batch scans

namespace internal {

// The table function behind RegisterBatchScan: bind names the batch's columns, init checks that
// the batch still has them and that they are of equal length, and each call copies the next
// chunk of rows into DuckDB's vectors.
struct BatchScan {
  // The function's extra info, owned by DuckDB's catalog entry.
  struct Registration {
    Registration(const ColumnBatch* b, std::string n, bool j, std::function<Status()> r)
        : batch(b), name(std::move(n)), json(j), refill(std::move(r)) {}
    // Null once unregistered. Set by any connection's thread, read by the scanning one.
    std::atomic<const ColumnBatch*> batch;
    const std::string name;
    const bool json;  // DuckDB has its JSON type
    // Set at registration, while no statement scans (RegisterBatchScan's contract).
    std::function<Status()> refill;

    const ColumnBatch* Batch(std::string* error) const {
      const ColumnBatch* b = batch.load(std::memory_order_acquire);
      if (b == nullptr) error->assign("batch scan " + name + "(): unregistered, it has no batch");
      return b;
    }
  };
  // What a statement bound: the batch's column types then.
  struct Bound {
    std::vector<ColumnBatch::Type> types;
  };
  struct State {
    size_t rows = 0;
    size_t next = 0;
    std::vector<idx_t> projection;  // batch column of each output vector
  };

  // DuckDB's TIMESTAMP range, in milliseconds: values beyond are clamped to it.
  static constexpr int64_t kMinTimestampMs = -9223372022400000;
  static constexpr int64_t kMaxTimestampMs = 9223372036854775;

  static duckdb_logical_type LogicalType(ColumnBatch::Type type, bool json) {
    switch (type) {
      case ColumnBatch::Type::kBigInt:
        return duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
      case ColumnBatch::Type::kDouble:
        return duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
      case ColumnBatch::Type::kBoolean:
        return duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
      case ColumnBatch::Type::kTimestampMs:
        return duckdb_create_logical_type(DUCKDB_TYPE_TIMESTAMP);
      case ColumnBatch::Type::kVarchar:
        return duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
      case ColumnBatch::Type::kJson: {
        duckdb_logical_type t = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
        if (json) duckdb_logical_type_set_alias(t, "JSON");
        return t;
      }
      case ColumnBatch::Type::kBlob:
        return duckdb_create_logical_type(DUCKDB_TYPE_BLOB);
    }
    return duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  }

  static void Bind(duckdb_bind_info info) {
    const auto* registration = static_cast<const Registration*>(duckdb_bind_get_extra_info(info));
    std::string error;
    const ColumnBatch* scanned = registration->Batch(&error);
    if (scanned == nullptr) {
      duckdb_bind_set_error(info, error.c_str());
      return;
    }
    const ColumnBatch& batch = *scanned;
    if (batch.columns() == 0) {
      std::string error = "batch scan " + registration->name + "(): the batch has no columns";
      duckdb_bind_set_error(info, error.c_str());
      return;
    }
    auto bound = std::make_unique<Bound>();
    for (const ColumnBatch::Storage& c : batch.columns_) {
      duckdb_logical_type type = LogicalType(c.type, registration->json);
      duckdb_bind_add_result_column(info, c.name.c_str(), type);
      duckdb_destroy_logical_type(&type);
      bound->types.push_back(c.type);
    }
    // An estimate for the planner: the batch may be refilled before the statement runs.
    duckdb_bind_set_cardinality(info, batch.rows(), false);
    duckdb_bind_set_bind_data(info, bound.release(),
                              [](void* p) { delete static_cast<Bound*>(p); });
  }

  // The rows of `batch`, checked against what the statement bound: "" or what is wrong.
  static std::string Rows(const Registration& registration, const Bound& bound,
                          const ColumnBatch& batch, size_t* rows) {
    bool same_columns = batch.columns() == bound.types.size();
    for (size_t c = 0; same_columns && c < batch.columns(); ++c) {
      same_columns = batch.type(c) == bound.types[c];
    }
    if (!same_columns) {
      return "batch scan " + registration.name +
             "(): the batch's columns changed since the statement was prepared";
    }
    *rows = batch.values(0);
    for (size_t c = 1; c < batch.columns(); ++c) {
      if (batch.values(c) != *rows) {
        return "batch scan " + registration.name + "(): column " + batch.name(c) + " has " +
               std::to_string(batch.values(c)) + " values, column " + batch.name(0) + " has " +
               std::to_string(*rows);
      }
    }
    return "";
  }

  static void Init(duckdb_init_info info) {
    const auto* registration = static_cast<const Registration*>(duckdb_init_get_extra_info(info));
    const auto* bound = static_cast<const Bound*>(duckdb_init_get_bind_data(info));
    std::string error;
    const ColumnBatch* scanned = registration->Batch(&error);
    if (scanned == nullptr) {
      duckdb_init_set_error(info, error.c_str());
      return;
    }
    auto state = std::make_unique<State>();
    error = Rows(*registration, *bound, *scanned, &state->rows);
    if (!error.empty()) {
      duckdb_init_set_error(info, error.c_str());
      return;
    }
    const idx_t projected = duckdb_init_get_column_count(info);
    for (idx_t i = 0; i < projected; ++i) {
      state->projection.push_back(duckdb_init_get_column_index(info, i));
    }
    duckdb_init_set_max_threads(info, 1);
    duckdb_init_set_init_data(info, state.release(),
                              [](void* p) { delete static_cast<State*>(p); });
  }

  static void Scan(duckdb_function_info info, duckdb_data_chunk output) {
    const auto* registration =
        static_cast<const Registration*>(duckdb_function_get_extra_info(info));
    auto* state = static_cast<State*>(duckdb_function_get_init_data(info));
    std::string error;
    const ColumnBatch* scanned = registration->Batch(&error);
    if (scanned == nullptr) {
      duckdb_function_set_error(info, error.c_str());
      return;
    }
    const ColumnBatch& batch = *scanned;
    if (state->next == state->rows && registration->refill) {
      Status refilled = registration->refill();
      if (refilled.ok()) {
        const auto* bound = static_cast<const Bound*>(duckdb_function_get_bind_data(info));
        error = Rows(*registration, *bound, batch, &state->rows);
      } else {
        error = "batch scan " + registration->name + "(): " + std::string(refilled.message());
      }
      if (!error.empty()) {
        duckdb_function_set_error(info, error.c_str());
        return;
      }
      state->next = 0;
    }
    const size_t n = std::min<size_t>(duckdb_vector_size(), state->rows - state->next);
    if (n == 0) {  // the end (an empty batch has no buffers to copy from)
      duckdb_data_chunk_set_size(output, 0);
      return;
    }
    for (size_t k = 0; k < state->projection.size(); ++k) {
      const idx_t column = state->projection[k];
      if (column >= batch.columns()) continue;  // a virtual column (row id): nobody reads it
      CopyColumn(batch.columns_[column], state->next, n, duckdb_data_chunk_get_vector(output, k));
    }
    state->next += n;
    duckdb_data_chunk_set_size(output, n);
  }

  // Copies values [start, start + n) of `c` into `vector`. `start` is a multiple of the vector
  // size, hence of 64: validity words are copied whole.
  static void CopyColumn(const ColumnBatch::Storage& c, size_t start, size_t n,
                         duckdb_vector vector) {
    void* data = duckdb_vector_get_data(vector);
    switch (c.type) {
      case ColumnBatch::Type::kBigInt:
        std::memcpy(data, c.ints.data() + start, n * sizeof(int64_t));
        break;
      case ColumnBatch::Type::kDouble:
        std::memcpy(data, c.doubles.data() + start, n * sizeof(double));
        break;
      case ColumnBatch::Type::kBoolean:
        std::memcpy(data, c.bools.data() + start, n);
        break;
      case ColumnBatch::Type::kTimestampMs: {
        auto* out = static_cast<int64_t*>(data);
        const int64_t* in = c.ints.data() + start;
        for (size_t i = 0; i < n; ++i) {
          out[i] = std::clamp(in[i], kMinTimestampMs, kMaxTimestampMs) * 1000;
        }
        break;
      }
      case ColumnBatch::Type::kVarchar:
      case ColumnBatch::Type::kJson:
      case ColumnBatch::Type::kBlob: {
        const char* arena = c.arena.data();
        uint64_t begin = start == 0 ? 0 : c.ends[start - 1];
        for (size_t i = 0; i < n; ++i) {
          const uint64_t end = c.ends[start + i];
          duckdb_vector_assign_string_element_len(vector, i, arena + begin, end - begin);
          begin = end;
        }
        break;
      }
    }
    const size_t first_word = start / 64;
    if (first_word < c.validity.size()) {
      duckdb_vector_ensure_validity_writable(vector);
      uint64_t* validity = duckdb_vector_get_validity(vector);
      const size_t words = (n + 63) / 64;
      for (size_t w = 0; w < words; ++w) {
        validity[w] =
            first_word + w < c.validity.size() ? c.validity[first_word + w] : ~uint64_t{0};
      }
    }
  }
};

// The database files this process has open. DuckDB's file lock keeps other processes out, but
// not a second DuckDB instance of this process, whose writes would overwrite the first's.
class OpenFiles {
 public:
  static bool Claim(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu());
    return paths().insert(path).second;
  }
  static void Release(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu());
    paths().erase(path);
  }

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::set<std::string>& paths() {
    static std::set<std::string> p;
    return p;
  }
};

// One DuckDB database, shared by the connections Connect() makes.
struct DuckDbInstance {
  duckdb_database db = nullptr;
  std::string claimed_path;  // in OpenFiles; empty for an in-memory database
  std::mutex mu;
  // The batch scans registered, by lower-case name (DuckDB's names ignore case). Owned by
  // DuckDB's catalog, which lives until duckdb_close. REQUIRES: mu held.
  std::map<std::string, BatchScan::Registration*> batch_scans;
  ~DuckDbInstance() {
    if (db != nullptr) duckdb_close(&db);
    if (!claimed_path.empty()) OpenFiles::Release(claimed_path);
  }
};

}  // namespace internal

// ---- Database

struct Database::Handles {
  std::shared_ptr<internal::DuckDbInstance> instance;
  duckdb_connection connection = nullptr;
  ~Handles() {
    if (connection != nullptr) duckdb_disconnect(&connection);
  }
};

Database::Database(std::unique_ptr<Handles> handles) : handles_(std::move(handles)) {}
Database::~Database() = default;

Result<std::unique_ptr<Database>> Database::OpenInMemory(int threads) {
  return Open(nullptr, DatabaseOptions{.threads = threads});
}

Result<std::unique_ptr<Database>> Database::OpenFile(const std::filesystem::path& path,
                                                     DatabaseOptions options) {
  return Open(path.c_str(), options);
}

Result<std::unique_ptr<Database>> Database::Open(const char* path, const DatabaseOptions& options) {
  if (options.threads < 0) return Status::InvalidArgument("duckdb threads must be >= 0");
  std::filesystem::path scratch = DuckDbScratchDir();
  std::vector<std::pair<std::string, std::string>> settings = {
      {"autoinstall_known_extensions", "false"},
      {"autoload_known_extensions", "false"},
      {"allow_community_extensions", "false"},
      {"extension_directory", (scratch / "extensions").string()},
      {"secret_directory", (scratch / "secrets").string()},
      // One folder per database, directly under the temp folder: DuckDB creates it when it
      // first spills (it does not create missing parents) and removes it when it closes.
      {"temp_directory", SpillDir().string()},
  };
  if (options.threads > 0) settings.emplace_back("threads", std::to_string(options.threads));
  if (!options.memory_limit.empty()) settings.emplace_back("memory_limit", options.memory_limit);

  duckdb_config config = nullptr;
  if (duckdb_create_config(&config) != DuckDBSuccess) {
    return Status::Internal("duckdb: cannot create a configuration");
  }
  for (const auto& [name, value] : settings) {
    if (duckdb_set_config(config, name.c_str(), value.c_str()) != DuckDBSuccess) {
      duckdb_destroy_config(&config);
      return Status::InvalidArgument("duckdb: cannot set " + name + " = " + value);
    }
  }
  auto instance = std::make_shared<internal::DuckDbInstance>();
  if (path != nullptr) {
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
    std::string key = ec ? std::string(path) : canonical.string();
    if (!internal::OpenFiles::Claim(key)) {
      duckdb_destroy_config(&config);
      return Status::Unavailable("duckdb: " + std::string(path) +
                                 " is open in this process already: use Connect() on its Database");
    }
    instance->claimed_path = std::move(key);
  }
  char* error = nullptr;
  duckdb_state state = duckdb_open_ext(path, &instance->db, config, &error);
  duckdb_destroy_config(&config);
  if (state != DuckDBSuccess) {
    std::string text = ErrorText(error);
    duckdb_free(error);
    instance->db = nullptr;
    if (path == nullptr) {
      return Status::Internal("duckdb: cannot open an in-memory database: " + text);
    }
    std::string what = "duckdb: cannot open " + std::string(path) + ": " + text;
    if (text.find("Could not set lock on file") != std::string::npos) {
      return Status::Unavailable(std::move(what));
    }
    return Status::IOError(std::move(what));
  }
  auto handles = std::make_unique<Handles>();
  handles->instance = std::move(instance);
  if (duckdb_connect(handles->instance->db, &handles->connection) != DuckDBSuccess) {
    return Status::Internal("duckdb: cannot connect to the database");
  }
  return std::unique_ptr<Database>(new Database(std::move(handles)));
}

Result<std::unique_ptr<Database>> Database::Connect() {
  auto handles = std::make_unique<Handles>();
  handles->instance = handles_->instance;
  if (duckdb_connect(handles->instance->db, &handles->connection) != DuckDBSuccess) {
    return Status::Internal("duckdb: cannot connect to the database");
  }
  return std::unique_ptr<Database>(new Database(std::move(handles)));
}

void Database::Interrupt() { duckdb_interrupt(handles_->connection); }

Status Database::Execute(std::string_view sql) {
  duckdb_result result;
  std::string text(sql);
  duckdb_state state = duckdb_query(handles_->connection, text.c_str(), &result);
  Status s;
  if (state != DuckDBSuccess) s = ResultError(&result);
  duckdb_destroy_result(&result);
  return s;
}

Status Database::Query(std::string_view sql, const std::function<void(const Row&)>& on_row) {
  return Run(sql, nullptr, on_row);
}

Status Database::Query(std::string_view sql,
                       const std::function<void(std::span<const Column>)>& on_columns,
                       const std::function<void(const Row&)>& on_row) {
  return Run(sql, &on_columns, on_row);
}

Status Database::Run(std::string_view sql,
                     const std::function<void(std::span<const Column>)>* on_columns,
                     const std::function<void(const Row&)>& on_row) {
  std::string text(sql);
  duckdb_prepared_statement prepared = nullptr;
  struct PreparedGuard {
    duckdb_prepared_statement* p;
    ~PreparedGuard() { duckdb_destroy_prepare(p); }
  } prepared_guard{&prepared};
  if (duckdb_prepare(handles_->connection, text.c_str(), &prepared) != DuckDBSuccess) {
    return ErrorStatus(duckdb_prepare_error(prepared));
  }
  // The streaming pending result lets DuckDB produce chunks as they are fetched instead of
  // materializing the whole result first.
  duckdb_pending_result pending = nullptr;
  struct PendingGuard {
    duckdb_pending_result* p;
    ~PendingGuard() { duckdb_destroy_pending(p); }
  } pending_guard{&pending};
  if (duckdb_pending_prepared_streaming(prepared, &pending) != DuckDBSuccess) {
    return ErrorStatus(duckdb_pending_error(pending));
  }
  duckdb_result result;
  std::memset(&result, 0, sizeof(result));
  struct ResultGuard {
    duckdb_result* r;
    ~ResultGuard() { duckdb_destroy_result(r); }
  } result_guard{&result};
  if (duckdb_execute_pending(pending, &result) != DuckDBSuccess) return ResultError(&result);

  const idx_t column_count = duckdb_column_count(&result);
  std::vector<internal::ColumnView> columns(column_count);
  for (idx_t c = 0; c < column_count; ++c) {
    duckdb_logical_type logical = duckdb_column_logical_type(&result, c);
    columns[c].type = FromLogicalType(logical);
    if (columns[c].type == ColumnType::kDecimal) {
      columns[c].decimal_scale = duckdb_decimal_scale(logical);
      columns[c].decimal_storage = FromDuckType(duckdb_decimal_internal_type(logical));
    }
    duckdb_destroy_logical_type(&logical);
  }
  if (on_columns != nullptr) {
    std::vector<Column> described(column_count);
    for (idx_t c = 0; c < column_count; ++c) {
      described[c].name = ErrorText(duckdb_column_name(&result, c));
      described[c].type = columns[c].type;
    }
    (*on_columns)(described);
  }
  while (true) {
    duckdb_data_chunk chunk = duckdb_fetch_chunk(result);
    if (chunk == nullptr) {
      if (duckdb_result_error(&result) != nullptr) return ResultError(&result);
      return Status::OK();
    }
    struct ChunkGuard {
      duckdb_data_chunk* c;
      ~ChunkGuard() { duckdb_destroy_data_chunk(c); }
    } chunk_guard{&chunk};
    const idx_t rows = duckdb_data_chunk_get_size(chunk);
    if (rows == 0) return Status::OK();
    for (idx_t c = 0; c < column_count; ++c) {
      duckdb_vector vector = duckdb_data_chunk_get_vector(chunk, c);
      columns[c].data = duckdb_vector_get_data(vector);
      columns[c].validity = duckdb_vector_get_validity(vector);
    }
    for (idx_t r = 0; r < rows; ++r) on_row(Row(&columns, r));
  }
}

Result<std::vector<StatementKind>> Database::Classify(std::string_view sql) {
  std::string text(sql);
  duckdb_extracted_statements extracted = nullptr;
  struct ExtractedGuard {
    duckdb_extracted_statements* e;
    ~ExtractedGuard() { duckdb_destroy_extracted(e); }
  } extracted_guard{&extracted};
  const idx_t count = duckdb_extract_statements(handles_->connection, text.c_str(), &extracted);
  std::vector<StatementKind> kinds;
  if (count == 0) {
    const char* error = duckdb_extract_statements_error(extracted);
    if (error != nullptr) return Status::InvalidArgument(error);
    return kinds;
  }
  for (idx_t i = 0; i < count; ++i) {
    duckdb_prepared_statement prepared = nullptr;
    struct PreparedGuard {
      duckdb_prepared_statement* p;
      ~PreparedGuard() { duckdb_destroy_prepare(p); }
    } prepared_guard{&prepared};
    if (duckdb_prepare_extracted_statement(handles_->connection, extracted, i, &prepared) !=
        DuckDBSuccess) {
      Status s = ErrorStatus(duckdb_prepare_error(prepared));
      if (s.code() == StatusCode::kCancelled) return s;
      return Status::InvalidArgument(s.message());
    }
    kinds.push_back(FromStatementType(duckdb_prepared_statement_type(prepared)));
  }
  return kinds;
}

Status Database::RegisterBatchScan(std::string_view name, const ColumnBatch* batch,
                                   std::function<Status()> refill) {
  WEIR_CHECK(batch != nullptr, "RegisterBatchScan without a batch; UnregisterBatchScan detaches");
  internal::DuckDbInstance& instance = *handles_->instance;
  std::string key = BatchScanKey(name);
  std::lock_guard<std::mutex> lock(instance.mu);
  if (auto it = instance.batch_scans.find(key); it != instance.batch_scans.end()) {
    it->second->refill = std::move(refill);
    it->second->batch.store(batch, std::memory_order_release);
    return Status::OK();
  }
  bool json = false;
  WEIR_RETURN_IF_ERROR(
      Query("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'json' AND loaded",
            [&](const Row& row) { json = row.Int(0) > 0; }));
  auto registration = std::make_unique<internal::BatchScan::Registration>(batch, std::string(name),
                                                                          json, std::move(refill));
  internal::BatchScan::Registration* pointer = registration.get();
  duckdb_table_function function = duckdb_create_table_function();
  duckdb_table_function_set_name(function, registration->name.c_str());  // copied
  duckdb_table_function_set_bind(function, internal::BatchScan::Bind);
  duckdb_table_function_set_init(function, internal::BatchScan::Init);
  duckdb_table_function_set_function(function, internal::BatchScan::Scan);
  duckdb_table_function_supports_projection_pushdown(function, true);
  // From here on the function owns the registration, and then its catalog entry does.
  duckdb_table_function_set_extra_info(function, registration.release(), [](void* p) {
    delete static_cast<internal::BatchScan::Registration*>(p);
  });
  duckdb_state state = duckdb_register_table_function(handles_->connection, function);
  duckdb_destroy_table_function(&function);
  if (state != DuckDBSuccess) {
    return Status::AlreadyExists("batch scan " + std::string(name) +
                                 "(): DuckDB has a table function of that name");
  }
  instance.batch_scans.emplace(std::move(key), pointer);
  return Status::OK();
}

Status Database::UnregisterBatchScan(std::string_view name) {
  internal::DuckDbInstance& instance = *handles_->instance;
  std::string key = BatchScanKey(name);
  std::lock_guard<std::mutex> lock(instance.mu);
  auto it = instance.batch_scans.find(key);
  if (it == instance.batch_scans.end()) {
    return Status::NotFound("batch scan " + std::string(name) + "(): not registered");
  }
  it->second->batch.store(nullptr, std::memory_order_release);
  return Status::OK();
}

Result<sql::Appender> Database::Appender(std::string_view table) {
  auto handle = std::make_unique<sql::Appender::Handle>();
  std::string name(table);
  if (duckdb_appender_create(handles_->connection, nullptr, name.c_str(), &handle->appender) !=
      DuckDBSuccess) {
    duckdb_error_data error = duckdb_appender_error_data(handle->appender);
    Status s = Status::InvalidArgument("appender for " + name + ": " +
                                       ErrorText(duckdb_error_data_message(error)));
    duckdb_destroy_error_data(&error);
    return s;
  }
  return sql::Appender(std::move(handle), std::move(name));
}

}  // namespace weir::sql
