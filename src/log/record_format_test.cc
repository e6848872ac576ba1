#include "log/record_format.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "log/crc32c.h"

namespace weir::log {
namespace {

using std::string_literals::operator""s;

TEST(RecordFormat, RoundTripsKeysValuesTimestampsAndHeaders) {
  RecordBatchBuilder b;
  const std::vector<Header> headers = {{"trace", "abc"}, {"", ""}, {"bin", "\0\xff"s}};
  b.Add(EventTime(1700000000123), Key::String("user-1"), Value::MakeObject({{"n", 1}}), headers);
  b.AddRaw(EventTime(-5), KeySerde::kBytes, "\0\x01\xff\x80"s, "raw \0 bytes"s);
  b.Add(EventTime(0), Key::Int(-42), Value("x"));
  ASSERT_EQ(b.count(), 3u);

  std::vector<StoredRecord> out;
  ASSERT_TRUE(DecodeRecords(b.payload(), 3, Offset(100), out).ok());
  ASSERT_EQ(out.size(), 3u);

  EXPECT_EQ(out[0].offset, Offset(100));
  EXPECT_EQ(out[0].timestamp, EventTime(1700000000123));
  EXPECT_EQ(out[0].key_serde, KeySerde::kString);
  EXPECT_EQ(out[0].key, "user-1");
  EXPECT_EQ(out[0].value, R"({"n":1})");
  ASSERT_EQ(out[0].header_count, 3u);
  auto decoded_headers = out[0].DecodeHeaders();
  ASSERT_TRUE(decoded_headers.ok());
  EXPECT_EQ(*decoded_headers, headers);

  EXPECT_EQ(out[1].offset, Offset(101));
  EXPECT_EQ(out[1].timestamp, EventTime(-5));
  EXPECT_EQ(out[1].key_serde, KeySerde::kBytes);
  EXPECT_EQ(out[1].key, "\0\x01\xff\x80"s);
  EXPECT_EQ(out[1].value, "raw \0 bytes"s);
  EXPECT_EQ(out[1].header_count, 0u);

  auto key = out[2].DecodeKey();
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, Key::Int(-42));
  EXPECT_EQ(out[2].value, R"("x")");
}

// Internal topics store values in the binary form; readers get the same values back, and what
// shows values to users gets the same JSON text a JSON topic holds.
TEST(RecordFormat, BinaryValuesDecodeToTheValueAndShowAsItsJson) {
  const Value value = *Value::Parse(
      R"({"bidder":1007,"price":12.5,"name":"caf\u00e9 \"x\"","tags":[true,null,{"a":[]}]})");
  RecordBatchBuilder binary(ValueEncoding::kBinary);
  binary.Add(EventTime(1), Key::Int(1007), value);
  RecordBatchBuilder json;
  json.Add(EventTime(1), Key::Int(1007), value);
  std::vector<StoredRecord> out;
  ASSERT_TRUE(DecodeRecords(binary.payload(), 1, Offset(0), out).ok());
  ASSERT_TRUE(DecodeRecords(json.payload(), 1, Offset(1), out).ok());
  const std::string_view stored_binary = out[0].value, stored_json = out[1].value;
  EXPECT_TRUE(IsBinaryValue(stored_binary));
  EXPECT_FALSE(IsBinaryValue(stored_json));
  EXPECT_LT(stored_binary.size(), stored_json.size());

  Value slot = Value::MakeObject({{"old", "member"}});
  ASSERT_TRUE(DecodeStoredValue(stored_binary, slot).ok());
  EXPECT_EQ(slot, value);
  ASSERT_TRUE(DecodeStoredValue(stored_json, slot).ok());
  EXPECT_EQ(slot, value);
  std::string scratch;
  EXPECT_EQ(StoredValueJson(stored_binary, scratch), value.ToJson());
  EXPECT_EQ(StoredValueJson(stored_json, scratch).data(), stored_json.data());  // not copied
}

TEST(RecordFormat, AMalformedBinaryValueIsRefusedAndShownAsItsBytes) {
  std::string stored(kBinaryValueMark);
  Value::MakeObject({{"bidder", 1007}, {"name", "someone"}}).AppendBinary(stored);
  for (const std::string& bad :
       {stored.substr(0, stored.size() - 1), stored + "x", std::string(kBinaryValueMark),
        std::string(kBinaryValueMark) + "\x09"}) {
    Value slot = 5;
    Status s = DecodeStoredValue(bad, slot);
    ASSERT_FALSE(s.ok()) << bad.size();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(s.message().starts_with("malformed binary value: ")) << s.message();
    EXPECT_TRUE(slot.is_null());
    std::string scratch;
    EXPECT_EQ(StoredValueJson(bad, scratch), bad);
  }
  // Malformed JSON is refused as Value::Parse refuses it.
  Value slot;
  Status s = DecodeStoredValue("{\"a\":", slot);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.message().starts_with("malformed JSON")) << s.message();
}

