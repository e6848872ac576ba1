#include "sql/database.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace weir::sql {
namespace {

std::unique_ptr<Database> Open() {
  auto db = Database::OpenInMemory(2);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return std::move(db).value();
}

// A fresh folder under the temp folder, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("weir-sql-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Each value of a result row as text: "null", integers, doubles at full precision, text, "true"
// / "false", timestamps as microseconds ("ts:..."), tagged with the column's type name.
std::string Render(const Row& row) {
  std::string out;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i > 0) out += "|";
    if (row.IsNull(i)) {
      out += "null";
      continue;
    }
    switch (row.type(i)) {
      case ColumnType::kDouble: {
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "%.17g", row.Double(i));
        out += buffer;
        break;
      }
      case ColumnType::kVarchar:
      case ColumnType::kJson:
        out += row.Text(i);
        break;
      case ColumnType::kBoolean:
        out += row.Bool(i) ? "true" : "false";
        break;
      case ColumnType::kTimestamp:
        out += "ts:" + std::to_string(row.TimestampMicros(i));
        break;
      default:
        out += std::to_string(row.Int(i));
        break;
    }
  }
  return out;
}

std::vector<std::string> RenderedRows(Database& db, std::string_view sql,
                                      std::vector<Column>* columns = nullptr) {
  std::vector<std::string> rows;
  Status s = db.Query(
      sql,
      [&](std::span<const Column> c) {
        if (columns != nullptr) columns->assign(c.begin(), c.end());
      },
      [&](const Row& row) { rows.push_back(Render(row)); });
  EXPECT_TRUE(s.ok()) << sql << ": " << s.ToString();
  return rows;
}

int64_t CountOf(Database& db, std::string_view sql) {
  int64_t n = -1;
  Status s = db.Query(sql, [&](const Row& row) { n = row.Int(0); });
  EXPECT_TRUE(s.ok()) << sql << ": " << s.ToString();
  return n;
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

// ---- Files, connections, interrupts

TEST(Database, FileDatabaseKeepsCommitsAcrossReopening) {
  ScratchDir dir;
  const std::filesystem::path path = dir / "weir.duckdb";
  {
    auto db = Database::OpenFile(path, {.threads = 1, .memory_limit = "256MB"});
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Execute("CREATE TABLE t (i BIGINT); INSERT INTO t VALUES (1), (2)").ok());
    ASSERT_TRUE((*db)->Execute("BEGIN; INSERT INTO t VALUES (100); ROLLBACK").ok());
    // Left open when the database closes: never committed.
    ASSERT_TRUE((*db)->Execute("BEGIN; INSERT INTO t VALUES (200)").ok());
  }
  auto db = Database::OpenFile(path);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(RenderedRows(**db, "SELECT i FROM t ORDER BY i"), (std::vector<std::string>{"1", "2"}));
}

TEST(Database, FileHeldByAnotherProcessIsUnavailable) {
  ScratchDir dir;
  const std::filesystem::path path = dir / "weir.duckdb";
  ASSERT_TRUE(Database::OpenFile(path).ok());
  // A child process takes the lock DuckDB takes (a write lock on the whole file) and holds it
  // until the pipe closes. Only async-signal-safe calls after fork.
  int ready[2];
  int release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    int fd = ::open(path.c_str(), O_RDWR);
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    char ok = (fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0) ? '1' : '0';
    if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
    char byte;
    while (::read(release[0], &byte, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, '1');

  auto db = Database::OpenFile(path);
  ::close(release[1]);
  int wstatus = 0;
  ::waitpid(child, &wstatus, 0);
  ::close(ready[0]);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable) << db.status().ToString();
  EXPECT_NE(db.status().message().find("lock"), std::string::npos) << db.status().ToString();
  // Released: it opens.
  EXPECT_TRUE(Database::OpenFile(path).ok());
}

