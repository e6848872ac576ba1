#include "serve/request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weir::serve {
namespace {

Target Parsed(std::string_view target) {
  auto r = ParseTarget(target);
  if (auto* e = std::get_if<TargetError>(&r)) {
    ADD_FAILURE() << target << ": refused (" << e->param << ": " << e->detail << ")";
    return {};
  }
  return std::get<Target>(r);
}

TargetError Refused(std::string_view target) {
  auto r = ParseTarget(target);
  if (auto* e = std::get_if<TargetError>(&r)) return *e;
  ADD_FAILURE() << target << ": accepted";
  return {TargetError::Kind::kNotFound, "", ""};
}

void ExpectBadRequest(std::string_view target, std::string_view param) {
  TargetError e = Refused(target);
  EXPECT_EQ(e.kind, TargetError::Kind::kBadRequest) << target;
  EXPECT_EQ(e.param, param) << target;
}

std::vector<std::string_view> Values(std::string_view body) {
  auto r = SplitPublishBody(body);
  if (auto* e = std::get_if<BodyError>(&r)) {
    ADD_FAILURE() << "line " << e->line << ": " << e->detail;
    return {};
  }
  return std::get<std::vector<std::string_view>>(r);
}

BodyError Error(std::string_view body) {
  auto r = SplitPublishBody(body);
  if (auto* e = std::get_if<BodyError>(&r)) return *e;
  ADD_FAILURE() << "accepted: " << body;
  return {0, ""};
}

using Strings = std::vector<std::string_view>;

TEST(ParseTarget, StreamsWithPartitionAndOffset) {
  Target t = Parsed("/streams/orders.v2?partition=3&offset=42");
  EXPECT_EQ(t.endpoint, Endpoint::kStreams);
  EXPECT_EQ(t.topic, "orders.v2");
  EXPECT_EQ(t.partition, 3);
  EXPECT_EQ(t.start.kind, StartOffset::Kind::kAt);
  EXPECT_EQ(t.start.offset, 42);
  EXPECT_FALSE(t.token.has_value());
}

TEST(ParseTarget, StreamsDefaultsToPartitionZeroLive) {
  Target t = Parsed("/streams/A_b-9");
  EXPECT_EQ(t.partition, 0);
  EXPECT_EQ(t.start.kind, StartOffset::Kind::kLive);
}

TEST(ParseTarget, OffsetEarliestAndLatest) {
  EXPECT_EQ(Parsed("/streams/t?offset=earliest").start.kind, StartOffset::Kind::kEarliest);
  EXPECT_EQ(Parsed("/streams/t?offset=latest").start.kind, StartOffset::Kind::kLive);
}

TEST(ParseTarget, LargestOffsetAndPartition) {
  Target t = Parsed("/streams/t?offset=9223372036854775807&partition=2147483647");
  EXPECT_EQ(t.start.offset, INT64_MAX);
  EXPECT_EQ(t.partition, INT32_MAX);
  EXPECT_EQ(Parsed("/streams/t?offset=0000000000000000001").start.offset, 1);
}

TEST(ParseTarget, PublishWithPartitionAndToken) {
  Target t = Parsed("/publish/clicks?partition=1&token=s3cret");
  EXPECT_EQ(t.endpoint, Endpoint::kPublish);
  EXPECT_EQ(t.topic, "clicks");
  EXPECT_EQ(t.partition, 1);
  EXPECT_EQ(t.token, "s3cret");
}

TEST(ParseTarget, TopicsAndHealth) {
  EXPECT_EQ(Parsed("/topics").endpoint, Endpoint::kTopics);
  EXPECT_EQ(Parsed("/health").endpoint, Endpoint::kHealth);
  EXPECT_EQ(Parsed("/topics?token=t").token, "t");
}

TEST(ParseTarget, QueryWithFormatAndViewsWithOrWithoutAName) {
  EXPECT_EQ(Parsed("/query").endpoint, Endpoint::kQuery);
  EXPECT_FALSE(Parsed("/query").format.has_value());
  EXPECT_EQ(Parsed("/query?format=csv&token=t").format, "csv");
  EXPECT_EQ(Parsed("/views").endpoint, Endpoint::kViews);
  EXPECT_EQ(Parsed("/views").topic, "");
  EXPECT_EQ(Parsed("/views/clicks_by_page").topic, "clicks_by_page");
  ExpectBadRequest("/views/a/b", "path");
  ExpectBadRequest("/views/..", "path");
  ExpectBadRequest("/views?format=csv", "format");
  ExpectBadRequest("/streams/t?format=csv", "format");
  ExpectBadRequest("/query?partition=1", "partition");
  ExpectBadRequest("/query?format=csv&format=jsonl", "format");
}

TEST(ParseTarget, UnknownPathIsNotFound) {
  for (std::string_view target :
       {"/", "", "*", "/topics/", "/health/", "/streams", "/stream/t", "/publishx/t", "streams/t",
        "/Topics", "http://host/topics", "/query/", "/queryx", "/viewsx"}) {
    TargetError e = Refused(target);
    EXPECT_EQ(e.kind, TargetError::Kind::kNotFound) << target;
    EXPECT_EQ(e.param, "path") << target;
  }
}

TEST(ParseTarget, BadTopicNameIsBadRequest) {
  ExpectBadRequest("/streams/", "path");
  ExpectBadRequest("/streams/a/b", "path");
  ExpectBadRequest("/publish/a%20b", "path");
  ExpectBadRequest("/streams/caf\xc3\xa9", "path");
  ExpectBadRequest("/streams/" + std::string(201, 'x'), "path");
  ExpectBadRequest("/streams/..", "path");
  ExpectBadRequest("/publish/.", "path");
  EXPECT_EQ(Parsed("/streams/" + std::string(200, 'x')).topic.size(), 200u);
}

TEST(ParseTarget, UnknownParameterIsBadRequestNamingIt) {
  ExpectBadRequest("/streams/t?limit=5", "limit");
  ExpectBadRequest("/streams/t?Partition=5", "Partition");
  ExpectBadRequest("/streams/t?=5", "");
}

TEST(ParseTarget, ParameterThatDoesNotApplyIsBadRequest) {
  ExpectBadRequest("/publish/t?offset=1", "offset");
  ExpectBadRequest("/topics?partition=0", "partition");
  ExpectBadRequest("/health?offset=earliest", "offset");
}

TEST(ParseTarget, RepeatedParameterIsBadRequest) {
  ExpectBadRequest("/streams/t?partition=1&partition=1", "partition");
  ExpectBadRequest("/streams/t?offset=1&offset=2", "offset");
  ExpectBadRequest("/publish/t?token=a&token=b", "token");
}

TEST(ParseTarget, EmptyParameterIsBadRequest) {
  ExpectBadRequest("/streams/t?partition=", "partition");
  ExpectBadRequest("/streams/t?offset", "offset");
  ExpectBadRequest("/publish/t?token=", "token");
}

TEST(ParseTarget, EmptySegmentsAreIgnored) {
  EXPECT_EQ(Parsed("/streams/t?").partition, 0);
  EXPECT_EQ(Parsed("/streams/t?&partition=2&&").partition, 2);
}

TEST(ParseTarget, PartitionOverflowIsBadRequest) {
  ExpectBadRequest("/streams/t?partition=2147483648", "partition");
  ExpectBadRequest("/streams/t?partition=99999999999", "partition");
  ExpectBadRequest("/streams/t?partition=-1", "partition");
  ExpectBadRequest("/streams/t?partition=1x", "partition");
}

TEST(ParseTarget, OffsetWithSignIsBadRequest) {
  ExpectBadRequest("/streams/t?offset=+1", "offset");
  ExpectBadRequest("/streams/t?offset=-1", "offset");
  ExpectBadRequest("/streams/t?offset=%2B1", "offset");
}

TEST(ParseTarget, OffsetWithTooManyDigitsOrAbove2To63IsBadRequest) {
  ExpectBadRequest("/streams/t?offset=00000000000000000001", "offset");  // 20 digits
  ExpectBadRequest("/streams/t?offset=9223372036854775808", "offset");   // 2^63
  ExpectBadRequest("/streams/t?offset=9999999999999999999", "offset");
}

TEST(ParseTarget, OffsetWithNonDigitIsBadRequest) {
  ExpectBadRequest("/streams/t?offset=1e3", "offset");
  ExpectBadRequest("/streams/t?offset=%201", "offset");
  ExpectBadRequest("/streams/t?offset=Earliest", "offset");
  ExpectBadRequest("/streams/t?offset=0x10", "offset");
}

TEST(ParseTarget, ValuesArePercentDecodedAndPlusIsAPlus) {
  EXPECT_EQ(Parsed("/publish/t?token=a%20b%2Fc+d%25").token, "a b/c+d%");
  EXPECT_EQ(Parsed("/streams/t?partition=%31%32").partition, 12);
  EXPECT_EQ(Parsed("/streams/t?offset=%65arliest").start.kind, StartOffset::Kind::kEarliest);
}

TEST(ParseTarget, MalformedPercentEscapeIsBadRequest) {
  ExpectBadRequest("/publish/t?token=%zz", "token");
  ExpectBadRequest("/publish/t?token=ab%", "token");
  ExpectBadRequest("/publish/t?token=ab%4", "token");
  ExpectBadRequest("/streams/t?partition=%g1", "partition");
}

TEST(SplitPublishBody, SingleValue) {
  EXPECT_EQ(Values(R"({"a":1})"), Strings{R"({"a":1})"});
  EXPECT_EQ(Values("  [1, 2]\r\n"), Strings{"[1, 2]"});
}

TEST(SplitPublishBody, PrettyPrintedObjectIsOneValue) {
  const std::string_view body = "{\n  \"a\": 1,\r\n  \"b\": [\n    2\n  ]\n}\n";
  EXPECT_EQ(Values(body), Strings{body.substr(0, body.size() - 1)});
}

TEST(SplitPublishBody, JsonLinesWithCrlfAndBlankLines) {
  EXPECT_EQ(Values("{\"a\":1}\r\n\r\n  \n[2]\n\"three\"\r\n"),
            (Strings{"{\"a\":1}", "[2]", "\"three\""}));
}

TEST(SplitPublishBody, BadLineReportsItsLineNumber) {
  BodyError e = Error("{\"a\":1}\n\n{\"b\":}\n{\"c\":3}");
  EXPECT_EQ(e.line, 3);
  EXPECT_FALSE(e.detail.empty());
}

TEST(SplitPublishBody, BadSingleValueIsLineOne) {
  EXPECT_EQ(Error("{\"a\":").line, 1);
  EXPECT_EQ(Error("nope").line, 1);
}

TEST(SplitPublishBody, ScalarsAreValues) {
  EXPECT_EQ(Values("42"), Strings{"42"});
  EXPECT_EQ(Values("1\ntrue\nnull\n\"s\"\n-2.5e3"),
            (Strings{"1", "true", "null", "\"s\"", "-2.5e3"}));
}

TEST(SplitPublishBody, TrailingGarbageIsAnError) {
  EXPECT_EQ(Error(R"({"a":1} x)").line, 1);
  EXPECT_EQ(Error("{\"a\":1}\n{\"b\":2} {\"c\":3}").line, 2);
  EXPECT_EQ(Error("1 2").line, 1);
}

TEST(SplitPublishBody, EmptyBodyHasNoValue) {
  EXPECT_TRUE(Values("").empty());
  EXPECT_TRUE(Values(" \r\n\n\t").empty());
}

TEST(SplitPublishBody, ValuesAreViewsIntoTheBody) {
  const std::string body = "[1]\n[2]";
  Strings values = Values(body);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].data(), body.data());
  EXPECT_EQ(values[1].data(), body.data() + 4);
}

