#include "dataflow/json_records.h"

#include <gtest/gtest.h>

#include "log/record_format.h"

namespace weir::dataflow {
namespace {

RecordExtraction UserAndTs() {
  RecordExtraction e;
  e.key = {"user", KeySerde::kString};
  e.timestamp_field = "ts";
  return e;
}

TEST(JsonRecords, ExtractsKeyAndTimestampFromTheValue) {
  auto r = DecodeJsonRecord(R"({"user":"ann","ts":1700000000000,"n":1})", UserAndTs(), Key(),
                            EventTime(0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->key, Key::String("ann"));
  EXPECT_EQ(r->timestamp, EventTime(1700000000000));
  EXPECT_EQ(r->value.Find("n")->as_int(), 1);
}

TEST(JsonRecords, MalformedJsonIsRefusedWithTheParserReason) {
  auto r = DecodeJsonRecord(R"({"user":"ann","ts":)", UserAndTs(), Key(), EventTime(0));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsBadInput());
  EXPECT_NE(r.status().message().find("malformed JSON"), std::string::npos);
}

TEST(JsonRecords, MissingTimestampIsNamed) {
  auto r = DecodeJsonRecord(R"({"user":"ann"})", UserAndTs(), Key(), EventTime(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "timestamp field 'ts' is missing");
}

TEST(JsonRecords, NonIntegerTimestampIsRefusedWithWhatWasFound) {
  for (std::string_view json : {R"({"user":"a","ts":"2024-01-01"})", R"({"user":"a","ts":1.5})",
                                R"({"user":"a","ts":null})"}) {
    auto r = DecodeJsonRecord(json, UserAndTs(), Key(), EventTime(0));
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(r.status().message().find("timestamp field 'ts' must be an integer"),
              std::string::npos);
  }
}

TEST(JsonRecords, KeyFieldOfTheWrongTypeIsRefused) {
  auto r = DecodeJsonRecord(R"({"user":42,"ts":1})", UserAndTs(), Key(), EventTime(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "key field 'user' must be a string, found integer");
  auto missing = DecodeJsonRecord(R"({"ts":1})", UserAndTs(), Key(), EventTime(0));
  EXPECT_EQ(missing.status().message(), "key field 'user' is missing");
}

TEST(JsonRecords, WithoutFieldsTheGivenKeyAndTimeAreKept) {
  auto r = DecodeJsonRecord("[1,2]", RecordExtraction{}, Key::Int(7), EventTime(99));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->key, Key::Int(7));
  EXPECT_EQ(r->timestamp, EventTime(99));
}

TEST(JsonRecords, DeadLetterCarriesReasonPositionAndRawBytes) {
  Value dl = MakeDeadLetterValue("bad", "file x.jsonl", Value::MakeObject({{"line", 3}}), "{oops");
  EXPECT_EQ(dl.ToJson(),
            R"({"reason":"bad","source":"file x.jsonl","position":{"line":3},"raw":"{oops"})");
  Value binary = MakeDeadLetterValue("bad", "s", Value(), std::string("\xff\xfe", 2));
  EXPECT_EQ(binary.Find("raw_base64")->as_string(), "//4=");
}

TEST(JsonRecords, AStoredValueIsShownAsItsJsonOrItsBytesInBase64) {
  auto shown = [](std::string_view stored) {
    std::string out = "x";
    AppendStoredValueForDisplay(out, stored);
    return out;
  };
  EXPECT_EQ(shown(R"({"a":[1,"b"]})"), R"(x{"a":[1,"b"]})");
  std::string binary(log::kBinaryValueMark);
  Value::MakeObject({{"a", Value::MakeArray({1, "b"})}}).AppendBinary(binary);
  EXPECT_EQ(shown(binary), R"(x{"a":[1,"b"]})");
  EXPECT_EQ(shown(std::string(log::kBinaryValueMark) + "\x09"), R"(x"/wEJ")");  // malformed
  EXPECT_EQ(shown("not json"), R"(x"bm90IGpzb24=")");
}

TEST(JsonRecords, Base64MatchesRfc4648Vectors) {
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
}

// Each way a document can be refused before its fields are read: a dead letter with the reason.
void ExpectDecodeRefused(std::string_view json, std::string_view reason) {
  Record slot{Key::Int(1), Value::MakeObject({{"held", "before"}}), EventTime(5), {}};
  Status status = DecodeJsonRecordInto(json, UserAndTs(), slot);
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(status.IsBadInput()) << status.ToString();
  EXPECT_NE(status.message().find(reason), std::string::npos) << status.message();
}

TEST(JsonRecords, TooDeepDocumentIsRefusedNamingTheLimit) {
  const std::string deep =
      R"({"user":"ann","ts":1,"n":)" + std::string(600, '[') + std::string(600, ']') + "}";
  ExpectDecodeRefused(deep, "nested deeper than the limit of 512 levels");
}

TEST(JsonRecords, OversizeDocumentIsRefusedNamingTheLimit) {
  // The real limit (64 MiB): refused on its length, before the parser copies it.
  std::string big = R"({"user":"ann","ts":1,"pad":")";
  big.resize(Value::kMaxJsonBytes - 1, 'x');
  big += "\"}";
  ASSERT_EQ(big.size(), Value::kMaxJsonBytes + 1);
  ExpectDecodeRefused(big, "over the limit of 67108864");
}

TEST(JsonRecords, InvalidUtf8IsRefusedWithTheReason) {
  ExpectDecodeRefused("{\"user\":\"\xff\",\"ts\":1}", "not valid UTF-8");
  ExpectDecodeRefused("{\"user\":\"ann\",\"ts\":1,\"k\xed\xa0\x80\":0}", "not valid UTF-8");
}

TEST(JsonRecords, MalformedJsonIntoASlotIsRefusedWithTheParserReason) {
  for (std::string_view json : {R"({"user":"ann","ts":)", R"({"user":"ann","ts":1}x)",
                                R"({"user":"ann" "ts":1})", R"({"user":"\ud800","ts":1})", ""}) {
    SCOPED_TRACE(json);
    ExpectDecodeRefused(json, "malformed JSON");
  }
}

TEST(JsonRecords, GoodRecordIntoASlotThatHeldAFailedOneIsDecodedWhole) {
  const std::string good = R"({"user":"bob","ts":1700000000123,"tags":["a","b"],"n":2.5})";
  const std::string_view failures[] = {
      R"({"user":"ann","ts":1,"tags":["x","y","z"],"extra":{"deep":[1,2,3]},"n":)",  // malformed
      "{\"user\":\"\xff\",\"ts\":1}",                                                // UTF-8
      R"({"user":"ann","ts":"yesterday","tags":[1,2,3,4,5],"n":{"o":1}})",           // bad field
      R"({"ts":1,"tags":[]})",                                                       // no key
  };
  auto expected = DecodeJsonRecord(good, UserAndTs(), Key(), EventTime(0));
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  Record slot{Key::Int(9), Value(), EventTime(9), {}};
  for (std::string_view failure : failures) {
    SCOPED_TRACE(failure);
    // A good record, then a failed one over it, then a good one again.
    ASSERT_TRUE(
        DecodeJsonRecordInto(R"({"user":"zed","ts":5,"other":[{"a":1}]})", UserAndTs(), slot).ok());
    ASSERT_FALSE(DecodeJsonRecordInto(failure, UserAndTs(), slot).ok());
    ASSERT_TRUE(DecodeJsonRecordInto(good, UserAndTs(), slot).ok());
    EXPECT_EQ(slot, *expected);
    EXPECT_EQ(slot.value.ToJson(), good);
    EXPECT_EQ(slot.key, Key::String("bob"));
    EXPECT_EQ(slot.timestamp, EventTime(1700000000123));
  }
}

}  // namespace
}  // namespace weir::dataflow
