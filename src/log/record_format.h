// The on-disk record format of the embedded log, and the builder that encodes records into it.
//
// A segment file is a sequence of batches. A batch is written by one flush (group commit):
//
//   batch  := header payload
//   header := magic:u32 'WLB1' | payload_len:u32 | crc32c:u32 | count:u32 |
//             base_offset:i64 | append_time_ms:i64                     (32 bytes, little-endian)
//   payload:= record*  (count records; offsets are base_offset, base_offset+1, ...)
//   record := body_len:u32 | timestamp:i64 | key_serde:u8 | key_len:varint | key |
//             header_count:varint | (name_len:varint name value_len:varint value)* |
//             value   (the rest of the body: the exact bytes that were published)
//
// crc32c covers the header from `count` on, and the payload. A batch whose magic, length or
// crc is wrong marks the torn tail of a crash: recovery truncates the segment there.
// Records carry no offset of their own, so a task encodes its output once, before it knows the
// offsets, and the log copies the bytes as they are.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weir/key.h"
#include "weir/record.h"
#include "weir/status.h"
#include "weir/types.h"
#include "weir/value.h"

namespace weir::log {

inline constexpr uint32_t kBatchMagic = 0x3142'4C57;  // "WLB1"
inline constexpr size_t kBatchHeaderSize = 32;

// A record as stored, viewed in place. The views point into the buffer of whoever read it
// (a PartitionReader, a RecordBatchBuilder) and live as long as that buffer.
struct StoredRecord {
  Offset offset;
  EventTime timestamp;
  // When the log wrote the record's batch (ms since the epoch, the log's clock); set by a
  // PartitionReader, 0 where records are decoded from a builder's payload.
  int64_t append_time_ms = 0;
  KeySerde key_serde = KeySerde::kNull;
  std::string_view key;
  std::string_view value;    // exactly what was appended (JSON text, or see ValueEncoding)
  std::string_view headers;  // encoded; see DecodeHeaders
  uint32_t header_count = 0;

  // The key as a Key (copies the bytes). kCorruption if the stored key is malformed.
  Result<Key> DecodeKey() const;
  // The same into `into`, in place (a source's record slot); unchanged on an error.
  Status DecodeKeyInto(Key& into) const;
  // The headers as a vector (copies). kCorruption if the encoding is malformed.
  Result<std::vector<Header>> DecodeHeaders() const;
  // Calls visit(name, value) for each header, as views into this record's bytes (no copy);
  // kCorruption as DecodeHeaders, after visiting the headers before the malformed one.
  template <typename Visit>
  Status VisitHeaders(Visit&& visit) const {
    std::string_view in = headers;
    for (uint32_t i = 0; i < header_count; ++i) {
      std::string_view name, value;
      if (!NextHeader(in, name, value)) return MalformedHeaders("has malformed headers");
      visit(name, value);
    }
    if (!in.empty()) return MalformedHeaders("has bytes after its headers");
    return Status::OK();
  }

 private:
  static bool NextHeader(std::string_view& in, std::string_view& name, std::string_view& value);
  Status MalformedHeaders(std::string_view problem) const;
};

// How Add stores a record's value.
//   kJson: JSON text, what every topic that users read and write holds.
//   kBinary: kBinaryValueMark then Value::AppendBinary's form, for topics only Weir reads back
//     (repartition topics): read without a parse. Anything that shows a stored value to a user
//     (`weir topics consume`, the WebSocket server, the lake) turns it into JSON text with
//     StoredValueJson; TopicSource reads both with DecodeStoredValue.
enum class ValueEncoding : uint8_t { kJson, kBinary };

// The first bytes of a value stored in the binary form. 0xFF never occurs in UTF-8, so no JSON
// text begins with it: the first byte tells the two forms apart, record by record, whatever the
// topic (a repartition topic written by an older Weir holds JSON text).
inline constexpr std::string_view kBinaryValueMark{"\xFF\x01", 2};
inline bool IsBinaryValue(std::string_view stored) { return stored.starts_with(kBinaryValueMark); }
// A stored value into `out`, reusing its memory: the binary form, or else JSON text.
// kInvalidArgument with the reason (malformed JSON, a malformed binary form) for a dead letter;
// `out` is then null.
Status DecodeStoredValue(std::string_view stored, Value& out);
// A stored value as JSON text: `stored` itself, unless it is in the binary form, which is
// written as JSON into `scratch` (cleared first) and returned from there. A malformed binary form
// comes back as it is (not JSON: callers show it as they show any bytes that are not).
std::string_view StoredValueJson(std::string_view stored, std::string& scratch);

// Encodes records back to back in the record format, for one Append. Not thread-safe; owned by
// one producer (a task's output buffer for one partition, a CLI producer, a publish request).
class RecordBatchBuilder {
 public:
  explicit RecordBatchBuilder(ValueEncoding encoding = ValueEncoding::kJson)
      : encoding_(encoding) {}
  // Encodes one record. The value is written straight into the buffer, in the builder's encoding;
  // or, in a builder of JSON values, as `value_json` when that is given: the value's JSON text
  // (its source's, dataflow::UnchangedInput), stored as it is.
  void Add(EventTime timestamp, const Key& key, const Value& value,
           std::span<const Header> headers = {}, std::string_view value_json = {});
  // Encodes one record whose value is already JSON text (or any bytes): stored as is.
  void AddRaw(EventTime timestamp, KeySerde key_serde, std::string_view key, std::string_view value,
              std::span<const Header> headers = {});

  size_t count() const { return count_; }
  size_t bytes() const { return buffer_.size(); }
  bool empty() const { return count_ == 0; }
  std::string_view payload() const { return buffer_; }
  // Empties the builder and keeps its capacity.
  void Clear();

 private:
  void AppendPrefix(EventTime timestamp, KeySerde key_serde, std::string_view key,
                    std::span<const Header> headers, size_t& body_start);
  void FinishBody(size_t body_start);

  ValueEncoding encoding_;
  std::string buffer_;
  size_t count_ = 0;
};

// Decodes the records of a payload (count records) into views, assigning offsets from `base`.
// kCorruption if the bytes do not hold exactly `count` well-formed records.
// The records are appended to `out` (so a reader can decode several batches into one vector);
// on failure `out` is left as it was. Never reads outside `payload`.
Status DecodeRecords(std::string_view payload, uint32_t count, Offset base,
                     std::vector<StoredRecord>& out);

// CRC-32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2.
uint32_t Crc32c(uint32_t crc, std::string_view data);

}  // namespace weir::log
