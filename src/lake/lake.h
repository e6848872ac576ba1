// The lake: a data directory's views of its topics as Parquet, kept up to date, and SQL over
// them. The layout:
//
//   <data-dir>/lake/catalog.duckdb              views and partitions (catalog.h)
//   <data-dir>/lake/<view>/<topic partition>/<instance>.parquet   partition files
//
// A view registered once stays registered (the catalog has it); registering it again with
// another definition replaces it, and partitions of the old schema hash are rebuilt.
// Before a query, the views it names are brought up to date, the open span too (just in time);
// `StartBackground` keeps every view up to date as topics grow (each at its `refresh` interval)
// and sweeps: files of partitions retired longer than `retired_grace` ago (a merge's or a
// rebuild's inputs, which a running query may still read) and orphans (files the catalog does
// not name, older than `orphan_grace`: a crash between a COPY and its commit).
//
// Certified scan order: a query of the form `SELECT <per-row expressions> FROM view [WHERE ...]
// ORDER BY c [ASC|DESC] LIMIT n`, where the view declares `order: concatenated` and c is its
// first sort column, is answered by reading the view's partitions one at a time in c's order
// and stopping once it has n rows, instead of sorting everything, if every live partition
// certifies it (its file is sorted by c, holds no NULL c, and has c's range). If two partitions'
// ranges overlap, the query fails (kFailedPrecondition) rather than return rows out of order;
// if some partition does not certify, DuckDB sorts as for any query.
//
// Pruning: a WHERE bounding a view's first sort column with constants reads only the
// partitions whose certified range meets the bounds (query_plan.h).
//
// Queries are read-only: one SELECT (or WITH ... SELECT) statement; anything else, and any
// function reaching files outside the lake, is refused. Each runs on a connection of its own to
// the lake's query database, with a time limit (interrupted past it, kResourceExhausted); the
// queries running at once share its memory limit; rows are streamed to the caller.
//
// Damaged files: an update finds a live partition's file missing or of another size than the
// catalog says, or a query fails reading it: the partition is written again from the log (the
// query then runs again, if it had given no row yet); if the log no longer holds its range, the
// error (kCorruption) names the file, what is wrong with it and the offsets that are gone.
//
// Threads: every method may be called from any thread. Updates of one view are serialized.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lake/catalog.h"
#include "lake/materializer.h"
#include "lake/view.h"
#include "log/log.h"
#include "sql/database.h"
#include "weir/serve.h"
#include "weir/status.h"

namespace weir::lake {

struct LakeOptions {
  std::filesystem::path dir;  // <data-dir>/lake
  MaterializeOptions materialize;
  std::chrono::milliseconds retired_grace{std::chrono::minutes(1)};
  std::chrono::milliseconds orphan_grace{std::chrono::minutes(10)};
  // Bounds on the queries (Query), shared by those running at once: DuckDB's memory_limit
  // ("" for DuckDB's default, 80% of RAM) and its worker threads (0: one per core).
  std::string query_memory_limit = "2GB";
  int query_threads = 0;
  // Where background failures and progress lines go (a view whose SQL fails, a full disk).
  std::function<void(const std::string&)> on_progress;
};

// What a query read, for the curious and the benchmarks.
struct QueryStats {
  bool ordered_scan = false;  // answered by scanning certified partitions in order
  bool pruned = false;        // its WHERE bounds a view's sort column: partitions outside skipped
  int64_t partitions = 0;     // live partitions with a file, of the views it names
  // Those it read: all but the pruned; for an ordered scan, those it read before it had its rows.
  int64_t partitions_read = 0;
};

struct QueryOptions {
  // From the start of reading (after the JIT update), for the whole query: past it, the query
  // is interrupted (kResourceExhausted).
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // Polled every 50 ms while the query reads (any thread may make it true, e.g. when the client
  // that asked went away): true interrupts it (kCancelled). Unset: never.
  std::function<bool()> cancelled;
  bool update_first = true;  // bring the views the query names up to date first (JIT)
  QueryStats* stats = nullptr;
};

// Receives a query's result: the column names once, then each row, either as text cells (NULL
// as nullopt) or as one JSON object, as the caller asked.
struct QuerySink {
  bool json_rows = false;
  std::function<void(std::span<const std::string> names)> on_columns;
  std::function<void(std::span<const std::optional<std::string>> cells)> on_row;
  std::function<void(std::string_view json_object)> on_json_row;
};

struct ViewStatus {
  CatalogView view;
  std::vector<PartitionRecord> partitions;  // live
  int64_t stale = 0;                        // live partitions of another schema hash
  int64_t rows = 0;
  int64_t bytes = 0;
};

class Lake {
 public:
  static Result<std::unique_ptr<Lake>> Open(log::LogStore& log, LakeOptions options);
  ~Lake();  // stops the background thread

  // Adds the view, or replaces its definition if it differs (its schema hash is recomputed:
  // partitions of the old one are stale). kInvalidArgument if its SQL does not bind over its
  // records' columns.
  Status Register(const ViewSpec& spec);
  std::vector<CatalogView> Views() const;
  Result<ViewStatus> Describe(std::string_view view) const;

