// From log records to the columns a view's SQL reads (`records`), and the hashes that bind a
// partition to the records it was made from.
//
// Contract: RecordColumns::Add parses a record's value once (simdjson on demand) and appends one
// row, or appends nothing and returns the reason the record does not fit (not a JSON object, a
// field of another type than its column's); the caller sends that record to the dead-letter
// topic. Fields that are not columns are ignored; a missing field is NULL.
// Threads: one RecordColumns per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lake/view.h"
#include "log/record_format.h"
#include "sql/database.h"
#include "weir/status.h"

namespace weir::lake {

// An order-independent hash of (offset, record) pairs: the sum, modulo 2^64, of a mix of each
// record's offset and the CRC-32C of its timestamp, key and value. So the hash of a range is the
// sum of the hashes of its pieces (a merge's source hash is computed from its inputs), and a
// record changed, added or missing under the same offsets changes it.
class SourceHash {
 public:
  void Add(const log::StoredRecord& record);
  void Add(const SourceHash& other) { sum_ += other.sum_; }
  std::string ToString() const;  // 16 lower-case hex digits
  static std::optional<SourceHash> FromString(std::string_view text);

 private:
  uint64_t sum_ = 0;
};

// The columns of `records` for a view's columns (in this order): _partition, _offset, _key,
// _ts, then the fields.
std::vector<std::pair<std::string, sql::ColumnBatch::Type>> RecordBatchColumns(
    const std::vector<ViewColumn>& columns);

// The columns of an archive view's records (view.h): _partition, _offset, _key, _ts, _value
// (the value's bytes, a BLOB).
std::vector<std::pair<std::string, sql::ColumnBatch::Type>> ArchiveBatchColumns();

// Infers a view's columns from records' values: every top-level field of the JSON objects, in
// order of first appearance, typed bigint / double / varchar / boolean / json (integer and
// number -> double; any other mix -> json). Values that are not objects are skipped.
std::vector<ViewColumn> InferColumns(std::span<const log::StoredRecord> records);

class RecordColumns {
 public:
  RecordColumns();
  ~RecordColumns();
  // Clears the batch and sets its columns for `columns`.
  void Reset(const std::vector<ViewColumn>& columns);
  // Clears the batch and sets the archive's columns (ArchiveBatchColumns): every record fits.
  void ResetArchive();
  // Clears the rows and the figures below, keeping the columns.
  void Clear();
  // Appends the record as a row; on error nothing is appended (the reason for a dead letter).
  Status Add(const log::StoredRecord& record, int32_t topic_partition);

  const sql::ColumnBatch& batch() const;
  size_t rows() const;
  std::optional<int64_t> event_min_ms() const { return event_min_; }
  std::optional<int64_t> event_max_ms() const { return event_max_; }

 private:
  struct Parser;
  // _partition, _offset, _key, _ts of the row being added.
  void AppendMeta(const log::StoredRecord& record, int32_t topic_partition);
  std::unique_ptr<Parser> parser_;
  std::vector<ViewColumn> columns_;
  bool archive_ = false;
  std::optional<int64_t> event_min_;
  std::optional<int64_t> event_max_;
};

// A key as the text of `_key`: a string or JSON key as it is, an integer in decimal, bytes in
// base64; nullopt for the null key.
std::optional<std::string> KeyText(const log::StoredRecord& record);

}  // namespace weir::lake
