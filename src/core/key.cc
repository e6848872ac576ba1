#include "weir/key.h"

#include "core/coding.h"

namespace weir {

std::string_view KeySerdeName(KeySerde serde) {
  switch (serde) {
    case KeySerde::kNull:
      return "null";
    case KeySerde::kString:
      return "string";
    case KeySerde::kInt:
      return "int";
    case KeySerde::kJson:
      return "json";
    case KeySerde::kBytes:
      return "bytes";
  }
  return "unknown";
}

Result<KeySerde> ParseKeySerde(std::string_view name) {
  if (name == "string") return KeySerde::kString;
  if (name == "int") return KeySerde::kInt;
  if (name == "json") return KeySerde::kJson;
  if (name == "bytes") return KeySerde::kBytes;
  return Status::InvalidArgument("unknown key type '" + std::string(name) +
                                 "' (expected string, int, json or bytes)");
}

namespace {

// The 8 bytes of an int key.
struct IntKeyBytes {
  explicit IntKeyBytes(int64_t v) { coding::EncodeBigEndian64(bytes, static_cast<uint64_t>(v)); }
  std::string_view view() const { return {bytes, sizeof bytes}; }
  char bytes[8];
};

}  // namespace

Key Key::Int(int64_t v) { return Key(KeySerde::kInt, IntKeyBytes(v).view()); }

Result<Key> Key::FromBytes(KeySerde serde, std::string_view bytes) {
  Key key;
  WEIR_RETURN_IF_ERROR(key.AssignBytes(serde, bytes));
  return key;
}

Result<Key> Key::FromField(const Value& field, KeySerde serde, std::string_view field_name) {
  Key key;
  WEIR_RETURN_IF_ERROR(key.AssignField(field, serde, field_name));
  return key;
}

Status Key::AssignBytes(KeySerde serde, std::string_view bytes) {
  if (serde == KeySerde::kInt && bytes.size() != 8) {
    return Status::InvalidArgument("int key must be 8 bytes, found " +
                                   std::to_string(bytes.size()));
  }
  if (serde == KeySerde::kNull && !bytes.empty()) {
    return Status::InvalidArgument("null key with bytes");
  }
  bytes_.Assign(bytes);  // first: a bad_alloc leaves the key as it was
  serde_ = serde;
  return Status::OK();
}

Status Key::AssignField(const Value& field, KeySerde serde, std::string_view field_name) {
  auto wrong_type = [&](std::string_view expected) {
    return Status::InvalidArgument("key field '" + std::string(field_name) + "' must be " +
                                   std::string(expected) + ", found " +
                                   std::string(field.TypeName()));
  };
  switch (serde) {
    case KeySerde::kString:
    case KeySerde::kBytes:
      if (!field.is_string()) return wrong_type("a string");
      return AssignBytes(serde, field.as_string());
    case KeySerde::kInt:
      if (!field.is_int()) return wrong_type("an integer");
      return AssignBytes(serde, IntKeyBytes(field.as_int()).view());
    case KeySerde::kJson:
      return AssignBytes(serde, field.ToJson());
    case KeySerde::kNull:
      return AssignBytes(serde, {});
  }
  return Status::Internal("unknown key serde");
}

int64_t Key::AsInt() const {
  WEIR_CHECK(serde_ == KeySerde::kInt && bytes_.size() == 8, "Key::AsInt on a non-int key");
  return static_cast<int64_t>(coding::DecodeBigEndian64(bytes().data()));
}

void Key::AppendJson(std::string& out) const {
  switch (serde_) {
    case KeySerde::kNull:
      out.append("null");
      return;
    case KeySerde::kInt:
      out.append(std::to_string(AsInt()));
      return;
    case KeySerde::kJson:
      out.append(bytes());
      return;
    case KeySerde::kString:
    case KeySerde::kBytes:
      AppendJsonString(out, bytes());
      return;
  }
}

Value Key::ToValue() const {
  switch (serde_) {
    case KeySerde::kNull:
      return Value();
    case KeySerde::kInt:
      return Value(AsInt());
    case KeySerde::kJson: {
      auto parsed = Value::Parse(bytes());
      return parsed.ok() ? std::move(parsed).value() : Value(bytes());
    }
    case KeySerde::kString:
    case KeySerde::kBytes:
      return Value(bytes());
  }
  return Value();
}

}  // namespace weir
