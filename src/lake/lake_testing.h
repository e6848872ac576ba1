// Test support shared by the lake's property test (lake_property_test.cc) and its crash test
// (tests/crash/lake_crash_test.cc): random records, the topic as `weir consume` prints it, a
// reference built from those lines by DuckDB alone, and the invariants of a view's partitions.
//
// The reference never reads the lake's code paths: it reads the JSON lines with `read_json`,
// decides with DuckDB's JSON functions which records fit a view's columns, extracts the fields
// with DuckDB's casts, and runs the view's SQL and then a query over that. What it shares with
// the lake is only the view's columns (read from the catalog, since they may be inferred) and
// the SQL text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dataflow/json_records.h"
#include "lake/lake.h"
#include "lake/records.h"
#include "lake/sql_text.h"
#include "log/log.h"
#include "sql/database.h"
#include "weir/value.h"

namespace weir::lake::testing {

// Opens (creating) a log in `dir`, with the default options.
inline Result<std::unique_ptr<log::LogStore>> OpenLog(const std::filesystem::path& dir) {
  log::LogOptions options;
  options.dir = dir;
  return log::LogStore::Open(options);
}

// ---------------------------------------------------------------------------------------------
// Random records.

// A record's value: a JSON object with the fields id (always), a (bigint), d (double), s
// (varchar), b (boolean), tags (json), at (epoch ms), and rarely _x and extra; a field may be
// missing or null. Unless `clean`, a field may be ill-typed (a string for a, ...) and the value
// may not be a JSON object at all. Doubles are multiples of 1/4, so that sums are exact in any
// order.
inline std::string RandomValue(std::mt19937_64& rng, int64_t id, int64_t event_ms, bool clean) {
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  auto pick = [&](std::initializer_list<const char*> choices) {
    return std::string(*(choices.begin() + rng() % choices.size()));
  };
  if (!clean && chance(4)) {
    return pick({"not json", "{\"a\":", "[1,2,3]", "42", "\"a string\"", "", "{\"a\":1} trailing",
                 "\xff\xfe{}", "null", "{\"a\":1,}"});
  }
  std::vector<std::string> fields = {"\"id\":" + std::to_string(id)};
  // A field: missing (not added), null, ill-typed (unless clean), or `good`.
  auto field = [&](const char* name, int missing, int null, int bad, const std::string& good,
                   std::initializer_list<const char*> ill) {
    const std::string key = std::string("\"") + name + "\":";
    if (chance(missing)) return;
    if (chance(null)) {
      fields.push_back(key + "null");
    } else if (!clean && chance(bad)) {
      fields.push_back(key + std::string(*(ill.begin() + rng() % ill.size())));
    } else {
      fields.push_back(key + good);
    }
  };
  field("a", 6, 5, 6, std::to_string(rng() % 1001),
        {"\"x\"", "1.5", "true", "18446744073709551615", "[1]"});
  const int64_t quarters = static_cast<int64_t>(rng() % 16001) - 8000;
  char d[64];
  if (quarters % 4 == 0 && chance(30)) {
    std::snprintf(d, sizeof d, "%lld", static_cast<long long>(quarters / 4));
  } else if (chance(10)) {
    std::snprintf(d, sizeof d, "%e", static_cast<double>(quarters) / 4);
  } else {
    std::snprintf(d, sizeof d, "%.2f", static_cast<double>(quarters) / 4);
  }
  field("d", 8, 5, 5, d, {"\"1.5\"", "false", "{}"});
  field("s", 5, 5, 5,
        pick({"\"alpha\"", "\"beta\"", "\"gamma\"", "\"\\u03b4elta\"", "\"quo\\\"te\"",
              "\"back\\\\slash\"", "\"tab\\tx\"", "\"\xf0\x9f\x98\x80\"", "\"\""}),
        {"7", "{\"o\":1}", "false"});
  field("b", 10, 5, 5, chance(50) ? "true" : "false", {"\"true\"", "1"});
  field("tags", 40, 5, 0,
        pick({"[1,2]", "[\"x\",3]", "{\"k\":1}", "[]", "{\"k\":[true,null]}", "\"plain\"", "12"}),
        {});
  field("at", 10, 3, 4, std::to_string(event_ms + 17), {"-1.5", "\"soon\""});
  if (chance(3)) fields.push_back("\"_x\":" + std::to_string(rng() % 50));
  if (chance(5)) fields.push_back("\"extra\":\"e" + std::to_string(rng() % 5) + "\"");
  std::shuffle(fields.begin() + 1, fields.end(), rng);
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out + "}";
}

// Random keys: strings (some non-ASCII), integers, or none.
inline void AddRandomRecord(log::RecordBatchBuilder& b, std::mt19937_64& rng, int64_t id,
                            int64_t event_ms, bool clean) {
  const std::string value = RandomValue(rng, id, event_ms, clean);
  switch (rng() % 4) {
    case 0:
      b.AddRaw(EventTime(event_ms), KeySerde::kNull, "", value);
      break;
    case 1:
      b.AddRaw(EventTime(event_ms), KeySerde::kInt,
               Key::Int(static_cast<int64_t>(rng() % 200) - 50).bytes(), value);
      break;
    default:
      b.AddRaw(EventTime(event_ms), KeySerde::kString,
               (rng() % 5 == 0 ? "cl\xc3\xa9-" : "k") + std::to_string(rng() % 20), value);
  }
}

// Event times: about 10 ms apart with some disorder, and one in ten late by up to a minute.
class EventClock {
 public:
  explicit EventClock(int64_t start_ms) : next_(start_ms) {}
  int64_t Next(std::mt19937_64& rng) {
    next_ += 10;
    int64_t ts = next_ + static_cast<int64_t>(rng() % 41) - 20;
    if (rng() % 10 == 0) ts -= 1000 + static_cast<int64_t>(rng() % 59'000);
    return ts;
  }

 private:
  int64_t next_;
};

// Appends `count` random records to random partitions of `topic`, in one to three batches per
// partition, each durable and visible on return. Returns the first error.
inline Status AppendBurst(log::Topic& topic, std::mt19937_64& rng, EventClock& clock,
                          int64_t& next_id, int count, bool clean) {
  const int32_t partitions = topic.num_partitions();
  std::vector<std::vector<log::RecordBatchBuilder>> batches(partitions);
  for (auto& per_partition : batches) per_partition.resize(1 + rng() % 3);
  for (int i = 0; i < count; ++i) {
    auto& per_partition = batches[rng() % partitions];
    AddRandomRecord(per_partition[rng() % per_partition.size()], rng, next_id++, clock.Next(rng),
                    clean);
  }
  for (int32_t p = 0; p < partitions; ++p) {
    for (const log::RecordBatchBuilder& b : batches[p]) {
      if (b.empty()) continue;
      WEIR_RETURN_IF_ERROR(
          topic.partition(PartitionId(p)).Append(b, log::Durability::kWaitDurable).status());
    }
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// The topic as `weir consume` prints it (src/cli/topics.cc): one JSON object a line with
// partition, offset, key (as JSON), timestamp and value (the JSON value as it is, or its bytes
// in base64 as a JSON string when it is not valid JSON).

inline std::string ConsumeLine(const log::StoredRecord& r, int32_t partition) {
  std::string out = "{\"partition\":" + std::to_string(partition) +
                    ",\"offset\":" + std::to_string(r.offset.value()) + ",\"key\":";
  Result<Key> key = r.DecodeKey();
  if (key.ok()) {
    key->AppendJson(out);
  } else {
    out += "null";
  }
  out += ",\"timestamp\":" + std::to_string(r.timestamp.value()) + ",\"value\":";
  dataflow::AppendStoredValueForDisplay(out, r.value);
  return out + "}\n";
}

// Calls `f` with each record of every partition of `topic` from its first offset, in partition
// then offset order.
template <typename F>
Status ForEachRecord(log::Topic& topic, F&& f) {
  for (int32_t p = 0; p < topic.num_partitions(); ++p) {
    log::Partition& partition = topic.partition(PartitionId(p));
    log::PartitionReader reader(partition, partition.FirstOffset());
    while (true) {
      WEIR_ASSIGN_OR_RETURN(auto batch, reader.Next());
      if (batch.empty()) break;
      for (const log::StoredRecord& r : batch) f(p, r);
    }
  }
  return Status::OK();
}

// Writes the topic's records to `path` as consume lines; returns how many.
inline Result<int64_t> DumpTopic(log::Topic& topic, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  int64_t n = 0;
  WEIR_RETURN_IF_ERROR(ForEachRecord(topic, [&](int32_t p, const log::StoredRecord& r) {
    out << ConsumeLine(r, p);
    ++n;
  }));
  out.close();
  if (!out) return Status::IOError("writing " + path.string());
  return n;
}

// The dead letters of a lake view: (topic partition, offset) of each, in the DLQ's order.
inline Result<std::vector<std::pair<int32_t, int64_t>>> DeadLetters(log::LogStore& log,
                                                                    const std::string& view) {
  std::vector<std::pair<int32_t, int64_t>> out;
  Result<log::Topic*> dlq = log.GetTopic("lake." + view + ".dlq");
  if (!dlq.ok()) return out;
  Status bad;
  WEIR_RETURN_IF_ERROR(ForEachRecord(**dlq, [&](int32_t, const log::StoredRecord& r) {
    Result<Value> v = Value::Parse(r.value);
    std::optional<int64_t> partition = v.ok() ? v->GetInt("position.partition") : std::nullopt;
    std::optional<int64_t> offset = v.ok() ? v->GetInt("position.offset") : std::nullopt;
    if (!partition || !offset) {
      bad = Status::Corruption("a dead letter without a position: " + std::string(r.value));
      return;
    }
    out.emplace_back(static_cast<int32_t>(*partition), *offset);
  }));
  WEIR_RETURN_IF_ERROR(bad);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The reference: DuckDB over the consume lines.

// A JSON path to a top-level field.
inline std::string FieldPath(std::string_view field) {
  std::string path = "$.\"";
  for (char c : field) {
    if (c == '"' || c == '\\') path += '\\';
    path += c;
  }
  return SqlString(path + "\"");
}

// Whether the raw line's value fits `columns` (a JSON object whose fields are null, missing or
// of their column's type), as SQL over the table `raw` (never NULL).
inline std::string FitsSql(const std::vector<ViewColumn>& columns) {
  std::string sql = "coalesce(json_type(value) = 'OBJECT'";
  for (const ViewColumn& c : columns) {
    const std::string path = FieldPath(c.name);
    const std::string t = "json_type(value, " + path + ")";
    std::string kind;
    switch (c.kind) {
      case ColumnKind::kBigInt:
      case ColumnKind::kTimestamp:
        kind = t + " = 'BIGINT' OR (" + t + " = 'UBIGINT' AND TRY_CAST(value->>" + path +
               " AS BIGINT) IS NOT NULL)";
        break;
      case ColumnKind::kDouble:
        kind = t + " IN ('BIGINT', 'UBIGINT', 'DOUBLE')";
        break;
      case ColumnKind::kVarchar:
        kind = t + " = 'VARCHAR'";
        break;
      case ColumnKind::kBoolean:
        kind = t + " = 'BOOLEAN'";
        break;
      case ColumnKind::kJson:
        kind = "true";
        break;
    }
    sql += " AND (" + t + " IS NULL OR " + t + " = 'NULL' OR " + kind + ")";
  }
  return sql + ", false)";
}

// The records a view's SQL reads (`records`), from the table `raw`: the fitting lines, with the
// columns the lake gives them (_partition, _offset, _key, _ts, then the fields).
inline std::string RecordsSql(const std::vector<ViewColumn>& columns) {
  std::string sql =
      "SELECT partition::BIGINT AS _partition, \"offset\"::BIGINT AS _offset, key->>'$' AS _key, "
      "epoch_ms(\"timestamp\") AS _ts";
  for (const ViewColumn& c : columns) {
    const std::string path = FieldPath(c.name);
    const std::string text = "(value->>" + path + ")";
    std::string expr;
    switch (c.kind) {
      case ColumnKind::kBigInt:
        expr = "TRY_CAST(" + text + " AS BIGINT)";
        break;
      case ColumnKind::kTimestamp:
        expr = "epoch_ms(TRY_CAST(" + text + " AS BIGINT))";
        break;
      case ColumnKind::kDouble:
        expr = "TRY_CAST(" + text + " AS DOUBLE)";
        break;
      case ColumnKind::kVarchar:
        expr = text;
        break;
      case ColumnKind::kBoolean:
        expr = "TRY_CAST(" + text + " AS BOOLEAN)";
        break;
      case ColumnKind::kJson:
        expr = "CASE WHEN coalesce(json_type(value, " + path +
               "), 'NULL') = 'NULL' THEN NULL "
               "ELSE json_extract(value, " +
               path + ") END";
        break;
    }
    sql += ", " + expr + " AS " + SqlIdentifier(RecordColumnName(c.name));
  }
  return sql + " FROM raw WHERE " + FitsSql(columns);
}

// A result's rows as lines of text cells joined by '|', NULL as "NULL".
using Rows = std::vector<std::string>;

inline std::string JoinCells(std::span<const std::optional<std::string>> cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "|" : "") + cells[i].value_or("NULL");
  return line;
}

class Reference {
 public:
  static Result<std::unique_ptr<Reference>> Create() {
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<sql::Database> db, sql::Database::OpenInMemory(1));
    return std::unique_ptr<Reference>(new Reference(std::move(db)));
  }

  // (Re)loads the table `raw` from consume lines.
  Status Load(const std::filesystem::path& jsonl) {
    return db_->Execute(
        "CREATE OR REPLACE TABLE raw AS SELECT * FROM read_json(" + SqlString(jsonl.string()) +
        ", format = 'newline_delimited', columns = {'partition': 'BIGINT', 'offset': 'BIGINT', "
        "'key': 'JSON', 'timestamp': 'BIGINT', 'value': 'JSON'})");
  }

  // Defines the view's name as its SQL over its records (`<name>__records`).
  Status DefineView(const CatalogView& view) {
    const std::string records = SqlIdentifier(view.spec.name + "__records");
    WEIR_RETURN_IF_ERROR(
        db_->Execute("CREATE OR REPLACE VIEW " + records + " AS " + RecordsSql(view.columns)));
    return db_->Execute("CREATE OR REPLACE VIEW " + SqlIdentifier(view.spec.name) + " AS " +
                        ViewSql(view, records));
  }

  // The view's SQL over `records_relation` (a relation with the columns of `records`).
  static std::string ViewSql(const CatalogView& view, const std::string& records_relation) {
    return "WITH records AS (SELECT * FROM " + records_relation + ") SELECT * FROM " +
           (view.spec.sql.empty() ? std::string("records") : "(" + view.spec.sql + ")");
  }

  // The rows of `query` as text (the lake's form: every column CAST to VARCHAR).
  Result<Rows> Query(const std::string& query) {
    Rows rows;
    WEIR_RETURN_IF_ERROR(
        db_->Query("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (" + query + ") AS weir_q",
                   [&](const sql::Row& row) {
                     std::vector<std::optional<std::string>> cells(row.size());
                     for (size_t i = 0; i < row.size(); ++i) {
                       if (!row.IsNull(i)) cells[i] = std::string(row.Text(i));
                     }
                     rows.push_back(JoinCells(cells));
                   }));
    return rows;
  }

  // One integer (the first cell of the first row).
  Result<int64_t> Int(const std::string& query) {
    std::optional<int64_t> v;
    WEIR_RETURN_IF_ERROR(db_->Query(query, [&](const sql::Row& row) {
      if (!v && !row.IsNull(0)) v = row.Int(0);
    }));
    if (!v) return Status::NotFound("no value: " + query);
    return *v;
  }

  // The (name, type) of each column of `query`'s result.
  Result<std::vector<std::pair<std::string, std::string>>> Describe(const std::string& query) {
    std::vector<std::pair<std::string, std::string>> out;
    WEIR_RETURN_IF_ERROR(db_->Query("DESCRIBE " + query, [&](const sql::Row& row) {
      out.emplace_back(std::string(row.Text(0)), std::string(row.Text(1)));
    }));
    return out;
  }

  // (partition, offset) of the lines that do not fit `columns`, in the ranges given.
  Result<std::set<std::pair<int32_t, int64_t>>> Misfits(const std::vector<ViewColumn>& columns,
                                                        int32_t tp, int64_t begin, int64_t end) {
    std::set<std::pair<int32_t, int64_t>> out;
    WEIR_RETURN_IF_ERROR(db_->Query(
        "SELECT partition, \"offset\" FROM raw WHERE partition = " + std::to_string(tp) +
            " AND \"offset\" >= " + std::to_string(begin) + " AND \"offset\" < " +
            std::to_string(end) + " AND NOT " + FitsSql(columns),
        [&](const sql::Row& row) { out.emplace(static_cast<int32_t>(row.Int(0)), row.Int(1)); }));
    return out;
  }

  sql::Database& db() { return *db_; }

 private:
  explicit Reference(std::unique_ptr<sql::Database> db) : db_(std::move(db)) {}
  std::unique_ptr<sql::Database> db_;
};

// The rows of a lake query, as Reference::Query gives them.
inline Result<Rows> LakeRows(Lake& lake, const std::string& query, bool update_first) {
  Rows rows;
  QuerySink sink;
  sink.on_row = [&](std::span<const std::optional<std::string>> cells) {
    rows.push_back(JoinCells(cells));
  };
  QueryOptions options;
  options.update_first = update_first;
  WEIR_RETURN_IF_ERROR(lake.Query(query, options, sink));
  return rows;
}

// Where two results first differ, or "" if they are equal.
inline std::string FirstDifference(const Rows& got, const Rows& want) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      return "row " + std::to_string(i) + ": lake '" + got[i] + "', reference '" + want[i] + "'";
    }
  }
  if (got.size() != want.size()) {
    return "the lake has " + std::to_string(got.size()) + " rows, the reference " +
           std::to_string(want.size()) +
           (got.size() > want.size() ? "; first extra: '" + got[want.size()] + "'"
                                     : "; first missing: '" + want[got.size()] + "'");
  }
  return "";
}

