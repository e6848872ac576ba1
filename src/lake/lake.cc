#include "lake/lake.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <system_error>
#include <unordered_set>

#include "lake/query_plan.h"
#include "lake/records.h"
#include "lake/sql_text.h"
#include "sql/database.h"

namespace weir::lake {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view TrimStatement(std::string_view sql) {
  while (!sql.empty() &&
         (std::isspace(static_cast<unsigned char>(sql.back())) || sql.back() == ';')) {
    sql.remove_suffix(1);
  }
  return sql;
}

// Defines, on the connection `db`, the relation a view's name stands for in a query: its live
// partitions' files, or an empty relation of its columns (the view's SQL over no records). A
// temporary view: it lives as long as the connection and no other connection sees it.
Status DefineView(sql::Database& db, const std::filesystem::path& lake_dir, const CatalogView& view,
                  const std::vector<PartitionRecord>& live) {
  std::string files;
  bool mixed = false;
  for (const PartitionRecord& p : live) {
    if (p.file.empty()) continue;
    files += (files.empty() ? "" : ", ") + SqlString((lake_dir / p.file).string());
    mixed = mixed || p.schema_hash != view.schema_hash;
  }
  const std::string create =
      "CREATE OR REPLACE TEMP VIEW " + SqlIdentifier(view.spec.name) + " AS ";
  if (!files.empty()) {
    return db.Execute(create + "SELECT * FROM read_parquet([" + files + "]" +
                      (mixed ? ", union_by_name = true" : "") + ")");
  }
  std::string records;
  for (const auto& [name, type] :
       view.spec.archive ? ArchiveBatchColumns() : RecordBatchColumns(view.columns)) {
    records += (records.empty() ? "SELECT " : ", ") + std::string("CAST(NULL AS ") +
               std::string(sql::ColumnBatchSqlType(type)) + ") AS " + SqlIdentifier(name);
  }
  return db.Execute(create + "WITH records AS (" + records + " WHERE false) SELECT * FROM " +
                    (view.spec.sql.empty() ? "records" : "(" + view.spec.sql + ")"));
}

}  // namespace

Result<std::unique_ptr<Lake>> Lake::Open(log::LogStore& log, LakeOptions options) {
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Open(options.dir));
  // The queries' database: every query is a connection to it, so none pays for opening one.
  // Locked to the lake's directory: a query can read no other file and change no setting.
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> query_db,
                        sql::Database::OpenInMemory(options.query_threads));
  std::string settings = "SET allowed_directories = [" + SqlString(options.dir.string() + "/") +
                         "]; SET enable_external_access = false";
  if (!options.query_memory_limit.empty()) {
    settings += "; SET memory_limit = " + SqlString(options.query_memory_limit);
  }
  WEIR_RETURN_IF_ERROR(query_db->Execute(settings + "; SET lock_configuration = true"));
  std::unique_ptr<Lake> lake(
      new Lake(log, std::move(options), std::move(catalog), std::move(query_db)));
  for (const CatalogView& v : lake->Views()) {
    WEIR_RETURN_IF_ERROR(lake->HoldForArchive(v.spec.name));
  }
  return lake;
}

Lake::~Lake() { StopBackground(); }

Lake::ViewSlot& Lake::Slot(std::string_view view) {
  std::lock_guard lock(mu_);
  auto it = view_slots_.find(view);
  if (it == view_slots_.end()) {
    it = view_slots_.emplace(std::string(view), std::make_unique<ViewSlot>()).first;
  }
  return *it->second;
}

std::mutex& Lake::ViewMutex(std::string_view view) { return Slot(view).mu; }

template <typename F>
Status Lake::WithMaterializer(std::string_view view, F&& f) {
  ViewSlot& slot = Slot(view);
  std::lock_guard lock(slot.mu);
  if (!slot.materializer) {
    WEIR_ASSIGN_OR_RETURN(slot.materializer, Materializer::Create(*catalog_, log_, options_.dir,
                                                                  options_.materialize));
  }
  Status s = f(*slot.materializer);
  if (!s.ok()) slot.materializer.reset();  // the next call starts from a fresh one
  return s;
}

