// How `weir query` and `weir views` show what the lake answers (lake_cli.h).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <span>

#include "cli/lake_cli.h"
#include "core/config_node.h"

namespace weir::cli {

std::filesystem::path LakeDir(const std::string& data_dir) {
  return std::filesystem::path(data_dir) / "lake";
}

Result<std::chrono::milliseconds> ParseDurationFlag(const std::string& text,
                                                    std::string_view flag) {
  auto node = ConfigNode::Parse(text, std::string(flag));
  Result<std::chrono::milliseconds> duration =
      node.ok() && node->IsScalar() ? node->Duration() : Status::InvalidArgument("");
  if (!duration.ok() || duration->count() <= 0) {
    return Status::InvalidArgument(std::string(flag) +
                                   " takes a duration such as 30s, 1h or 1d, not '" + text + "'");
  }
  return duration;
}

Result<QueryFormat> ParseQueryFormat(std::string_view name) {
  if (name == "table") return QueryFormat::kTable;
  if (name == "jsonl") return QueryFormat::kJsonl;
  if (name == "csv") return QueryFormat::kCsv;
  return Status::InvalidArgument("the format is table, jsonl or csv, not '" + std::string(name) +
                                 "'");
}

namespace {

using Cells = std::vector<std::optional<std::string>>;

// Characters as a terminal counts them (UTF-8 continuation bytes do not).
size_t DisplayWidth(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

void AppendPadded(std::string& out, std::string_view text, size_t width) {
  out.append(text);
  out.append(width - std::min(width, DisplayWidth(text)), ' ');
}

// A table cell on one line.
std::string TableCell(const std::optional<std::string>& cell) {
  if (!cell) return "NULL";
  std::string out;
  for (char c : *cell) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void AppendCsvField(std::string& out, const std::optional<std::string>& cell) {
  if (!cell) return;  // NULL: an empty field; the empty string is ""
  if (!cell->empty() && cell->find_first_of(",\"\r\n") == std::string::npos) {
    out += *cell;
    return;
  }
  out += '"';
  for (char c : *cell) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

// Turns a query's columns and rows into text in one of the formats.
class ResultWriter {
 public:
  ResultWriter(QueryFormat format, const std::function<void(std::string_view)>& write)
      : format_(format), write_(write) {}

  lake::QuerySink Sink() {
    lake::QuerySink sink;
    sink.json_rows = format_ == QueryFormat::kJsonl;
    sink.on_columns = [this](std::span<const std::string> names) {
      names_.assign(names.begin(), names.end());
      header_.assign(names.begin(), names.end());
    };
    sink.on_row = [this](std::span<const std::optional<std::string>> cells) { OnRow(cells); };
    sink.on_json_row = [this](std::string_view json) {
      line_.assign(json);
      line_ += '\n';
      write_(line_);
    };
    return sink;
  }

  // The query succeeded: what is held back goes out.
  void Finish() {
    if (format_ == QueryFormat::kCsv && !header_written_) WriteCsvHeader();
    if (format_ == QueryFormat::kTable) {
      if (!table_started_) StartTable();
      write_("(" + std::to_string(table_rows_) + (table_rows_ == 1 ? " row)\n" : " rows)\n"));
    }
  }

 private:
  // A table's columns are as wide as their widest cell among the first kTableHeldRows rows,
  // which are held back to measure them; later rows stream through (a wider cell shifts the
  // rest of its line), so a table of any length takes bounded memory.
  static constexpr size_t kTableHeldRows = 1000;

  void OnRow(std::span<const std::optional<std::string>> cells) {
    if (format_ == QueryFormat::kTable) {
      ++table_rows_;
      if (table_started_) {
        WriteTableRow(cells);
        return;
      }
      held_.emplace_back(cells.begin(), cells.end());
      if (held_.size() == kTableHeldRows) StartTable();
      return;
    }
    if (!header_written_) WriteCsvHeader();
    WriteCsvLine(cells);
  }

  void WriteCsvHeader() {
    header_written_ = true;
    WriteCsvLine(header_);
  }

  void WriteCsvLine(std::span<const std::optional<std::string>> cells) {
    line_.clear();
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) line_ += ',';
      AppendCsvField(line_, cells[i]);
    }
    line_ += "\r\n";
    write_(line_);
  }

  // Measures the held rows, writes the header, the rule and them.
  void StartTable() {
    table_started_ = true;
    for (const std::string& name : names_) widths_.push_back(DisplayWidth(name));
    for (const Cells& row : held_) {
      for (size_t i = 0; i < row.size() && i < widths_.size(); ++i) {
        widths_[i] = std::max(widths_[i], DisplayWidth(TableCell(row[i])));
      }
    }
    TableLine([&](size_t i) { return names_[i]; });
    TableLine([&](size_t i) { return std::string(widths_[i], '-'); });
    for (const Cells& row : held_) WriteTableRow(row);
    held_.clear();
  }

  void WriteTableRow(std::span<const std::optional<std::string>> cells) {
    TableLine([&](size_t i) { return i < cells.size() ? TableCell(cells[i]) : std::string(); });
  }

  // One line of the table: cell_of(i) for each column, padded to its width.
  template <typename CellOf>
  void TableLine(const CellOf& cell_of) {
    line_.clear();
    for (size_t i = 0; i < widths_.size(); ++i) {
      if (i > 0) line_ += "  ";
      // The last column is not padded: no trailing spaces.
      if (i + 1 == widths_.size()) {
        line_ += cell_of(i);
      } else {
        AppendPadded(line_, cell_of(i), widths_[i]);
      }
    }
    line_ += '\n';
    write_(line_);
  }

  const QueryFormat format_;
  const std::function<void(std::string_view)>& write_;
  std::vector<std::string> names_;
  Cells header_;                // the names, as csv cells
  std::vector<Cells> held_;     // table: the first rows, until the widths are known
  std::vector<size_t> widths_;  // table: its columns' widths, once started
  bool table_started_ = false;
  int64_t table_rows_ = 0;
  bool header_written_ = false;
  std::string line_;
};

// Epoch milliseconds as 2026-01-01T10:00:00.123Z.
std::string IsoTime(int64_t ms) {
  const time_t seconds = static_cast<time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(((ms % 1000) + 1000) % 1000));
  return text;
}

// 3600000 -> "1h", 90000 -> "90s".
std::string ShortDuration(int64_t ms) {
  for (auto [unit, length] :
       {std::pair{"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}}) {
    if (ms > 0 && ms % length == 0) return std::to_string(ms / length) + unit;
  }
  return std::to_string(ms) + "ms";
}

Value OptionalInt(const std::optional<int64_t>& v) { return v ? Value(*v) : Value(); }

Value PartitionJson(const lake::PartitionRecord& p, const std::string& schema_hash) {
  return Value::MakeObject({{"partition", p.topic_partition},
                            {"begin_offset", p.begin_offset},
                            {"end_offset", p.end_offset},
                            {"span_start_ms", p.span_start_ms},
                            {"span_ms", p.span_ms},
                            {"rows", p.rows},
                            {"event_min_ms", OptionalInt(p.event_min_ms)},
                            {"event_max_ms", OptionalInt(p.event_max_ms)},
                            {"sort_order", p.sort_order},
                            {"sealed", p.sealed},
                            {"file", p.file},
                            {"bytes", p.bytes},
                            {"schema_hash", p.schema_hash},
                            {"stale", p.schema_hash != schema_hash}});
}

Value SummaryJson(const lake::ViewStatus& status) {
  return Value::MakeObject({{"name", status.view.spec.name},
                            {"topic", status.view.spec.topic},
                            {"partitions", static_cast<int64_t>(status.partitions.size())},
                            {"rows", status.rows},
                            {"bytes", status.bytes},
                            {"stale", status.stale}});
}

Value DescriptionJson(const lake::ViewStatus& status) {
  Value view = SummaryJson(status);
  auto definition = Value::Parse(status.view.spec.ToJson());
  view.Set("definition",
           definition.ok() ? std::move(*definition) : Value(status.view.spec.ToJson()));
  Value::Array columns;
  for (const lake::ViewColumn& c : status.view.columns) {
    columns.push_back(
        Value::MakeObject({{"name", c.name}, {"type", lake::ColumnKindName(c.kind)}}));
  }
  view.Set("columns", Value(std::move(columns)));
  view.Set("schema_hash", status.view.schema_hash);
  Value::Array partitions;
  for (const lake::PartitionRecord& p : status.partitions) {
    partitions.push_back(PartitionJson(p, status.view.schema_hash));
  }
  view.Set("partition_list", Value(std::move(partitions)));
  return view;
}

std::string Text(const Value& v, std::string_view member) {
  const Value* m = v.Find(member);
  if (!m || m->is_null()) return "-";
  if (m->is_string()) return std::string(m->as_string());
  if (m->is_bool()) return m->as_bool() ? "yes" : "no";
  return m->ToJson();
}

int64_t Int(const Value& v, std::string_view member) { return v.GetInt(member).value_or(0); }

std::string TimeOrDash(const Value& v, std::string_view member) {
  auto ms = v.GetInt(member);
  return ms ? IsoTime(*ms) : "-";
}

}  // namespace

Status WriteQueryResult(lake::Lake& lake, std::string_view sql, QueryFormat format,
                        std::chrono::milliseconds timeout,
                        const std::function<void(std::string_view)>& write,
                        std::function<bool()> cancelled) {
  ResultWriter writer(format, write);
  lake::QueryOptions options;
  options.timeout = timeout;
  options.cancelled = std::move(cancelled);
  WEIR_RETURN_IF_ERROR(lake.Query(sql, options, writer.Sink()));
  writer.Finish();
  return Status::OK();
}

Result<Value> ViewsJson(lake::Lake& lake, std::string_view view) {
  if (!view.empty()) {
    WEIR_ASSIGN_OR_RETURN(lake::ViewStatus status, lake.Describe(view));
    Value json = DescriptionJson(status);
    // What a query sees: the view's own columns (its SQL's), as DuckDB types them.
    Value::Array columns;
    lake::QuerySink sink;
    sink.on_row = [&](std::span<const std::optional<std::string>> cells) {
      columns.push_back(
          Value::MakeObject({{"name", cells[0].value_or("")}, {"type", cells[1].value_or("")}}));
    };
    lake::QueryOptions options;
    options.update_first = false;
    Status described =
        lake.Query("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM \"" +
                       std::string(view) + "\")",
                   options, sink);
    json.Set("view_columns", described.ok() ? Value(std::move(columns)) : Value());
    return json;
  }
  Value::Array all;
  for (const lake::CatalogView& v : lake.Views()) {
    WEIR_ASSIGN_OR_RETURN(lake::ViewStatus status, lake.Describe(v.spec.name));
    all.push_back(SummaryJson(status));
  }
  return Value(std::move(all));
}

void PrintViewList(const Value& views) {
  std::printf("%-24s %-24s %10s %12s %14s %6s\n", "view", "topic", "partitions", "rows", "bytes",
              "stale");
  for (const Value& v : views.as_array()) {
    std::printf("%-24s %-24s %10lld %12lld %14lld %6lld\n", Text(v, "name").c_str(),
                Text(v, "topic").c_str(), static_cast<long long>(Int(v, "partitions")),
                static_cast<long long>(Int(v, "rows")), static_cast<long long>(Int(v, "bytes")),
                static_cast<long long>(Int(v, "stale")));
  }
}

void PrintViewDescription(const Value& view) {
  std::printf("view %s on topic %s: %lld partitions, %lld rows, %lld bytes, %lld stale\n",
              Text(view, "name").c_str(), Text(view, "topic").c_str(),
              static_cast<long long>(Int(view, "partitions")),
              static_cast<long long>(Int(view, "rows")), static_cast<long long>(Int(view, "bytes")),
              static_cast<long long>(Int(view, "stale")));
  std::printf("definition: %s\n", Text(view, "definition").c_str());
  std::printf("schema hash: %s\n", Text(view, "schema_hash").c_str());
  const Value* view_columns = view.Find("view_columns");
  if (view_columns && view_columns->is_array()) {
    std::printf("columns:\n");
    for (const Value& c : view_columns->as_array()) {
      std::printf("  %-30s %s\n", Text(c, "name").c_str(), Text(c, "type").c_str());
    }
  }
  const bool declared = view.FindPath("definition.columns") &&
                        view.FindPath("definition.columns")->is_object() &&
                        !view.FindPath("definition.columns")->as_object().empty();
  const Value& record_columns = *view.Find("columns");
  std::printf("record columns (%s):%s\n", declared ? "declared" : "inferred",
              record_columns.as_array().empty() ? " none yet (no record read)" : "");
  for (const Value& c : record_columns.as_array()) {
    std::printf("  %-30s %s\n", Text(c, "name").c_str(), Text(c, "type").c_str());
  }
  std::printf("%-9s %-21s %-28s %10s %-24s %-24s %-12s %-6s %10s %-6s %s\n", "partition", "offsets",
              "span", "rows", "event min", "event max", "sort", "sealed", "bytes", "schema",
              "file");
  for (const Value& p : view.Find("partition_list")->as_array()) {
    const std::string offsets =
        std::to_string(Int(p, "begin_offset")) + "-" + std::to_string(Int(p, "end_offset"));
    const std::string span =
        IsoTime(Int(p, "span_start_ms")).substr(0, 19) + "Z+" + ShortDuration(Int(p, "span_ms"));
    const std::string sort = Text(p, "sort_order").empty() ? "-" : Text(p, "sort_order");
    std::printf("%-9lld %-21s %-28s %10lld %-24s %-24s %-12s %-6s %10lld %-6s %s\n",
                static_cast<long long>(Int(p, "partition")), offsets.c_str(), span.c_str(),
                static_cast<long long>(Int(p, "rows")), TimeOrDash(p, "event_min_ms").c_str(),
                TimeOrDash(p, "event_max_ms").c_str(), sort.c_str(), Text(p, "sealed").c_str(),
                static_cast<long long>(Int(p, "bytes")),
                p.GetBool("stale").value_or(false) ? "stale" : "ok",
                Text(p, "file").empty() ? "(empty)" : Text(p, "file").c_str());
  }
}

}  // namespace weir::cli
