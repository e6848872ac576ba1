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
  empty->Reset(view.spec.archive ? ArchiveBatchColumns() : RecordBatchColumns(view.columns));
  const std::string scan = "weir_no_records_" + std::to_string(empty_batches.size());
  WEIR_RETURN_IF_ERROR(db.RegisterBatchScan(scan, empty.get()));
  std::string select = "WITH records AS (SELECT * FROM " + scan + "()) SELECT * FROM ";
  select += view.spec.sql.empty() ? "records" : "(" + view.spec.sql + ")";
  return db.Execute("CREATE TABLE " + name + " AS " + select + " LIMIT 0");
}

// A query the certified scan order can answer: ORDER BY the first sort column of a view
// declaring a concatenated order, with a LIMIT and nothing that looks across rows.
struct OrderedScan {
  const CatalogView* view = nullptr;
  bool descending = false;
  int64_t limit = 0;
};

// Whether `node` (a piece of DuckDB's serialized parse tree) contains something that looks
// across rows or into another query.
bool LooksAcrossRows(const Value& node) {
  if (node.is_array()) {
    return std::any_of(node.as_array().begin(), node.as_array().end(), LooksAcrossRows);
  }
  if (!node.is_object()) return false;
  if (auto cls = node.GetString("class"); cls && (*cls == "WINDOW" || *cls == "SUBQUERY")) {
    return true;
  }
  for (const auto& [name, child] : node.as_object()) {
    if (LooksAcrossRows(child)) return true;
  }
  return false;
}

// The member at a dotted path ("cte_map.map"), or null.
const Value* At(const Value& v, std::string_view dotted) {
  const Value* at = &v;
  while (at && !dotted.empty()) {
    const size_t dot = std::min(dotted.find('.'), dotted.size());
    at = at->is_object() ? at->Find(dotted.substr(0, dot)) : nullptr;
    dotted.remove_prefix(std::min(dot + 1, dotted.size()));
  }
  return at;
}

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Recognizes the form the certified scan order answers, from DuckDB's parse tree (`tree`, the
// output of json_serialize_sql).
std::optional<OrderedScan> MatchOrderedScan(std::string_view tree,
                                            const std::vector<CatalogView>& views) {
  Result<Value> parsed = Value::Parse(tree);
  if (!parsed.ok()) return std::nullopt;
  const Value* statements = parsed->Find("statements");
  if (!statements || !statements->is_array() || statements->as_array().size() != 1) {
    return std::nullopt;
  }
  const Value* node = statements->as_array()[0].Find("node");
  if (!node || node->GetString("type") != "SELECT_NODE") return std::nullopt;
  auto table = node->GetString("from_table.table_name");
  const Value* group = node->Find("group_expressions");
  const Value* ctes = At(*node, "cte_map.map");
  const Value* modifiers = node->Find("modifiers");
  const Value* select = node->Find("select_list");
  if (!table || node->GetString("from_table.type") != "BASE_TABLE" || !group ||
      !group->is_array() || !group->as_array().empty() || !ctes || !ctes->is_array() ||
      !ctes->as_array().empty() || !modifiers || !modifiers->is_array() || !select ||
      !select->is_array()) {
    return std::nullopt;
  }
  for (const char* absent : {"having", "qualify", "sample", "from_table.sample"}) {
    const Value* v = At(*node, absent);
    if (v && !v->is_null()) return std::nullopt;
  }
  if (LooksAcrossRows(*select) || LooksAcrossRows(*node->Find("where_clause"))) return std::nullopt;
  OrderedScan scan;
  for (const CatalogView& v : views) {
    if (SameName(v.spec.name, *table) && v.spec.order == ScanOrder::kConcatenated) scan.view = &v;
  }
  if (!scan.view) return std::nullopt;
  const std::string& sort_column = scan.view->spec.sort.front();
  bool ordered = false, limited = false;
  for (const Value& m : modifiers->as_array()) {
    auto type = m.GetString("type");
    if (type == "ORDER_MODIFIER") {
      const Value* orders = m.Find("orders");
      if (!orders || !orders->is_array() || orders->as_array().size() != 1) return std::nullopt;
      const Value& order = orders->as_array()[0];
      const Value* names = At(order, "expression.column_names");
      if (order.GetString("expression.class") != "COLUMN_REF" || !names || !names->is_array() ||
          names->as_array().empty() || !names->as_array().back().is_string() ||
          !SameName(names->as_array().back().as_string(), sort_column) ||
          order.GetString("null_order") != "ORDER_DEFAULT") {
        return std::nullopt;
      }
      scan.descending = order.GetString("type") == "DESCENDING";
      ordered = true;
    } else if (type == "LIMIT_MODIFIER") {
      const Value* offset = m.Find("offset");
      auto limit = m.GetInt("limit.value.value");
      if ((offset && !offset->is_null()) || m.GetString("limit.class") != "CONSTANT" || !limit ||
          *limit < 0) {
        return std::nullopt;
      }
      scan.limit = *limit;
      limited = true;
    } else {
      return std::nullopt;  // DISTINCT and the rest look across rows
    }
  }
  // An alias named like the sort column would be what ORDER BY sorts by.
  for (const Value& item : select->as_array()) {
    auto alias = item.GetString("alias");
    if (alias && SameName(*alias, sort_column)) return std::nullopt;
  }
  if (!ordered || !limited) return std::nullopt;
  return scan;
}

}  // namespace

