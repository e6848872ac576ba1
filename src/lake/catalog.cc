#include "lake/catalog.h"

#include <algorithm>

#include "lake/sql_text.h"

namespace weir::lake {
namespace {

constexpr std::string_view kSchema = R"(
CREATE TABLE IF NOT EXISTS views (
  name VARCHAR PRIMARY KEY, definition VARCHAR NOT NULL, columns VARCHAR NOT NULL,
  schema_hash VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS partitions (
  view VARCHAR NOT NULL, instance BIGINT NOT NULL, schema_hash VARCHAR NOT NULL,
  source_hash VARCHAR NOT NULL, topic_partition INTEGER NOT NULL, begin_offset BIGINT NOT NULL,
  end_offset BIGINT NOT NULL, source_records BIGINT NOT NULL, append_min_ms BIGINT NOT NULL,
  append_max_ms BIGINT NOT NULL, span_start_ms BIGINT NOT NULL, span_ms BIGINT NOT NULL,
  rows BIGINT NOT NULL, event_min_ms BIGINT, event_max_ms BIGINT, sort_order VARCHAR NOT NULL,
  sort_min DOUBLE, sort_max DOUBLE, file VARCHAR NOT NULL, bytes BIGINT NOT NULL,
  sealed INTEGER NOT NULL, retired_ms BIGINT, PRIMARY KEY (view, instance));
CREATE TABLE IF NOT EXISTS counters (name VARCHAR PRIMARY KEY, value BIGINT NOT NULL);
)";

constexpr std::string_view kPartitionColumns =
    "view, instance, schema_hash, source_hash, topic_partition, begin_offset, end_offset, "
    "source_records, append_min_ms, append_max_ms, span_start_ms, span_ms, rows, event_min_ms, "
    "event_max_ms, sort_order, sort_min, sort_max, file, bytes, sealed, retired_ms";

template <typename T>
std::string OrNull(const std::optional<T>& v) {
  if (!v) return "NULL";
  if constexpr (std::is_same_v<T, double>) return SqlDouble(*v);
  return std::to_string(*v);
}

std::string InsertValues(const PartitionRecord& p) {
  return "(" + SqlString(p.view) + ", " + std::to_string(p.instance) + ", " +
         SqlString(p.schema_hash) + ", " + SqlString(p.source_hash) + ", " +
         std::to_string(p.topic_partition) + ", " + std::to_string(p.begin_offset) + ", " +
         std::to_string(p.end_offset) + ", " + std::to_string(p.source_records) + ", " +
         std::to_string(p.append_min_ms) + ", " + std::to_string(p.append_max_ms) + ", " +
         std::to_string(p.span_start_ms) + ", " + std::to_string(p.span_ms) + ", " +
         std::to_string(p.rows) + ", " + OrNull(p.event_min_ms) + ", " + OrNull(p.event_max_ms) +
         ", " + SqlString(p.sort_order) + ", " + OrNull(p.sort_min) + ", " + OrNull(p.sort_max) +
         ", " + SqlString(p.file) + ", " + std::to_string(p.bytes) + ", " + (p.sealed ? "1" : "0") +
         ", " + OrNull(p.retired_ms) + ")";
}

std::optional<int64_t> OptionalInt(const sql::Row& row, size_t i) {
  if (row.IsNull(i)) return std::nullopt;
  return row.Int(i);
}
std::optional<double> OptionalDouble(const sql::Row& row, size_t i) {
  if (row.IsNull(i)) return std::nullopt;
  return row.Double(i);
}

PartitionRecord ReadPartition(const sql::Row& row) {
  PartitionRecord p;
  size_t i = 0;
  p.view = std::string(row.Text(i++));
  p.instance = row.Int(i++);
  p.schema_hash = std::string(row.Text(i++));
  p.source_hash = std::string(row.Text(i++));
  p.topic_partition = static_cast<int32_t>(row.Int(i++));
  p.begin_offset = row.Int(i++);
  p.end_offset = row.Int(i++);
  p.source_records = row.Int(i++);
  p.append_min_ms = row.Int(i++);
  p.append_max_ms = row.Int(i++);
  p.span_start_ms = row.Int(i++);
  p.span_ms = row.Int(i++);
  p.rows = row.Int(i++);
  p.event_min_ms = OptionalInt(row, i++);
  p.event_max_ms = OptionalInt(row, i++);
  p.sort_order = std::string(row.Text(i++));
  p.sort_min = OptionalDouble(row, i++);
  p.sort_max = OptionalDouble(row, i++);
  p.file = std::string(row.Text(i++));
  p.bytes = row.Int(i++);
  p.sealed = row.Int(i++) != 0;
  p.retired_ms = OptionalInt(row, i++);
  return p;
}

bool Overlaps(const PartitionRecord& a, const PartitionRecord& b) {
  return a.view == b.view && a.topic_partition == b.topic_partition &&
         a.begin_offset < b.end_offset && b.begin_offset < a.end_offset;
}

std::string ColumnsJson(const std::vector<ViewColumn>& columns) {
  ViewSpec carrier;
  carrier.columns = columns;
  return carrier.ToJson();
}

}  // namespace

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::filesystem::path& lake_dir) {
  std::error_code ec;
  std::filesystem::create_directories(lake_dir, ec);
  if (ec)
    return Status::IOError("creating the lake directory " + lake_dir.string() + ": " +
                           ec.message());
  WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db,
                        sql::Database::OpenFile(lake_dir / "catalog.duckdb", {.threads = 1}));
  WEIR_RETURN_IF_ERROR(db->Execute(kSchema));
  std::unique_ptr<Catalog> catalog(new Catalog(std::move(db)));
  WEIR_RETURN_IF_ERROR(catalog->Load());
  return catalog;
}

