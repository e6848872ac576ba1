// A lake view: the definition of a topic's materialization into Parquet partitions.
//
//   views:
//     clicks_by_page:
//       topic: clicks                 # the topic materialized (required)
//       sql: SELECT page, amount, _ts FROM records WHERE action = 'purchase'   # optional
//       columns: {page: varchar, amount: double, user: bigint}   # optional; else inferred
//       partition: 1h                 # the insert-time span of a sealed partition (default 1h)
//       sort: [_ts]                   # columns each file is sorted by (default: none)
//       order: concatenated           # none | file | concatenated: the scan order a query may
//                                     # rely on when every partition certifies it
//       version: 1                    # bump to rebuild every partition
//       refresh: 5s                   # background materialization interval (default 5s)
//       merge: [6h, 1d]               # background merges of sealed partitions into spans of
//                                     # 6h, then 1d, once a span is closed (default: none)
//
// The records a view's SQL reads (`records`) have the JSON value's top-level fields as columns,
// typed by `columns` or, without it, by the first records' fields (integer -> bigint, number ->
// double, string -> varchar, boolean -> boolean, anything else or mixed -> json), plus `_key`
// (varchar), `_ts` (timestamp), `_offset` (bigint) and `_partition` (integer). A view without
// `sql` has all of them. A field whose name starts with `_` is renamed `_field_<name>` so it
// never clashes with those.
//
// A topic's archive is a view with `archive: true` (and no sql, columns, sort or order):
//
//   views:
//     clicks_archive: {topic: clicks, archive: true}    # partition, version, refresh as above
//
// Every record of the topic, JSON or not, as `_partition` (bigint), `_offset` (bigint), `_key`
// (varchar), `_ts` (timestamp) and `_value` (blob: the value's bytes verbatim), each file sorted
// by `_offset` (order: concatenated). A topic has at most one archive. The log's retention never
// evicts records its archive does not hold yet, and subscribers catch up through it past
// retention (lake/archive.h).
//
// Contract: ParseViews checks everything it can without the log (names, types, durations,
// that `sort` and `order` agree); errors name the file, the YAML path and the line.
// A view's schema hash binds its version, SQL, columns (declared or inferred), sort and the
// format version of this module: a partition written under another hash is stale.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config_node.h"
#include "weir/status.h"

namespace weir::lake {

enum class ColumnKind : uint8_t { kBigInt, kDouble, kVarchar, kBoolean, kTimestamp, kJson };
std::string_view ColumnKindName(ColumnKind kind);  // "bigint", ... as written in YAML
std::string_view ColumnKindSql(ColumnKind kind);   // "BIGINT", ... as DuckDB writes it

struct ViewColumn {
  std::string name;  // the JSON field's name
  ColumnKind kind = ColumnKind::kJson;
  friend bool operator==(const ViewColumn&, const ViewColumn&) = default;
};

// none: no promise; file: rows sorted by `sort` within each file; concatenated: also
// partitions' `sort` ranges do not overlap, so files read in order give the sorted whole.
enum class ScanOrder : uint8_t { kNone, kFile, kConcatenated };
std::string_view ScanOrderName(ScanOrder order);

struct ViewSpec {
  std::string name;
  std::string topic;
  std::string sql;                  // empty: every column of `records`
  std::vector<ViewColumn> columns;  // empty: inferred from the first records
  std::chrono::milliseconds partition{std::chrono::hours(1)};
  std::vector<std::string> sort;
  ScanOrder order = ScanOrder::kNone;
  int64_t version = 1;
  std::chrono::milliseconds refresh{std::chrono::seconds(5)};
  // The merge policy: spans sealed partitions merge into, in the background, each a multiple of
  // `partition` and of the one before it. Not part of the schema hash (the rows are the same).
  std::vector<std::chrono::milliseconds> merge;
  bool archive = false;  // the topic's archive (see the top of this file)

  // The definition as one line of JSON (what the catalog stores and `views describe` shows).
  std::string ToJson() const;
  friend bool operator==(const ViewSpec&, const ViewSpec&) = default;
};

// Parses the `views:` map of a YAML file (the node of `views`).
Result<std::vector<ViewSpec>> ParseViews(const ConfigNode& views);
// Parses a file's `views:` key, if it has one (empty list otherwise). Other top-level keys are
// left to the pipeline loader, so a views file and a pipeline file can be one file.
Result<std::vector<ViewSpec>> ParseViewsFile(std::string_view yaml_text, std::string file_name);
// Reads ToJson's form back (the catalog's copy of a definition).
Result<ViewSpec> ViewSpecFromJson(std::string_view json);

// The archive view `name` of `topic` (archive: true, sorted by _offset, order concatenated).
ViewSpec ArchiveSpec(std::string name, std::string topic);
// kInvalidArgument if `spec` is an archive with sql, columns, or another sort or order than
// ArchiveSpec's; OK for any other view.
Status CheckArchiveSpec(const ViewSpec& spec);

// The column name a JSON field gets in `records`: itself, or `_field_<name>` if it starts with
// `_`.
std::string RecordColumnName(std::string_view field);

// The file schema hash: SHA-256 over the format version, the definition (version, SQL, sort)
// and the columns actually used (declared or inferred), lower-case hex.
std::string SchemaHash(const ViewSpec& spec, const std::vector<ViewColumn>& columns);

}  // namespace weir::lake
