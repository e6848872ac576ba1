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
#include <cstring>
#include <string>
#include <string_view>

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
  // Rebuilds a key from its stored form. kInvalidArgument if an int key is not 8 bytes.
  static Result<Key> FromBytes(KeySerde serde, std::string_view bytes);
  // The key a value field declares: a string field for kString, an integer for kInt, any value
  // for kJson, a string (taken as bytes) for kBytes. kInvalidArgument naming the field and the
  // type found otherwise.
  static Result<Key> FromField(const Value& field, KeySerde serde, std::string_view field_name);

  Key(const Key& other) { CopyFrom(other); }
  Key(Key&& other) noexcept { TakeFrom(other); }
  Key& operator=(const Key& other) {
    if (this != &other) {
      Free();
      CopyFrom(other);
    }
    return *this;
  }
  Key& operator=(Key&& other) noexcept {
    if (this != &other) {
      Free();
      TakeFrom(other);
    }
    return *this;
  }
  ~Key() { Free(); }

  KeySerde serde() const { return serde_; }
  bool is_null() const { return serde_ == KeySerde::kNull; }
  // Valid while the key lives and is not assigned to.
  std::string_view bytes() const {
    return on_heap() ? std::string_view(heap().data, heap().size)
                     : std::string_view(storage_, size_);
  }
  // REQUIRES: serde() == kInt.
  int64_t AsInt() const;
  // The key as a JSON value for outputs: string, integer, the JSON itself, a string of the raw
  // bytes (kBytes, valid UTF-8 assumed by sinks that need it), or null.
  void AppendJson(std::string& out) const;
  Value ToValue() const;

  friend bool operator==(const Key& a, const Key& b) {
    return a.serde_ == b.serde_ && a.bytes() == b.bytes();
  }

 private:
  // Keys of up to kInlineBytes bytes (every int key, most string keys) are kept in the key
  // itself, so that copying or moving one is a fixed 32-byte copy: records carry their key
  // through every step, and a std::string's copy of a short key was a call to memcpy each time.
  // Longer keys are kept on the heap, the pointer and size in the first 16 bytes of storage_.
  static constexpr size_t kInlineBytes = 30;
  static constexpr uint8_t kOnHeap = 0xff;
  struct HeapBytes {
    char* data;
    size_t size;
  };

  Key(KeySerde serde, std::string_view bytes);
  bool on_heap() const { return size_ == kOnHeap; }
  HeapBytes heap() const {
    HeapBytes h;
    std::memcpy(&h, storage_, sizeof h);
    return h;
  }
  void Assign(KeySerde serde, std::string_view bytes);
  void CopyFrom(const Key& other) {
    if (other.on_heap()) {
      Assign(other.serde_, other.bytes());
    } else {
      std::memcpy(static_cast<void*>(this), &other, sizeof(Key));
    }
  }
  void TakeFrom(Key& other) {
    std::memcpy(static_cast<void*>(this), &other, sizeof(Key));
    other.size_ = 0;
    other.serde_ = KeySerde::kNull;
  }
  void Free() {
    if (on_heap()) delete[] heap().data;
  }

  alignas(8) char storage_[kInlineBytes];
  uint8_t size_ = 0;  // the inline bytes' count, or kOnHeap
  KeySerde serde_ = KeySerde::kNull;
};
static_assert(sizeof(Key) == 32);

}  // namespace weir
