// The lake against a real log on disk and real DuckDB: views, partitions, the catalog's rules,
// read-only queries, staleness, merges and the sweep.
#include "lake/lake.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "lake/records.h"
#include "log/log.h"
#include "testing/temp_dir.h"

namespace weir::lake {
namespace {

using weir::testing::TempDir;

class LakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions o;
    o.dir = dir_.path() / "log";
    auto log = log::LogStore::Open(o);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    OpenLake();
  }

  void OpenLake(LakeOptions options = {}) {
    lake_.reset();
    options.dir = dir_.path() / "lake";
    auto lake = Lake::Open(*log_, std::move(options));
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  log::Topic& Topic(const std::string& name, int32_t partitions = 1) {
    auto topic = log_->GetOrCreateTopic(name, {.partitions = partitions});
    EXPECT_TRUE(topic.ok()) << topic.status().ToString();
    return **topic;
  }

  // Appends JSON values to a partition, durable and visible on return.
  void Append(log::Topic& topic, const std::vector<std::string>& values, int32_t p = 0,
              int64_t ts = 1000) {
    log::RecordBatchBuilder b;
    for (const std::string& v : values) b.AddRaw(EventTime(ts++), KeySerde::kString, "k", v);
    auto appended = topic.partition(PartitionId(p)).Append(b, log::Durability::kWaitDurable);
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  }

  // Appends three bursts of records (`burst(b)`: the values of burst b, at event times from
  // `ts(b)`), each in a span of its own (`span` of append time apart), then reopens the lake
  // sealing spans as soon as they close (`options`' other fields kept).
  void AppendInThreeSpans(log::Topic& topic, std::chrono::milliseconds span,
                          const std::function<std::vector<std::string>(int)>& burst,
                          const std::function<int64_t(int)>& ts, LakeOptions options = {}) {
    for (int b = 0; b < 3; ++b) {
      Append(topic, burst(b), 0, ts(b));
      std::this_thread::sleep_for(span + std::chrono::milliseconds(50));
    }
    options.materialize.seal_grace = std::chrono::milliseconds(0);
    OpenLake(options);
  }
  static int64_t AtOneSecond(int) { return 1000; }

  // The query's rows as lines of cells joined by '|' (NULL as "NULL").
  std::vector<std::string> Rows(const std::string& sql, QueryOptions options = {}) {
    std::vector<std::string> rows;
    QuerySink sink;
    sink.on_row = [&](std::span<const std::optional<std::string>> cells) {
      std::string line;
      for (size_t i = 0; i < cells.size(); ++i) line += (i ? "|" : "") + cells[i].value_or("NULL");
      rows.push_back(line);
    };
    Status s = lake_->Query(sql, options, sink);
    EXPECT_TRUE(s.ok()) << sql << ": " << s.ToString();
    return rows;
  }

  Status QueryStatus(const std::string& sql, QueryOptions options = {}) {
    QuerySink sink;
    sink.on_row = [](auto) {};
    return lake_->Query(sql, options, sink);
  }

  ViewSpec Spec(const std::string& name, const std::string& topic) {
    ViewSpec spec;
    spec.name = name;
    spec.topic = topic;
    return spec;
  }

  TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  std::unique_ptr<Lake> lake_;
};

TEST_F(LakeTest, AViewWithoutSqlHasTheRecordsFieldsAndTheirPositions) {
  log::Topic& clicks = Topic("clicks");
  Append(clicks, {R"({"page":"a","amount":2})", R"({"page":"b","amount":3.5,"_ts":1})"});
  ASSERT_TRUE(lake_->Register(Spec("clicks_view", "clicks")).ok());
  EXPECT_EQ(Rows("SELECT page, amount, _field_ts, _offset, _partition, _key, epoch_ms(_ts) "
                 "FROM clicks_view ORDER BY _offset"),
            (std::vector<std::string>{"a|2.0|NULL|0|0|k|1000", "b|3.5|1|1|0|k|1001"}));
  auto status = lake_->Describe("clicks_view");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->view.columns, (std::vector<ViewColumn>{{"page", ColumnKind::kVarchar},
                                                           {"amount", ColumnKind::kDouble},
                                                           {"_ts", ColumnKind::kBigInt}}));
  EXPECT_EQ(status->rows, 2);
}