TEST(Database, FileOpenInThisProcessIsUnavailable) {
  ScratchDir dir;
  auto first = Database::OpenFile(dir / "weir.duckdb");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Two DuckDB instances on one file would overwrite each other's writes.
  auto again = Database::OpenFile(dir / "." / "weir.duckdb");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable) << again.status().ToString();
  EXPECT_NE(again.status().message().find("Connect()"), std::string::npos);
  // A connection made from it keeps the file open; the last one to go closes it.
  auto connection = (*first)->Connect();
  ASSERT_TRUE(connection.ok());
  first->reset();
  EXPECT_EQ(Database::OpenFile(dir / "weir.duckdb").status().code(), StatusCode::kUnavailable);
  connection->reset();
  EXPECT_TRUE(Database::OpenFile(dir / "weir.duckdb").ok());
}

TEST(Database, FileThatIsNotADatabaseIsAnIoError) {
  ScratchDir dir;
  {
    std::FILE* f = std::fopen((dir / "junk.duckdb").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a DuckDB file, only text long enough to have a header's size or more", f);
    std::fclose(f);
  }
  auto db = Database::OpenFile(dir / "junk.duckdb");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kIOError) << db.status().ToString();
  EXPECT_NE(db.status().message().find("junk.duckdb"), std::string::npos);
}

TEST(Database, ConnectionsSeeEachOthersCommitsOnly) {
  ScratchDir dir;
  auto first = Database::OpenFile(dir / "weir.duckdb");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = (*first)->Connect();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  Database& a = **first;
  Database& b = **second;
  ASSERT_TRUE(a.Execute("CREATE TABLE t (i BIGINT); INSERT INTO t VALUES (1)").ok());
  EXPECT_EQ(CountOf(b, "SELECT count(*) FROM t"), 1);
  ASSERT_TRUE(b.Execute("BEGIN; INSERT INTO t VALUES (2)").ok());
  EXPECT_EQ(CountOf(a, "SELECT count(*) FROM t"), 1);
  EXPECT_EQ(CountOf(b, "SELECT count(*) FROM t"), 2);
  ASSERT_TRUE(b.Execute("COMMIT").ok());
  EXPECT_EQ(CountOf(a, "SELECT count(*) FROM t"), 2);
}

TEST(Database, WriteConflictBetweenConnectionsIsAborted) {
  auto first = Database::OpenInMemory(1);
  ASSERT_TRUE(first.ok());
  auto second = (*first)->Connect();
  ASSERT_TRUE(second.ok());
  Database& a = **first;
  Database& b = **second;
  ASSERT_TRUE(
      a.Execute("CREATE TABLE t (i BIGINT PRIMARY KEY, v BIGINT); INSERT INTO t VALUES (1, 0)")
          .ok());
  ASSERT_TRUE(a.Execute("BEGIN; UPDATE t SET v = 1 WHERE i = 1").ok());
  Status s = b.Execute("UPDATE t SET v = 2 WHERE i = 1");
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_TRUE(s.IsRetryable());
  ASSERT_TRUE(a.Execute("COMMIT").ok());
  EXPECT_TRUE(b.Execute("UPDATE t SET v = 2 WHERE i = 1").ok());
}

TEST(Database, ConnectionOutlivesTheDatabaseThatMadeIt) {
  auto first = Database::OpenInMemory(1);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Execute("CREATE TABLE t AS SELECT 7 AS i").ok());
  auto second = (*first)->Connect();
  ASSERT_TRUE(second.ok());
  first->reset();
  EXPECT_EQ(CountOf(**second, "SELECT i FROM t"), 7);
}

TEST(Database, InterruptStopsARunningQueryWithCancelled) {
  auto db = Open();
  std::atomic<bool> done{false};
  Status s;
  std::thread query([&] {
    s = db->Query("SELECT count(*) FROM range(100000000) a, range(100000000) b", [](const Row&) {});
    done = true;
  });
  auto start = std::chrono::steady_clock::now();
  // Interrupt until it stops: the first call may come before the statement starts.
  while (!done && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    db->Interrupt();
  }
  query.join();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // The connection serves the next statement.
  EXPECT_EQ(CountOf(*db, "SELECT 42"), 42);
}

