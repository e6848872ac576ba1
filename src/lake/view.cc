#include "lake/view.h"

#include <algorithm>
#include <array>

#include "core/names.h"
#include "core/sha256.h"
#include "weir/value.h"

namespace weir::lake {
namespace {

// Bumped when the files this module writes change shape for the same definition.
constexpr std::string_view kFormatVersion = "weir-lake-1";

constexpr std::array<std::pair<std::string_view, ColumnKind>, 6> kKinds = {{
    {"bigint", ColumnKind::kBigInt},
    {"double", ColumnKind::kDouble},
    {"varchar", ColumnKind::kVarchar},
    {"boolean", ColumnKind::kBoolean},
    {"timestamp", ColumnKind::kTimestamp},
    {"json", ColumnKind::kJson},
}};
constexpr std::array<std::pair<std::string_view, ScanOrder>, 3> kOrders = {{
    {"none", ScanOrder::kNone},
    {"file", ScanOrder::kFile},
    {"concatenated", ScanOrder::kConcatenated},
}};
constexpr std::string_view kMetaColumns[] = {"_key", "_ts", "_offset", "_partition"};

template <typename Table, typename T>
std::string_view NameIn(const Table& table, T value) {
  for (const auto& [name, v] : table) {
    if (v == value) return name;
  }
  return "?";
}

template <typename Table>
std::string Choices(const Table& table) {
  std::string out;
  for (const auto& [name, v] : table) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

template <typename Table, typename T>
bool Lookup(const Table& table, std::string_view name, T* out) {
  for (const auto& [n, v] : table) {
    if (n == name) {
      *out = v;
      return true;
    }
  }
  return false;
}

bool IsRecordColumn(const ViewSpec& spec, std::string_view name) {
  if (std::find(std::begin(kMetaColumns), std::end(kMetaColumns), name) != std::end(kMetaColumns)) {
    return true;
  }
  return std::any_of(spec.columns.begin(), spec.columns.end(),
                     [&](const ViewColumn& c) { return RecordColumnName(c.name) == name; });
}

Result<ViewSpec> ParseView(const std::string& name, const ConfigNode& node) {
  WEIR_RETURN_IF_ERROR(node.OnlyKeys({"topic", "sql", "columns", "partition", "sort", "order",
                                      "version", "refresh", "merge", "archive"}));
  if (Status s = CheckName(name, "view name"); !s.ok()) return node.Error(s.message());
  ViewSpec spec;
  spec.name = name;
  WEIR_ASSIGN_OR_RETURN(ConfigNode topic, node.Require("topic", "the topic to materialize"));
  WEIR_ASSIGN_OR_RETURN(spec.topic, topic.String());
  if (auto archive = node.Get("archive")) {
    WEIR_ASSIGN_OR_RETURN(spec.archive, archive->Bool());
  }
  if (spec.archive) {
    for (const char* key : {"sql", "columns", "sort", "order"}) {
      if (auto given = node.Get(key)) {
        return given->Error("an archive view keeps every record as it is: it takes no '" +
                            std::string(key) + "'");
      }
    }
    spec.sort = {"_offset"};
    spec.order = ScanOrder::kConcatenated;
  }
  if (auto sql = node.Get("sql")) {
    WEIR_ASSIGN_OR_RETURN(spec.sql, sql->String());
  }
  if (auto columns = node.Get("columns")) {
    WEIR_ASSIGN_OR_RETURN(auto members, columns->Members());
    for (const auto& [field, type] : members) {
      ViewColumn column{.name = field};
      if (!Lookup(kKinds, type.Scalar(), &column.kind)) {
        return type.Expected("a column type (" + Choices(kKinds) + ")");
      }
      spec.columns.push_back(std::move(column));
    }
    if (spec.columns.empty()) return columns->Expected("at least one column");
  }
  if (auto partition = node.Get("partition")) {
    WEIR_ASSIGN_OR_RETURN(spec.partition, partition->Duration());
    if (spec.partition < std::chrono::seconds(1)) {
      return partition->Error("a partition spans at least 1s");
    }
  }
  if (auto refresh = node.Get("refresh")) {
    WEIR_ASSIGN_OR_RETURN(spec.refresh, refresh->Duration());
    if (spec.refresh < std::chrono::milliseconds(100)) {
      return refresh->Error("refresh is at least 100ms");
    }
  }
  if (auto merge = node.Get("merge")) {
    if (!merge->IsSequence()) return merge->Expected("a list of spans ([6h, 1d])");
    std::chrono::milliseconds below = spec.partition;
    for (const ConfigNode& item : merge->Items()) {
      WEIR_ASSIGN_OR_RETURN(std::chrono::milliseconds span, item.Duration());
      if (span <= below || span.count() % below.count() != 0) {
        return item.Error(
            "a merge span is a multiple of the partition span and of the merge "
            "span before it, and larger");
      }
      spec.merge.push_back(span);
      below = span;
    }
  }
  if (auto version = node.Get("version")) {
    WEIR_ASSIGN_OR_RETURN(spec.version, version->Int(0, INT64_MAX));
  }
  if (auto sort = node.Get("sort")) {
    if (sort->IsScalar()) {
      WEIR_ASSIGN_OR_RETURN(std::string column, sort->String());
      spec.sort.push_back(std::move(column));
    } else if (sort->IsSequence()) {
      for (const ConfigNode& item : sort->Items()) {
        WEIR_ASSIGN_OR_RETURN(std::string column, item.String());
        spec.sort.push_back(std::move(column));
      }
    } else {
      return sort->Expected("a column or a list of columns");
    }
    // Without SQL the view's columns are known here; with SQL, DuckDB checks them.
    for (const std::string& column : spec.sort) {
      if (spec.sql.empty() && !spec.columns.empty() && !IsRecordColumn(spec, column)) {
        return sort->Error("sort column '" + column + "' is not a column of the view");
      }
    }
  }
  if (auto order = node.Get("order")) {
    if (!Lookup(kOrders, order->Scalar(), &spec.order)) {
      return order->Expected("a scan order (" + Choices(kOrders) + ")");
    }
    if (spec.order != ScanOrder::kNone && spec.sort.empty()) {
      return order->Error("a scan order needs the view's sort columns (sort: [...])");
    }
  }
  return spec;
}

}  // namespace

std::string_view ColumnKindName(ColumnKind kind) { return NameIn(kKinds, kind); }

std::string_view ColumnKindSql(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kBigInt:
      return "BIGINT";
    case ColumnKind::kDouble:
      return "DOUBLE";
    case ColumnKind::kVarchar:
      return "VARCHAR";
    case ColumnKind::kBoolean:
      return "BOOLEAN";
    case ColumnKind::kTimestamp:
      return "TIMESTAMP";
    case ColumnKind::kJson:
      return "JSON";
  }
  return "JSON";
}

std::string_view ScanOrderName(ScanOrder order) { return NameIn(kOrders, order); }

ViewSpec ArchiveSpec(std::string name, std::string topic) {
  ViewSpec spec;
  spec.name = std::move(name);
  spec.topic = std::move(topic);
  spec.archive = true;
  spec.sort = {"_offset"};
  spec.order = ScanOrder::kConcatenated;
  return spec;
}

Status CheckArchiveSpec(const ViewSpec& spec) {
  if (!spec.archive) return Status::OK();
  if (!spec.sql.empty() || !spec.columns.empty() ||
      spec.sort != std::vector<std::string>{"_offset"} || spec.order != ScanOrder::kConcatenated) {
    return Status::InvalidArgument("view '" + spec.name +
                                   "': an archive keeps every record as it is, sorted by _offset: "
                                   "no sql, columns, sort or order of its own");
  }
  return Status::OK();
}

std::string RecordColumnName(std::string_view field) {
  if (!field.empty() && field[0] == '_') return "_field_" + std::string(field.substr(1));
  return std::string(field);
}

std::string ViewSpec::ToJson() const {
  Value::Object columns_json;
  for (const ViewColumn& c : columns) {
    columns_json.emplace_back(c.name, Value(ColumnKindName(c.kind)));
  }
  Value::Array sort_json;
  for (const std::string& s : sort) sort_json.emplace_back(s);
  Value json = Value::MakeObject({{"name", Value(name)},
                                  {"topic", Value(topic)},
                                  {"sql", Value(sql)},
                                  {"columns", Value(std::move(columns_json))},
                                  {"partition_ms", Value(partition.count())},
                                  {"sort", Value(std::move(sort_json))},
                                  {"order", Value(ScanOrderName(order))},
                                  {"version", Value(version)},
                                  {"refresh_ms", Value(refresh.count())}});
  // Only when set: other views' JSON stays as it was.
  if (!merge.empty()) {
    Value::Array merge_json;
    for (std::chrono::milliseconds span : merge) merge_json.emplace_back(span.count());
    json.Set("merge_ms", Value(std::move(merge_json)));
  }
  if (archive) json.Set("archive", true);
  return json.ToJson();
}

Result<ViewSpec> ViewSpecFromJson(std::string_view json) {
  WEIR_ASSIGN_OR_RETURN(Value v, Value::Parse(json));
  auto bad = [&] {
    return Status::Corruption("lake catalog: malformed view definition " +
                              std::string(json.substr(0, 200)));
  };
  ViewSpec spec;
  auto name = v.GetString("name");
  auto topic = v.GetString("topic");
  auto sql = v.GetString("sql");
  auto partition = v.GetInt("partition_ms");
  auto order = v.GetString("order");
  auto version = v.GetInt("version");
  auto refresh = v.GetInt("refresh_ms");
  const Value* columns = v.Find("columns");
  const Value* sort = v.Find("sort");
  if (!name || !topic || !sql || !partition || !order || !version || !refresh || !columns ||
      !columns->is_object() || !sort || !sort->is_array() ||
      !Lookup(kOrders, *order, &spec.order)) {
    return bad();
  }
  spec.name = *name;
  spec.topic = *topic;
  spec.sql = *sql;
  spec.partition = std::chrono::milliseconds(*partition);
  spec.version = *version;
  spec.refresh = std::chrono::milliseconds(*refresh);
  if (const Value* archive = v.Find("archive")) {
    if (!archive->is_bool()) return bad();
    spec.archive = archive->as_bool();
  }
  for (const auto& [field, kind] : columns->as_object()) {
    ViewColumn column{.name = std::string(field)};
    if (!kind.is_string() || !Lookup(kKinds, kind.as_string(), &column.kind)) return bad();
    spec.columns.push_back(std::move(column));
  }
  for (const Value& s : sort->as_array()) {
    if (!s.is_string()) return bad();
    spec.sort.emplace_back(s.as_string());
  }
  // Absent from definitions stored before merge policies.
  if (const Value* merge = v.Find("merge_ms"); merge) {
    if (!merge->is_array()) return bad();
    for (const Value& span : merge->as_array()) {
      if (!span.is_int() || span.as_int() <= 0) return bad();
      spec.merge.emplace_back(span.as_int());
    }
  }
  return spec;
}

Result<std::vector<ViewSpec>> ParseViews(const ConfigNode& views) {
  WEIR_ASSIGN_OR_RETURN(auto members, views.Members());
  std::vector<ViewSpec> out;
  for (const auto& [name, node] : members) {
    WEIR_ASSIGN_OR_RETURN(ViewSpec spec, ParseView(name, node));
    for (const ViewSpec& other : out) {
      if (spec.archive && other.archive && other.topic == spec.topic) {
        return node.Error("topic '" + spec.topic + "' already has an archive, view '" + other.name +
                          "'");
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

Result<std::vector<ViewSpec>> ParseViewsFile(std::string_view yaml_text, std::string file_name) {
  WEIR_ASSIGN_OR_RETURN(ConfigNode doc, ConfigNode::Parse(yaml_text, std::move(file_name)));
  std::optional<ConfigNode> views = doc.Get("views");
  if (!views) return std::vector<ViewSpec>{};
  return ParseViews(*views);
}

std::string SchemaHash(const ViewSpec& spec, const std::vector<ViewColumn>& columns) {
  Value::Array columns_json;
  for (const ViewColumn& c : columns) {
    columns_json.emplace_back(
        Value::MakeObject({{"name", Value(c.name)}, {"type", Value(ColumnKindName(c.kind))}}));
  }
  Value::Array sort_json;
  for (const std::string& s : spec.sort) sort_json.emplace_back(s);
  Value bound = Value::MakeObject({{"format", Value(kFormatVersion)},
                                   {"version", Value(spec.version)},
                                   {"sql", Value(spec.sql)},
                                   {"columns", Value(std::move(columns_json))},
                                   {"sort", Value(std::move(sort_json))}});
  if (spec.archive) bound.Set("archive", true);  // other views' hashes stay as they were
  return Sha256Hex(bound.ToJson());
}

}  // namespace weir::lake