// Values stored in the binary form (a repartition topic's) are the same records to a view.
TEST_F(LakeTest, AViewOfBinaryStoredValuesHasTheirFields) {
  log::Topic& internal = Topic("internal");
  log::RecordBatchBuilder b(log::ValueEncoding::kBinary);
  b.Add(EventTime(1000), Key::String("k"), *Value::Parse(R"({"page":"a","amount":2})"));
  b.Add(EventTime(1001), Key::String("k"), *Value::Parse(R"({"page":"b","amount":3.5})"));
  ASSERT_TRUE(internal.partition(PartitionId(0)).Append(b, log::Durability::kWaitDurable).ok());
  ASSERT_TRUE(lake_->Register(Spec("internal_view", "internal")).ok());
  EXPECT_EQ(Rows("SELECT page, amount, _offset FROM internal_view ORDER BY _offset"),
            (std::vector<std::string>{"a|2.0|0", "b|3.5|1"}));
}

TEST_F(LakeTest, RecordsThatDoNotFitTheColumnsAreDeadLetteredAndTheRestWritten) {
  log::Topic& t = Topic("orders");
  Append(t, {R"({"id":1,"price":10})", R"({"id":"two","price":20})", "not json",
             R"({"id":3,"price":30})"});
  ViewSpec spec = Spec("orders_view", "orders");
  spec.columns = {{"id", ColumnKind::kBigInt}, {"price", ColumnKind::kDouble}};
  ASSERT_TRUE(lake_->Register(spec).ok());
  EXPECT_EQ(Rows("SELECT id, price FROM orders_view ORDER BY id"),
            (std::vector<std::string>{"1|10.0", "3|30.0"}));
  auto dlq = log_->GetTopic("lake.orders_view.dlq");
  ASSERT_TRUE(dlq.ok());
  log::PartitionReader reader((*dlq)->partition(PartitionId(0)), Offset(0));
  auto dead = reader.Next();
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_NE((*dead)[0].value.find("does not fit column type bigint"), std::string_view::npos)
      << (*dead)[0].value;
  EXPECT_NE((*dead)[1].value.find("not valid JSON"), std::string_view::npos) << (*dead)[1].value;
  // Queried again: nothing new is written and nothing is dead-lettered twice.
  EXPECT_EQ(Rows("SELECT count(*) FROM orders_view"), (std::vector<std::string>{"2"}));
  EXPECT_EQ((*dlq)->partition(PartitionId(0)).NextOffset().value(), 2);
}

TEST_F(LakeTest, ARebuildForANewSchemaDeadLettersTheRecordsThatNoLongerFit) {
  log::Topic& t = Topic("prices");
  Append(t, {R"({"id":1,"price":10})", R"({"id":2,"price":2.5})", R"({"id":"three"})"});
  ViewSpec spec = Spec("prices_view", "prices");
  spec.columns = {{"id", ColumnKind::kBigInt}, {"price", ColumnKind::kDouble}};
  ASSERT_TRUE(lake_->Register(spec).ok());
  EXPECT_EQ(Rows("SELECT count(*) FROM prices_view"), (std::vector<std::string>{"2"}));
  auto dlq = log_->GetTopic("lake.prices_view.dlq");
  ASSERT_TRUE(dlq.ok());
  log::Partition& dead_letters = (*dlq)->partition(PartitionId(0));
  EXPECT_EQ(dead_letters.NextOffset().value(), 1);
  // The same schema rebuilt: nothing is sent again.
  ASSERT_TRUE(lake_->Rebuild("prices_view").ok());
  EXPECT_EQ(dead_letters.NextOffset().value(), 1);
  // price becomes a bigint: 2.5 no longer fits, and "three" fits no better than before.
  spec.columns = {{"id", ColumnKind::kBigInt}, {"price", ColumnKind::kBigInt}};
  ASSERT_TRUE(lake_->Register(spec).ok());
  EXPECT_EQ(Rows("SELECT id, price FROM prices_view"), (std::vector<std::string>{"1|10"}));
  log::PartitionReader reader(dead_letters, Offset(1));
  auto dead = reader.Next();
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 2u);
  EXPECT_NE((*dead)[0].value.find("2.5"), std::string_view::npos) << (*dead)[0].value;
  EXPECT_NE((*dead)[1].value.find("three"), std::string_view::npos) << (*dead)[1].value;
}