Catalog::~Catalog() = default;

Status Catalog::Load() {
  Status bad;
  WEIR_RETURN_IF_ERROR(db_->Query(
      "SELECT definition, columns, schema_hash FROM views ORDER BY name", [&](const sql::Row& row) {
        Result<ViewSpec> spec = ViewSpecFromJson(row.Text(0));
        Result<ViewSpec> columns = ViewSpecFromJson(row.Text(1));
        if (!spec.ok() || !columns.ok()) {
          bad = spec.ok() ? columns.status() : spec.status();
          return;
        }
        views_.push_back({.spec = std::move(*spec),
                          .columns = std::move(columns->columns),
                          .schema_hash = std::string(row.Text(2))});
      }));
  WEIR_RETURN_IF_ERROR(bad);
  WEIR_RETURN_IF_ERROR(
      db_->Query("SELECT " + std::string(kPartitionColumns) +
                     " FROM partitions ORDER BY view, topic_partition, begin_offset, instance",
                 [&](const sql::Row& row) { partitions_.push_back(ReadPartition(row)); }));
  for (const PartitionRecord& p : partitions_) {
    next_instance_ = std::max(next_instance_, p.instance + 1);
  }
  // Above the instances forgotten too: a file name is never used twice.
  return db_->Query(
      "SELECT value FROM counters WHERE name = 'next_instance'",
      [&](const sql::Row& row) { next_instance_ = std::max(next_instance_, row.Int(0)); });
}

Status Catalog::PutView(const CatalogView& view) {
  std::lock_guard lock(mu_);
  WEIR_RETURN_IF_ERROR(
      db_->Execute("INSERT OR REPLACE INTO views VALUES (" + SqlString(view.spec.name) + ", " +
                   SqlString(view.spec.ToJson()) + ", " + SqlString(ColumnsJson(view.columns)) +
                   ", " + SqlString(view.schema_hash) + ")"));
  auto it = std::find_if(views_.begin(), views_.end(),
                         [&](const CatalogView& v) { return v.spec.name == view.spec.name; });
  if (it == views_.end()) {
    views_.push_back(view);
  } else {
    *it = view;
  }
  return Status::OK();
}

std::vector<CatalogView> Catalog::Views() const {
  std::lock_guard lock(mu_);
  return views_;
}

std::optional<CatalogView> Catalog::GetView(std::string_view name) const {
  std::lock_guard lock(mu_);
  for (const CatalogView& v : views_) {
    if (v.spec.name == name) return v;
  }
  return std::nullopt;
}

std::vector<PartitionRecord> Catalog::LivePartitions(std::string_view view) const {
  std::lock_guard lock(mu_);
  std::vector<PartitionRecord> out;
  for (const PartitionRecord& p : partitions_) {
    if (p.view == view && !p.retired_ms) out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const PartitionRecord& a, const PartitionRecord& b) {
    return std::tie(a.topic_partition, a.begin_offset) <
           std::tie(b.topic_partition, b.begin_offset);
  });
  return out;
}

int64_t Catalog::NextInstance() {
  std::lock_guard lock(mu_);
  return next_instance_++;
}

