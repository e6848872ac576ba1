// A topic's archive view against a real log on disk and real DuckDB and Parquet: every record
// kept verbatim, the retention hold (also across a restart), and the reads a catch-up makes.
#include <gtest/gtest.h>

#include <fstream>

#include "lake/lake.h"
#include "log/log.h"
#include "testing/temp_dir.h"

namespace weir::lake {
namespace {

using weir::testing::TempDir;

log::TopicConfig KeepNothing() {
  return {.partitions = 1, .retention_bytes = 0, .segment_bytes = 4096};
}

class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenAll(); }

  void OpenAll() {
    lake_.reset();
    log_.reset();
    log::LogOptions o;
    o.dir = dir_.path() / "log";
    auto log = log::LogStore::Open(o);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    LakeOptions options;
    options.dir = dir_.path() / "lake";
    auto lake = Lake::Open(*log_, std::move(options));
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::move(*lake);
  }

  log::Partition& Partition(const std::string& topic = "clicks") {
    auto t = log_->GetOrCreateTopic(topic, KeepNothing());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return (*t)->partition(PartitionId(0));
  }

  static std::string ValueOf(int64_t i) {
    return R"({"i":)" + std::to_string(i) + R"(,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})";
  }

  // Appends n records (values ValueOf(offset)), each its own batch, durable on return.
  void Append(log::Partition& p, int n) {
    for (int i = 0; i < n; ++i) {
      log::RecordBatchBuilder b;
      b.AddRaw(EventTime(1000), KeySerde::kString, "k", ValueOf(p.WrittenEnd().value()));
      ASSERT_TRUE(p.Append(b, log::Durability::kWaitDurable).ok());
    }
  }

  // Every message ReadArchive gives from `from`, checked consecutive.
  Result<std::vector<ArchivedMessage>> ReadAll(int64_t from, size_t chunk = 7) {
    std::vector<ArchivedMessage> out;
    Status s = lake_->ReadArchive("clicks", 0, from, chunk, [&](auto messages) {
      EXPECT_LE(messages.size(), chunk);
      out.insert(out.end(), messages.begin(), messages.end());
      return true;
    });
    if (!s.ok()) return s;
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].offset, from + static_cast<int64_t>(i));
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  std::unique_ptr<Lake> lake_;
};

TEST_F(ArchiveTest, KeepsEveryRecordVerbatimSortedByOffsetAndQueryable) {
  log::Partition& p = Partition();
  const std::vector<std::string> values = {R"({"a":1})", "not json at all",
                                           std::string("\xff\xfe\0bytes", 8), "[1,2,3]", ""};
  for (const std::string& v : values) {
    log::RecordBatchBuilder b;
    b.AddRaw(EventTime(5), KeySerde::kString, "key", v);
    ASSERT_TRUE(p.Append(b, log::Durability::kWaitDurable).ok());
  }
  ASSERT_TRUE(lake_->Register(ArchiveSpec("clicks_archive", "clicks")).ok());
  MaterializeFigures figures;
  ASSERT_TRUE(lake_->Update("clicks_archive", true, &figures).ok());
  EXPECT_EQ(figures.dead_letters, 0);
  EXPECT_FALSE(log_->GetTopic("lake.clicks_archive.dlq").ok());
  auto read = ReadAll(0);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ((*read)[i].value, values[i]) << i;
  std::vector<std::string> rows;
  QuerySink sink;
  sink.on_row = [&](std::span<const std::optional<std::string>> cells) {
    rows.push_back(cells[0].value_or("NULL") + "|" + cells[1].value_or("NULL") + "|" +
                   cells[2].value_or("NULL") + "|" + cells[3].value_or("NULL"));
  };
  ASSERT_TRUE(lake_
                  ->Query("SELECT _partition, _offset, _key, octet_length(_value) FROM "
                          "clicks_archive ORDER BY _offset LIMIT 2",
                          {}, sink)
                  .ok());
  EXPECT_EQ(rows, (std::vector<std::string>{"0|0|key|7", "0|1|key|15"}));
  auto described = lake_->Describe("clicks_archive");
  ASSERT_TRUE(described.ok());
  EXPECT_TRUE(described->view.spec.archive);
}

TEST_F(ArchiveTest, RetentionNeverEvictsWhatTheArchiveLacks) {
  log::Partition& p = Partition();
  ASSERT_TRUE(lake_->Register(ArchiveSpec("clicks_archive", "clicks")).ok());
  EXPECT_TRUE((*log_->GetTopic("clicks"))->archived());
  Append(p, 200);
  // The archive has nothing yet: retention (which keeps nothing) removes nothing.
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_EQ(p.FirstOffset(), Offset(0));
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  EXPECT_EQ(p.RetentionFloor(), Offset(200));
  Append(p, 100);
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_GT(p.FirstOffset(), Offset(0));
  EXPECT_LE(p.FirstOffset(), Offset(200));  // the lagging archive holds back the rest
  // Below the log's first offset, the archive has it all.
  auto read = ReadAll(0);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 200u);
  EXPECT_EQ(read->back().value, ValueOf(199));
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_GT(p.FirstOffset(), Offset(200));
  read = ReadAll(150);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->size(), 150u);
  auto extent = lake_->ArchiveExtentOf("clicks", 0);
  ASSERT_TRUE(extent.has_value());
  EXPECT_EQ(extent->first, 0);
  EXPECT_EQ(extent->end, 300);
}