  Status Update(std::string_view view, bool open_too, MaterializeFigures* figures = nullptr);
  Status Rebuild(std::string_view view, MaterializeFigures* figures = nullptr);
  Status Merge(std::string_view view, std::chrono::milliseconds span,
               MaterializeFigures* figures = nullptr);
  // Deletes retired partitions' files past the grace and orphans; returns how many files.
  Result<int64_t> Sweep();

  // Runs a read-only query (see the top of this file).
  Status Query(std::string_view sql, const QueryOptions& options, const QuerySink& sink);

  // A thread that updates every view at its refresh interval and sweeps; Stop joins it.
  void StartBackground();
  void StopBackground();

  const std::filesystem::path& dir() const { return options_.dir; }

  // --- Archives (lake_archive.cc; view.h has the `archive: true` form) ---------------------
  // Marks the archive view's topic archived in the log (its retention then keeps what the
  // archive lacks) and raises each partition's retention floor to the archive's committed end;
  // refreshes what ArchiveExtentOf answers. Update does this before and after materializing an
  // archive view; OK for a view that is not an archive. A topic that does not exist yet will be
  // created archived (LogStore::ArchiveWhenCreated).
  Status HoldForArchive(std::string_view view);
  // What the archive of a topic partition holds, from memory (never touches DuckDB nor waits
  // for a commit): refreshed by HoldForArchive. nullopt: no archive, or nothing in it yet.
  std::optional<ArchiveExtent> ArchiveExtentOf(std::string_view topic, int32_t partition) const;
  // Reads the topic's archive from `from` (ArchiveAccess::read's contract, serve.h): in offset
  // order, chunks of at most `chunk` messages, through the archive's end as listed when the
  // read reaches it. kNotFound: the topic has no archive; kOutOfRange: the archive does not
  // hold `from`; kCorruption / kIOError naming the file: a file missing, unreadable, or not
  // holding exactly its partition's offsets. On the caller's thread, with a DuckDB of its own.
  Status ReadArchive(std::string_view topic, int32_t partition, int64_t from, size_t chunk,
                     const std::function<bool(std::span<const ArchivedMessage>)>& on_chunk);

 private:
  // A view's lock, and its materializer (kept between updates: opening one costs ~10 ms).
  struct ViewSlot {
    std::mutex mu;
    std::unique_ptr<Materializer> materializer;  // guarded by mu
  };
  Lake(log::LogStore& log, LakeOptions options, std::unique_ptr<Catalog> catalog,
       std::unique_ptr<sql::Database> query_db)
      : log_(log),
        options_(std::move(options)),
        catalog_(std::move(catalog)),
        query_db_(std::move(query_db)) {}
  ViewSlot& Slot(std::string_view view);
  // What a query has given its sink so far (a retry must not give it again).
  struct QueryProgress {
    bool columns_given = false;
    int64_t rows = 0;
    std::optional<std::chrono::steady_clock::time_point> deadline;  // set when reading starts
  };
  Status QueryOnce(std::string_view sql, const QueryOptions& options, const QuerySink& sink,
                   QueryProgress& progress);
  std::mutex& ViewMutex(std::string_view view);
  template <typename F>
  Status WithMaterializer(std::string_view view, F&& f);
  void BackgroundLoop();
  // ReadArchive's loop: fills `messages` (filled of them), calling hand_over when full; stops
  // once `stopped`.
  Status ReadArchiveInto(std::string_view topic, int32_t partition, int64_t from,
                         std::vector<ArchivedMessage>& messages, size_t& filled,
                         const std::function<void()>& hand_over, bool& stopped);
  // The view's live partitions in the order of its first sort column, if every one certifies
  // that order; nullopt if one does not; kFailedPrecondition if two overlap.
  Result<std::optional<std::vector<PartitionRecord>>> CertifiedOrder(const CatalogView& view,
                                                                     bool descending) const;
  // Runs `statement` on `db`, its rows (at most `limit`) cast to text or JSON for the sink,
  // until `deadline` and while `options.cancelled` says no; `rows` counts the rows given.
  static Status RunStreamed(sql::Database& db, std::string_view statement, size_t columns,
                            const QueryOptions& options,
                            std::chrono::steady_clock::time_point deadline, const QuerySink& sink,
                            int64_t limit, int64_t* rows);

  log::LogStore& log_;
  LakeOptions options_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<sql::Database> query_db_;  // each query connects to it
  std::mutex mu_;  // guards view_slots_ and the background thread's fields
  std::map<std::string, std::unique_ptr<ViewSlot>, std::less<>> view_slots_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread background_;
  // ArchiveExtentOf's answers, by (topic, partition). Never held across I/O.
  mutable std::mutex archive_mu_;
  std::map<std::pair<std::string, int32_t>, ArchiveExtent, std::less<>> archive_extents_;
};

}  // namespace weir::lake