TEST(Database, InterruptWithNothingRunningLeavesTheNextStatementAlone) {
  auto db = Open();
  db->Interrupt();
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM range(1000000)"), 1000000);
  EXPECT_TRUE(db->Execute("CREATE TABLE t AS SELECT 1 AS i").ok());
}

TEST(Database, QueryNamesTheColumnsBeforeTheRows) {
  auto db = Open();
  std::vector<Column> columns;
  int rows_before_columns = 0;
  int rows = 0;
  Status s = db->Query(
      "SELECT 1::BIGINT AS n, 'x' AS s, TIMESTAMP '2024-01-02 03:04:05.678' AS t, "
      "'{\"a\":1}'::JSON AS j, true AS b, [1, 2] AS l",
      [&](std::span<const Column> c) {
        rows_before_columns = rows;
        columns.assign(c.begin(), c.end());
      },
      [&](const Row& row) {
        ++rows;
        EXPECT_EQ(row.TimestampMicros(2), int64_t{1704164645678000});
        EXPECT_EQ(row.Text(3), "{\"a\":1}");
        EXPECT_TRUE(row.Bool(4));
      });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rows_before_columns, 0);
  EXPECT_EQ(rows, 1);
  ASSERT_EQ(columns.size(), 6u);
  EXPECT_EQ(columns[0].name, "n");
  EXPECT_EQ(columns[0].type, ColumnType::kBigInt);
  EXPECT_EQ(columns[1].type, ColumnType::kVarchar);
  EXPECT_EQ(columns[2].type, ColumnType::kTimestamp);
  EXPECT_EQ(columns[3].type, ColumnType::kJson);
  EXPECT_EQ(columns[4].type, ColumnType::kBoolean);
  EXPECT_EQ(columns[5].name, "l");
  EXPECT_EQ(columns[5].type, ColumnType::kOther);
}

// ---- Classify

std::vector<std::string> KindNames(Database& db, std::string_view sql) {
  auto kinds = db.Classify(sql);
  EXPECT_TRUE(kinds.ok()) << sql << ": " << kinds.status().ToString();
  std::vector<std::string> names;
  if (kinds.ok()) {
    for (StatementKind k : *kinds) names.emplace_back(StatementKindName(k));
  }
  return names;
}

TEST(Classify, QueriesAreSelect) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE t (i BIGINT)").ok());
  using V = std::vector<std::string>;
  EXPECT_EQ(KindNames(*db, "SELECT 1"), V{"SELECT"});
  EXPECT_EQ(KindNames(*db, "WITH x AS (SELECT i FROM t) SELECT * FROM x"), V{"SELECT"});
  EXPECT_EQ(KindNames(*db, "FROM t"), V{"SELECT"});
  EXPECT_EQ(KindNames(*db, "VALUES (1), (2)"), V{"SELECT"});
  EXPECT_EQ(KindNames(*db, "DESCRIBE t"), V{"SELECT"});
  EXPECT_EQ(KindNames(*db, "PRAGMA show_tables"), V{"SELECT"});
}

