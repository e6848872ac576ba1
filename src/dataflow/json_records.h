// Records at the edge: JSON text in, a keyed and timestamped Record out, parsed exactly once.
// Used by every source that reads JSON (files, topics, `weir produce`, publishing).
#pragma once

#include <string>
#include <string_view>

#include "weir/record.h"
#include "weir/status.h"
#include "weir/stream.h"
#include "weir/value.h"

namespace weir::dataflow {

struct RecordExtraction {
  KeySpec key;                  // empty field: the record keeps the key it is given
  std::string timestamp_field;  // empty: the record keeps the time it is given
};

// The event time in `field` of `value`: it must be a JSON integer (milliseconds).
// kInvalidArgument naming the field otherwise ("missing", "must be an integer, found string").
Result<EventTime> ExtractTimestamp(const Value& value, std::string_view field);
// The key in a field of `value`, into `key` in place (Key::AssignField); kInvalidArgument if
// missing or of the wrong type, and `key` unchanged.
Status ExtractKeyInto(const Value& value, const KeySpec& spec, Key& key);

// Parses `json` and extracts its key and timestamp; `key` and `timestamp` are what the record
// gets when the extraction does not name a field. kInvalidArgument with the reason (malformed
// JSON, missing/mistyped field) for the dead-letter topic.
Result<Record> DecodeJsonRecord(std::string_view json, const RecordExtraction& extraction, Key key,
                                EventTime timestamp);
// The same into `record`, reusing its value's memory (a RecordSlots slot): its key and timestamp
// are kept unless the extraction names a field. On error the record holds no usable value.
Status DecodeJsonRecordInto(std::string_view json, const RecordExtraction& extraction,
                            Record& record);
// The extraction alone, from a record whose value is decoded: the key and timestamp from the
// fields the extraction names (kInvalidArgument as above).
Status ExtractKeyAndTimestamp(const RecordExtraction& extraction, Record& record);

// The value of a dead-letter record:
// {"reason": ..., "source": ..., "position": ..., "raw": "<bytes>"} (or "raw_base64" when the
// bytes are not valid UTF-8).
Value MakeDeadLetterValue(std::string_view reason, std::string_view source, Value position,
                          std::string_view raw);

// A stored record value as the JSON value that shows it (`weir consume`'s lines): the JSON text
// as it is, the binary form (log::ValueEncoding) written as JSON, or for bytes that are neither a
// JSON string of their base64.
void AppendStoredValueForDisplay(std::string& out, std::string_view stored);

// Whether `bytes` is valid UTF-8.
bool IsValidUtf8(std::string_view bytes);
std::string Base64(std::string_view bytes);

}  // namespace weir::dataflow
