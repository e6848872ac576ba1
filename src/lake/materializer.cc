#include "lake/materializer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <system_error>

#include "dataflow/json_records.h"
#include "lake/records.h"
#include "lake/sql_text.h"
#include "log/record_format.h"
#include "sql/database.h"

namespace weir::lake {
namespace {

constexpr size_t kInferRecords = 1000;

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SpanStart(int64_t append_ms, int64_t span_ms) {
  int64_t start = append_ms / span_ms * span_ms;
  if (start > append_ms) start -= span_ms;  // negative times round down too
  return start;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(separator)) + p;
  return out;
}

std::string OrderBy(const ViewSpec& spec) {
  if (spec.sort.empty()) return "";
  std::vector<std::string> quoted;
  for (const std::string& s : spec.sort) quoted.push_back(SqlIdentifier(s));
  return " ORDER BY " + Join(quoted, ", ");
}

std::string ParquetList(const std::filesystem::path& dir, const std::vector<std::string>& files) {
  std::string out = "[";
  for (size_t i = 0; i < files.size(); ++i) {
    out += (i ? ", " : "") + SqlString((dir / files[i]).string());
  }
  return out + "]";
}

}  // namespace

struct Materializer::State {
  Catalog& catalog;
  log::LogStore& log;
  std::filesystem::path lake_dir;
  MaterializeOptions options;
  std::unique_ptr<sql::Database> db;
  RecordColumns columns;
  MaterializeFigures* figures = nullptr;
  MaterializeFigures ignored;
  // The dead-letter partition and the end of the last dead letter sent to it: they must be
  // durable before a commit makes their records' range materialized (a range is never read
  // again for dead letters once committed).
  log::Partition* dead_letters = nullptr;
  int64_t dead_letters_end = 0;

  State(Catalog& c, log::LogStore& l, std::filesystem::path dir, MaterializeOptions o)
      : catalog(c), log(l), lake_dir(std::move(dir)), options(std::move(o)) {}

  MaterializeFigures& Figures() { return figures ? *figures : ignored; }

  // A file name for a new partition (relative to the lake directory), its folder created.
  Result<std::string> NewFile(const CatalogView& view, int32_t tp, int64_t instance) {
    const std::string relative =
        view.spec.name + "/" + std::to_string(tp) + "/" + std::to_string(instance) + ".parquet";
    std::error_code ec;
    std::filesystem::create_directories((lake_dir / relative).parent_path(), ec);
    if (ec)
      return Status::IOError("creating " + (lake_dir / relative).parent_path().string() + ": " +
                             ec.message());
    return relative;
  }

  void Remove(const std::string& relative) {
    std::error_code ec;
    std::filesystem::remove(lake_dir / relative, ec);
  }

  // Runs `COPY (select) TO file` and fills the partition's file, rows, bytes, sort figures. A
  // COPY that wrote no row leaves no file.
  Status CopyToFile(const CatalogView& view, const std::string& select, PartitionRecord& p) {
    const std::filesystem::path path = lake_dir / p.file;
    int64_t rows = -1;
    // zstd level 1 and Parquet's V2 encodings (delta for integers and timestamps, delta lengths
    // for strings): of the options tried, the fastest to write that kept files as small as the
    // default level 3's or smaller (BENCHMARKS.md, "Lake").
    Status s = db->Query("COPY (" + select + ") TO " + SqlString(path.string()) +
                             " (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, "
                             "PARQUET_VERSION V2)",
                         [&](const sql::Row& row) { rows = row.Int(0); });
    if (!s.ok()) {
      Remove(p.file);
      return s.WithContext("lake view '" + view.spec.name + "': writing " + path.string());
    }
    p.rows = rows;
    if (rows == 0) {
      Remove(p.file);
      p.file.clear();
      return Status::OK();
    }
    std::error_code ec;
    p.bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
    if (ec) return Status::IOError("lake: " + path.string() + ": " + ec.message());
    Figures().bytes += p.bytes;
    p.sort_order = Join(view.spec.sort, ",");
    if (!view.spec.sort.empty()) {
      // The first sort column's range, when it is a number or a timestamp and never NULL: what
      // a concatenated scan order is certified with.
      const std::string c = SqlIdentifier(view.spec.sort[0]);
      WEIR_RETURN_IF_ERROR(db->Query(
          "SELECT " + SortKeyNumber("min(" + c + ")") + ", " + SortKeyNumber("max(" + c + ")") +
              ", any_value(typeof(" + c + ")), count(*) - count(" + c + ") FROM read_parquet(" +
              SqlString(path.string()) + ")",
          [&](const sql::Row& row) {
            const std::string_view type = row.IsNull(2) ? "" : row.Text(2);
            if (row.Int(3) != 0) return;  // NULLs sort apart: no range to certify
            const bool ordered_number = type.starts_with("TIMESTAMP") || type == "BIGINT" ||
                                        type == "INTEGER" || type == "DOUBLE" || type == "FLOAT" ||
                                        type == "SMALLINT" || type == "TINYINT" || type == "DATE";
            if (ordered_number && !row.IsNull(0) && !row.IsNull(1)) {
              p.sort_min = row.Double(0);
              p.sort_max = row.Double(1);
            }
          }));
    }
    return Status::OK();
  }