TEST(Classify, OtherStatementsAreNotSelect) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE t (i BIGINT)").ok());
  using V = std::vector<std::string>;
  EXPECT_EQ(KindNames(*db, "INSERT INTO t VALUES (1)"), V{"INSERT"});
  EXPECT_EQ(KindNames(*db, "COPY t TO '/tmp/never-written.parquet' (FORMAT parquet)"), V{"COPY"});
  EXPECT_EQ(KindNames(*db, "COPY (SELECT 1) TO '/tmp/never-written.csv'"), V{"COPY"});
  EXPECT_EQ(KindNames(*db, "ATTACH '/tmp/never-attached.duckdb' AS other"), V{"ATTACH"});
  EXPECT_EQ(KindNames(*db, "CREATE TABLE u (i BIGINT)"), V{"CREATE"});
  EXPECT_EQ(KindNames(*db, "PRAGMA enable_progress_bar"), V{"PRAGMA"});
  EXPECT_EQ(KindNames(*db, "PRAGMA threads = 1"), V{"SET"});  // DuckDB reads it as SET
  EXPECT_EQ(KindNames(*db, "SET threads = 1"), V{"SET"});
  EXPECT_EQ(KindNames(*db, "CHECKPOINT"), V{"CALL"});
  EXPECT_EQ(KindNames(*db, "INSTALL spatial"), V{"LOAD"});
  EXPECT_EQ(KindNames(*db, "LOAD spatial"), V{"LOAD"});
  EXPECT_EQ(KindNames(*db, "EXPLAIN SELECT * FROM t"), V{"EXPLAIN"});
  EXPECT_EQ(KindNames(*db, "UPDATE t SET i = 2"), V{"UPDATE"});
  EXPECT_EQ(KindNames(*db, "DELETE FROM t"), V{"DELETE"});
  EXPECT_EQ(KindNames(*db, "DROP TABLE t"), V{"DROP"});
  EXPECT_EQ(KindNames(*db, "BEGIN"), V{"TRANSACTION"});
  // Nothing ran: no table u, t still there and empty, no file written.
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'u'"), 0);
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM t"), 0);
  EXPECT_FALSE(std::filesystem::exists("/tmp/never-written.parquet"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/never-attached.duckdb"));
}

TEST(Classify, SeveralStatementsGiveEachKindInOrder) {
  auto db = Open();
  ASSERT_TRUE(db->Execute("CREATE TABLE t (i BIGINT)").ok());
  EXPECT_EQ(KindNames(*db, "SELECT 1; INSERT INTO t VALUES (1); SET threads = 2; FROM t;"),
            (std::vector<std::string>{"SELECT", "INSERT", "SET", "SELECT"}));
  EXPECT_TRUE(KindNames(*db, "  -- nothing\n").empty());
}

TEST(Classify, WhatDoesNotParseOrBindIsInvalidArgument) {
  auto db = Open();
  auto kinds = db->Classify("SELEC 1");
  ASSERT_FALSE(kinds.ok());
  EXPECT_EQ(kinds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kinds.status().message().find("syntax error"), std::string::npos)
      << kinds.status().ToString();
  kinds = db->Classify("SELECT 1; SELECT * FROM no_such_table");
  ASSERT_FALSE(kinds.ok());
  EXPECT_EQ(kinds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kinds.status().message().find("no_such_table"), std::string::npos)
      << kinds.status().ToString();
  // Binding reads a file's schema: a missing file does not bind.
  kinds = db->Classify("SELECT * FROM read_parquet('/nonexistent/*.parquet')");
  ASSERT_FALSE(kinds.ok());
  EXPECT_EQ(kinds.status().code(), StatusCode::kInvalidArgument) << kinds.status().ToString();
}

// ---- Batch scans

using BT = ColumnBatch::Type;

const std::vector<std::pair<std::string, BT>> kEveryType = {
    {"i", BT::kBigInt},  {"d", BT::kDouble},      {"s", BT::kVarchar},
    {"b", BT::kBoolean}, {"t", BT::kTimestampMs}, {"j", BT::kJson},
};

// Row r of a batch of every type: some values null, strings of both sides of DuckDB's 12-byte
// inline limit. Appends it and returns it as Render would print it.
std::string AppendEveryType(ColumnBatch& batch, int64_t r) {
  std::string expected;
  if (r % 7 == 3) {
    batch.AppendNull(0);
    expected += "null";
  } else {
    int64_t v = r % 2 == 0 ? r * 1000003 : -r;
    batch.AppendInt(0, v);
    expected += std::to_string(v);
  }
  expected += "|";
  if (r % 5 == 1) {
    batch.AppendNull(1);
    expected += "null";
  } else {
    double d = static_cast<double>(r) / 3.0;
    batch.AppendDouble(1, d);
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.17g", d);
    expected += buffer;
  }
  expected += "|";
  if (r % 11 == 2) {
    batch.AppendNull(2);
    expected += "null";
  } else {
    std::string text = r % 3 == 0 ? "s" + std::to_string(r)
                                  : "a string longer than twelve bytes, row " + std::to_string(r);
    if (r % 13 == 0) text.clear();
    batch.AppendText(2, text);
    expected += text;
  }
  expected += "|";
  if (r % 17 == 5) {
    batch.AppendNull(3);
    expected += "null";
  } else {
    batch.AppendBool(3, r % 2 == 1);
    expected += r % 2 == 1 ? "true" : "false";
  }
  expected += "|";
  if (r % 19 == 7) {
    batch.AppendNull(4);
    expected += "null";
  } else {
    int64_t ms = 1700000000000 + r * 1001 - (r % 2) * 3000000000000;
    batch.AppendInt(4, ms);
    expected += "ts:" + std::to_string(ms * 1000);
  }
  expected += "|";
  if (r % 23 == 9) {
    batch.AppendNull(5);
    expected += "null";
  } else {
    std::string json = "{\"row\":" + std::to_string(r) + ",\"tag\":\"é\"}";
    batch.AppendText(5, json);
    expected += json;
  }
  return expected;
}

TEST(BatchScan, EveryTypeRoundTripsThroughSelect) {
  auto db = Open();
  ColumnBatch batch(kEveryType);
  std::vector<std::string> expected;
  for (int64_t r = 0; r < 60; ++r) expected.push_back(AppendEveryType(batch, r));
  ASSERT_EQ(batch.rows(), 60u);
  ASSERT_TRUE(db->RegisterBatchScan("batch", &batch).ok());
  std::vector<Column> columns;
  EXPECT_EQ(RenderedRows(*db, "SELECT * FROM batch()", &columns), expected);
  ASSERT_EQ(columns.size(), 6u);
  std::vector<ColumnType> types;
  for (const Column& c : columns) types.push_back(c.type);
  EXPECT_EQ(types, (std::vector<ColumnType>{ColumnType::kBigInt, ColumnType::kDouble,
                                            ColumnType::kVarchar, ColumnType::kBoolean,
                                            ColumnType::kTimestamp, ColumnType::kJson}));
  EXPECT_EQ(columns[4].name, "t");
  // JSON functions apply to the JSON column.
  EXPECT_EQ(CountOf(*db,
                    "SELECT count(*) FROM batch() WHERE j->>'$.tag' = 'é' AND "
                    "json_extract(j, '$.row')::BIGINT = 10"),
            1);
}

TEST(BatchScan, EveryTypeRoundTripsThroughParquet) {
  ScratchDir dir;
  auto db = Open();
  ColumnBatch batch(kEveryType);
  std::vector<std::string> expected;
  for (int64_t r = 0; r < 5000; ++r) expected.push_back(AppendEveryType(batch, r));
  ASSERT_TRUE(db->RegisterBatchScan("batch", &batch).ok());
  const std::string file = (dir / "f.parquet").string();
  Status s = db->Execute("COPY (SELECT * FROM batch()) TO '" + file +
                         "' (FORMAT parquet, COMPRESSION zstd)");
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<Column> columns;
  EXPECT_EQ(RenderedRows(*db, "SELECT * FROM read_parquet('" + file + "')", &columns), expected);
  std::vector<ColumnType> types;
  for (const Column& c : columns) types.push_back(c.type);
  EXPECT_EQ(types, (std::vector<ColumnType>{ColumnType::kBigInt, ColumnType::kDouble,
                                            ColumnType::kVarchar, ColumnType::kBoolean,
                                            ColumnType::kTimestamp, ColumnType::kJson}));
}

TEST(BatchScan, ManyChunksAndAnEmptyBatch) {
  auto db = Open();
  ColumnBatch batch({{"i", BT::kBigInt}, {"s", BT::kVarchar}});
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM b()"), 0);
  EXPECT_TRUE(RenderedRows(*db, "SELECT * FROM b()").empty());

  // 2048 rows a chunk: three full chunks and a partial one; nulls on each side of the borders.
  const int64_t n = 3 * 2048 + 100;
  int64_t expected_sum = 0;
  int64_t expected_nulls = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (r % 2048 == 0 || r % 2048 == 2047 || r % 64 == 63) {
      batch.AppendNull(0);
      ++expected_nulls;
    } else {
      batch.AppendInt(0, r);
      expected_sum += r;
    }
    batch.AppendText(1, "row number " + std::to_string(r) + " of the batch");
  }
  std::vector<std::string> rows = RenderedRows(*db, "SELECT * FROM b()");
  ASSERT_EQ(rows.size(), static_cast<size_t>(n));
  for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{2047}, int64_t{2048}, int64_t{4095},
                    int64_t{6143}, int64_t{6144}, n - 1}) {
    std::string i =
        (r % 2048 == 0 || r % 2048 == 2047 || r % 64 == 63) ? "null" : std::to_string(r);
    EXPECT_EQ(rows[r], i + "|row number " + std::to_string(r) + " of the batch");
  }
  EXPECT_EQ(CountOf(*db, "SELECT sum(i)::BIGINT FROM b()"), expected_sum);
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM b() WHERE i IS NULL"), expected_nulls);
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM b()"), n);
  EXPECT_EQ(CountOf(*db, "SELECT count(DISTINCT s) FROM b()"), n);
}

