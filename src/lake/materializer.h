// Materialization: a view's partitions written from its topic's records and committed to the
// catalog.
//
// Partitions follow the log. Each topic partition's records are cut into insert-time spans of
// the view's `partition` length by the time the log appended them (the running maximum of the
// batches' append times, so a span is a contiguous offset range). A span is closed once a record
// of a later span exists or the log's clock is past its end (plus a grace): its records, and the
// open pieces written for it before, become one sealed partition. Records of the open span are
// written as open pieces (a background refresh, or just in time before a query) and merged into
// the sealed partition when the span closes. A late event (an old event time) lands in the span
// it was appended in and never reopens a sealed partition; event-time min/max are recorded for
// pruning.
//
// Every file is written under a name no other partition had (its instance number) and is
// visible only once the catalog commits it; a crash before the commit leaves an orphan, which
// the lake sweeps. A partition whose schema hash is not the view's is stale: it is rebuilt from
// the log (same range, new file, one commit retiring the old) while the log still holds its
// range; otherwise it stays as it is and `weir views describe` shows it stale.
//
// A merge (the span's pieces, or `weir views merge`) checks that its inputs share the schema
// hash, that their ranges are contiguous, and that the rows written are the sum of the inputs'
// rows; the merged partition is sorted by the view's `sort` and says so.
//
// Threads: a Materializer belongs to one thread; two must not update the same view at once (the
// Lake serializes them). The catalog would refuse the second's overlapping commit.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lake/catalog.h"
#include "log/log.h"
#include "weir/status.h"

namespace weir::lake {

struct MaterializeOptions {
  // The log's clock: ms since the epoch (the system clock, which stamps appended batches).
  std::function<int64_t()> now_ms;
  // A span closes this long after its end even with no later record.
  std::chrono::milliseconds seal_grace{2000};
  // At most this many records are held in memory at once while a range is written (the COPY
  // reads a range through a batch of this many, refilled as it goes).
  size_t max_batch_records = 65'536;
};

struct MaterializeFigures {
  int64_t records = 0;       // log records read
  int64_t rows = 0;          // rows written to new partitions
  int64_t partitions = 0;    // partitions committed (pieces, sealed, merged, rebuilt)
  int64_t dead_letters = 0;  // records that did not fit the view's columns
  int64_t bytes = 0;         // Parquet bytes written
  int64_t skipped = 0;       // records the log had evicted before the view read them
};

class Materializer {
 public:
  static Result<std::unique_ptr<Materializer>> Create(Catalog& catalog, log::LogStore& log,
                                                      std::filesystem::path lake_dir,
                                                      MaterializeOptions options = {});
  ~Materializer();

  // Brings the view up to the log's visible end: stale partitions and those whose file is
  // missing or not of the size the catalog says rebuilt (kCorruption if the log no longer holds
  // a damaged one's range), closed spans sealed,
  // and, with `open_too`, the open span's records written as a piece (otherwise they wait for
  // the next update). Infers the view's columns from its first records if it declares none.
  // Errors: the view's SQL failing (kInvalidArgument with DuckDB's message, nothing committed),
  // a write failing (kIOError / kResourceExhausted, nothing committed).
  Status Update(std::string_view view, bool open_too, MaterializeFigures* figures = nullptr);
  // Retires every live partition of the view and writes its ranges again from the log (each
  // replaced in one commit, so a query sees the old or the new, never neither).
  // kFailedPrecondition naming the first range the log no longer holds.
  Status Rebuild(std::string_view view, MaterializeFigures* figures = nullptr);
  // Merges each topic partition's sealed partitions into partitions spanning `span` (aligned on
  // the epoch), e.g. hours into days. Spans with one partition are left as they are.
  // `closed_only` (the background policy): only spans no later partition can fall in any more,
  // those before a live partition of a later span, so that each is merged once and not again
  // for every partition sealed in it.
  Status Merge(std::string_view view, std::chrono::milliseconds span,
               MaterializeFigures* figures = nullptr, bool closed_only = false);
  // Writes the view's live partition `instance` again from the log, its file being damaged
  // (`problem` says how, e.g. "is missing"). kCorruption naming the file, the problem and the
  // offsets if the log no longer holds them; kNotFound if no live partition has that instance.
  Status Repair(std::string_view view, int64_t instance, std::string_view problem,
                MaterializeFigures* figures = nullptr);

 private:
  struct State;
  explicit Materializer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace weir::lake