// The view registered first, its topic created after (as a pipeline's output topic is, once the
// run starts): retention holds the records from the first one, before the archive's first update.
TEST_F(ArchiveTest, ATopicCreatedAfterItsArchiveViewIsHeldFromItsFirstRecord) {
  ASSERT_TRUE(lake_->Register(ArchiveSpec("clicks_archive", "clicks")).ok());
  log::Partition& p = Partition();
  EXPECT_TRUE((*log_->GetTopic("clicks"))->archived());
  Append(p, 200);
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_EQ(p.FirstOffset(), Offset(0));
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  auto read = ReadAll(0);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->size(), 200u);
  // A topic no archive names is not held: the same retention empties it.
  log::Partition& other = Partition("other");
  EXPECT_FALSE((*log_->GetTopic("other"))->archived());
  Append(other, 200);
  ASSERT_TRUE(other.EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_GT(other.FirstOffset(), Offset(0));
}

TEST_F(ArchiveTest, ARestartKeepsTheHoldAndTheLakeRaisesItAgain) {
  log::Partition* p = &Partition();
  ASSERT_TRUE(lake_->Register(ArchiveSpec("clicks_archive", "clicks")).ok());
  Append(*p, 100);
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  Append(*p, 100);
  OpenAll();
  p = &Partition();
  const Offset first = p->FirstOffset();
  EXPECT_EQ(p->RetentionFloor(), Offset(100));  // Lake::Open raised it from the catalog
  ASSERT_TRUE(p->EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_LE(p->FirstOffset(), Offset(100));
  EXPECT_GE(p->FirstOffset(), first);
  auto read = ReadAll(0);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->size(), 100u);
}

TEST_F(ArchiveTest, ReadsRefuseWhatTheArchiveDoesNotHold) {
  log::Partition& p = Partition();
  Append(p, 50);
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());  // before any archive
  const int64_t first = p.FirstOffset().value();
  ASSERT_GT(first, 0);
  EXPECT_EQ(lake_->ReadArchive("clicks", 0, 0, 10, [](auto) { return true; }).code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(lake_->Register(ArchiveSpec("clicks_archive", "clicks")).ok());
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  auto below = ReadAll(0);
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(below.status().message().find("starts at " + std::to_string(first)), std::string::npos);
  auto at_end = ReadAll(50);
  ASSERT_TRUE(at_end.ok());
  EXPECT_TRUE(at_end->empty());
  // A reader that stops is not given more.
  int chunks = 0;
  ASSERT_TRUE(lake_->ReadArchive("clicks", 0, first, 3, [&](auto) { return ++chunks < 2; }).ok());
  EXPECT_EQ(chunks, 2);
}

TEST_F(ArchiveTest, AMissingOrCorruptFileIsAnErrorNamingItNeverAGap) {
  log::Partition& p = Partition();
  ASSERT_TRUE(lake_->Register(ArchiveSpec("clicks_archive", "clicks")).ok());
  Append(p, 30);
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  Append(p, 30);
  ASSERT_TRUE(lake_->Update("clicks_archive", true).ok());
  auto described = lake_->Describe("clicks_archive");
  ASSERT_TRUE(described.ok());
  ASSERT_GE(described->partitions.size(), 2u);
  const auto second = lake_->dir() / described->partitions[1].file;
  {
    std::ofstream out(second, std::ios::trunc);
    out << "PAR1 this is not parquet";
  }
  std::vector<int64_t> offsets;
  Status s = lake_->ReadArchive("clicks", 0, 0, 1000, [&](auto messages) {
    for (const ArchivedMessage& m : messages) offsets.push_back(m.offset);
    return true;
  });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(second.string()), std::string::npos) << s.ToString();
  for (size_t i = 0; i < offsets.size(); ++i) EXPECT_EQ(offsets[i], static_cast<int64_t>(i));
  EXPECT_LE(offsets.size(), 30u);
  std::filesystem::remove(second);
  s = lake_->ReadArchive("clicks", 0, 30, 1000, [](auto) { return true; });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(second.string()), std::string::npos) << s.ToString();
}

TEST(ArchiveYaml, AnArchiveTakesNoSqlColumnsOrSortAndATopicHasOne) {
  auto parsed = ParseViewsFile("views:\n  a: {topic: clicks, archive: true}\n", "v.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0], ArchiveSpec("a", "clicks"));
  auto from_json = ViewSpecFromJson((*parsed)[0].ToJson());
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(*from_json, (*parsed)[0]);
  for (const char* bad : {"views:\n  a: {topic: clicks, archive: true, sql: SELECT 1}\n",
                          "views:\n  a: {topic: clicks, archive: true, sort: [_ts]}\n",
                          "views:\n  a: {topic: clicks, archive: true, columns: {x: bigint}}\n",
                          "views:\n  a: {topic: clicks, archive: true, order: file}\n",
                          "views:\n  a: {topic: clicks, archive: maybe}\n",
                          "views:\n  a: {topic: clicks, archive: true}\n"
                          "  b: {topic: clicks, archive: true}\n"}) {
    auto refused = ParseViewsFile(bad, "v.yaml");
    EXPECT_FALSE(refused.ok()) << bad;
    if (!refused.ok()) {
      EXPECT_NE(refused.status().message().find("v.yaml"), std::string::npos);
    }
  }
  EXPECT_NE(SchemaHash(ArchiveSpec("a", "t"), {}),
            SchemaHash(ViewSpec{.name = "a", .topic = "t", .sort = {"_offset"}}, {}));
}

TEST_F(ArchiveTest, RegisteringASecondArchiveOfATopicIsRefused) {
  ASSERT_TRUE(lake_->Register(ArchiveSpec("one", "clicks")).ok());
  EXPECT_EQ(lake_->Register(ArchiveSpec("two", "clicks")).code(), StatusCode::kInvalidArgument);
  ViewSpec with_sql = ArchiveSpec("three", "other");
  with_sql.sql = "SELECT 1";
  EXPECT_EQ(lake_->Register(with_sql).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(lake_->Register(ArchiveSpec("other_archive", "other")).ok());
}

}  // namespace
}  // namespace weir::lake