TEST(BatchScan, RefilledBatchIsScannedAgain) {
  auto db = Open();
  ColumnBatch batch({{"i", BT::kBigInt}, {"s", BT::kVarchar}});
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  for (int round = 0; round < 3; ++round) {
    batch.Clear();
    std::vector<std::string> expected;
    for (int64_t r = 0; r < 3000; ++r) {
      int64_t v = round * 10000 + r;
      batch.AppendInt(0, v);
      std::string text = "round " + std::to_string(round) + " row " + std::to_string(r);
      batch.AppendText(1, text);
      expected.push_back(std::to_string(v) + "|" + text);
    }
    EXPECT_EQ(RenderedRows(*db, "SELECT * FROM b()"), expected) << "round " << round;
  }
  // Other columns under the same name: a statement prepared after the change sees them.
  batch.Reset({{"flag", BT::kBoolean}});
  batch.AppendBool(0, true);
  EXPECT_EQ(RenderedRows(*db, "SELECT * FROM b()"), (std::vector<std::string>{"true"}));
}

TEST(BatchScan, ARefillStreamsMoreRowsThanTheBatchHoldsAndItsErrorFailsTheStatement) {
  auto db = Open();
  ColumnBatch batch({{"i", BT::kBigInt}});
  int refills = 0;
  int64_t next = 0;
  // Five fills of 3000 rows (the first one before the statement), then empty.
  auto fill = [&] {
    batch.Clear();
    if (refills++ >= 5) return Status::OK();
    for (int r = 0; r < 3000; ++r) batch.AppendInt(0, next++);
    return Status::OK();
  };
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch, fill).ok());
  ASSERT_TRUE(fill().ok());
  EXPECT_EQ(RenderedRows(*db, "SELECT count(*), sum(i)::BIGINT, min(i), max(i) FROM b()"),
            (std::vector<std::string>{"15000|112492500|0|14999"}));
  EXPECT_EQ(refills, 6);
  // Rows go through in order across refills.
  refills = 0;
  next = 0;
  ASSERT_TRUE(fill().ok());
  EXPECT_EQ(CountOf(*db,
                    "SELECT count(*) FROM (SELECT i, lag(i) OVER () AS before FROM b()) "
                    "WHERE before IS NOT NULL AND i <> before + 1"),
            0);
  // A refill that fails, or changes the columns, fails the statement with why.
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch, [&] {
                  return Status::IOError("the log went away");
                }).ok());
  Status s = db->Query("SELECT count(*) FROM b()", [](const Row&) {});
  EXPECT_NE(s.message().find("the log went away"), std::string::npos) << s.ToString();
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch, [&] {
                  batch.Reset({{"other", BT::kDouble}});
                  batch.AppendDouble(0, 1);
                  return Status::OK();
                }).ok());
  batch.Reset({{"i", BT::kBigInt}});
  batch.AppendInt(0, 1);
  s = db->Query("SELECT count(*) FROM b()", [](const Row&) {});
  EXPECT_NE(s.message().find("columns changed"), std::string::npos) << s.ToString();
}