TEST_F(LakeTest, ADamagedFileIsWrittenAgainFromTheLogOrNamedWhenTheLogLostItsRange) {
  // Segments of 4 KiB, and records of 5: each burst of two fills its own segment, so the log
  // can drop the first burst alone.
  auto created = log_->GetOrCreateTopic("fragile", {.segment_bytes = 4096});
  ASSERT_TRUE(created.ok());
  log::Topic& t = **created;
  ViewSpec spec = Spec("fragile_view", "fragile");
  spec.partition = std::chrono::milliseconds(200);
  ASSERT_TRUE(lake_->Register(spec).ok());
  const std::string pad = ",\"pad\":\"" + std::string(5000, 'x') + "\"}";
  AppendInThreeSpans(
      t, spec.partition,
      [&](int b) {
        return std::vector<std::string>{"{\"n\":" + std::to_string(b) + pad, "{\"n\":10" + pad};
      },
      AtOneSecond);
  const std::vector<std::string> sum{"6|33"};
  EXPECT_EQ(Rows("SELECT count(*), sum(n) FROM fragile_view"), sum);
  auto files = [&] {
    std::vector<std::filesystem::path> paths;
    const Result<ViewStatus> status = lake_->Describe("fragile_view");
    for (const PartitionRecord& p : status->partitions) {
      paths.push_back(dir_.path() / "lake" / p.file);
    }
    return paths;
  };
  ASSERT_EQ(files().size(), 3u);
  // Gone, truncated, and its footer overwritten in place (same size: only reading tells).
  std::filesystem::remove(files()[0]);
  EXPECT_EQ(Rows("SELECT count(*), sum(n) FROM fragile_view"), sum);
  std::filesystem::resize_file(files()[1], 100);
  EXPECT_EQ(Rows("SELECT count(*), sum(n) FROM fragile_view"), sum);
  const std::filesystem::path overwritten = files()[2];
  {
    std::fstream f(overwritten, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-8, std::ios::end);
    f.write("garbage!", 8);
  }
  EXPECT_EQ(Rows("SELECT count(*), sum(n) FROM fragile_view"), sum);
  EXPECT_EQ(lake_->Describe("fragile_view")->partitions.size(), 3u);
  // The log no longer holds the first partition's range: the error names the file and why.
  const PartitionRecord lost = lake_->Describe("fragile_view")->partitions[0];
  ASSERT_TRUE(t.partition(PartitionId(0)).DeleteBefore(Offset(lost.end_offset)).ok());
  ASSERT_GT(t.partition(PartitionId(0)).FirstOffset().value(), lost.begin_offset);
  std::filesystem::remove(dir_.path() / "lake" / lost.file);
  Status s = QueryStatus("SELECT count(*) FROM fragile_view");
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find(lost.file), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("is missing"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("no longer holds its offsets [0, 2)"), std::string::npos)
      << s.ToString();
}

TEST_F(LakeTest, AWriteRefusedForSpaceCommitsNothingAndTheNextUpdateWritesIt) {
  log::Topic& t = Topic("big");
  // 800 records of 10 KB of random hex: a partition of megabytes, even compressed.
  std::mt19937_64 rng(7);
  std::vector<std::string> values;
  for (int i = 0; i < 800; ++i) {
    std::string blob(10'000, '0');
    for (char& c : blob) c = "0123456789abcdef"[rng() % 16];
    values.push_back("{\"n\":" + std::to_string(i) + ",\"blob\":\"" + blob + "\"}");
  }
  Append(t, values);
  ASSERT_TRUE(lake_->Register(Spec("big_view", "big")).ok());
  // Files may not grow past 1 MiB beyond the catalog's size (RLIMIT_FSIZE: a write past it fails
  // with EFBIG, as one on a full disk fails with ENOSPC).
  const auto catalog_bytes = std::filesystem::file_size(dir_.path() / "lake" / "catalog.duckdb");
  rlimit unlimited{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &unlimited), 0);
  std::signal(SIGXFSZ, SIG_IGN);
  const rlimit limited{.rlim_cur = catalog_bytes + (1 << 20), .rlim_max = unlimited.rlim_max};
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  Status refused = lake_->Update("big_view", true);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &unlimited), 0);
  EXPECT_TRUE(refused.code() == StatusCode::kResourceExhausted ||
              refused.code() == StatusCode::kIOError)
      << refused.ToString();
  EXPECT_NE(refused.message().find("File too large"), std::string::npos) << refused.ToString();
  // Nothing committed, no file left behind; the next update writes it all.
  EXPECT_TRUE(lake_->Describe("big_view")->partitions.empty());
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path() / "lake")) {
    EXPECT_NE(entry.path().extension(), ".parquet") << entry.path();
  }
  EXPECT_EQ(Rows("SELECT count(*), sum(n), sum(length(blob)) FROM big_view"),
            (std::vector<std::string>{"800|319600|8000000"}));
}

