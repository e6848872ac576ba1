#include "dataflow/json_records.h"

#include "log/record_format.h"
#include "simdjson.h"

namespace weir::dataflow {

Result<EventTime> ExtractTimestamp(const Value& value, std::string_view field) {
  const Value* ts = value.FindPath(field);
  if (ts == nullptr) {
    return Status::InvalidArgument("timestamp field '" + std::string(field) + "' is missing");
  }
  if (!ts->is_int()) {
    return Status::InvalidArgument("timestamp field '" + std::string(field) +
                                   "' must be an integer (ms since the epoch), found " +
                                   (ts->is_null() ? std::string("null") : ts->ToJson()));
  }
  return EventTime(ts->as_int());
}

Status ExtractKeyInto(const Value& value, const KeySpec& spec, Key& key) {
  const Value* field = value.FindPath(spec.field);
  if (field == nullptr) {
    return Status::InvalidArgument("key field '" + spec.field + "' is missing");
  }
  return key.AssignField(*field, spec.type, spec.field);
}

Result<Record> DecodeJsonRecord(std::string_view json, const RecordExtraction& extraction, Key key,
                                EventTime timestamp) {
  Record record{std::move(key), Value(), timestamp, {}};
  WEIR_RETURN_IF_ERROR(DecodeJsonRecordInto(json, extraction, record));
  return record;
}

Status DecodeJsonRecordInto(std::string_view json, const RecordExtraction& extraction,
                            Record& record) {
  WEIR_RETURN_IF_ERROR(record.value.AssignJson(json));
  return ExtractKeyAndTimestamp(extraction, record);
}

Status ExtractKeyAndTimestamp(const RecordExtraction& extraction, Record& record) {
  if (!extraction.key.field.empty()) {
    WEIR_RETURN_IF_ERROR(ExtractKeyInto(record.value, extraction.key, record.key));
  }
  if (!extraction.timestamp_field.empty()) {
    WEIR_ASSIGN_OR_RETURN(record.timestamp,
                          ExtractTimestamp(record.value, extraction.timestamp_field));
  }
  return Status::OK();
}

void AppendStoredValueForDisplay(std::string& out, std::string_view stored) {
  if (log::IsBinaryValue(stored)) {
    Value decoded;
    if (log::DecodeStoredValue(stored, decoded).ok()) return decoded.AppendJson(out);
  } else if (IsValidUtf8(stored) && Value::Parse(stored).ok()) {
    out.append(stored);
    return;
  }
  AppendJsonString(out, Base64(stored));
}

bool IsValidUtf8(std::string_view bytes) {
  return simdjson::validate_utf8(bytes.data(), bytes.size());
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t n = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= uint8_t(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Value MakeDeadLetterValue(std::string_view reason, std::string_view source, Value position,
                          std::string_view raw) {
  Value v = Value::MakeObject(
      {{"reason", Value(reason)}, {"source", Value(source)}, {"position", std::move(position)}});
  if (IsValidUtf8(raw)) {
    v.Set("raw", Value(raw));
  } else {
    v.Set("raw_base64", Value(Base64(raw)));
  }
  return v;
}

}  // namespace weir::dataflow