Status Catalog::Commit(std::string_view view, const std::vector<PartitionRecord>& added,
                       const std::vector<int64_t>& retired, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto is_retired_here = [&](int64_t instance) {
    return std::find(retired.begin(), retired.end(), instance) != retired.end();
  };
  for (int64_t instance : retired) {
    const bool live = std::any_of(partitions_.begin(), partitions_.end(), [&](const auto& p) {
      return p.view == view && p.instance == instance && !p.retired_ms;
    });
    if (!live) {
      return Status::FailedPrecondition("lake catalog: view '" + std::string(view) +
                                        "' has no live partition " + std::to_string(instance) +
                                        " to retire");
    }
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const PartitionRecord& a = added[i];
    const std::string where = "lake catalog: view '" + std::string(view) + "' partition " +
                              std::to_string(a.topic_partition) + " offsets [" +
                              std::to_string(a.begin_offset) + ", " + std::to_string(a.end_offset) +
                              ")";
    if (a.view != view || a.begin_offset >= a.end_offset) {
      return Status::FailedPrecondition(where + ": not a range of this view");
    }
    for (const PartitionRecord& p : partitions_) {
      if (!p.retired_ms && !is_retired_here(p.instance) && Overlaps(a, p)) {
        return Status::FailedPrecondition(
            where + " overlaps live partition " + std::to_string(p.instance) + " [" +
            std::to_string(p.begin_offset) + ", " + std::to_string(p.end_offset) + ")");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (Overlaps(a, added[j]))
        return Status::FailedPrecondition(where + " overlaps another added partition");
    }
  }
  std::string sql = "BEGIN TRANSACTION;";
  if (!retired.empty()) {
    std::string list;
    for (int64_t instance : retired) list += (list.empty() ? "" : ", ") + std::to_string(instance);
    sql += "UPDATE partitions SET retired_ms = " + std::to_string(now_ms) +
           " WHERE view = " + SqlString(view) + " AND instance IN (" + list + ");";
  }
  if (!added.empty()) {
    sql += "INSERT INTO partitions (" + std::string(kPartitionColumns) + ") VALUES ";
    for (size_t i = 0; i < added.size(); ++i) sql += (i ? ", " : "") + InsertValues(added[i]);
    sql += ";";
  }
  sql += "COMMIT;";
  if (Status s = db_->Execute(sql); !s.ok()) {
    (void)db_->Execute("ROLLBACK");
    return s.WithContext("lake catalog: commit");
  }
  for (PartitionRecord& p : partitions_) {
    if (p.view == view && !p.retired_ms && is_retired_here(p.instance)) p.retired_ms = now_ms;
  }
  partitions_.insert(partitions_.end(), added.begin(), added.end());
  return Status::OK();
}

std::vector<PartitionRecord> Catalog::RetiredBefore(int64_t ms) const {
  std::lock_guard lock(mu_);
  std::vector<PartitionRecord> out;
  for (const PartitionRecord& p : partitions_) {
    if (p.retired_ms && *p.retired_ms <= ms) out.push_back(p);
  }
  return out;
}

Status Catalog::Forget(const std::vector<PartitionRecord>& retired) {
  if (retired.empty()) return Status::OK();
  std::lock_guard lock(mu_);
  std::string sql = "BEGIN TRANSACTION;";
  int64_t next_instance = 0;
  for (const PartitionRecord& p : retired) {
    sql += "DELETE FROM partitions WHERE view = " + SqlString(p.view) +
           " AND instance = " + std::to_string(p.instance) + " AND retired_ms IS NOT NULL;";
    next_instance = std::max(next_instance, p.instance + 1);
  }
  sql += "INSERT INTO counters VALUES ('next_instance', " + std::to_string(next_instance) +
         ") ON CONFLICT (name) DO UPDATE SET value = greatest(value, excluded.value);";
  sql += "COMMIT;";
  if (Status s = db_->Execute(sql); !s.ok()) {
    (void)db_->Execute("ROLLBACK");
    return s.WithContext("lake catalog: forgetting retired partitions");
  }
  std::erase_if(partitions_, [&](const PartitionRecord& p) {
    return p.retired_ms && std::any_of(retired.begin(), retired.end(), [&](const auto& r) {
             return r.view == p.view && r.instance == p.instance;
           });
  });
  return Status::OK();
}

std::vector<std::string> Catalog::Files() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const PartitionRecord& p : partitions_) {
    if (!p.file.empty()) out.push_back(p.file);
  }
  return out;
}

}  // namespace weir::lake