Status Lake::Register(const ViewSpec& spec) {
  std::lock_guard lock(ViewMutex(spec.name));
  std::optional<CatalogView> old = catalog_->GetView(spec.name);
  if (old && old->spec == spec) return Status::OK();
  WEIR_RETURN_IF_ERROR(CheckArchiveSpec(spec));
  for (const CatalogView& other : catalog_->Views()) {
    if (spec.archive && other.spec.archive && other.spec.topic == spec.topic &&
        other.spec.name != spec.name) {
      return Status::InvalidArgument("view '" + spec.name + "': topic '" + spec.topic +
                                     "' already has an archive, view '" + other.spec.name + "'");
    }
  }
  CatalogView view{.spec = spec, .columns = spec.columns};
  if (view.columns.empty() && old && old->spec.sql == spec.sql && old->spec.topic == spec.topic &&
      old->spec.columns.empty()) {
    view.columns = old->columns;  // keep what was inferred
  }
  view.schema_hash = SchemaHash(view.spec, view.columns);
  // The SQL must bind over the records' columns (when they are known).
  if (!spec.sql.empty() && !view.columns.empty()) {
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, query_db_->Connect());
    if (Status s = DefineView(*db, options_.dir, view, {}); !s.ok()) {
      return Status::InvalidArgument(
          "view '" + spec.name +
          "': its sql does not run over its records: " + std::string(s.message()));
    }
  }
  WEIR_RETURN_IF_ERROR(catalog_->PutView(view));
  return HoldForArchive(spec.name);
}

std::vector<CatalogView> Lake::Views() const { return catalog_->Views(); }

Result<ViewStatus> Lake::Describe(std::string_view name) const {
  std::optional<CatalogView> view = catalog_->GetView(name);
  if (!view) return Status::NotFound("no lake view named '" + std::string(name) + "'");
  ViewStatus status{.view = *view, .partitions = catalog_->LivePartitions(name)};
  for (const PartitionRecord& p : status.partitions) {
    status.stale += p.schema_hash != view->schema_hash;
    status.rows += p.rows;
    status.bytes += p.bytes;
  }
  return status;
}

Status Lake::Update(std::string_view view, bool open_too, MaterializeFigures* figures) {
  // An archive's topic is held before its records are read, and its floors raised after.
  WEIR_RETURN_IF_ERROR(HoldForArchive(view));
  Status s =
      WithMaterializer(view, [&](Materializer& m) { return m.Update(view, open_too, figures); });
  Status held = HoldForArchive(view);
  return s.ok() ? held : s;
}

Status Lake::Rebuild(std::string_view view, MaterializeFigures* figures) {
  return WithMaterializer(view, [&](Materializer& m) { return m.Rebuild(view, figures); });
}

Status Lake::Merge(std::string_view view, std::chrono::milliseconds span,
                   MaterializeFigures* figures) {
  return WithMaterializer(view, [&](Materializer& m) { return m.Merge(view, span, figures); });
}

Result<int64_t> Lake::Sweep() {
  const int64_t now = NowMs();
  int64_t removed = 0;
  std::vector<PartitionRecord> retired =
      catalog_->RetiredBefore(now - options_.retired_grace.count());
  for (const PartitionRecord& p : retired) {
    if (p.file.empty()) continue;
    std::error_code ec;
    if (std::filesystem::remove(options_.dir / p.file, ec)) ++removed;
    if (ec)
      return Status::IOError("lake: removing " + (options_.dir / p.file).string() + ": " +
                             ec.message());
  }
  WEIR_RETURN_IF_ERROR(catalog_->Forget(retired));
  // Orphans: Parquet files under a view's folder that the catalog does not name.
  std::vector<std::string> named = catalog_->Files();
  std::unordered_set<std::string> known(named.begin(), named.end());
  std::error_code ec;
  const auto cutoff = std::filesystem::file_time_type::clock::now() - options_.orphan_grace;
  for (auto it = std::filesystem::recursive_directory_iterator(options_.dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".parquet") continue;
    const std::string relative = std::filesystem::relative(it->path(), options_.dir).string();
    if (known.contains(relative)) continue;
    std::error_code time_ec;
    if (std::filesystem::last_write_time(it->path(), time_ec) > cutoff || time_ec) continue;
    if (std::filesystem::remove(it->path(), time_ec)) ++removed;
  }
  return removed;
}

