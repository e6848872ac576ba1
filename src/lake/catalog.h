// The lake's catalog: which views exist and which Parquet files make each view, committed
// atomically.
//
// It is a DuckDB database file (<lake>/catalog.duckdb). Why DuckDB and not the state store:
// DuckDB's write-ahead log makes a commit (partitions added and retired together) atomic and
// durable, the process that writes the files already has DuckDB loaded, and `weir views` can
// show the catalog with SQL. The catalog is small (a row per partition), so every row is also
// kept in memory: reads never touch the file, and a commit writes the file first and changes
// memory only once the transaction committed.
//
// A partition covers the offset range [begin_offset, end_offset) of one topic partition. Among a
// view's live partitions these ranges never overlap: Commit refuses a partition that overlaps a
// live one it does not retire in the same commit. Retired partitions stay in the catalog (with
// their retirement time) so that their files are deleted only after a grace period, once no
// query can still be reading them; an empty partition (no record in its range, or none left by
// the view's SQL) is recorded with rows 0 and no file, so "empty" and "not processed" differ.
//
// Threads: every method may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lake/view.h"
#include "sql/database.h"
#include "weir/status.h"

namespace weir::lake {

struct PartitionRecord {
  std::string view;
  int64_t instance = 0;  // unique in the catalog; names the file
  std::string schema_hash;
  std::string source_hash;  // SourceHash of the records of its range (source_hash.h)
  int32_t topic_partition = 0;
  int64_t begin_offset = 0;  // [begin, end) of the topic partition
  int64_t end_offset = 0;
  int64_t source_records = 0;  // records in the range (end - begin while the log is intact)
  int64_t append_min_ms = 0;   // the log's append times of the range's first and last records
  int64_t append_max_ms = 0;
  int64_t span_start_ms = 0;  // the insert-time span it belongs to: [start, start + length)
  int64_t span_ms = 0;
  int64_t rows = 0;                     // rows in the file (after the view's SQL)
  std::optional<int64_t> event_min_ms;  // the records' timestamps, for pruning
  std::optional<int64_t> event_max_ms;
  std::string sort_order;  // the columns the file is really sorted by, comma-separated; "" none
  std::optional<double> sort_min;  // the first sort column's range in the file, when numeric
  std::optional<double> sort_max;  //   (a timestamp as epoch milliseconds)
  std::string file;                // relative to the lake directory; "" when rows == 0
  int64_t bytes = 0;
  bool sealed = false;  // its span is closed: only a merge or a rebuild replaces it
  std::optional<int64_t> retired_ms;
};

struct CatalogView {
  ViewSpec spec;
  std::vector<ViewColumn> columns;  // declared, or inferred from the first records
  std::string schema_hash;
};

class Catalog {
 public:
  // Opens (creating) <lake_dir>/catalog.duckdb. kUnavailable if another process holds it.
  static Result<std::unique_ptr<Catalog>> Open(const std::filesystem::path& lake_dir);

  // Adds or replaces a view's definition. Its partitions are kept: those of another schema hash
  // are stale, for the materializer to rebuild.
  Status PutView(const CatalogView& view);
  std::vector<CatalogView> Views() const;
  std::optional<CatalogView> GetView(std::string_view name) const;

  // The view's live partitions, by topic partition then offset.
  std::vector<PartitionRecord> LivePartitions(std::string_view view) const;
  // A new partition instance number (never given out before by this catalog).
  int64_t NextInstance();
  // Makes `added` live and retires the live partitions `retired` (instances) at `now_ms`, in
  // one transaction. kFailedPrecondition, and nothing changes, if an added partition's range is
  // empty or overlaps a live partition of its view and topic partition that is not retired
  // here, or a retired instance is not live.
  Status Commit(std::string_view view, const std::vector<PartitionRecord>& added,
                const std::vector<int64_t>& retired, int64_t now_ms);
  // Partitions retired at or before `ms` (any view), whose files no query still reads.
  std::vector<PartitionRecord> RetiredBefore(int64_t ms) const;
  // Removes retired partitions from the catalog, once their files are deleted.
  Status Forget(const std::vector<PartitionRecord>& retired);
  // Every file the catalog names, live or retired (relative to the lake directory).
  std::vector<std::string> Files() const;

  ~Catalog();

 private:
  explicit Catalog(std::unique_ptr<sql::Database> db) : db_(std::move(db)) {}
  Status Load();

  mutable std::mutex mu_;
  std::unique_ptr<sql::Database> db_;
  std::vector<CatalogView> views_;
  std::vector<PartitionRecord> partitions_;  // live and retired
  int64_t next_instance_ = 1;
};

}  // namespace weir::lake
