#include "lake/lake.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <system_error>
#include <unordered_set>

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

// Whether `name` appears in `sql` as a word (an identifier, quoted or not), ignoring case.
bool Mentions(std::string_view sql, std::string_view name) {
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = 0; at + name.size() <= sql.size(); ++at) {
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(sql[at + i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (!same) continue;
    const bool starts = at == 0 || !word_char(sql[at - 1]);
    const bool ends = at + name.size() == sql.size() || !word_char(sql[at + name.size()]);
    if (starts && ends) return true;
  }
  return false;
}

std::string_view TrimStatement(std::string_view sql) {
  while (!sql.empty() && (std::isspace(static_cast<unsigned char>(sql.back())) || sql.back() == ';')) {
    sql.remove_suffix(1);
  }
  return sql;
}

// The relation a view's name stands for in a query: its live partitions' files, or an empty
// table of its columns. `empty_batches` keeps what the database's scans of no records read
// (they stay registered, so a query naming one reads an empty batch, never freed memory).
Status DefineView(sql::Database& db, const std::filesystem::path& lake_dir, const CatalogView& view,
                  const std::vector<PartitionRecord>& live,
                  std::vector<std::unique_ptr<sql::ColumnBatch>>& empty_batches) {
  std::vector<std::string> files;
  bool mixed = false;
  for (const PartitionRecord& p : live) {
    if (p.file.empty()) continue;
    files.push_back(SqlString((lake_dir / p.file).string()));
    mixed = mixed || p.schema_hash != view.schema_hash;
  }
  const std::string name = SqlIdentifier(view.spec.name);
  if (!files.empty()) {
    std::string list;
    for (const std::string& f : files) list += (list.empty() ? "" : ", ") + f;
    return db.Execute("CREATE VIEW " + name + " AS SELECT * FROM read_parquet([" + list + "]" +
                      (mixed ? ", union_by_name = true" : "") + ")");
  }
  // Its columns, from the view's SQL over no records (a scan named after the view: one
  // registration per name).
  auto& empty = empty_batches.emplace_back(std::make_unique<sql::ColumnBatch>());
  empty->Reset(RecordBatchColumns(view.columns));
  const std::string scan = "weir_no_records_" + std::to_string(empty_batches.size());
  WEIR_RETURN_IF_ERROR(db.RegisterBatchScan(scan, empty.get()));
  std::string select = "WITH records AS (SELECT * FROM " + scan + "()) SELECT * FROM ";
  select += view.spec.sql.empty() ? "records" : "(" + view.spec.sql + ")";
  return db.Execute("CREATE TABLE " + name + " AS " + select + " LIMIT 0");
}

}  // namespace

Result<std::unique_ptr<Lake>> Lake::Open(log::LogStore& log, LakeOptions options) {
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Open(options.dir));
  return std::unique_ptr<Lake>(new Lake(log, std::move(options), std::move(catalog)));
}

Lake::~Lake() { StopBackground(); }

std::mutex& Lake::ViewMutex(std::string_view view) {
  std::lock_guard lock(mu_);
  auto it = view_mutexes_.find(view);
  if (it == view_mutexes_.end()) {
    it = view_mutexes_.emplace(std::string(view), std::make_unique<std::mutex>()).first;
  }
  return *it->second;
}

template <typename F>
Status Lake::WithMaterializer(std::string_view view, F&& f) {
  std::lock_guard lock(ViewMutex(view));
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<Materializer> m,
                        Materializer::Create(*catalog_, log_, options_.dir, options_.materialize));
  return f(*m);
}

