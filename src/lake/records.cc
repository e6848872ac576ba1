#include "lake/records.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/coding.h"
#include "core/parse.h"
#include "dataflow/json_records.h"

namespace weir::lake {
namespace {

using BatchType = sql::ColumnBatch::Type;

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

BatchType BatchTypeOf(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kBigInt:
      return BatchType::kBigInt;
    case ColumnKind::kDouble:
      return BatchType::kDouble;
    case ColumnKind::kVarchar:
      return BatchType::kVarchar;
    case ColumnKind::kBoolean:
      return BatchType::kBoolean;
    case ColumnKind::kTimestamp:
      return BatchType::kTimestampMs;
    case ColumnKind::kJson:
      return BatchType::kJson;
  }
  return BatchType::kJson;
}

constexpr size_t kMetaColumnCount = 4;  // _partition, _offset, _key, _ts

// What a JSON value would be as a column, for inference.
std::optional<ColumnKind> KindOf(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
      return ColumnKind::kBigInt;
    case simdjson::dom::element_type::DOUBLE:
      return ColumnKind::kDouble;
    case simdjson::dom::element_type::STRING:
      return ColumnKind::kVarchar;
    case simdjson::dom::element_type::BOOL:
      return ColumnKind::kBoolean;
    case simdjson::dom::element_type::NULL_VALUE:
      return std::nullopt;
    default:
      return ColumnKind::kJson;
  }
}

ColumnKind Widen(ColumnKind a, ColumnKind b) {
  if (a == b) return a;
  const auto numeric = [](ColumnKind k) {
    return k == ColumnKind::kBigInt || k == ColumnKind::kDouble;
  };
  if (numeric(a) && numeric(b)) return ColumnKind::kDouble;
  return ColumnKind::kJson;
}

}  // namespace

void SourceHash::Add(const log::StoredRecord& record) {
  std::string ts;
  coding::PutFixed64(ts, static_cast<uint64_t>(record.timestamp.value()));
  uint32_t crc = log::Crc32c(0, ts);
  crc = log::Crc32c(crc, record.key);
  crc = log::Crc32c(crc, record.value);
  sum_ += Mix((static_cast<uint64_t>(record.offset.value()) << 32) ^ crc ^
              (static_cast<uint64_t>(record.offset.value()) >> 32));
}

std::string SourceHash::ToString() const {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(sum_));
  return out;
}

std::optional<SourceHash> SourceHash::FromString(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  SourceHash h;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    h.sum_ = h.sum_ << 4 | static_cast<uint64_t>(digit);
  }
  return h;
}

std::vector<std::pair<std::string, BatchType>> RecordBatchColumns(
    const std::vector<ViewColumn>& columns) {
  std::vector<std::pair<std::string, BatchType>> out = {{"_partition", BatchType::kBigInt},
                                                        {"_offset", BatchType::kBigInt},
                                                        {"_key", BatchType::kVarchar},
                                                        {"_ts", BatchType::kTimestampMs}};
  for (const ViewColumn& c : columns)
    out.emplace_back(RecordColumnName(c.name), BatchTypeOf(c.kind));
  return out;
}

std::optional<std::string> KeyText(const log::StoredRecord& record) {
  switch (record.key_serde) {
    case KeySerde::kNull:
      return std::nullopt;
    case KeySerde::kInt:
      if (record.key.size() == 8) {
        return std::to_string(static_cast<int64_t>(coding::DecodeBigEndian64(record.key.data())));
      }
      return dataflow::Base64(record.key);
    case KeySerde::kBytes:
      return dataflow::Base64(record.key);
    case KeySerde::kString:
    case KeySerde::kJson:
      if (dataflow::IsValidUtf8(record.key)) return std::string(record.key);
      return dataflow::Base64(record.key);
  }
  return std::nullopt;
}

std::vector<ViewColumn> InferColumns(std::span<const log::StoredRecord> records) {
  simdjson::dom::parser parser;
  std::vector<ViewColumn> columns;
  std::vector<bool> typed;  // whether a non-null value fixed the column's kind
  std::string value_json;
  for (const log::StoredRecord& record : records) {
    const std::string_view value = log::StoredValueJson(record.value, value_json);
    simdjson::dom::element root;
    if (parser.parse(value.data(), value.size()).get(root) != simdjson::SUCCESS ||
        !root.is_object()) {
      continue;
    }
    simdjson::dom::object object = root.get_object().value_unsafe();
    for (simdjson::dom::key_value_pair field : object) {
      auto it = std::find_if(columns.begin(), columns.end(),
                             [&](const ViewColumn& c) { return c.name == field.key; });
      if (it == columns.end()) {
        columns.push_back({.name = std::string(field.key), .kind = ColumnKind::kJson});
        typed.push_back(false);
        it = columns.end() - 1;
      }
      const size_t i = static_cast<size_t>(it - columns.begin());
      std::optional<ColumnKind> kind = KindOf(field.value);
      if (!kind) continue;
      it->kind = typed[i] ? Widen(it->kind, *kind) : *kind;
      typed[i] = true;
    }
  }
  return columns;
}