// Runs `query` on the lake and on the reference: "" if they give the same rows, else what
// differs (or the error).
inline std::string CompareQuery(Lake& lake, Reference& reference, const std::string& query,
                                bool update_first) {
  Result<Rows> want = reference.Query(query);
  if (!want.ok()) return "the reference: " + want.status().ToString();
  Result<Rows> got = LakeRows(lake, query, update_first);
  if (!got.ok()) return "the lake: " + got.status().ToString();
  return FirstDifference(*got, *want);
}

// Loads the reference with `topic`'s records as they are now (written to `jsonl` as consume
// lines) and defines each view with the columns the catalog has for it.
inline Status LoadReference(Reference& reference, Lake& lake, log::LogStore& log,
                            const std::string& topic, const std::vector<std::string>& views,
                            const std::filesystem::path& jsonl) {
  WEIR_ASSIGN_OR_RETURN(log::Topic * t, log.GetTopic(topic));
  WEIR_RETURN_IF_ERROR(DumpTopic(*t, jsonl).status());
  WEIR_RETURN_IF_ERROR(reference.Load(jsonl));
  for (const std::string& view : views) {
    WEIR_ASSIGN_OR_RETURN(ViewStatus status, lake.Describe(view));
    WEIR_RETURN_IF_ERROR(reference.DefineView(status.view).WithContext("view " + view));
  }
  return Status::OK();
}