Status Lake::Query(std::string_view sql_text, const QueryOptions& options, const QuerySink& sink) {
  QueryProgress progress;
  Status s = QueryOnce(sql_text, options, sink, progress);
  if (s.ok() || s.code() == StatusCode::kResourceExhausted || s.code() == StatusCode::kCancelled) {
    return s;
  }
  // A partition's file DuckDB could not read (corrupt, truncated, gone): written again from the
  // log, and the query run again if it gave nothing yet.
  std::optional<PartitionRecord> damaged;
  for (const CatalogView& v : catalog_->Views()) {
    for (PartitionRecord& p : catalog_->LivePartitions(v.spec.name)) {
      if (!p.file.empty() &&
          s.message().find((options_.dir / p.file).string()) != std::string::npos) {
        damaged = std::move(p);
      }
    }
  }
  if (!damaged) return s;
  const std::string problem = "cannot be read (" + std::string(s.message()) + ")";
  WEIR_RETURN_IF_ERROR(WithMaterializer(damaged->view, [&](Materializer& m) {
    return m.Repair(damaged->view, damaged->instance, problem);
  }));
  if (progress.rows > 0) {
    return s.WithContext("lake view '" + damaged->view + "': partition " +
                         std::to_string(damaged->instance) +
                         " could not be read after rows were given; it has been written again "
                         "from the log: run the query again");
  }
  return QueryOnce(sql_text, options, sink, progress);
}