TEST(BatchScan, ColumnsOfUnequalLengthFailTheStatement) {
  auto db = Open();
  ColumnBatch batch({{"i", BT::kBigInt}, {"s", BT::kVarchar}});
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  batch.AppendInt(0, 1);
  batch.AppendText(1, "one");
  batch.AppendInt(0, 2);
  Status s = db->Query("SELECT * FROM b()", [](const Row&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("column s has 1 values, column i has 2"), std::string::npos)
      << s.ToString();
  s = db->Execute("COPY (SELECT * FROM b()) TO '/tmp/weir-never-written.parquet' (FORMAT parquet)");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  // Fixed, it scans.
  batch.AppendText(1, "two");
  EXPECT_EQ(RenderedRows(*db, "SELECT * FROM b()"), (std::vector<std::string>{"1|one", "2|two"}));
}

TEST(BatchScan, ColumnsChangedAfterPrepareFailTheStatement) {
  auto db = Open();
  ColumnBatch batch({{"i", BT::kBigInt}});
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  ASSERT_TRUE(db->Execute("PREPARE scan AS SELECT * FROM b()").ok());
  batch.Reset({{"s", BT::kVarchar}});
  batch.AppendText(0, "x");
  Status s = db->Execute("EXECUTE scan");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("changed since the statement was prepared"), std::string::npos)
      << s.ToString();
  // Prepared again, it reads the new columns.
  ASSERT_TRUE(db->Execute("DEALLOCATE scan; PREPARE scan AS SELECT * FROM b()").ok());
  EXPECT_TRUE(db->Execute("EXECUTE scan").ok());
}