TEST(RecordFormat, NullKeyAndEmptyValueRoundTrip) {
  RecordBatchBuilder b;
  b.AddRaw(EventTime(7), KeySerde::kNull, "", "");
  b.AddRaw(EventTime(8), KeySerde::kString, "", "");
  std::vector<StoredRecord> out;
  ASSERT_TRUE(DecodeRecords(b.payload(), 2, Offset(0), out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key_serde, KeySerde::kNull);
  EXPECT_TRUE(out[0].key.empty());
  EXPECT_TRUE(out[0].value.empty());
  auto null_key = out[0].DecodeKey();
  ASSERT_TRUE(null_key.ok());
  EXPECT_TRUE(null_key->is_null());
  EXPECT_EQ(out[1].key_serde, KeySerde::kString);
  EXPECT_TRUE(out[1].key.empty());
}

TEST(RecordFormat, DecodeAppendsToExistingRecords) {
  RecordBatchBuilder a, b;
  a.AddRaw(EventTime(1), KeySerde::kNull, "", "a");
  b.AddRaw(EventTime(2), KeySerde::kNull, "", "b");
  std::vector<StoredRecord> out;
  ASSERT_TRUE(DecodeRecords(a.payload(), 1, Offset(0), out).ok());
  ASSERT_TRUE(DecodeRecords(b.payload(), 1, Offset(1), out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].value, "b");
  EXPECT_EQ(out[1].offset, Offset(1));
}

TEST(RecordFormat, ClearKeepsNothing) {
  RecordBatchBuilder b;
  b.AddRaw(EventTime(1), KeySerde::kNull, "", "a");
  b.Clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.bytes(), 0u);
}

TEST(RecordFormat, EveryTruncationIsCorruptionAndLeavesOutputUntouched) {
  RecordBatchBuilder b;
  const std::vector<Header> headers = {{"h", "v"}, {"k", "w"}};
  b.Add(EventTime(1), Key::String("key"), Value::MakeObject({{"a", "b"}}), headers);
  b.AddRaw(EventTime(2), KeySerde::kBytes, "\xff", "value", headers);
  b.AddRaw(EventTime(3), KeySerde::kNull, "", "");
  const std::string payload(b.payload());
  for (size_t cut = 0; cut < payload.size(); ++cut) {
    // A copy of exactly `cut` bytes on the heap: ASan flags any read past it.
    std::vector<char> bytes(payload.begin(), payload.begin() + static_cast<ptrdiff_t>(cut));
    std::vector<StoredRecord> out(1);
    Status s = DecodeRecords(std::string_view(bytes.data(), bytes.size()), 3, Offset(0), out);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << "cut at " << cut;
    EXPECT_EQ(out.size(), 1u) << "cut at " << cut;
  }
}

TEST(RecordFormat, TrailingBytesAndWrongCountAreCorruption) {
  RecordBatchBuilder b;
  b.AddRaw(EventTime(1), KeySerde::kNull, "", "a");
  b.AddRaw(EventTime(2), KeySerde::kNull, "", "b");
  std::vector<StoredRecord> out;
  EXPECT_EQ(DecodeRecords(b.payload(), 1, Offset(0), out).code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeRecords(b.payload(), 3, Offset(0), out).code(), StatusCode::kCorruption);
  EXPECT_TRUE(out.empty());
}

TEST(RecordFormat, UnknownKeySerdeIsCorruption) {
  RecordBatchBuilder b;
  b.AddRaw(EventTime(1), KeySerde::kNull, "", "a");
  std::string payload(b.payload());
  payload[4 + 8] = 9;  // the key serde byte
  std::vector<StoredRecord> out;
  EXPECT_EQ(DecodeRecords(payload, 1, Offset(0), out).code(), StatusCode::kCorruption);
}

TEST(RecordFormat, RandomBytesNeverDecodeOutOfBounds) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::vector<char> bytes(rng() % 64);
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    std::vector<StoredRecord> out;
    Status s = DecodeRecords(std::string_view(bytes.data(), bytes.size()),
                             static_cast<uint32_t>(rng() % 4), Offset(0), out);
    if (s.ok()) {
      for (const StoredRecord& r : out) {
        EXPECT_GE(r.value.data(), bytes.data());
        EXPECT_LE(r.value.data() + r.value.size(), bytes.data() + bytes.size());
        (void)r.DecodeHeaders();
      }
    }
  }
}

TEST(Crc32c, MatchesKnownVectors) {
  EXPECT_EQ(Crc32c(0, ""), 0u);
  EXPECT_EQ(Crc32c(0, "123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(0, "a"), 0xC1D04330u);
  EXPECT_EQ(Crc32c(0, std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(Crc32c(0, std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(internal::Crc32cPortable(0, "123456789"), 0xE3069283u);
}

TEST(Crc32c, ExtendsAcrossPieces) { EXPECT_EQ(Crc32c(Crc32c(0, "1234"), "56789"), 0xE3069283u); }

TEST(Crc32c, HardwareEqualsPortableOnRandomData) {
#if defined(__x86_64__)
  ASSERT_TRUE(internal::HardwareCrc32cAvailable()) << "x86-64 machines here have SSE4.2";
#endif
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string data(rng() % 3000, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    const size_t offset = data.empty() ? 0 : rng() % data.size();  // unaligned starts
    const std::string_view view = std::string_view(data).substr(offset);
    const auto seed = static_cast<uint32_t>(rng());
    ASSERT_EQ(internal::Crc32cHardware(seed, view), internal::Crc32cPortable(seed, view))
        << "length " << view.size();
  }
}

}  // namespace
}  // namespace weir::log