TEST_F(LakeTest, ASqlTransformShapesTheFilesAndAFilteredOutRangeIsAnEmptyPartition) {
  log::Topic& t = Topic("events");
  Append(t, {R"({"kind":"view","n":1})", R"({"kind":"buy","n":2})", R"({"kind":"buy","n":5})"});
  ViewSpec spec = Spec("buys", "events");
  spec.sql = "SELECT n * 10 AS n10 FROM records WHERE kind = 'buy'";
  ASSERT_TRUE(lake_->Register(spec).ok());
  EXPECT_EQ(Rows("SELECT n10 FROM buys ORDER BY n10"), (std::vector<std::string>{"20", "50"}));
  Append(t, {R"({"kind":"view","n":7})"});
  EXPECT_EQ(Rows("SELECT count(*) FROM buys"), (std::vector<std::string>{"2"}));
  auto status = lake_->Describe("buys");
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->partitions.size(), 2u);
  EXPECT_EQ(status->partitions[1].rows, 0);
  EXPECT_TRUE(status->partitions[1].file.empty());
  EXPECT_EQ(status->partitions[1].begin_offset, 3);
  EXPECT_EQ(status->partitions[1].end_offset, 4);
}

TEST_F(LakeTest, AViewWhoseSqlDoesNotBindIsRefusedAtRegistration) {
  log::Topic& t = Topic("events");
  Append(t, {R"({"kind":"view"})"});
  ViewSpec spec = Spec("bad", "events");
  spec.columns = {{"kind", ColumnKind::kVarchar}};
  spec.sql = "SELECT no_such_column FROM records";
  Status s = lake_->Register(spec);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("no_such_column"), std::string::npos) << s.ToString();
}

TEST_F(LakeTest, SpansSealByAppendTimeAndLaterSpansNeverReopenThem) {
  log::Topic& t = Topic("spans");
  ViewSpec spec = Spec("spans_view", "spans");
  spec.partition = std::chrono::seconds(1);
  spec.sort = {"n"};
  spec.order = ScanOrder::kFile;
  ASSERT_TRUE(lake_->Register(spec).ok());
  Append(t, {R"({"n":3})", R"({"n":1})"});
  EXPECT_EQ(Rows("SELECT count(*) FROM spans_view"), (std::vector<std::string>{"2"}));
  Append(t, {R"({"n":2})"});  // same span, most likely: an open piece more
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  Append(t, {R"({"n":0})"}, 0, /*ts=*/1);  // a late event: appended in a later span
  Status updated = lake_->Update("spans_view", true);
  ASSERT_TRUE(updated.ok()) << updated.ToString();
  auto status = lake_->Describe("spans_view");
  ASSERT_TRUE(status.ok());
  ASSERT_GE(status->partitions.size(), 2u);
  const PartitionRecord& first = status->partitions.front();
  EXPECT_TRUE(first.sealed);
  EXPECT_EQ(first.sort_order, "n");
  EXPECT_EQ(status->partitions.back().begin_offset, 3);
  EXPECT_EQ(status->partitions.back().event_min_ms, 1);
  int64_t covered = 0;
  for (const PartitionRecord& p : status->partitions) covered += p.end_offset - p.begin_offset;
  EXPECT_EQ(covered, 4);
  EXPECT_EQ(Rows("SELECT list(n ORDER BY n) FROM spans_view"),
            (std::vector<std::string>{"[0, 1, 2, 3]"}));
}

TEST_F(LakeTest, TheCatalogRefusesOverlappingPartitionsAndKeepsCommitsAcrossReopen) {
  log::Topic& t = Topic("c");
  Append(t, {R"({"a":1})", R"({"a":2})"});
  ASSERT_TRUE(lake_->Register(Spec("cv", "c")).ok());
  ASSERT_TRUE(lake_->Update("cv", true).ok());
  auto catalog = Catalog::Open(dir_.path() / "other-lake");
  ASSERT_TRUE(catalog.ok());
  PartitionRecord p{.view = "v",
                    .instance = 1,
                    .source_hash = "0000000000000000",
                    .begin_offset = 0,
                    .end_offset = 10};
  ASSERT_TRUE((*catalog)->Commit("v", {p}, {}, 1).ok());
  PartitionRecord overlapping = p;
  overlapping.instance = 2;
  overlapping.begin_offset = 9;
  overlapping.end_offset = 12;
  Status s = (*catalog)->Commit("v", {overlapping}, {}, 2);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  // Retiring the one it overlaps in the same commit is a replacement, which is allowed.
  ASSERT_TRUE((*catalog)->Commit("v", {overlapping}, {1}, 3).ok());
  catalog->reset();
  auto reopened = Catalog::Open(dir_.path() / "other-lake");
  ASSERT_TRUE(reopened.ok());
  auto live = (*reopened)->LivePartitions("v");
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].instance, 2);
  EXPECT_GE((*reopened)->NextInstance(), 3);
  // A file name is never used twice: not after the highest instance is retired and forgotten.
  PartitionRecord highest = p;
  highest.instance = 90;
  highest.begin_offset = 12;
  highest.end_offset = 14;
  ASSERT_TRUE((*reopened)->Commit("v", {highest}, {}, 4).ok());
  ASSERT_TRUE((*reopened)->Commit("v", {}, {90}, 5).ok());
  ASSERT_TRUE((*reopened)->Forget((*reopened)->RetiredBefore(5)).ok());
  reopened->reset();
  auto after_forget = Catalog::Open(dir_.path() / "other-lake");
  ASSERT_TRUE(after_forget.ok());
  EXPECT_EQ((*after_forget)->LivePartitions("v").size(), 1u);
  EXPECT_GT((*after_forget)->NextInstance(), 90);
  // The lake itself, reopened, answers the same.
  OpenLake();
  EXPECT_EQ(Rows("SELECT sum(a) FROM cv"), (std::vector<std::string>{"3"}));
}