  // Writes the records in `columns` as the file of `p` through the view's SQL.
  Status WriteBatch(const CatalogView& view, PartitionRecord& p) {
    std::string select = "WITH records AS (SELECT * FROM weir_records()) SELECT * FROM ";
    select += view.spec.sql.empty() ? "records" : "(" + view.spec.sql + ")";
    select += OrderBy(view.spec);
    return CopyToFile(view, select, p);
  }

  // Sends a record that does not fit the view to the view's dead-letter topic.
  Status DeadLetter(const CatalogView& view, int32_t tp, const log::StoredRecord& record,
                    const Status& reason) {
    Figures().dead_letters++;
    WEIR_ASSIGN_OR_RETURN(log::Topic * topic,
                          log.GetOrCreateTopic("lake." + view.spec.name + ".dlq", {}));
    Value position = Value::MakeObject({{"topic", Value(view.spec.topic)},
                                        {"partition", Value(tp)},
                                        {"offset", Value(record.offset.value())}});
    log::RecordBatchBuilder builder;
    builder.Add(record.timestamp, Key(),
                dataflow::MakeDeadLetterValue(
                    "lake view '" + view.spec.name + "': " + std::string(reason.message()),
                    "topic " + view.spec.topic, std::move(position), record.value));
    log::Partition& partition = topic->partition(PartitionId(0));
    WEIR_ASSIGN_OR_RETURN(Offset at, partition.Append(builder));
    dead_letters = &partition;
    dead_letters_end = at.value() + 1;
    return Status::OK();
  }

  // What is wrong with a partition's file, by the catalog: "is missing", or "has N bytes where
  // the catalog says M" (truncated, replaced); "" when nothing shows without reading it.
  std::string FileProblem(const PartitionRecord& p) const {
    if (p.file.empty()) return "";
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(lake_dir / p.file, ec);
    if (ec == std::errc::no_such_file_or_directory) return "is missing";
    if (ec) return "cannot be read (" + ec.message() + ")";
    if (static_cast<int64_t>(size) == p.bytes) return "";
    return "has " + std::to_string(size) + " bytes where the catalog says " +
           std::to_string(p.bytes);
  }

  // Writes `p`'s range again from the log, as the view's schema has it, retiring `p` in the same
  // commit. `problem`: what is wrong with its file ("" for a stale partition), for the error if
  // the log no longer holds the range. Under a new schema a record may not fit where it did:
  // dead-lettered (again, with the new reason, if it did not fit the old one either); a damaged
  // partition of the view's schema sent its dead letters when it was first written.
  Status Rewrite(const CatalogView& view, log::Partition& partition, const PartitionRecord& p,
                 std::string_view problem) {
    const int64_t first = partition.FirstOffset().value();
    if (p.begin_offset < first || p.end_offset > partition.NextOffset().value()) {
      const std::string range = "offsets [" + std::to_string(p.begin_offset) + ", " +
                                std::to_string(p.end_offset) + ") of topic " + view.spec.topic +
                                " partition " + std::to_string(p.topic_partition);
      const std::string partition_name = "partition " + std::to_string(p.instance);
      if (problem.empty()) {
        return Status::FailedPrecondition(
            "lake view '" + view.spec.name + "': " + partition_name + " covers " + range +
            ", which the log no longer holds (first offset " + std::to_string(first) + ")");
      }
      return Status::Corruption("lake view '" + view.spec.name + "': the file " +
                                (lake_dir / p.file).string() + " of " + partition_name + " " +
                                std::string(problem) + ", and the log no longer holds its " +
                                range + " to write it again");
    }
    WEIR_ASSIGN_OR_RETURN(PartitionRecord rebuilt,
                          WriteRange(view, partition, p.begin_offset, p.end_offset, p.span_start_ms,
                                     p.span_ms, p.sealed, p.schema_hash != view.schema_hash));
    return CommitNew(view, rebuilt, {p.instance});
  }