Result<std::unique_ptr<Lake>> Lake::Open(log::LogStore& log, LakeOptions options) {
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<Catalog> catalog, Catalog::Open(options.dir));
  std::unique_ptr<Lake> lake(new Lake(log, std::move(options), std::move(catalog)));
  for (const CatalogView& v : lake->Views()) {
    WEIR_RETURN_IF_ERROR(lake->HoldForArchive(v.spec.name));
  }
  return lake;
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
    std::vector<std::unique_ptr<sql::ColumnBatch>> empty_batches;
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::OpenInMemory(1));
    if (Status s = DefineView(*db, options_.dir, view, {}, empty_batches); !s.ok()) {
      return Status::InvalidArgument("view '" + spec.name + "': its sql does not run over its records: " +
                                     std::string(s.message()));
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
  if (sink.on_columns) sink.on_columns(names);
  QueryStats ignored_stats;
  QueryStats& stats = options.stats ? *options.stats : ignored_stats;
  stats = {};
  std::vector<PartitionRecord> scanned;  // the partitions of the views the query names
  for (const CatalogView& v : views) {
    if (!Mentions(statement, v.spec.name)) continue;
    for (PartitionRecord& p : catalog_->LivePartitions(v.spec.name)) {
      if (!p.file.empty()) scanned.push_back(std::move(p));
    }
  }
  stats.partitions = static_cast<int64_t>(scanned.size());
  std::optional<OrderedScan> ordered;
  WEIR_RETURN_IF_ERROR(db->Query("SELECT json_serialize_sql(" + SqlString(statement) + ")",
                                 [&](const sql::Row& row) {
                                   ordered = MatchOrderedScan(row.Text(0), views);
                                 }));
  if (ordered) {
    WEIR_ASSIGN_OR_RETURN(std::optional<std::vector<PartitionRecord>> in_order,
                          CertifiedOrder(*ordered->view, ordered->descending));
    if (in_order) {
      stats.ordered_scan = true;
      int64_t rows = 0;
      for (const PartitionRecord& p : *in_order) {
        if (rows >= ordered->limit) break;
        ++stats.partitions_read;
        WEIR_RETURN_IF_ERROR(db->Execute(
            "CREATE OR REPLACE VIEW " + SqlIdentifier(ordered->view->spec.name) +
            " AS SELECT * FROM read_parquet(" + SqlString((options_.dir / p.file).string()) + ")"));
        WEIR_RETURN_IF_ERROR(RunStreamed(*db, statement, names.size(), options.timeout, sink,
                                         ordered->limit - rows, &rows));
      }
      return Status::OK();
    }
  }
  int64_t rows = 0;
  return RunStreamed(*db, statement, names.size(), options.timeout, sink, INT64_MAX, &rows);
}

Result<std::optional<std::vector<PartitionRecord>>> Lake::CertifiedOrder(const CatalogView& view,
                                                                       bool descending) const {
  std::vector<PartitionRecord> files;
  const std::string& column = view.spec.sort.front();
  for (PartitionRecord& p : catalog_->LivePartitions(view.spec.name)) {
    if (p.file.empty()) continue;
    const bool certifies = p.schema_hash == view.schema_hash && p.sort_min && p.sort_max &&
                           (p.sort_order == column || p.sort_order.starts_with(column + ","));
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
          "partitions may overlap in " + column + ")");
    }
  }
  if (descending) std::reverse(files.begin(), files.end());
  return std::optional<std::vector<PartitionRecord>>(std::move(files));
}

// Runs `statement` on `db`, its rows (at most `limit`) cast to text or JSON for the sink, under
// the time limit; `rows` counts the rows given to the sink.
Status Lake::RunStreamed(sql::Database& db, std::string_view statement, size_t columns,
                         std::chrono::milliseconds timeout, const QuerySink& sink, int64_t limit,
                         int64_t* rows) {
  const std::string wrapped =
      (sink.json_rows ? "SELECT to_json(weir_q)::VARCHAR" : "SELECT CAST(COLUMNS(*) AS VARCHAR)") +
      std::string(" FROM (") + std::string(statement) + ") AS weir_q" +
      (limit == INT64_MAX ? "" : " LIMIT " + std::to_string(limit));
  // The time limit: a watchdog interrupts the statement past it.
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::atomic<bool> interrupted{false};
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    if (!done_cv.wait_for(lock, timeout, [&] { return done; })) {
      interrupted = true;
      db.Interrupt();
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
  if (interrupted && !s.ok()) {
    return Status::ResourceExhausted("lake query stopped after its time limit of " +
                                     std::to_string(timeout.count()) + " ms");
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