TEST_F(LakeTest, QueriesAreReadOnlyAndStayInTheLake) {
  log::Topic& t = Topic("ro");
  Append(t, {R"({"a":1})"});
  ASSERT_TRUE(lake_->Register(Spec("rv", "ro")).ok());
  for (const char* sql :
       {"INSERT INTO rv VALUES (1)", "COPY rv TO '/tmp/x.csv'", "ATTACH '/tmp/x.db'",
        "CREATE TABLE x (a INT)", "SET memory_limit = '100GB'", "INSTALL httpfs",
        "SELECT 1; SELECT 2", "PRAGMA version"}) {
    Status s = QueryStatus(sql);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << sql << ": " << s.ToString();
  }
  // Refused for what they are, before any name is looked up (the table need not exist).
  for (const char* sql : {"INSERT INTO nowhere VALUES (1)", "DROP TABLE nowhere"}) {
    Status s = QueryStatus(sql);
    EXPECT_EQ(s.message(),
              "a lake query is one SELECT (or WITH ... SELECT) statement; this is a statement of "
              "another kind")
        << sql;
  }
  EXPECT_NE(QueryStatus("SELECT 1; SELECT 2").message().find("2 statements"), std::string::npos);
  EXPECT_NE(QueryStatus("SELEC 1").message().find("does not parse"), std::string::npos);
  for (const char* sql :
       {"SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM read_parquet('/tmp/*.parquet')"}) {
    Status s = QueryStatus(sql);
    EXPECT_FALSE(s.ok()) << sql;
  }
  EXPECT_EQ(Rows("SELECT a FROM rv"), (std::vector<std::string>{"1"}));
}

TEST_F(LakeTest, AQueryBeyondTheMemoryLimitFailsAndTheNextOneRuns) {
  LakeOptions options;
  options.query_memory_limit = "64MB";
  OpenLake(options);
  Status s = QueryStatus(
      "SELECT count(DISTINCT range::VARCHAR || 'padding to be kept') "
      "FROM range(20000000)");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(Rows("SELECT 41 + 1"), (std::vector<std::string>{"42"}));
  // A sort larger than the limit spills to DuckDB's temp folder and answers.
  EXPECT_EQ(Rows("SELECT sum(x) FROM (SELECT range * 7 % 1000003 AS x, repeat('p', 40) AS pad "
                 "FROM range(3000000) ORDER BY x, pad LIMIT 2000000)"),
            (std::vector<std::string>{"666665666667"}));  // the 2M smallest x, summed
}

TEST_F(LakeTest, AQueryPastItsTimeLimitOrCancelledIsStopped) {
  QueryOptions options;
  options.timeout = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  Status s = QueryStatus("SELECT count(*) FROM range(100000000) a, range(100000000) b", options);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  // Cancelled by its caller (a client gone) long before its time limit.
  QueryOptions cancelled;
  const auto cancel_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  cancelled.cancelled = [&] { return std::chrono::steady_clock::now() >= cancel_at; };
  s = QueryStatus("SELECT count(*) FROM range(100000000) a, range(100000000) b", cancelled);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - cancel_at, std::chrono::seconds(30));
}

TEST_F(LakeTest, ANewVersionMakesPartitionsStaleAndTheyAreRebuiltFromTheLog) {
  log::Topic& t = Topic("v");
  Append(t, {R"({"a":1})", R"({"a":2})"});
  ViewSpec spec = Spec("vv", "v");
  spec.sql = "SELECT a FROM records";
  spec.columns = {{"a", ColumnKind::kBigInt}};
  ASSERT_TRUE(lake_->Register(spec).ok());
  EXPECT_EQ(Rows("SELECT sum(a) FROM vv"), (std::vector<std::string>{"3"}));
  spec.version = 2;
  spec.sql = "SELECT a * 100 AS a FROM records";
  ASSERT_TRUE(lake_->Register(spec).ok());
  auto before = lake_->Describe("vv");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->stale, 1);
  EXPECT_EQ(Rows("SELECT sum(a) FROM vv"), (std::vector<std::string>{"300"}));
  auto after = lake_->Describe("vv");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->stale, 0);
  ASSERT_EQ(after->partitions.size(), 1u);
  EXPECT_EQ(after->partitions[0].source_hash, before->partitions[0].source_hash);
  EXPECT_NE(after->partitions[0].file, before->partitions[0].file);
}