  // Merges `inputs` (contiguous, same schema hash) into one partition of the given span.
  Result<PartitionRecord> MergeInputs(const CatalogView& view,
                                      const std::vector<PartitionRecord>& inputs,
                                      int64_t span_start, int64_t span_ms, bool sealed) {
    const PartitionRecord& first = inputs.front();
    PartitionRecord merged = first;
    merged.instance = catalog.NextInstance();
    merged.span_start_ms = span_start;
    merged.span_ms = span_ms;
    merged.sealed = sealed;
    merged.rows = 0;
    merged.bytes = 0;
    merged.sort_min.reset();
    merged.sort_max.reset();
    merged.sort_order.clear();
    SourceHash hash;
    int64_t rows = 0;
    std::vector<std::string> files;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const PartitionRecord& p = inputs[i];
      if (p.schema_hash != view.schema_hash) {
        return Status::FailedPrecondition("lake view '" + view.spec.name + "': partition " +
                                          std::to_string(p.instance) +
                                          " has another schema hash; rebuild it before merging");
      }
      if (i > 0 && inputs[i - 1].end_offset != p.begin_offset) {
        return Status::FailedPrecondition("lake view '" + view.spec.name + "': partitions " +
                                          std::to_string(inputs[i - 1].instance) + " and " +
                                          std::to_string(p.instance) +
                                          " are not contiguous; not merged");
      }
      std::optional<SourceHash> h = SourceHash::FromString(p.source_hash);
      if (!h) return Status::Corruption("lake catalog: bad source hash " + p.source_hash);
      hash.Add(*h);
      rows += p.rows;
      if (!p.file.empty()) files.push_back(p.file);
      merged.end_offset = p.end_offset;
      merged.append_max_ms = std::max(merged.append_max_ms, p.append_max_ms);
      merged.append_min_ms = std::min(merged.append_min_ms, p.append_min_ms);
      if (i > 0) merged.source_records += p.source_records;
      if (p.event_min_ms)
        merged.event_min_ms =
            std::min(merged.event_min_ms.value_or(*p.event_min_ms), *p.event_min_ms);
      if (p.event_max_ms)
        merged.event_max_ms =
            std::max(merged.event_max_ms.value_or(*p.event_max_ms), *p.event_max_ms);
    }
    merged.source_hash = hash.ToString();
    if (files.empty()) {
      merged.file.clear();
      return merged;
    }
    WEIR_ASSIGN_OR_RETURN(merged.file, NewFile(view, merged.topic_partition, merged.instance));
    WEIR_RETURN_IF_ERROR(CopyToFile(
        view,
        "SELECT * FROM read_parquet(" + ParquetList(lake_dir, files) + ")" + OrderBy(view.spec),
        merged));
    if (merged.rows != rows) {
      Remove(merged.file);
      return Status::Corruption("lake view '" + view.spec.name + "': a merge wrote " +
                                std::to_string(merged.rows) + " rows where its inputs hold " +
                                std::to_string(rows) + "; not committed");
    }
    Figures().rows += merged.rows;
    return merged;
  }

  // A range of a topic partition being written: the records read so far, and what they sum to.
  struct RangeRead {
    const CatalogView& view;
    int32_t tp;
    log::PartitionReader reader;
    int64_t end;
    bool dead_letter;
    SourceHash hash;
    int64_t records = 0;
    int64_t append_min = INT64_MAX;
    int64_t append_max = INT64_MIN;
    std::optional<int64_t> event_min, event_max;
    Status error;  // what stopped a refill (the COPY fails with its message)
  };
  std::optional<RangeRead> range;  // while WriteRange runs

  // Folds `columns`' event times into the range's, and empties them.
  void ClearColumns() {
    if (auto t = columns.event_min_ms())
      range->event_min = std::min(range->event_min.value_or(*t), *t);
    if (auto t = columns.event_max_ms())
      range->event_max = std::max(range->event_max.value_or(*t), *t);
    columns.Clear();
  }

  // Fills `columns` with the range's next records, up to max_batch_records (what the batch scan
  // `weir_records` reads, refilled by DuckDB as the COPY goes), sending those that do not fit to
  // the dead letters if the range asks for it.
  Status FillColumns() {
    RangeRead& r = *range;
    const int32_t tp = r.tp;
    while (columns.rows() < options.max_batch_records && r.reader.position().value() < r.end) {
      const int64_t wanted =
          std::min<int64_t>({4096, r.end - r.reader.position().value(),
                             static_cast<int64_t>(options.max_batch_records - columns.rows())});
      Result<std::span<const log::StoredRecord>> batch = r.reader.Next(static_cast<size_t>(wanted));
      if (!batch.ok()) {
        return batch.status().WithContext("lake view '" + r.view.spec.name + "': reading topic " +
                                          r.view.spec.topic);
      }
      if (batch->empty()) {
        return Status::FailedPrecondition(
            "lake view '" + r.view.spec.name + "': topic " + r.view.spec.topic + " partition " +
            std::to_string(tp) + " ends at " + std::to_string(r.reader.position().value()) +
            " before " + std::to_string(r.end));
      }
      for (const log::StoredRecord& record : *batch) {
        if (record.offset.value() >= r.end) break;
        r.hash.Add(record);
        ++r.records;
        r.append_min = std::min(r.append_min, record.append_time_ms);
        r.append_max = std::max(r.append_max, record.append_time_ms);
        if (Status fit = columns.Add(record, tp); !fit.ok() && r.dead_letter) {
          WEIR_RETURN_IF_ERROR(DeadLetter(r.view, tp, record, fit));
        }
      }
    }
    return Status::OK();
  }

  // The batch scan's refill: the range's next records, or none once it is read.
  Status Refill() {
    if (!range) {
      columns.Clear();
      return Status::OK();
    }
    ClearColumns();
    Status s = FillColumns();
    if (!s.ok()) range->error = s;
    return s;
  }

  // Reads [begin, end) of a topic partition and writes it as one partition, in one COPY that
  // reads the records through the batch scan, refilled max_batch_records at a time (so memory
  // holds one batch, not the range). `dead_letter`: send records that do not fit (a first
  // materialization, or a rebuild for a new schema).
  Result<PartitionRecord> WriteRange(const CatalogView& view, log::Partition& partition,
                                     int64_t begin, int64_t end, int64_t span_start,
                                     int64_t span_ms, bool sealed, bool dead_letter) {
    const int32_t tp = partition.id().value();
    PartitionRecord p{.view = view.spec.name,
                      .schema_hash = view.schema_hash,
                      .topic_partition = tp,
                      .begin_offset = begin,
                      .end_offset = end,
                      .span_start_ms = span_start,
                      .span_ms = span_ms,
                      .sealed = sealed};
    if (view.spec.archive) {
      columns.ResetArchive();
    } else {
      columns.Reset(view.columns);
    }
    range.emplace(RangeRead{.view = view,
                            .tp = tp,
                            .reader = log::PartitionReader(partition, Offset(begin)),
                            .end = end,
                            .dead_letter = dead_letter});
    struct EndRange {
      std::optional<RangeRead>& range;
      ~EndRange() { range.reset(); }
    } end_range{range};
    WEIR_RETURN_IF_ERROR(FillColumns());  // the first batch, which the COPY binds
    p.instance = catalog.NextInstance();
    WEIR_ASSIGN_OR_RETURN(p.file, NewFile(view, tp, p.instance));
    if (Status s = WriteBatch(view, p); !s.ok()) {
      return range->error.ok() ? s : range->error;  // a refill's own error, with its code
    }
    // A view's SQL may stop reading early (a LIMIT): the rest still counts for the source hash
    // and the dead letters.
    while (range->reader.position().value() < end) {
      ClearColumns();
      WEIR_RETURN_IF_ERROR(FillColumns());
    }
    ClearColumns();
    RangeRead& r = *range;
    Figures().records += r.records;
    Figures().rows += p.rows;
    p.source_records = r.records;
    p.source_hash = r.hash.ToString();
    p.append_min_ms = r.records > 0 ? r.append_min : 0;
    p.append_max_ms = r.records > 0 ? r.append_max : 0;
    p.event_min_ms = r.event_min;
    p.event_max_ms = r.event_max;
    return p;
  }

  Status CommitNew(const CatalogView& view, const PartitionRecord& p,
                   const std::vector<int64_t>& retired) {
    Status s = Status::OK();
    if (dead_letters != nullptr) {
      s = dead_letters->WaitDurable(Offset(dead_letters_end))
              .WithContext("lake view '" + view.spec.name + "': its dead letters");
      if (s.ok()) dead_letters = nullptr;
    }
    if (s.ok()) s = catalog.Commit(view.spec.name, {p}, retired, SystemNowMs());
    if (!s.ok()) {
      if (!p.file.empty()) Remove(p.file);
      return s;
    }
    Figures().partitions++;
    return s;
  }

  // Merges the view's open pieces of `span_start` in topic partition `tp` into one sealed
  // partition.
  Status SealSpan(const CatalogView& view, int32_t tp, int64_t span_start) {
    std::vector<PartitionRecord> pieces;
    for (PartitionRecord& p : catalog.LivePartitions(view.spec.name)) {
      if (p.topic_partition == tp && !p.sealed && p.span_start_ms == span_start &&
          p.schema_hash == view.schema_hash) {
        pieces.push_back(std::move(p));
      }
    }
    if (pieces.empty()) return Status::OK();
    const int64_t span_ms = view.spec.partition.count();
    WEIR_ASSIGN_OR_RETURN(PartitionRecord sealed,
                          MergeInputs(view, pieces, span_start, span_ms, /*sealed=*/true));
    std::vector<int64_t> retired;
    for (const PartitionRecord& p : pieces) retired.push_back(p.instance);
    return CommitNew(view, sealed, retired);
  }

  // Infers and records the view's columns from the first records of its topic; false if the
  // topic has no record yet.
  Result<bool> InferColumns(CatalogView& view, log::Topic& topic) {
    std::vector<log::StoredRecord> sample;
    std::vector<std::unique_ptr<log::PartitionReader>> readers;
    for (int32_t tp = 0; tp < topic.num_partitions() && sample.size() < kInferRecords; ++tp) {
      log::Partition& partition = topic.partition(PartitionId(tp));
      readers.push_back(std::make_unique<log::PartitionReader>(partition, partition.FirstOffset()));
      WEIR_ASSIGN_OR_RETURN(auto batch, readers.back()->Next(kInferRecords - sample.size()));
      sample.insert(sample.end(), batch.begin(), batch.end());
    }
    if (sample.empty()) return false;
    view.columns = lake::InferColumns(sample);
    view.schema_hash = SchemaHash(view.spec, view.columns);
    WEIR_RETURN_IF_ERROR(catalog.PutView(view));
    return true;
  }

  Status UpdatePartition(const CatalogView& view, log::Partition& partition, bool open_too) {
    const int32_t tp = partition.id().value();
    const int64_t span_ms = view.spec.partition.count();
    const int64_t now = options.now_ms();
    std::vector<PartitionRecord> live;
    for (PartitionRecord& p : catalog.LivePartitions(view.spec.name)) {
      if (p.topic_partition == tp) live.push_back(std::move(p));
    }
    const int64_t first = partition.FirstOffset().value();
    const int64_t visible = partition.NextOffset().value();
    // Stale partitions, rebuilt while the log holds them (a stale one it no longer holds stays);
    // damaged ones, rebuilt or reported.
    for (const PartitionRecord& p : live) {
      const bool stale = p.schema_hash != view.schema_hash;
      const std::string problem = FileProblem(p);
      if (!stale && problem.empty()) continue;
      if (!problem.empty() || (p.begin_offset >= first && p.end_offset <= visible)) {
        WEIR_RETURN_IF_ERROR(Rewrite(view, partition, p, problem));
      }
    }
    int64_t next = first;
    int64_t append_floor = INT64_MIN;
    for (const PartitionRecord& p : live) {
      next = std::max(next, p.end_offset);
      append_floor = std::max(append_floor, p.append_max_ms);
    }
    if (!live.empty() && live.back().end_offset < first) {
      Figures().skipped += first - live.back().end_offset;
    }
    // The spans of the records after `next`: found from the batches' append times.
    struct Range {
      int64_t begin, end, span_start;
    };
    std::vector<Range> ranges;
    log::PartitionReader reader(partition, Offset(next));
    int64_t running = append_floor;
    while (reader.position().value() < visible) {
      WEIR_ASSIGN_OR_RETURN(auto batch, reader.Next(4096));
      if (batch.empty()) break;
      for (const log::StoredRecord& r : batch) {
        running = std::max(running, r.append_time_ms);
        const int64_t span = SpanStart(running, span_ms);
        if (ranges.empty() || ranges.back().span_start != span) {
          ranges.push_back({r.offset.value(), r.offset.value() + 1, span});
        } else {
          ranges.back().end = r.offset.value() + 1;
        }
      }
    }
    const int64_t closed_before = now - options.seal_grace.count();
    auto is_closed = [&](int64_t span_start) { return span_start + span_ms <= closed_before; };
    // Open pieces of spans that closed since they were written (the first range may add to
    // the last of them).
    for (const PartitionRecord& p : live) {
      if (p.sealed || p.schema_hash != view.schema_hash) continue;
      const bool more_of_it = !ranges.empty() && ranges.front().span_start == p.span_start_ms;
      const bool later_exists = !ranges.empty() && ranges.back().span_start > p.span_start_ms;
      if (!more_of_it && (is_closed(p.span_start_ms) || later_exists)) {
        WEIR_RETURN_IF_ERROR(SealSpan(view, tp, p.span_start_ms));
      }
    }
    for (size_t i = 0; i < ranges.size(); ++i) {
      const Range& r = ranges[i];
      const bool closed = i + 1 < ranges.size() || is_closed(r.span_start);
      if (!closed && !open_too) break;
      const bool has_pieces = std::any_of(live.begin(), live.end(), [&](const PartitionRecord& p) {
        return !p.sealed && p.span_start_ms == r.span_start;
      });
      WEIR_ASSIGN_OR_RETURN(PartitionRecord p,
                            WriteRange(view, partition, r.begin, r.end, r.span_start, span_ms,
                                       closed && !has_pieces, true));
      WEIR_RETURN_IF_ERROR(CommitNew(view, p, {}));
      if (closed && has_pieces) WEIR_RETURN_IF_ERROR(SealSpan(view, tp, r.span_start));
    }
    return Status::OK();
  }
};