Status Lake::QueryOnce(std::string_view sql_text, const QueryOptions& options,
                       const QuerySink& sink, QueryProgress& progress) {
  const std::string_view statement = TrimStatement(sql_text);
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, query_db_->Connect());
  // Parsed first (no name need exist to parse), so that anything but one SELECT is refused as
  // such before a view is brought up to date.
  Value tree;
  WEIR_RETURN_IF_ERROR(db->Query("SELECT json_serialize_sql(" + SqlString(statement) + ")",
                                 [&](const sql::Row& row) {
                                   if (auto parsed = Value::Parse(row.Text(0)); parsed.ok()) {
                                     tree = std::move(*parsed);
                                   }
                                 }));
  WEIR_RETURN_IF_ERROR(CheckOneSelect(tree));
  // The views the statement names (a view another view's SQL reads is not one: a view's SQL
  // reads its topic's records); the others are not defined, so that one not ready yet (its
  // columns not inferred) cannot break a query that does not read it.
  std::vector<CatalogView> views;
  for (const CatalogView& v : catalog_->Views()) {
    if (!Mentions(statement, v.spec.name)) continue;
    if (options.update_first) WEIR_RETURN_IF_ERROR(Update(v.spec.name, /*open_too=*/true));
    views.push_back(v);
  }
  if (options.update_first) {  // columns may have been inferred
    for (CatalogView& v : views) {
      if (std::optional<CatalogView> fresh = catalog_->GetView(v.spec.name)) v = std::move(*fresh);
    }
  }
  // A WHERE bounding a view's first sort column: its partitions wholly outside are not read.
  std::optional<SortRange> range;
  std::optional<SortRangeQuery> range_query = MatchSortRange(tree, statement, views);
  if (range_query) {
    // A constant DuckDB cannot evaluate prunes nothing; the query itself will say what is wrong.
    if (Result<SortRange> r = EvaluateSortRange(*db, *range_query); r.ok()) range = *r;
  }
  QueryStats ignored_stats;
  QueryStats& stats = options.stats ? *options.stats : ignored_stats;
  stats = {};
  for (const CatalogView& v : views) {
    std::vector<PartitionRecord> live = catalog_->LivePartitions(v.spec.name);
    for (const PartitionRecord& p : live) stats.partitions += p.file.empty() ? 0 : 1;
    if (range && &v == range_query->view) {
      std::erase_if(
          live, [&](const PartitionRecord& p) { return !range->MayHold(p, v.spec.sort.front()); });
      stats.pruned = true;
    }
    for (const PartitionRecord& p : live) stats.partitions_read += p.file.empty() ? 0 : 1;
    WEIR_RETURN_IF_ERROR(
        DefineView(*db, options_.dir, v, live).WithContext("lake view '" + v.spec.name + "'"));
  }
  WEIR_ASSIGN_OR_RETURN(std::vector<sql::StatementKind> kinds, db->Classify(statement));
  if (kinds.size() != 1 || kinds[0] != sql::StatementKind::kSelect) {
    return Status::InvalidArgument(
        "a lake query is one SELECT (or WITH ... SELECT) statement; this is a statement of "
        "another kind");
  }
  std::vector<std::string> names;
  WEIR_RETURN_IF_ERROR(db->Query("DESCRIBE " + std::string(statement),
                                 [&](const sql::Row& row) { names.emplace_back(row.Text(0)); }));
  if (!progress.deadline) progress.deadline = std::chrono::steady_clock::now() + options.timeout;
  if (sink.on_columns && !progress.columns_given) sink.on_columns(names);
  progress.columns_given = true;
  if (std::optional<OrderedScan> ordered = MatchOrderedScan(tree, views)) {
    WEIR_ASSIGN_OR_RETURN(std::optional<std::vector<PartitionRecord>> in_order,
                          CertifiedOrder(*ordered->view, ordered->descending));
    if (in_order) {
      stats.ordered_scan = true;
      stats.partitions_read = 0;
      int64_t& rows = progress.rows;
      for (const PartitionRecord& p : *in_order) {
        if (rows >= ordered->limit) break;
        if (range && ordered->view == range_query->view &&
            !range->MayHold(p, ordered->view->spec.sort.front())) {
          continue;
        }
        ++stats.partitions_read;
        WEIR_RETURN_IF_ERROR(DefineView(*db, options_.dir, *ordered->view, {p}));
        WEIR_RETURN_IF_ERROR(RunStreamed(*db, statement, names.size(), options, *progress.deadline,
                                         sink, ordered->limit - rows, &rows));
      }
      return Status::OK();
    }
  }
  return RunStreamed(*db, statement, names.size(), options, *progress.deadline, sink, INT64_MAX,
                     &progress.rows);
}

Result<std::optional<std::vector<PartitionRecord>>> Lake::CertifiedOrder(const CatalogView& view,
                                                                         bool descending) const {
  std::vector<PartitionRecord> files;
  const std::string& column = view.spec.sort.front();
  for (PartitionRecord& p : catalog_->LivePartitions(view.spec.name)) {
    if (p.file.empty()) continue;
    const bool certifies = p.schema_hash == view.schema_hash && CertifiesRange(p, column);
    if (!certifies) return std::optional<std::vector<PartitionRecord>>();
    files.push_back(std::move(p));
  }
  std::sort(files.begin(), files.end(), [](const PartitionRecord& a, const PartitionRecord& b) {
    return std::tie(*a.sort_min, *a.sort_max) < std::tie(*b.sort_min, *b.sort_max);
  });
  for (size_t i = 1; i < files.size(); ++i) {
    if (*files[i - 1].sort_max > *files[i].sort_min) {
      return Status::FailedPrecondition(
          "lake view '" + view.spec.name + "' declares a concatenated order on " + column +
          ", but partitions " + std::to_string(files[i - 1].instance) + " [" +
          SqlDouble(*files[i - 1].sort_min) + ", " + SqlDouble(*files[i - 1].sort_max) + "] and " +
          std::to_string(files[i].instance) + " [" + SqlDouble(*files[i].sort_min) + ", " +
          SqlDouble(*files[i].sort_max) +
          "] overlap; refusing to return rows out of order (declare `order: file` if the view's "
          "partitions may overlap in " +
          column + ")");
    }
  }
  if (descending) std::reverse(files.begin(), files.end());
  return std::optional<std::vector<PartitionRecord>>(std::move(files));
}