TEST_F(LakeTest, MergesCheckTheirInputsAndTheSweepRemovesRetiredFilesAndOrphans) {
  log::Topic& t = Topic("m");
  ViewSpec spec = Spec("mv", "m");
  spec.partition = std::chrono::seconds(1);
  spec.sort = {"a"};
  ASSERT_TRUE(lake_->Register(spec).ok());
  LakeOptions options;
  options.retired_grace = std::chrono::milliseconds(0);
  options.orphan_grace = std::chrono::milliseconds(0);
  AppendInThreeSpans(
      t, spec.partition,
      [](int b) {
        return std::vector<std::string>{"{\"a\":" + std::to_string(10 - b) + "}",
                                        "{\"a\":" + std::to_string(b) + "}"};
      },
      AtOneSecond, options);
  Status updated = lake_->Update("mv", false);
  ASSERT_TRUE(updated.ok()) << updated.ToString();
  auto spans = lake_->Describe("mv");
  ASSERT_TRUE(spans.ok());
  ASSERT_GE(spans->partitions.size(), 2u);
  std::vector<std::string> old_files;
  for (const auto& p : spans->partitions) old_files.push_back(p.file);
  Status merged_status = lake_->Merge("mv", std::chrono::hours(24 * 365 * 100));
  ASSERT_TRUE(merged_status.ok()) << merged_status.ToString();
  auto merged = lake_->Describe("mv");
  ASSERT_TRUE(merged.ok());
  ASSERT_EQ(merged->partitions.size(), 1u);
  EXPECT_EQ(merged->partitions[0].rows, 6);
  EXPECT_EQ(merged->partitions[0].begin_offset, 0);
  EXPECT_EQ(merged->partitions[0].end_offset, 6);
  EXPECT_EQ(merged->partitions[0].sort_order, "a");
  EXPECT_EQ(merged->partitions[0].sort_min, 0);
  EXPECT_EQ(merged->partitions[0].sort_max, 10);
  EXPECT_EQ(Rows("SELECT list(a) FROM mv"), (std::vector<std::string>{"[0, 1, 2, 8, 9, 10]"}));
  // An orphan: a file no commit names (a crash between COPY and the commit).
  const auto orphan = dir_.path() / "lake" / "mv" / "0" / "999999.parquet";
  std::ofstream(orphan) << "half a file";
  auto removed = lake_->Sweep();
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, static_cast<int64_t>(old_files.size()) + 1);
  for (const auto& f : old_files) EXPECT_FALSE(std::filesystem::exists(dir_.path() / "lake" / f));
  EXPECT_FALSE(std::filesystem::exists(orphan));
  EXPECT_EQ(Rows("SELECT count(*) FROM mv"), (std::vector<std::string>{"6"}));
}

TEST_F(LakeTest, TheLatestRowsComeFromCertifiedPartitionsInOrderAndAnOverlapFailsLoudly) {
  log::Topic& t = Topic("scan");
  ViewSpec spec = Spec("scan_view", "scan");
  spec.partition = std::chrono::seconds(1);
  spec.sort = {"n"};
  spec.order = ScanOrder::kConcatenated;
  ASSERT_TRUE(lake_->Register(spec).ok());
  // Three spans, each holding a range of n above the one before (rows unsorted inside).
  AppendInThreeSpans(
      t, spec.partition,
      [](int b) {
        std::vector<std::string> values;
        for (int i = 4; i >= 0; --i) values.push_back("{\"n\":" + std::to_string(b * 10 + i) + "}");
        return values;
      },
      AtOneSecond);
  QueryStats stats;
  QueryOptions query;
  query.stats = &stats;
  EXPECT_EQ(Rows("SELECT n FROM scan_view ORDER BY n DESC LIMIT 3", query),
            (std::vector<std::string>{"24", "23", "22"}));
  EXPECT_TRUE(stats.ordered_scan);
  EXPECT_EQ(stats.partitions, 3);
  EXPECT_EQ(stats.partitions_read, 1);
  // A filter leaves fewer rows per partition: the scan reads on until it has them.
  EXPECT_EQ(Rows("SELECT n, _offset FROM scan_view WHERE n % 10 = 0 ORDER BY n LIMIT 2", query),
            (std::vector<std::string>{"0|4", "10|9"}));
  EXPECT_EQ(stats.partitions_read, 2);
  // Other forms are answered by DuckDB as usual.
  EXPECT_EQ(Rows("SELECT DISTINCT n % 2 AS parity FROM scan_view ORDER BY parity LIMIT 5", query),
            (std::vector<std::string>{"0", "1"}));
  EXPECT_FALSE(stats.ordered_scan);
  // A span whose n overlaps the others: the certified order no longer holds.
  Append(t, {R"({"n":12})"});
  Status s = QueryStatus("SELECT n FROM scan_view ORDER BY n DESC LIMIT 3", query);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.ToString();
  EXPECT_EQ(Rows("SELECT count(*) FROM scan_view"), (std::vector<std::string>{"16"}));
}