Result<std::unique_ptr<Materializer>> Materializer::Create(Catalog& catalog, log::LogStore& log,
                                                           std::filesystem::path lake_dir,
                                                           MaterializeOptions options) {
  if (!options.now_ms) options.now_ms = SystemNowMs;
  auto state = std::make_unique<State>(catalog, log, std::move(lake_dir), std::move(options));
  WEIR_ASSIGN_OR_RETURN(state->db, sql::Database::OpenInMemory(1));
  State* filled = state.get();
  WEIR_RETURN_IF_ERROR(state->db->RegisterBatchScan("weir_records", &state->columns.batch(),
                                                    [filled] { return filled->Refill(); }));
  return std::unique_ptr<Materializer>(new Materializer(std::move(state)));
}

Materializer::Materializer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Materializer::~Materializer() = default;

namespace {
Result<CatalogView> FindView(const Catalog& catalog, std::string_view name) {
  std::optional<CatalogView> view = catalog.GetView(name);
  if (!view) return Status::NotFound("no lake view named '" + std::string(name) + "'");
  return *view;
}
}  // namespace

Status Materializer::Update(std::string_view name, bool open_too, MaterializeFigures* figures) {
  state_->figures = figures;
  WEIR_ASSIGN_OR_RETURN(CatalogView view, FindView(state_->catalog, name));
  Result<log::Topic*> topic = state_->log.GetTopic(view.spec.topic);
  if (!topic.ok()) return Status::OK();  // nothing to materialize until the topic exists
  if (view.columns.empty() && !view.spec.archive) {
    WEIR_ASSIGN_OR_RETURN(bool inferred, state_->InferColumns(view, **topic));
    if (!inferred) return Status::OK();
  }
  for (int32_t tp = 0; tp < (*topic)->num_partitions(); ++tp) {
    WEIR_RETURN_IF_ERROR(
        state_->UpdatePartition(view, (*topic)->partition(PartitionId(tp)), open_too));
  }
  return Status::OK();
}

