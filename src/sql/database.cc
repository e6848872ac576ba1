#include "sql/database.h"

#include <duckdb.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
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
    default:
      return ColumnType::kOther;
  }
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

// Where DuckDB may write: extensions (never installed here), persistent secrets, spills.
std::filesystem::path DuckDbScratchDir() {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  return base / ("weir-duckdb-" + std::to_string(::getpid()));
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
    case ColumnType::kOther:
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

std::string_view Row::Text(size_t i) const {
  const internal::ColumnView& c = (*columns_)[i];
  WEIR_CHECK(c.type == ColumnType::kVarchar,
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

// ---- Database

struct Database::Handles {
  duckdb_database db = nullptr;
  duckdb_connection connection = nullptr;
  ~Handles() {
    if (connection != nullptr) duckdb_disconnect(&connection);
    if (db != nullptr) duckdb_close(&db);
  }
};

Database::Database(std::unique_ptr<Handles> handles) : handles_(std::move(handles)) {}
Database::~Database() = default;

Result<std::unique_ptr<Database>> Database::OpenInMemory(int threads) {
  if (threads < 0) return Status::InvalidArgument("duckdb threads must be >= 0");
  std::filesystem::path scratch = DuckDbScratchDir();
  std::vector<std::pair<std::string, std::string>> options = {
      {"autoinstall_known_extensions", "false"},
      {"autoload_known_extensions", "false"},
      {"allow_community_extensions", "false"},
      {"extension_directory", (scratch / "extensions").string()},
      {"secret_directory", (scratch / "secrets").string()},
      {"temp_directory", (scratch / "spill").string()},
  };
  if (threads > 0) options.emplace_back("threads", std::to_string(threads));

  duckdb_config config = nullptr;
  if (duckdb_create_config(&config) != DuckDBSuccess) {
    return Status::Internal("duckdb: cannot create a configuration");
  }
  for (const auto& [name, value] : options) {
    if (duckdb_set_config(config, name.c_str(), value.c_str()) != DuckDBSuccess) {
      duckdb_destroy_config(&config);
      return Status::Internal("duckdb: cannot set " + name + " = " + value);
    }
  }
  auto handles = std::make_unique<Handles>();
  char* error = nullptr;
  duckdb_state state = duckdb_open_ext(nullptr, &handles->db, config, &error);
  duckdb_destroy_config(&config);
  if (state != DuckDBSuccess) {
    Status s = Status::Internal("duckdb: cannot open an in-memory database: " + ErrorText(error));
    duckdb_free(error);
    return s;
  }
  if (duckdb_connect(handles->db, &handles->connection) != DuckDBSuccess) {
    return Status::Internal("duckdb: cannot connect to the in-memory database");
  }
  return std::unique_ptr<Database>(new Database(std::move(handles)));
}

Status Database::Execute(std::string_view sql) {
  duckdb_result result;
  std::string text(sql);
  duckdb_state state = duckdb_query(handles_->connection, text.c_str(), &result);
  Status s;
  if (state != DuckDBSuccess) s = Status::InvalidArgument(ErrorText(duckdb_result_error(&result)));
  duckdb_destroy_result(&result);
  return s;
}

Status Database::Query(std::string_view sql, const std::function<void(const Row&)>& on_row) {
  std::string text(sql);
  duckdb_prepared_statement prepared = nullptr;
  struct PreparedGuard {
    duckdb_prepared_statement* p;
    ~PreparedGuard() { duckdb_destroy_prepare(p); }
  } prepared_guard{&prepared};
  if (duckdb_prepare(handles_->connection, text.c_str(), &prepared) != DuckDBSuccess) {
    return Status::InvalidArgument(ErrorText(duckdb_prepare_error(prepared)));
  }
  // The streaming pending result lets DuckDB produce chunks as they are fetched instead of
  // materializing the whole result first.
  duckdb_pending_result pending = nullptr;
  struct PendingGuard {
    duckdb_pending_result* p;
    ~PendingGuard() { duckdb_destroy_pending(p); }
  } pending_guard{&pending};
  if (duckdb_pending_prepared_streaming(prepared, &pending) != DuckDBSuccess) {
    return Status::InvalidArgument(ErrorText(duckdb_pending_error(pending)));
  }
  duckdb_result result;
  std::memset(&result, 0, sizeof(result));
  struct ResultGuard {
    duckdb_result* r;
    ~ResultGuard() { duckdb_destroy_result(r); }
  } result_guard{&result};
  if (duckdb_execute_pending(pending, &result) != DuckDBSuccess) {
    return Status::InvalidArgument(ErrorText(duckdb_result_error(&result)));
  }

  const idx_t column_count = duckdb_column_count(&result);
  std::vector<internal::ColumnView> columns(column_count);
  for (idx_t c = 0; c < column_count; ++c) {
    columns[c].type = FromDuckType(duckdb_column_type(&result, c));
    if (columns[c].type == ColumnType::kDecimal) {
      duckdb_logical_type logical = duckdb_column_logical_type(&result, c);
      columns[c].decimal_scale = duckdb_decimal_scale(logical);
      columns[c].decimal_storage = FromDuckType(duckdb_decimal_internal_type(logical));
      duckdb_destroy_logical_type(&logical);
    }
  }
  while (true) {
    duckdb_data_chunk chunk = duckdb_fetch_chunk(result);
    if (chunk == nullptr) {
      const char* error = duckdb_result_error(&result);
      if (error != nullptr) return Status::InvalidArgument(error);
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