// One row's values, checked before any is appended.
struct RecordColumns::Parser {
  simdjson::dom::parser dom;
  sql::ColumnBatch batch;
  struct Slot {
    simdjson::dom::element value;
    bool present = false;
  };
  std::vector<Slot> slots;
  std::string json_text;   // a json column's minified text
  std::string value_json;  // a value stored in the binary form, as JSON (log::StoredValueJson)
};

RecordColumns::RecordColumns() : parser_(std::make_unique<Parser>()) {}
RecordColumns::~RecordColumns() = default;

std::vector<std::pair<std::string, BatchType>> ArchiveBatchColumns() {
  std::vector<std::pair<std::string, BatchType>> out = RecordBatchColumns({});
  out.emplace_back("_value", BatchType::kBlob);
  return out;
}

void RecordColumns::ResetArchive() {
  columns_.clear();
  archive_ = true;
  parser_->batch.Reset(ArchiveBatchColumns());
  parser_->slots.clear();
  Clear();
}

void RecordColumns::Reset(const std::vector<ViewColumn>& columns) {
  columns_ = columns;
  archive_ = false;
  parser_->batch.Reset(RecordBatchColumns(columns));
  parser_->slots.assign(columns.size(), {});
  Clear();
}

void RecordColumns::Clear() {
  parser_->batch.Clear();
  event_min_.reset();
  event_max_.reset();
}

const sql::ColumnBatch& RecordColumns::batch() const { return parser_->batch; }
void RecordColumns::AppendMeta(const log::StoredRecord& record, int32_t topic_partition) {
  sql::ColumnBatch& b = parser_->batch;
  b.AppendInt(0, topic_partition);
  b.AppendInt(1, record.offset.value());
  if (record.key_serde == KeySerde::kString && dataflow::IsValidUtf8(record.key)) {
    b.AppendText(2, record.key);
  } else if (std::optional<std::string> key = KeyText(record)) {
    b.AppendText(2, *key);
  } else {
    b.AppendNull(2);
  }
  const int64_t ts = record.timestamp.value();
  b.AppendInt(3, ts);
  event_min_ = std::min(event_min_.value_or(ts), ts);
  event_max_ = std::max(event_max_.value_or(ts), ts);
}

size_t RecordColumns::rows() const { return parser_->batch.rows(); }

Status RecordColumns::Add(const log::StoredRecord& record, int32_t topic_partition) {
  Parser& p = *parser_;
  simdjson::dom::element root;
  if (archive_) {  // the bytes as the log holds them, whatever their form (the server shows them)
    AppendMeta(record, topic_partition);
    p.batch.AppendBytes(kMetaColumnCount, record.value);
    return Status::OK();
  }
  const std::string_view value = log::StoredValueJson(record.value, p.value_json);
  if (auto error = p.dom.parse(value.data(), value.size()).get(root); error != simdjson::SUCCESS) {
    return Status::InvalidArgument(std::string("value is not valid JSON: ") +
                                   simdjson::error_message(error));
  }
  if (!root.is_object()) return Status::InvalidArgument("value is not a JSON object");
  for (auto& slot : p.slots) slot.present = false;
  simdjson::dom::object object = root.get_object().value_unsafe();
  for (simdjson::dom::key_value_pair field : object) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].name != field.key) continue;
      const simdjson::dom::element& v = field.value;
      bool fits = true;
      if (!v.is_null()) {
        switch (columns_[i].kind) {
          case ColumnKind::kBigInt:
          case ColumnKind::kTimestamp:
            fits = v.is_int64();
            break;
          case ColumnKind::kDouble:
            fits = v.is_number();
            break;
          case ColumnKind::kVarchar:
            fits = v.is_string();
            break;
          case ColumnKind::kBoolean:
            fits = v.is_bool();
            break;
          case ColumnKind::kJson:
            break;
        }
      }
      if (!fits) {
        return Status::InvalidArgument("field '" + columns_[i].name +
                                       "' does not fit column type " +
                                       std::string(ColumnKindName(columns_[i].kind)) + ": " +
                                       simdjson::to_string(v).substr(0, 100));
      }
      p.slots[i] = {v, !v.is_null()};
      break;
    }
  }
  sql::ColumnBatch& b = p.batch;
  AppendMeta(record, topic_partition);
  for (size_t i = 0; i < columns_.size(); ++i) {
    const size_t column = kMetaColumnCount + i;
    if (!p.slots[i].present) {
      b.AppendNull(column);
      continue;
    }
    const simdjson::dom::element& v = p.slots[i].value;
    switch (columns_[i].kind) {
      case ColumnKind::kBigInt:
      case ColumnKind::kTimestamp:
        b.AppendInt(column, v.get_int64().value_unsafe());
        break;
      case ColumnKind::kDouble:
        b.AppendDouble(column, v.get_double().value_unsafe());
        break;
      case ColumnKind::kVarchar:
        b.AppendText(column, v.get_string().value_unsafe());
        break;
      case ColumnKind::kBoolean:
        b.AppendBool(column, v.get_bool().value_unsafe());
        break;
      case ColumnKind::kJson:
        p.json_text = simdjson::to_string(v);
        b.AppendText(column, p.json_text);
        break;
    }
  }
  return Status::OK();
}

}  // namespace weir::lake