TEST_F(LakeTest, AViewNotReadyYetDoesNotBreakQueriesOfTheOthers) {
  log::Topic& t = Topic("ready");
  Append(t, {R"({"a":1})"});
  ASSERT_TRUE(lake_->Register(Spec("ready_view", "ready")).ok());
  // A view of a topic with no record yet: its SQL's columns are not known until one comes.
  Topic("quiet");
  ViewSpec waiting = Spec("waiting_view", "quiet");
  waiting.sql = "SELECT page FROM records";
  Status registered = lake_->Register(waiting);
  ASSERT_TRUE(registered.ok()) << registered.ToString();
  EXPECT_EQ(Rows("SELECT a FROM ready_view"), (std::vector<std::string>{"1"}));
}

TEST_F(LakeTest, AWhereOnTheSortColumnReadsOnlyThePartitionsInItsRange) {
  log::Topic& t = Topic("pruned");
  ViewSpec by_n = Spec("by_n", "pruned");
  by_n.partition = std::chrono::milliseconds(300);
  by_n.sort = {"n"};
  ASSERT_TRUE(lake_->Register(by_n).ok());
  ViewSpec by_ts = Spec("by_ts", "pruned");
  by_ts.partition = std::chrono::milliseconds(300);
  by_ts.sort = {"_ts"};
  ASSERT_TRUE(lake_->Register(by_ts).ok());
  // Three spans: n in [10b, 10b+4] at event times [1000000b, 1000000b+4] ms.
  AppendInThreeSpans(
      t, by_n.partition,
      [](int b) {
        std::vector<std::string> values;
        for (int i = 0; i < 5; ++i) values.push_back("{\"n\":" + std::to_string(b * 10 + i) + "}");
        return values;
      },
      [](int b) { return int64_t{b} * 1'000'000; });
  QueryStats stats;
  QueryOptions query;
  query.stats = &stats;
  struct Case {
    std::string sql;
    std::string answer;
    bool pruned;
    int64_t read;
  };
  const Case cases[] = {
      {"SELECT count(*), sum(n) FROM by_n WHERE n >= 10 AND n < 15", "5|60", true, 1},
      {"SELECT count(*), sum(n) FROM by_n WHERE n BETWEEN 3 AND 11.5", "4|28", true, 2},
      {"SELECT count(*), sum(n) FROM by_n v WHERE 20 <= v.n AND n % 2 = 0", "3|66", true, 1},
      {"SELECT count(*), sum(n) FROM by_n WHERE n = 4", "1|4", true, 1},
      {"SELECT count(*), sum(n) FROM by_n WHERE n > 100", "0|NULL", true, 0},
      // Not recognized: every partition is read.
      {"SELECT count(*), sum(n) FROM by_n WHERE n >= 10 OR n < 1", "11|170", false, 3},
      {"SELECT count(*), sum(n) FROM by_n WHERE n > (SELECT max(n) - 3 FROM by_n)", "3|69", false,
       3},
      {"SELECT count(*), sum(n) FROM by_n WHERE n + 0 >= 20", "5|110", false, 3},
      // A timestamp column, bounded by a TIMESTAMP and by a string DuckDB casts.
      {"SELECT count(*), sum(n) FROM by_ts WHERE _ts >= TIMESTAMP '1970-01-01 00:16:40' AND "
       "_ts < '1970-01-01 00:25:00'",
       "5|60", true, 1},
      {"SELECT count(*) FROM by_ts WHERE _ts > DATE '1970-01-01'", "14", true, 3},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Rows(c.sql, query), std::vector<std::string>{c.answer}) << c.sql;
    EXPECT_EQ(stats.partitions, 3) << c.sql;
    EXPECT_EQ(stats.pruned, c.pruned) << c.sql;
    EXPECT_EQ(stats.partitions_read, c.read) << c.sql;
  }
}