TEST(BatchScan, NameIsSharedByConnectionsAndRepointedByRegisteringAgain) {
  auto db = Open();
  ColumnBatch first({{"i", BT::kBigInt}});
  first.AppendInt(0, 5);
  ASSERT_TRUE(db->RegisterBatchScan("b", &first).ok());
  auto other = db->Connect();
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(CountOf(**other, "SELECT i FROM b()"), 5);
  ColumnBatch second({{"i", BT::kBigInt}});
  second.AppendInt(0, 6);
  ASSERT_TRUE((*other)->RegisterBatchScan("B", &second).ok());
  EXPECT_EQ(CountOf(*db, "SELECT i FROM b()"), 6);
  EXPECT_EQ(CountOf(**other, "SELECT i FROM b()"), 6);

  Status s = db->RegisterBatchScan("range", &first);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists) << s.ToString();
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM range(3)"), 3);
}

TEST(BatchScan, UnregisteredNameFailsStatementsUntilRegisteredAgain) {
  auto db = Open();
  {
    ColumnBatch gone({{"i", BT::kBigInt}});
    gone.AppendInt(0, 1);
    ASSERT_TRUE(db->RegisterBatchScan("b", &gone).ok());
    ASSERT_TRUE(db->UnregisterBatchScan("b").ok());
  }
  Status s = db->Query("SELECT * FROM b()", [](const Row&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("unregistered"), std::string::npos) << s.ToString();
  EXPECT_EQ(db->UnregisterBatchScan("never").code(), StatusCode::kNotFound);

  ColumnBatch again({{"s", BT::kVarchar}});
  again.AppendText(0, "back");
  ASSERT_TRUE(db->RegisterBatchScan("b", &again).ok());
  EXPECT_EQ(RenderedRows(*db, "SELECT * FROM b()"), (std::vector<std::string>{"back"}));
}

TEST(BatchScan, ReadsOnlyTheColumnsAStatementNeeds) {
  auto db = Open();
  ColumnBatch batch(kEveryType);
  for (int64_t r = 0; r < 3000; ++r) AppendEveryType(batch, r);
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  EXPECT_EQ(CountOf(*db, "SELECT count(*) FROM b()"), 3000);
  EXPECT_EQ(CountOf(*db, "SELECT count(t) FROM b()"), 3000 - (3000 + 11) / 19);
  std::vector<std::string> rows = RenderedRows(*db, "SELECT j, i FROM b() LIMIT 2");
  EXPECT_EQ(rows, (std::vector<std::string>{"{\"row\":0,\"tag\":\"é\"}|0",
                                            "{\"row\":1,\"tag\":\"é\"}|-1"}));
}

TEST(ColumnBatch, InvalidUtf8IsReplacedAndCounted) {
  auto db = Open();
  ColumnBatch batch({{"s", BT::kVarchar}});
  batch.AppendText(0, "caf\xC3\xA9");   // valid: é
  batch.AppendText(0, "bad \xFF end");  // a byte that is never UTF-8
  batch.AppendText(0, "cut \xE2\x82");  // a truncated sequence
  EXPECT_EQ(batch.invalid_utf8_strings(), 2u);
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  EXPECT_EQ(RenderedRows(*db, "SELECT * FROM b()"),
            (std::vector<std::string>{"caf\xC3\xA9", "bad \xEF\xBF\xBD end",
                                      "cut \xEF\xBF\xBD\xEF\xBF\xBD"}));
  batch.Clear();
  EXPECT_EQ(batch.invalid_utf8_strings(), 0u);
}

TEST(ColumnBatch, TimestampsBeyondDuckDbsRangeAreClamped) {
  auto db = Open();
  ColumnBatch batch({{"t", BT::kTimestampMs}});
  batch.AppendInt(0, INT64_MAX);
  batch.AppendInt(0, INT64_MIN);
  batch.AppendInt(0, 0);
  ASSERT_TRUE(db->RegisterBatchScan("b", &batch).ok());
  EXPECT_EQ(
      RenderedRows(*db, "SELECT * FROM b()"),
      (std::vector<std::string>{"ts:9223372036854775000", "ts:-9223372022400000000", "ts:0"}));
}

TEST(ColumnBatch, AppendingTheWrongTypeStopsTheProcess) {
  ColumnBatch batch({{"s", BT::kVarchar}});
  EXPECT_DEATH(batch.AppendInt(0, 1), "AppendInt to column s of type VARCHAR");
  EXPECT_DEATH(batch.AppendText(1, "x"), "no column 1");
}

TEST(BatchScan, BlobBytesRoundTripThroughParquetUnchanged) {
  ScratchDir dir;
  ColumnBatch batch({{"o", BT::kBigInt}, {"v", BT::kBlob}});
  const std::vector<std::string> values = {std::string("\xff\xfe not utf-8 \x80", 14),
                                           std::string("a\0b", 3), "", "{\"json\":true}",
                                           std::string(100, '\xc3')};
  for (size_t i = 0; i < values.size(); ++i) {
    batch.AppendInt(0, static_cast<int64_t>(i));
    batch.AppendBytes(1, values[i]);
  }
  batch.AppendInt(0, 99);
  batch.AppendNull(1);
  auto db = Open();
  ASSERT_TRUE(db->RegisterBatchScan("batch", &batch).ok());
  const std::string file = (dir / "b.parquet").string();
  ASSERT_TRUE(db->Execute("COPY (SELECT * FROM batch()) TO '" + file + "' (FORMAT parquet)").ok());
  std::vector<std::optional<std::string>> read;
  ASSERT_TRUE(
      db->Query("SELECT o, v FROM read_parquet('" + file + "') ORDER BY o", [&](const Row& row) {
          EXPECT_EQ(row.type(1), ColumnType::kBlob);
          read.push_back(row.IsNull(1) ? std::nullopt : std::optional(std::string(row.Text(1))));
        }).ok());
  ASSERT_EQ(read.size(), values.size() + 1);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(read[i], values[i]) << i;
  EXPECT_FALSE(read.back().has_value());
  EXPECT_DEATH(batch.AppendText(1, "x"), "AppendText");
}

}  // namespace
}  // namespace weir::sql