Status Lake::Register(const ViewSpec& spec) {
  std::lock_guard lock(ViewMutex(spec.name));
  std::optional<CatalogView> old = catalog_->GetView(spec.name);
  if (old && old->spec == spec) return Status::OK();
  CatalogView view{.spec = spec, .columns = spec.columns};
  if (view.columns.empty() && old && old->spec.sql == spec.sql && old->spec.topic == spec.topic &&
      old->spec.columns.empty()) {
    view.columns = old->columns;  // keep what was inferred
  }
  view.schema_hash = SchemaHash(view.spec, view.columns);
  // The SQL must bind over the records' columns (when they are known).
  if (!spec.sql.empty() && !view.columns.empty()) {
    std::vector<std::unique_ptr<sql::ColumnBatch>> empty_batches;
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::OpenInMemory(1));
    if (Status s = DefineView(*db, options_.dir, view, {}, empty_batches); !s.ok()) {
      return Status::InvalidArgument("view '" + spec.name + "': its sql does not run over its records: " +
                                     std::string(s.message()));
    }
  }
  return catalog_->PutView(view);
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
  return WithMaterializer(view, [&](Materializer& m) { return m.Update(view, open_too, figures); });
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
  std::vector<PartitionRecord> retired = catalog_->RetiredBefore(now - options_.retired_grace.count());
  for (const PartitionRecord& p : retired) {
    if (p.file.empty()) continue;
    std::error_code ec;
    if (std::filesystem::remove(options_.dir / p.file, ec)) ++removed;
    if (ec) return Status::IOError("lake: removing " + (options_.dir / p.file).string() + ": " + ec.message());
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
  const std::string_view statement = TrimStatement(sql_text);
  std::vector<CatalogView> views = catalog_->Views();
  if (options.update_first) {
    for (const CatalogView& v : views) {
      if (!Mentions(statement, v.spec.name)) continue;
      WEIR_RETURN_IF_ERROR(Update(v.spec.name, /*open_too=*/true));
    }
    views = catalog_->Views();  // columns may have been inferred
  }
  std::vector<std::unique_ptr<sql::ColumnBatch>> empty_batches;  // outlives db
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db,
                        sql::Database::OpenInMemory(options.threads));
  if (!options.memory_limit.empty()) {
    WEIR_RETURN_IF_ERROR(db->Execute("SET memory_limit = " + SqlString(options.memory_limit)));
  }
  for (const CatalogView& v : views) {
    WEIR_RETURN_IF_ERROR(DefineView(*db, options_.dir, v, catalog_->LivePartitions(v.spec.name), empty_batches)
                             .WithContext("lake view '" + v.spec.name + "'"));
  }
  // From here on the query reaches no file but the lake's, and cannot change that.
  WEIR_RETURN_IF_ERROR(db->Execute(
      "SET allowed_directories = [" + SqlString(options_.dir.string() + "/") +
      "]; SET enable_external_access = false; SET lock_configuration = true"));
  WEIR_ASSIGN_OR_RETURN(std::vector<sql::StatementKind> kinds, db->Classify(statement));
  if (kinds.size() != 1 || kinds[0] != sql::StatementKind::kSelect) {
    return Status::InvalidArgument(
        "a lake query is one SELECT (or WITH ... SELECT) statement; this is " +
        (kinds.size() == 1 ? "a statement of another kind" : std::to_string(kinds.size()) + " statements"));
  }
  std::vector<std::string> names;
  WEIR_RETURN_IF_ERROR(db->Query("DESCRIBE " + std::string(statement), [&](const sql::Row& row) {
    names.emplace_back(row.Text(0));
  }));
  std::string wrapped;
  if (sink.json_rows) {
    wrapped = "SELECT to_json(weir_q)::VARCHAR FROM (" + std::string(statement) + ") AS weir_q";
  } else {
    wrapped = "SELECT CAST(COLUMNS(*) AS VARCHAR)";
    wrapped += " FROM (" + std::string(statement) + ") AS weir_q";
  }
  if (sink.on_columns) sink.on_columns(names);
  // The time limit: a watchdog interrupts the statement past it.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::atomic<bool> interrupted{false};
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    if (!done_cv.wait_for(lock, options.timeout, [&] { return done; })) {
      interrupted = true;
      db->Interrupt();
    }
  });
  std::vector<std::optional<std::string>> cells(names.size());
  Status s = db->Query(wrapped, [&](const sql::Row& row) {
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
  if (interrupted && !s.ok()) {
    return Status::ResourceExhausted("lake query stopped after its time limit of " +
                                    std::to_string(options.timeout.count()) + " ms");
  }
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