Status Lake::RunStreamed(sql::Database& db, std::string_view statement, size_t columns,
                         const QueryOptions& options,
                         std::chrono::steady_clock::time_point deadline, const QuerySink& sink,
                         int64_t limit, int64_t* rows) {
  const std::string wrapped =
      (sink.json_rows ? "SELECT to_json(weir_q)::VARCHAR" : "SELECT CAST(COLUMNS(*) AS VARCHAR)") +
      std::string(" FROM (") + std::string(statement) + ") AS weir_q" +
      (limit == INT64_MAX ? "" : " LIMIT " + std::to_string(limit));
  // A watchdog interrupts the statement past the deadline, or once the caller cancels.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  enum class Stop { kNone, kTime, kCancel };
  std::atomic<Stop> stopped{Stop::kNone};
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    while (!done) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        stopped = Stop::kTime;
      } else if (options.cancelled && options.cancelled()) {
        stopped = Stop::kCancel;
      } else {
        const auto wake =
            options.cancelled ? std::min(deadline, now + std::chrono::milliseconds(50)) : deadline;
        done_cv.wait_until(lock, wake);
        continue;
      }
      db.Interrupt();
      return;
    }
  });
  std::vector<std::optional<std::string>> cells(columns);
  Status s = db.Query(wrapped, [&](const sql::Row& row) {
    ++*rows;
    if (sink.json_rows) {
      sink.on_json_row(row.Text(0));
      return;
    }
    for (size_t i = 0; i < cells.size(); ++i) {
      if (row.IsNull(i)) {
        cells[i].reset();
      } else {
        cells[i] = std::string(row.Text(i));
      }
    }
    sink.on_row(cells);
  });
  {
    std::lock_guard lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  watchdog.join();
  if (!s.ok() && stopped == Stop::kTime) {
    return Status::ResourceExhausted("lake query stopped after its time limit of " +
                                     std::to_string(options.timeout.count()) + " ms");
  }
  if (!s.ok() && stopped == Stop::kCancel) return Status::Cancelled("lake query cancelled");
  return s;
}

void Lake::StartBackground() {
  std::lock_guard lock(mu_);
  if (background_.joinable()) return;
  stopping_ = false;
  background_ = std::thread([this] { BackgroundLoop(); });
}

void Lake::StopBackground() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (background_.joinable()) background_.join();
}

void Lake::BackgroundLoop() {
  std::map<std::string, int64_t> next_update_ms;
  int64_t next_sweep_ms = 0;
  auto report = [&](const Status& s) {
    if (!s.ok() && options_.on_progress) options_.on_progress("lake: " + std::string(s.message()));
  };
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const int64_t now = NowMs();
    int64_t wake_at = now + 1000;
    for (const CatalogView& v : catalog_->Views()) {
      int64_t& due = next_update_ms[v.spec.name];
      if (due <= now) {
        report(Update(v.spec.name, /*open_too=*/true));
        for (std::chrono::milliseconds span : v.spec.merge) {
          report(WithMaterializer(v.spec.name, [&](Materializer& m) {
            return m.Merge(v.spec.name, span, nullptr, /*closed_only=*/true);
          }));
        }
        due = now + v.spec.refresh.count();
      }
      wake_at = std::min(wake_at, due);
    }
    if (next_sweep_ms <= now) {
      report(Sweep().status());
      next_sweep_ms = now + 10'000;
    }
    lock.lock();
    if (stopping_) break;
    wake_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(10, wake_at - NowMs())));
  }
}

}  // namespace weir::lake