TEST_F(LakeTest, TheMergePolicyMergesEachClosedSpanOnceInTheBackground) {
  log::Topic& t = Topic("merged");
  ViewSpec spec = Spec("merged_view", "merged");
  spec.partition = std::chrono::seconds(1);
  spec.merge = {std::chrono::seconds(2)};
  spec.refresh = std::chrono::milliseconds(100);
  ASSERT_TRUE(lake_->Register(spec).ok());
  // Five spans of a second: at least one two-second span closes behind a later one.
  for (int b = 0; b < 5; ++b) {
    Append(t, {"{\"n\":" + std::to_string(b) + "}", "{\"n\":10}"});
    std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  }
  LakeOptions options;
  options.materialize.seal_grace = std::chrono::milliseconds(0);
  OpenLake(options);
  const int64_t two_s = 2000;
  // Every record materialized, each closed two-second span in one partition; the latest span
  // left alone.
  auto merged_as_policy_says = [&](std::vector<int64_t>* instances) {
    const Result<ViewStatus> status = lake_->Describe("merged_view");
    if (!status.ok() || status->partitions.empty() || status->partitions.back().end_offset != 10) {
      return false;
    }
    const int64_t latest = (status->partitions.back().span_start_ms / two_s) * two_s;
    std::map<int64_t, int> per_span;
    for (const PartitionRecord& p : status->partitions) {
      const int64_t span = (p.span_start_ms / two_s) * two_s;
      ++per_span[span];
      // The latest span's open piece is sealed (a new instance) once its time has passed.
      if (instances && span != latest) instances->push_back(p.instance);
    }
    return std::all_of(per_span.begin(), per_span.end(),
                       [&](const auto& span) { return span.first == latest || span.second == 1; });
  };
  lake_->StartBackground();
  for (int i = 0; i < 100 && !merged_as_policy_says(nullptr); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<int64_t> before, after;
  ASSERT_TRUE(merged_as_policy_says(&before));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // several refreshes
  ASSERT_TRUE(merged_as_policy_says(&after));
  lake_->StopBackground();
  EXPECT_EQ(before, after) << "a closed span merged again";
  EXPECT_FALSE(before.empty());
  EXPECT_LT(before.size(), 4u);
  EXPECT_EQ(Rows("SELECT count(*), sum(n) FROM merged_view"), (std::vector<std::string>{"10|60"}));
}

TEST(ViewYaml, ParsesEveryKeyAndNamesTheOffendingPath) {
  auto views = ParseViewsFile(R"(
views:
  clicks:
    topic: c
    sql: SELECT * FROM records
    columns: {page: varchar, n: bigint}
    partition: 10m
    sort: [_ts]
    order: concatenated
    version: 3
    refresh: 500ms
    merge: [1h, 1d]
)",
                              "v.yaml");
  ASSERT_TRUE(views.ok()) << views.status().ToString();
  ASSERT_EQ(views->size(), 1u);
  const ViewSpec& v = (*views)[0];
  EXPECT_EQ(v.partition, std::chrono::minutes(10));
  EXPECT_EQ(v.refresh, std::chrono::milliseconds(500));
  EXPECT_EQ(v.order, ScanOrder::kConcatenated);
  EXPECT_EQ(v.version, 3);
  EXPECT_EQ(v.merge, (std::vector<std::chrono::milliseconds>{std::chrono::hours(1),
                                                             std::chrono::hours(24)}));
  auto back = ViewSpecFromJson(v.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
  struct Bad {
    const char* yaml;
    const char* message;
  };
  for (const Bad& bad : {
           Bad{"views: {a: {sql: x}}", "views.a: missing 'topic'"},
           Bad{"views: {a: {topic: t, partition: 1y}}", "views.a.partition: expected a duration"},
           Bad{"views: {a: {topic: t, columns: {x: text}}}",
               "views.a.columns.x: expected a column type"},
           Bad{"views: {a: {topic: t, order: file}}", "views.a.order: a scan order needs"},
           Bad{"views: {a: {topic: t, colums: {}}}", "unknown key 'colums'"},
           Bad{"views: {'a/b': {topic: t}}", "view name"},
           Bad{"views: {a: {topic: t, merge: 1d}}", "views.a.merge: expected a list of spans"},
           Bad{"views: {a: {topic: t, partition: 1h, merge: [1d, 36h]}}",
               "views.a.merge[1]: a merge span is a multiple"},
           Bad{"views: {a: {topic: t, partition: 1h, merge: [90m]}}",
               "views.a.merge[0]: a merge span is a multiple"},
       }) {
    auto r = ParseViewsFile(bad.yaml, "v.yaml");
    ASSERT_FALSE(r.ok()) << bad.yaml;
    EXPECT_NE(r.status().message().find(bad.message), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace weir::lake