Status Materializer::Rebuild(std::string_view name, MaterializeFigures* figures) {
  state_->figures = figures;
  WEIR_ASSIGN_OR_RETURN(CatalogView view, FindView(state_->catalog, name));
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, state_->log.GetTopic(view.spec.topic));
  if (view.columns.empty() && !view.spec.archive) {
    // A new SQL dropped the inferred columns: infer them again, as Update does, or the ranges
    // would be written without the fields.
    WEIR_RETURN_IF_ERROR(state_->InferColumns(view, *topic).status());
  }
  for (const PartitionRecord& p : state_->catalog.LivePartitions(name)) {
    if (p.topic_partition >= topic->num_partitions()) {
      return Status::FailedPrecondition("lake view '" + view.spec.name + "': topic " +
                                        view.spec.topic + " has no partition " +
                                        std::to_string(p.topic_partition) + " any more");
    }
    log::Partition& partition = topic->partition(PartitionId(p.topic_partition));
    WEIR_RETURN_IF_ERROR(state_->Rewrite(view, partition, p, ""));
  }
  return Status::OK();
}

Status Materializer::Repair(std::string_view name, int64_t instance, std::string_view problem,
                            MaterializeFigures* figures) {
  state_->figures = figures;
  WEIR_ASSIGN_OR_RETURN(CatalogView view, FindView(state_->catalog, name));
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, state_->log.GetTopic(view.spec.topic));
  for (const PartitionRecord& p : state_->catalog.LivePartitions(name)) {
    if (p.instance != instance) continue;
    if (p.topic_partition >= topic->num_partitions()) break;
    return state_->Rewrite(view, topic->partition(PartitionId(p.topic_partition)), p, problem);
  }
  return Status::NotFound("lake view '" + view.spec.name + "' has no live partition " +
                          std::to_string(instance) + " on its topic's partitions");
}