// The files of the views' live partitions.
inline std::set<std::string> LiveFiles(Lake& lake, const std::vector<std::string>& views) {
  std::set<std::string> out;
  for (const std::string& view : views) {
    Result<ViewStatus> status = lake.Describe(view);
    if (!status.ok()) continue;
    for (const PartitionRecord& p : status->partitions) {
      if (!p.file.empty()) out.insert(p.file);
    }
  }
  return out;
}

// Every .parquet file under the lake directory, relative to it.
inline std::set<std::string> ParquetFiles(const std::filesystem::path& lake_dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(lake_dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".parquet") {
      out.insert(std::filesystem::relative(it->path(), lake_dir).string());
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The invariants of a view's live partitions.

struct PartitionCheck {
  // A reference loaded with the topic as it is now, to check each fresh partition's rows
  // (the view's SQL over exactly its range's fitting records) and event-time range; null to
  // skip that. `per_partition_rows` false for a view whose SQL aggregates (a partition's rows
  // then depend on how its range was cut).
  Reference* reference = nullptr;
  bool per_partition_rows = true;
};

// Checks, for the view's live partitions: they tile [first offset of the log, end of the last)
// of each topic partition without overlap (these tests keep every record: no retention); each one's
// source records, source hash and append times are those of its range in the log; a partition has a
// file iff it has rows, the file exists with the catalog's size and row count, holds only rows of
// its range and is sorted as the catalog says. Returns the problems found, each a line.
inline std::vector<std::string> CheckPartitions(Lake& lake, log::LogStore& log, sql::Database& db,
                                                const std::string& view_name,
                                                const PartitionCheck& check = {}) {
  std::vector<std::string> problems;
  auto problem = [&](const PartitionRecord* p, const std::string& what) {
    problems.push_back("view " + view_name +
                       (p ? " partition " + std::to_string(p->instance) + " (tp " +
                                std::to_string(p->topic_partition) + " [" +
                                std::to_string(p->begin_offset) + ", " +
                                std::to_string(p->end_offset) + "))"
                          : std::string()) +
                       ": " + what);
  };
  Result<ViewStatus> status = lake.Describe(view_name);
  if (!status.ok()) {
    problem(nullptr, status.status().ToString());
    return problems;
  }
  const CatalogView& view = status->view;
  Result<log::Topic*> topic = log.GetTopic(view.spec.topic);
  if (!topic.ok()) {
    if (!status->partitions.empty()) problem(nullptr, "partitions of a topic that does not exist");
    return problems;
  }
  std::map<int32_t, std::vector<const PartitionRecord*>> by_tp;
  for (const PartitionRecord& p : status->partitions) by_tp[p.topic_partition].push_back(&p);
  for (auto& [tp, parts] : by_tp) {
    if (tp < 0 || tp >= (*topic)->num_partitions()) {
      problem(parts[0], "a topic partition the topic does not have");
      continue;
    }
    log::Partition& partition = (*topic)->partition(PartitionId(tp));
    if (parts.front()->begin_offset != partition.FirstOffset().value()) {
      problem(parts.front(), "the first partition does not start at the log's first offset " +
                                 std::to_string(partition.FirstOffset().value()));
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      const PartitionRecord& p = *parts[i];
      if (p.begin_offset >= p.end_offset) problem(&p, "an empty range");
      if (i > 0 && parts[i - 1]->end_offset != p.begin_offset) {
        problem(&p, parts[i - 1]->end_offset > p.begin_offset
                        ? "overlaps partition " + std::to_string(parts[i - 1]->instance)
                        : "a gap after partition " + std::to_string(parts[i - 1]->instance));
      }
    }
    if (parts.back()->end_offset > partition.NextOffset().value()) {
      problem(parts.back(),
              "ends past the log's visible end " + std::to_string(partition.NextOffset().value()));
      continue;
    }
    // The log's records of each range: count, source hash, append times.
    log::PartitionReader reader(partition, Offset(parts.front()->begin_offset));
    size_t at = 0;
    SourceHash hash;
    int64_t records = 0, append_min = INT64_MAX, append_max = INT64_MIN;
    auto finish = [&](const PartitionRecord& p) {
      if (records != p.end_offset - p.begin_offset || records != p.source_records) {
        problem(&p, "source_records " + std::to_string(p.source_records) + " but the log has " +
                        std::to_string(records) + " records in the range");
      }
      if (hash.ToString() != p.source_hash) {
        problem(&p, "source hash " + p.source_hash + " but the log's records hash to " +
                        hash.ToString());
      }
      if (records > 0 && (append_min != p.append_min_ms || append_max != p.append_max_ms)) {
        problem(&p, "append times [" + std::to_string(p.append_min_ms) + ", " +
                        std::to_string(p.append_max_ms) + "] but the log's are [" +
                        std::to_string(append_min) + ", " + std::to_string(append_max) + "]");
      }
      hash = SourceHash();
      records = 0;
      append_min = INT64_MAX;
      append_max = INT64_MIN;
    };
    while (at < parts.size()) {
      Result<std::span<const log::StoredRecord>> batch = reader.Next();
      if (!batch.ok()) {
        problem(parts[at], "reading the log: " + batch.status().ToString());
        break;
      }
      if (batch->empty()) break;
      for (const log::StoredRecord& r : *batch) {
        while (at < parts.size() && r.offset.value() >= parts[at]->end_offset) finish(*parts[at++]);
        if (at == parts.size()) break;
        hash.Add(r);
        ++records;
        append_min = std::min(append_min, r.append_time_ms);
        append_max = std::max(append_max, r.append_time_ms);
      }
    }
    while (at < parts.size()) finish(*parts[at++]);
  }
  // Each partition's file.
  const std::filesystem::path dir = lake.dir();
  for (const PartitionRecord& p : status->partitions) {
    if (p.rows < 0) problem(&p, "negative rows");
    if ((p.rows == 0) != p.file.empty()) {
      problem(&p, std::to_string(p.rows) + " rows and file '" + p.file + "'");
      continue;
    }
    if (p.file.empty()) continue;
    const std::filesystem::path file = dir / p.file;
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (ec) {
      problem(&p, "its file " + p.file + ": " + ec.message());
      continue;
    }
    if (static_cast<int64_t>(size) != p.bytes) {
      problem(&p, "bytes " + std::to_string(p.bytes) + " but the file has " + std::to_string(size));
    }
    const std::string parquet = "read_parquet(" + SqlString(file.string()) + ")";
    int64_t rows = -1;
    Status s = db.Query("SELECT count(*) FROM " + parquet,
                        [&](const sql::Row& row) { rows = row.Int(0); });
    if (!s.ok()) {
      problem(&p, "reading its file: " + s.ToString());
      continue;
    }
    if (rows != p.rows) {
      problem(&p, "rows " + std::to_string(p.rows) + " but its file has " + std::to_string(rows));
    }
    std::vector<std::string> columns;
    (void)db.Query("DESCRIBE SELECT * FROM " + parquet,
                   [&](const sql::Row& row) { columns.emplace_back(row.Text(0)); });
    auto has = [&](const std::string& c) {
      return std::find(columns.begin(), columns.end(), c) != columns.end();
    };
    if (has("_offset") && has("_partition")) {
      int64_t outside = -1;
      s = db.Query("SELECT count(*) FROM " + parquet + " WHERE _partition <> " +
                       std::to_string(p.topic_partition) + " OR _offset < " +
                       std::to_string(p.begin_offset) +
                       " OR _offset >= " + std::to_string(p.end_offset),
                   [&](const sql::Row& row) { outside = row.Int(0); });
      if (!s.ok() || outside != 0) {
        problem(&p, s.ok() ? std::to_string(outside) + " rows outside its range" : s.ToString());
      }
    }
    const bool fresh = p.schema_hash == view.schema_hash;
    std::string wanted_order;
    for (const std::string& c : view.spec.sort)
      wanted_order += (wanted_order.empty() ? "" : ",") + c;
    if (fresh && p.sort_order != wanted_order) {
      problem(&p,
              "sort order '" + p.sort_order + "' where the view sorts by '" + wanted_order + "'");
    }
    if (!p.sort_order.empty()) {
      // Sorted as certified: no row is before its predecessor (NULLs last, DuckDB's default).
      std::vector<std::string> sort;
      for (size_t at = 0, next; at <= p.sort_order.size(); at = next + 1) {
        next = p.sort_order.find(',', at);
        if (next == std::string::npos) next = p.sort_order.size();
        sort.push_back(p.sort_order.substr(at, next - at));
      }
      std::string keys;
      for (size_t i = 0; i < sort.size(); ++i) {
        const std::string c = SqlIdentifier(sort[i]);
        keys += (i ? ", " : "") + std::string("(") + c + " IS NULL) AS n" + std::to_string(i) +
                ", " + c + " AS v" + std::to_string(i);
      }
      // "The previous row is after this one", lexicographically over (n0, v0, n1, v1, ...).
      std::string after = "false";
      for (size_t i = sort.size(); i-- > 0;) {
        const std::string n = "n" + std::to_string(i), v = "v" + std::to_string(i);
        const std::string pn = "lag(" + n + ") OVER w", pv = "lag(" + v + ") OVER w";
        after = "(" + pn + " > " + n + " OR (" + pn + " = " + n + " AND ((" + n + " AND " + after +
                ") OR (NOT " + n + " AND (" + pv + " > " + v + " OR (" + pv + " = " + v + " AND " +
                after + "))))))";
      }
      int64_t unsorted = -1;
      s = db.Query("SELECT count(*) FILTER (WHERE unsorted) FROM (SELECT " + after +
                       " AS unsorted FROM (SELECT " + keys +
                       ", file_row_number FROM read_parquet(" + SqlString(file.string()) +
                       ", file_row_number = true)) WINDOW w AS (ORDER BY file_row_number))",
                   [&](const sql::Row& row) { unsorted = row.Int(0); });
      if (!s.ok() || unsorted != 0) {
        problem(&p, s.ok()
                        ? std::to_string(unsorted) + " rows out of its sort order " + p.sort_order
                        : "checking its order: " + s.ToString());
      }
    }
    if (check.reference != nullptr && fresh && check.per_partition_rows) {
      // Its rows are the view's SQL over exactly its range's records.
      const std::string range = "(SELECT * FROM " + SqlIdentifier(view.spec.name + "__records") +
                                " WHERE _partition = " + std::to_string(p.topic_partition) +
                                " AND _offset >= " + std::to_string(p.begin_offset) +
                                " AND _offset < " + std::to_string(p.end_offset) + ")";
      const std::string want = Reference::ViewSql(view, range);
      int64_t differ = -1;
      s = db.Query("SELECT count(*) FROM ((SELECT * FROM " + parquet +
                       " EXCEPT ALL SELECT * FROM (" + want + ")) UNION ALL (SELECT * FROM (" +
                       want + ") EXCEPT ALL SELECT * FROM " + parquet + "))",
                   [&](const sql::Row& row) { differ = row.Int(0); });
      if (!s.ok() || differ != 0) {
        problem(&p, s.ok() ? std::to_string(differ) +
                                 " rows differ from the view's SQL over its range's records"
                           : "comparing its rows: " + s.ToString());
      }
    }
  }
  if (check.reference != nullptr) {
    // The event-time range of each fresh partition: that of its range's fitting records.
    for (const PartitionRecord& p : status->partitions) {
      if (p.schema_hash != view.schema_hash) continue;
      std::optional<int64_t> lo, hi;
      Status s = db.Query("SELECT min(epoch_ms(_ts)), max(epoch_ms(_ts)) FROM " +
                              SqlIdentifier(view.spec.name + "__records") +
                              " WHERE _partition = " + std::to_string(p.topic_partition) +
                              " AND _offset >= " + std::to_string(p.begin_offset) +
                              " AND _offset < " + std::to_string(p.end_offset),
                          [&](const sql::Row& row) {
                            if (!row.IsNull(0)) lo = row.Int(0);
                            if (!row.IsNull(1)) hi = row.Int(1);
                          });
      if (!s.ok()) {
        problem(&p, "event times: " + s.ToString());
      } else if (lo != p.event_min_ms || hi != p.event_max_ms) {
        auto text = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : "none"; };
        problem(&p, "event times [" + text(p.event_min_ms) + ", " + text(p.event_max_ms) +
                        "] but its records' are [" + text(lo) + ", " + text(hi) + "]");
      }
    }
  }
  return problems;
}

}  // namespace weir::lake::testing
