#include "dataflow/json_records.h"

#include <gtest/gtest.h>

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

TEST(JsonRecords, Base64MatchesRfc4648Vectors) {
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
}

}  // namespace
}  // namespace weir::dataflow