Status Materializer::Merge(std::string_view name, std::chrono::milliseconds span,
                           MaterializeFigures* figures, bool closed_only) {
  state_->figures = figures;
  WEIR_ASSIGN_OR_RETURN(CatalogView view, FindView(state_->catalog, name));
  if (span.count() <= 0) return Status::InvalidArgument("a merge span must be positive");
  const std::vector<PartitionRecord> live = state_->catalog.LivePartitions(name);
  // Per topic partition, the start of the latest span a live partition is in.
  std::map<int32_t, int64_t> latest_span;
  for (const PartitionRecord& p : live) {
    int64_t& latest = latest_span.try_emplace(p.topic_partition, INT64_MIN).first->second;
    latest = std::max(latest, SpanStart(p.span_start_ms, span.count()));
  }
  std::vector<PartitionRecord> group;
  auto flush = [&]() -> Status {
    const bool closed = !group.empty() && SpanStart(group[0].span_start_ms, span.count()) <
                                              latest_span[group[0].topic_partition];
    if (group.size() >= 2 && (closed || !closed_only)) {
      WEIR_ASSIGN_OR_RETURN(
          PartitionRecord merged,
          state_->MergeInputs(view, group, SpanStart(group[0].span_start_ms, span.count()),
                              span.count(), true));
      std::vector<int64_t> retired;
      for (const PartitionRecord& p : group) retired.push_back(p.instance);
      WEIR_RETURN_IF_ERROR(state_->CommitNew(view, merged, retired));
    }
    group.clear();
    return Status::OK();
  };
  for (const PartitionRecord& p : live) {
    if (!p.sealed || p.schema_hash != view.schema_hash) {
      WEIR_RETURN_IF_ERROR(flush());
      continue;
    }
    if (!group.empty() && (group[0].topic_partition != p.topic_partition ||
                           SpanStart(group[0].span_start_ms, span.count()) !=
                               SpanStart(p.span_start_ms, span.count()) ||
                           group.back().end_offset != p.begin_offset)) {
      WEIR_RETURN_IF_ERROR(flush());
    }
    group.push_back(p);
  }
  return flush();
}

}  // namespace weir::lake