QueryRequest Query(std::string_view body, std::optional<std::string> format = std::nullopt) {
  auto r = ParseQueryBody(body, format, std::chrono::seconds(60));
  if (auto* e = std::get_if<std::string>(&r)) {
    ADD_FAILURE() << body << ": refused (" << *e << ")";
    return {};
  }
  return std::get<QueryRequest>(r);
}

std::string QueryError(std::string_view body, std::optional<std::string> format = std::nullopt) {
  auto r = ParseQueryBody(body, format, std::chrono::seconds(60));
  if (auto* e = std::get_if<std::string>(&r)) return *e;
  ADD_FAILURE() << body << ": accepted";
  return "";
}

TEST(ParseQueryBody, TheBodyIsTheSqlOrAJsonObject) {
  QueryRequest plain = Query("  SELECT 1 \n");
  EXPECT_EQ(plain.sql, "SELECT 1");
  EXPECT_EQ(plain.format, "jsonl");
  EXPECT_EQ(plain.timeout, std::chrono::seconds(60));
  EXPECT_EQ(Query("SELECT 1", "csv").format, "csv");
  QueryRequest json = Query(R"({"sql": "SELECT 'a\"b'", "format": "table", "timeout_ms": 500})");
  EXPECT_EQ(json.sql, "SELECT 'a\"b'");
  EXPECT_EQ(json.format, "table");
  EXPECT_EQ(json.timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(Query(R"({"sql": "SELECT 1"})", "csv").format, "csv");
  EXPECT_EQ(Query(R"({"sql": "SELECT 1", "format": "jsonl"})", "csv").format, "jsonl");
  // The server's limit bounds what a client asks.
  EXPECT_EQ(Query(R"({"sql": "SELECT 1", "timeout_ms": 3600000})").timeout,
            std::chrono::seconds(60));
}

TEST(ParseQueryBody, WhatIsWrongIsSaid) {
  EXPECT_NE(QueryError("").find("no query"), std::string::npos);
  EXPECT_NE(QueryError(R"({"sql": "  "})").find("no query"), std::string::npos);
  EXPECT_NE(QueryError(R"({"sql": 1})").find(R"("sql" must be a string)"), std::string::npos);
  EXPECT_NE(QueryError(R"({"sql": "SELECT 1", "timeout_ms": 0})").find("positive integer"),
            std::string::npos);
  EXPECT_NE(QueryError(R"({"sql": "SELECT 1", "limit": 5})").find(R"(unknown member "limit")"),
            std::string::npos);
  EXPECT_NE(QueryError(R"({"sql": )").find("not a JSON object"), std::string::npos);
  EXPECT_EQ(QueryError("SELECT 1", "xml"), "format must be jsonl, csv or table, not 'xml'");
}

TEST(BearerToken, ExtractsTheToken) {
  EXPECT_EQ(BearerToken("Bearer abc.def-123"), "abc.def-123");
  EXPECT_EQ(BearerToken("bearer  tok "), "tok");
}

TEST(BearerToken, OtherSchemesAndMalformedAreNone) {
  EXPECT_EQ(BearerToken(""), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer "), std::nullopt);
  EXPECT_EQ(BearerToken("Basic dXNlcjpwYXNz"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearerabc"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer a b"), std::nullopt);
}

}  // namespace
}  // namespace weir::serve
