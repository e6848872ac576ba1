// Key: the message key of a record, as bytes with a declared serde.
//
// The bytes are what Kafka's serializers would produce, so a key hashes (murmur2) to the
// partition a Kafka producer would choose:
//   kString  UTF-8 bytes (StringSerializer)
//   kInt     8-byte big-endian two's complement (LongSerializer)
//   kJson    compact JSON text
//   kBytes   raw bytes
//   kNull    no key
// Keys compare by (serde, bytes). Thread safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "weir/inline_bytes.h"
#include "weir/status.h"
#include "weir/value.h"

namespace weir {

enum class KeySerde : uint8_t { kNull = 0, kString = 1, kInt = 2, kJson = 3, kBytes = 4 };

std::string_view KeySerdeName(KeySerde serde);
// "string", "int", "json", "bytes" -> serde; kInvalidArgument for anything else.
Result<KeySerde> ParseKeySerde(std::string_view name);

class Key {
 public:
  Key() = default;  // the null key
  static Key String(std::string_view s) { return Key(KeySerde::kString, s); }
  static Key Int(int64_t v);
  static Key Json(const Value& v) { return Key(KeySerde::kJson, v.ToJson()); }
  static Key Bytes(std::string_view b) { return Key(KeySerde::kBytes, b); }
  // Rebuilds a key from its stored form. kInvalidArgument if an int key is not 8 bytes or a null
  // key has bytes.
  static Result<Key> FromBytes(KeySerde serde, std::string_view bytes);
  // The key a value field declares: a string field for kString, an integer for kInt, any value
  // for kJson, a string (taken as bytes) for kBytes. kInvalidArgument naming the field and the
  // type found otherwise.
  static Result<Key> FromField(const Value& field, KeySerde serde, std::string_view field_name);
  // FromBytes and FromField into this key, in place (no temporary key moved through a Result:
  // sources set their slots' keys this way, from a stored key or a key field, and a group-by its
  // records'). On an error, and if an allocation throws, the key is unchanged.
  Status AssignBytes(KeySerde serde, std::string_view bytes);
  Status AssignField(const Value& field, KeySerde serde, std::string_view field_name);

  KeySerde serde() const { return serde_; }
  bool is_null() const { return serde_ == KeySerde::kNull; }
  // Valid while the key lives and is not assigned to or moved from. A moved-from key keeps its
  // serde and has no bytes.
  std::string_view bytes() const { return bytes_.view(); }
  // REQUIRES: serde() == kInt.
  int64_t AsInt() const;
  // The key as a JSON value for outputs: string, integer, the JSON itself, a string of the raw
  // bytes (kBytes, valid UTF-8 assumed by sinks that need it), or null.
  void AppendJson(std::string& out) const;
  Value ToValue() const;

  friend bool operator==(const Key&, const Key&) = default;

 private:
  Key(KeySerde serde, std::string_view bytes) : serde_(serde), bytes_(bytes) {}

  // Kept inline up to 31 bytes (every int key, most string keys): a record's key is copied and
  // moved with it from step to step.
  KeySerde serde_ = KeySerde::kNull;
  internal::InlineBytes bytes_;
};

}  // namespace weir
