#include "sql/database.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace weir::sql {
namespace {

std::unique_ptr<Database> Open() {
  auto db = Database::OpenInMemory(2);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return std::move(db).value();
}

TEST(Database, TypesRoundTripThroughATable) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE t (i BIGINT, d DOUBLE, s VARCHAR)").ok());
  auto appender = db->Appender("t");
  ASSERT_TRUE(appender.ok()) << appender.status().ToString();
  appender->AppendInt(-42);
  appender->AppendDouble(0.1);
  appender->AppendText("short");
  ASSERT_TRUE(appender->EndRow().ok());
  appender->AppendInt(INT64_MAX);
  appender->AppendNull();
  appender->AppendText("a string longer than twelve bytes, stored out of line");
  ASSERT_TRUE(appender->EndRow().ok());
  ASSERT_TRUE(appender->Close().ok());

  std::vector<std::string> rows;
  Status s = db->Query("SELECT i, d, s FROM t ORDER BY i", [&](const Row& row) {
    ASSERT_EQ(row.size(), 3u);
    EXPECT_EQ(row.type(0), ColumnType::kBigInt);
    EXPECT_EQ(row.type(1), ColumnType::kDouble);
    EXPECT_EQ(row.type(2), ColumnType::kVarchar);
    std::string text = std::to_string(row.Int(0)) + "|";
    text += row.IsNull(1) ? "null" : std::to_string(row.Double(1) == 0.1);
    text += "|" + std::string(row.Text(2));
    rows.push_back(text);
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "-42|1|short",
                      "9223372036854775807|null|a string longer than twelve bytes, stored out of "
                      "line"}));
}

TEST(Database, ReadsDecimalHugeIntAndIntegerWidths) {
  auto db = Open();
  std::optional<Status> seen;
  Status s = db->Query(
      "SELECT 1.25, CAST(-7 AS HUGEINT), CAST(3 AS INTEGER), CAST(5 AS TINYINT), SUM(x) "
      "FROM (VALUES (CAST(2 AS BIGINT))) v(x)",
      [&](const Row& row) {
        EXPECT_EQ(row.type(0), ColumnType::kDecimal);
        EXPECT_DOUBLE_EQ(row.Double(0), 1.25);
        EXPECT_EQ(row.type(1), ColumnType::kHugeInt);
        EXPECT_EQ(row.Int(1), -7);
        EXPECT_EQ(row.Int(2), 3);
        EXPECT_EQ(row.Int(3), 5);
        EXPECT_EQ(row.Int(4), 2);
        seen = Status::OK();
      });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(seen.has_value());
}

TEST(Database, StreamsALargeResultChunkByChunk) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE n AS SELECT range AS i, range * 0.5 AS h, "
                          "CAST(range AS VARCHAR) AS s FROM range(100000)")
                  .ok());
  int64_t count = 0;
  int64_t sum = 0;
  double half_sum = 0;
  int64_t text_bytes = 0;
  Status s = db->Query("SELECT i, CAST(h AS DOUBLE), s FROM n", [&](const Row& row) {
    ++count;
    sum += row.Int(0);
    half_sum += row.Double(1);
    text_bytes += static_cast<int64_t>(row.Text(2).size());
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(count, 100000);
  EXPECT_EQ(sum, int64_t{99999} * 100000 / 2);
  EXPECT_DOUBLE_EQ(half_sum, 99999.0 * 100000 / 4);
  // 10 one-digit, 90 two-digit, ... 90000 five-digit numbers.
  EXPECT_EQ(text_bytes, 10 + 90 * 2 + 900 * 3 + 9000 * 4 + 90000 * 5);
}

TEST(Database, BadSqlIsAStatusNamingTheProblem) {
  auto db = Open();
  Status s = db->Execute("SELEC 1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("syntax error"), std::string::npos) << s.message();

  s = db->Query("SELECT * FROM no_such_table", [](const Row&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no_such_table"), std::string::npos) << s.message();
}

TEST(Database, ErrorRaisedWhileStreamingIsAStatus) {
  auto db = Open();
  Status s = db->Query(
      "SELECT CAST(CASE WHEN range < 5000 THEN '1' ELSE 'x' END AS INTEGER) "
      "FROM range(10000)",
      [](const Row&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("x"), std::string::npos) << s.message();
}

TEST(Database, AppenderTypeMismatchIsAStatus) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE t (i BIGINT, s VARCHAR)").ok());
  auto appender = db->Appender("t");
  ASSERT_TRUE(appender.ok());
  appender->AppendText("not a number");
  appender->AppendText("fine");
  Status s = appender->EndRow();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("appending to t"), std::string::npos) << s.message();
  EXPECT_EQ(appender->Close().code(), StatusCode::kInvalidArgument);
}

TEST(Database, AppenderRowOfTheWrongWidthIsAStatus) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE t (i BIGINT, s VARCHAR)").ok());
  auto appender = db->Appender("t");
  ASSERT_TRUE(appender.ok());
  appender->AppendInt(1);
  EXPECT_EQ(appender->EndRow().code(), StatusCode::kInvalidArgument);
}

TEST(Database, AppenderForAMissingTableIsAStatus) {
  auto db = Open();
  auto appender = db->Appender("nowhere");
  ASSERT_FALSE(appender.ok());
  EXPECT_EQ(appender.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(appender.status().message().find("nowhere"), std::string::npos);
}

TEST(Database, WritesNothingUnderHome) {
  std::filesystem::path home =
      std::filesystem::temp_directory_path() / ("weir-sql-home-" + std::to_string(::getpid()));
  std::filesystem::create_directories(home);
  const char* old_home = ::getenv("HOME");
  std::string saved = old_home != nullptr ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  {
    auto db = Open();
    ASSERT_TRUE(db->Execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)").ok());
    // Each of these would autoload or install an extension on a default DuckDB.
    EXPECT_FALSE(db->Execute("SELECT * FROM read_csv('https://example.invalid/x.csv')").ok());
    EXPECT_FALSE(db->Execute("LOAD spatial").ok());
  }
  if (old_home != nullptr) ::setenv("HOME", saved.c_str(), 1);
  EXPECT_FALSE(std::filesystem::exists(home / ".duckdb"));
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace weir::sql
