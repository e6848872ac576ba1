#include "log/record_format.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/binary_value.h"
#include "core/coding.h"

namespace weir::log {
namespace {

// body_len + timestamp + key_serde + key_len + header_count: the smallest record body.
constexpr size_t kMinRecordSize = 4 + 8 + 1 + 1 + 1;

bool SkipHeaders(std::string_view& in, uint64_t count) {
  std::string_view ignored;
  for (uint64_t i = 0; i < count; ++i) {
    if (!coding::GetLengthPrefixed(in, ignored) || !coding::GetLengthPrefixed(in, ignored)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status DecodeStoredValue(std::string_view stored, Value& out) {
  if (!IsBinaryValue(stored)) return out.AssignJson(stored);
  Status decoded = AssignWholeBinary(stored.substr(kBinaryValueMark.size()), out);
  if (decoded.ok()) return decoded;
  return Status::InvalidArgument("malformed binary value: " + decoded.message());
}

std::string_view StoredValueJson(std::string_view stored, std::string& scratch) {
  if (!IsBinaryValue(stored)) return stored;
  Value decoded;
  if (!DecodeStoredValue(stored, decoded).ok()) return stored;
  scratch.clear();
  decoded.AppendJson(scratch);
  return scratch;
}

Result<Key> StoredRecord::DecodeKey() const {
  Key decoded;
  WEIR_RETURN_IF_ERROR(DecodeKeyInto(decoded));
  return decoded;
}

Status StoredRecord::DecodeKeyInto(Key& into) const {
  Status decoded = into.AssignBytes(key_serde, key);
  if (!decoded.ok()) {
    return Status::Corruption("record at offset " + std::to_string(offset.value()) +
                              " has a malformed key: " + decoded.message());
  }
  return decoded;
}

Result<std::vector<Header>> StoredRecord::DecodeHeaders() const {
  std::vector<Header> out;
  out.reserve(std::min<size_t>(header_count, headers.size() / 2));
  WEIR_RETURN_IF_ERROR(VisitHeaders([&](std::string_view name, std::string_view value) {
    out.push_back(Header{std::string(name), std::string(value)});
  }));
  return out;
}

bool StoredRecord::NextHeader(std::string_view& in, std::string_view& name,
                              std::string_view& value) {
  return coding::GetLengthPrefixed(in, name) && coding::GetLengthPrefixed(in, value);
}

Status StoredRecord::MalformedHeaders(std::string_view problem) const {
  return Status::Corruption("record at offset " + std::to_string(offset.value()) + " " +
                            std::string(problem));
}

void RecordBatchBuilder::AppendPrefix(EventTime timestamp, KeySerde key_serde, std::string_view key,
                                      std::span<const Header> headers, size_t& body_start) {
  body_start = buffer_.size();
  coding::PutFixed32(buffer_, 0);  // body_len, patched by FinishBody
  coding::PutFixed64(buffer_, static_cast<uint64_t>(timestamp.value()));
  buffer_.push_back(static_cast<char>(key_serde));
  coding::PutLengthPrefixed(buffer_, key);
  coding::PutVarint64(buffer_, headers.size());
  for (const Header& h : headers) {
    coding::PutLengthPrefixed(buffer_, h.name);
    coding::PutLengthPrefixed(buffer_, h.value);
  }
}

void RecordBatchBuilder::FinishBody(size_t body_start) {
  const size_t body_len = buffer_.size() - body_start - 4;
  WEIR_CHECK(body_len <= std::numeric_limits<uint32_t>::max(),
             "a record must be smaller than 4 GiB");
  const auto len32 = static_cast<uint32_t>(body_len);
  std::memcpy(buffer_.data() + body_start, &len32, 4);
  ++count_;
}

void RecordBatchBuilder::Add(EventTime timestamp, const Key& key, const Value& value,
                             std::span<const Header> headers, std::string_view value_json) {
  size_t body_start;
  AppendPrefix(timestamp, key.serde(), key.bytes(), headers, body_start);
  if (encoding_ == ValueEncoding::kBinary) {
    buffer_.append(kBinaryValueMark);
    value.AppendBinary(buffer_);
  } else if (!value_json.empty()) {
    buffer_.append(value_json);
  } else {
    value.AppendJson(buffer_);
  }
  FinishBody(body_start);
}

void RecordBatchBuilder::AddRaw(EventTime timestamp, KeySerde key_serde, std::string_view key,
                                std::string_view value, std::span<const Header> headers) {
  size_t body_start;
  AppendPrefix(timestamp, key_serde, key, headers, body_start);
  buffer_.append(value);
  FinishBody(body_start);
}

void RecordBatchBuilder::Clear() {
  buffer_.clear();
  count_ = 0;
}

Status DecodeRecords(std::string_view payload, uint32_t count, Offset base,
                     std::vector<StoredRecord>& out) {
  const size_t original_size = out.size();
  // `count` comes from disk: never reserve more than the payload could possibly hold.
  out.reserve(original_size + std::min<size_t>(count, payload.size() / kMinRecordSize));
  auto corrupt = [&](uint32_t i, const char* what) {
    out.resize(original_size);
    return Status::Corruption("record " + std::to_string(i) + " of " + std::to_string(count) +
                              " in the batch at offset " + std::to_string(base.value()) + ": " +
                              what);
  };
  std::string_view in = payload;
  for (uint32_t i = 0; i < count; ++i) {
    if (in.size() < 4) return corrupt(i, "truncated record length");
    const uint32_t body_len = coding::DecodeFixed32(in.data());
    in.remove_prefix(4);
    if (body_len > in.size()) return corrupt(i, "record length beyond the payload");
    std::string_view body = in.substr(0, body_len);
    in.remove_prefix(body_len);

    StoredRecord& r = out.emplace_back();
    r.offset = base + i;
    uint64_t ts;
    if (!coding::GetFixed64(body, ts) || body.empty()) return corrupt(i, "truncated timestamp");
    r.timestamp = EventTime(static_cast<int64_t>(ts));
    const auto serde = static_cast<uint8_t>(body[0]);
    if (serde > static_cast<uint8_t>(KeySerde::kBytes)) return corrupt(i, "unknown key serde");
    r.key_serde = static_cast<KeySerde>(serde);
    body.remove_prefix(1);
    if (!coding::GetLengthPrefixed(body, r.key)) return corrupt(i, "truncated key");
    uint64_t header_count;
    if (!coding::GetVarint64(body, header_count) ||
        header_count > std::numeric_limits<uint32_t>::max()) {
      return corrupt(i, "malformed header count");
    }
    const char* headers_start = body.data();
    if (!SkipHeaders(body, header_count)) return corrupt(i, "truncated headers");
    r.headers = std::string_view(headers_start, body.data() - headers_start);
    r.header_count = static_cast<uint32_t>(header_count);
    r.value = body;
  }
  if (!in.empty()) return corrupt(count, "bytes after the last record");
  return Status::OK();
}

}  // namespace weir::log
