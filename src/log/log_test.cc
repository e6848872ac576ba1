#include "log/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "log/log_test_util.h"
#include "log/segment.h"

namespace weir::log {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::OneRecord;
using testing::Options;
using testing::ReadAll;
using testing::TempDir;
using testing::ValueFor;

std::unique_ptr<LogStore> OpenOrDie(const LogOptions& options) {
  auto store = LogStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

Topic* CreateOrDie(LogStore& store, const std::string& name, TopicConfig config = {}) {
  auto topic = store.CreateTopic(name, config);
  EXPECT_TRUE(topic.ok()) << topic.status().ToString();
  return topic.ok() ? *topic : nullptr;
}

// Appends n single-record batches tagged prefix0.. and waits until the last one is durable.
void AppendN(Partition& p, int n, const std::string& prefix = "r", std::string_view owner = {}) {
  for (int i = 0; i < n; ++i) {
    auto offset = p.Append(OneRecord(prefix + std::to_string(i)), Durability::kNoWait, owner);
    ASSERT_TRUE(offset.ok()) << offset.status().ToString();
  }
}

std::vector<fs::path> SegmentFiles(const fs::path& partition_dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(partition_dir)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// ---------------------------------------------------------------------------------------------

// WriteAt splits what it is given into calls of at most kMostBytesPerWrite, cutting an iovec
// where a call ends: every byte must still land once, in order, at its place.
TEST(WriteAt, WritesEveryByteInOrderWhateverTheIovecsAndTheCallLimit) {
  TempDir dir;
  const size_t limit = kMostBytesPerWrite;
  const std::vector<std::vector<size_t>> layouts = {
      {3 * limit + limit / 2},                          // one iovec over three calls and a half
      {limit},                                          // exactly one call
      {limit - 1, 1, limit, 0, limit + 1},              // ends on, before and after a call's end
      std::vector<size_t>(600, 7 * 1024 + 3),           // many small ones crossing call ends
      std::vector<size_t>(3000, 1),                     // more than IOV_MAX in one call's bytes
      std::vector<size_t>(2000, 0),                     // as many empty ones
      {0, 0},                                           // nothing at all
  };
  for (size_t layout = 0; layout < layouts.size(); ++layout) {
    std::vector<std::string> parts;
    std::vector<iovec> iov;
    std::string expected(4096, 'h');  // what the file holds before the write position
    for (size_t i = 0; i < layouts[layout].size(); ++i) {
      std::string part(layouts[layout][i], '\0');
      for (size_t b = 0; b < part.size(); ++b) part[b] = static_cast<char>('a' + (i * 7 + b / 4093) % 26);
      expected += part;
      parts.push_back(std::move(part));
    }
    for (auto& part : parts) iov.push_back({part.data(), part.size()});
    const fs::path path = dir.path() / ("layout" + std::to_string(layout));
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, expected.data(), 4096, 0), 4096);
    const Status written = WriteAt(fd, iov, 4096, path);
    ::close(fd);
    ASSERT_TRUE(written.ok()) << written.ToString();
    std::ifstream in(path, std::ios::binary);
    const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(got.size(), expected.size()) << "layout " << layout;
    EXPECT_TRUE(got == expected) << "layout " << layout;
  }
}

TEST(LogStore, AppendedRecordsReadBackWithDenseOffsetsFromZero) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "clicks");
  Partition& p = topic->partition(PartitionId(0));
  for (int i = 0; i < 100; ++i) {
    auto offset = p.Append(OneRecord("r" + std::to_string(i)));
    ASSERT_TRUE(offset.ok());
    EXPECT_EQ(offset->value(), i);
  }
  ASSERT_TRUE(p.WaitDurable(Offset(100)).ok());
  auto records = ReadAll(p);
  ASSERT_EQ(records.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(records[i].first, i);
    EXPECT_EQ(records[i].second, ValueFor("r" + std::to_string(i)));
  }
  EXPECT_EQ(p.FirstOffset(), Offset(0));
  EXPECT_EQ(p.NextOffset(), Offset(100));
}

TEST(LogStore, RecordsKeepKeysTimestampsAndHeaders) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  RecordBatchBuilder b;
  const std::vector<Header> headers = {{"h", "v"}};
  b.Add(EventTime(42), Key::Int(7), Value::MakeObject({{"a", 1}}), headers);
  b.AddRaw(EventTime(43), KeySerde::kNull, "", "");
  ASSERT_TRUE(p.Append(b, Durability::kWaitDurable).ok());
  PartitionReader reader(p, Offset(0));
  auto batch = reader.Next();
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_EQ((*batch)[0].timestamp, EventTime(42));
  EXPECT_EQ(*(*batch)[0].DecodeKey(), Key::Int(7));
  EXPECT_EQ(*(*batch)[0].DecodeHeaders(), headers);
  EXPECT_EQ((*batch)[0].value, R"({"a":1})");
  EXPECT_EQ((*batch)[1].key_serde, KeySerde::kNull);
}

TEST(LogStore, RecordsSpanSegmentRolls) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 4096;
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(p.Append(OneRecord("r" + std::to_string(i)), Durability::kWaitDurable).ok());
  }
  const auto files = SegmentFiles(dir.path() / "t" / "0");
  EXPECT_GT(files.size(), 5u);
  for (const auto& f : files) EXPECT_LE(fs::file_size(f), 4096u) << f;
  auto records = ReadAll(p);
  ASSERT_EQ(records.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(records[i].first, i);
}

TEST(LogStore, ReopenAfterCloseKeepsEverything) {
  TempDir dir;
  TopicConfig config;
  config.partitions = 3;
  config.segment_bytes = 8192;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Topic* topic = CreateOrDie(*store, "t", config);
    for (int32_t part = 0; part < 3; ++part) {
      AppendN(topic->partition(PartitionId(part)), 100 * (part + 1), "p" + std::to_string(part));
    }
  }  // closing flushes what is pending
  auto store = OpenOrDie(Options(dir.path()));
  auto topic = store->GetTopic("t");
  ASSERT_TRUE(topic.ok());
  EXPECT_EQ((*topic)->num_partitions(), 3);
  EXPECT_EQ((*topic)->config().segment_bytes, 8192);
  for (int32_t part = 0; part < 3; ++part) {
    Partition& p = (*topic)->partition(PartitionId(part));
    auto records = ReadAll(p);
    ASSERT_EQ(records.size(), 100u * (part + 1));
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(records[i].second, ValueFor("p" + std::to_string(part) + std::to_string(i)));
    }
    // Appends continue after what was there.
    auto next = p.Append(OneRecord("more"), Durability::kWaitDurable);
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next->value(), 100 * (part + 1));
  }
}

TEST(LogStore, BigRecordsAreReadWhole) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  const std::string big(3 << 20, 'b');
  RecordBatchBuilder b;
  b.AddRaw(EventTime(1), KeySerde::kNull, "", "small");
  b.AddRaw(EventTime(2), KeySerde::kNull, "", big);
  b.AddRaw(EventTime(3), KeySerde::kNull, "", "small again");
  ASSERT_TRUE(p.Append(b, Durability::kWaitDurable).ok());
  auto records = ReadAll(p);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].second, big);
  EXPECT_EQ(records[2].second, "small again");
}

TEST(PartitionReader, PositionsAtAnyOffset) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 16384;
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  // Batches of varied sizes, so offsets fall at batch starts, inside batches and at segment
  // boundaries.
  int64_t n = 0;
  for (int batch = 0; batch < 60; ++batch) {
    RecordBatchBuilder b;
    for (int i = 0; i < batch % 17 + 1; ++i, ++n) {
      b.AddRaw(EventTime(n), KeySerde::kNull, "", ValueFor(std::to_string(n)));
    }
    ASSERT_TRUE(p.Append(b, Durability::kWaitDurable).ok());
  }
  for (int64_t start = 0; start <= n; ++start) {
    PartitionReader reader(p, Offset(start));
    // Next may return fewer than asked (at a segment's end): the next call goes on from there.
    int64_t expected = start;
    while (expected < std::min(n, start + 3)) {
      auto records = reader.Next(static_cast<size_t>(start + 3 - expected));
      ASSERT_TRUE(records.ok());
      ASSERT_FALSE(records->empty()) << "at " << expected;
      for (const StoredRecord& r : *records) {
        EXPECT_EQ(r.offset.value(), expected);
        EXPECT_EQ(r.value, ValueFor(std::to_string(expected)));
        ++expected;
      }
      EXPECT_EQ(reader.position().value(), expected);
    }
    EXPECT_EQ(expected, std::min(n, start + 3));
  }
}

TEST(PartitionReader, SeekRereadsEarlierRecords) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  AppendN(p, 50);
  ASSERT_TRUE(p.WaitDurable(Offset(50)).ok());
  PartitionReader reader(p, Offset(40));
  ASSERT_EQ(reader.Next()->size(), 10u);
  reader.Seek(Offset(5));
  auto again = reader.Next(1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].value, ValueFor("r5"));
}

TEST(PartitionReader, PositionBeyondEndIsOutOfRange) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  AppendN(p, 5);
  ASSERT_TRUE(p.WaitDurable(Offset(5)).ok());
  PartitionReader at_end(p, Offset(5));
  auto empty = at_end.Next();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  PartitionReader beyond(p, Offset(6));
  EXPECT_EQ(beyond.Next().status().code(), StatusCode::kOutOfRange);
}

TEST(PartitionReader, SeesRecordsAppendedAfterItCaughtUp) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  PartitionReader reader(p, Offset(0));
  int64_t seen = 0;
  for (int round = 0; round < 20; ++round) {
    AppendN(p, 7, "round" + std::to_string(round) + "-");
    ASSERT_TRUE(p.WaitDurable(p.WrittenEnd()).ok());
    for (;;) {
      auto batch = reader.Next();
      ASSERT_TRUE(batch.ok());
      if (batch->empty()) break;
      for (const auto& r : *batch) EXPECT_EQ(r.offset.value(), seen++);
    }
  }
  EXPECT_EQ(seen, 140);
}

// ---------------------------------------------------------------------------------------------

TEST(GroupCommit, RecordsAreNotVisibleBeforeDurable) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.group_commit_interval = std::chrono::seconds(30);  // no flush at an interval's end
  auto store = OpenOrDie(options);
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  AppendN(p, 10);
  EXPECT_EQ(p.WrittenEnd(), Offset(10));
  // The first append after an idle spell wakes the committer, which may write what is pending
  // by the time it runs (under load, part of the ten): whatever it has made durable, a reader
  // sees no more. The visible end is read first: the writer moves it after the durable end.
  const Offset visible = p.NextOffset();
  EXPECT_LE(visible.value(), p.DurableEnd().value());
  // Read, then the durable end (only ever growing): in one expression the end could be read
  // first and the committer publish more before the read (seen once under ASan).
  const size_t read = ReadAll(p).size();
  EXPECT_LE(read, static_cast<size_t>(p.DurableEnd().value()));
  ASSERT_TRUE(p.WaitDurable(Offset(10)).ok());  // a waiter makes the committer flush at once
  EXPECT_EQ(p.DurableEnd(), Offset(10));
  EXPECT_EQ(p.NextOffset(), Offset(10));
  EXPECT_EQ(ReadAll(p).size(), 10u);
}

TEST(GroupCommit, WaitDurableAppendReturnsVisible) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.group_commit_interval = std::chrono::seconds(30);
  auto store = OpenOrDie(options);
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  auto offset = p.Append(OneRecord("a"), Durability::kWaitDurable);
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(p.DurableEnd(), Offset(1));
  EXPECT_EQ(p.NextOffset(), Offset(1));
}

TEST(GroupCommit, FlushSoonAppendIsFlushedWithoutWaitingForTheInterval) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.group_commit_interval = std::chrono::hours(1);  // only an urgent wake-up flushes
  auto store = OpenOrDie(options);
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  auto offset = p.Append(OneRecord("a"), Durability::kFlushSoon);
  ASSERT_TRUE(offset.ok());
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (p.NextOffset() < Offset(1) && std::chrono::steady_clock::now() < deadline) {
    store->WaitForChange(store->ChangeEpoch(), 100ms);
  }
  EXPECT_EQ(p.DurableEnd(), Offset(1));
  EXPECT_EQ(p.NextOffset(), Offset(1));
}

TEST(GroupCommit, CommitterFlushesWithinTheInterval) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.group_commit_interval = 5ms;
  auto store = OpenOrDie(options);
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  const uint64_t epoch = store->ChangeEpoch();
  AppendN(p, 3);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (p.NextOffset() < Offset(3) && std::chrono::steady_clock::now() < deadline) {
    store->WaitForChange(epoch, 100ms);
  }
  EXPECT_EQ(p.NextOffset(), Offset(3));
  EXPECT_GT(store->ChangeEpoch(), epoch);
}

TEST(GroupCommit, FlushesEarlyWhenPendingExceedsGroupCommitBytes) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.group_commit_interval = std::chrono::seconds(30);
  options.group_commit_bytes = 1000;
  auto store = OpenOrDie(options);
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  AppendN(p, 20);  // about 2.4 KB
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (p.NextOffset() < Offset(9) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(p.NextOffset(), Offset(9));
}

TEST(GroupCommit, ConcurrentAppendersGetDenseOffsetsAndLoseNothing) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 64 << 10;
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  constexpr int kThreads = 4, kAppends = 500;
  std::vector<std::map<int64_t, std::string>> acknowledged(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAppends; ++i) {
        RecordBatchBuilder b;
        const int n = i % 3 + 1;
        for (int k = 0; k < n; ++k) {
          const std::string tag =
              std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(k);
          b.AddRaw(EventTime(i), KeySerde::kString, tag, ValueFor(tag));
        }
        auto offset = p.Append(b, i % 2 ? Durability::kWaitDurable : Durability::kNoWait);
        ASSERT_TRUE(offset.ok());
        for (int k = 0; k < n; ++k) {
          acknowledged[t][offset->value() + k] =
              ValueFor(std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(k));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(p.WaitDurable(p.WrittenEnd()).ok());
  auto records = ReadAll(p);
  std::map<int64_t, std::string> expected;
  for (auto& m : acknowledged) {
    for (auto& [offset, value] : m) ASSERT_TRUE(expected.emplace(offset, value).second);
  }
  ASSERT_EQ(records.size(), expected.size());
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].first, static_cast<int64_t>(i));
    EXPECT_EQ(records[i].second, expected[records[i].first]);
  }
}

TEST(FsyncPolicy, AlwaysMakesEachAppendDurableBeforeItReturns) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.fsync = FsyncPolicy::kAlways;
  options.group_commit_interval = std::chrono::seconds(30);
  auto store = OpenOrDie(options);
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(p.Append(OneRecord("a")).ok());
    EXPECT_EQ(p.DurableEnd(), Offset(i + 1));
    EXPECT_EQ(p.NextOffset(), Offset(i + 1));
  }
}

TEST(FsyncPolicy, NeverStillWritesAndShowsRecords) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.fsync = FsyncPolicy::kNever;
  {
    auto store = OpenOrDie(options);
    Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
    AppendN(p, 10);
    ASSERT_TRUE(p.WaitDurable(Offset(10)).ok());
    EXPECT_EQ(ReadAll(p).size(), 10u);
  }
  auto store = OpenOrDie(options);
  EXPECT_EQ(ReadAll((*store->GetTopic("t"))->partition(PartitionId(0))).size(), 10u);
}

TEST(FsyncPolicy, ParsesNames) {
  EXPECT_EQ(*ParseFsyncPolicy("group"), FsyncPolicy::kGroup);
  EXPECT_EQ(*ParseFsyncPolicy("always"), FsyncPolicy::kAlways);
  EXPECT_EQ(*ParseFsyncPolicy("never"), FsyncPolicy::kNever);
  auto bad = ParseFsyncPolicy("sometimes");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sometimes"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------

class TornTail : public ::testing::Test {
 protected:
  // Three groups of records, each its own batch, in one segment.
  void WriteThreeBatches() {
    auto store = OpenOrDie(Options(dir_.path()));
    Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
    for (int batch = 0; batch < 3; ++batch) {
      RecordBatchBuilder b;
      for (int i = 0; i < 4; ++i) {
        const std::string tag = std::to_string(batch) + "-" + std::to_string(i);
        b.AddRaw(EventTime(1), KeySerde::kString, tag, ValueFor(tag));
      }
      ASSERT_TRUE(p.Append(b, Durability::kWaitDurable).ok());
    }
  }
  fs::path Segment0() const { return dir_.path() / "t" / "0" / "00000000000000000000.log"; }
  void ExpectEndsAfterBatchesAndAppendsContinue(int64_t end) {
    auto store = OpenOrDie(Options(dir_.path()));
    Partition& p = (*store->GetTopic("t"))->partition(PartitionId(0));
    EXPECT_EQ(p.NextOffset(), Offset(end));
    auto records = ReadAll(p);
    ASSERT_EQ(static_cast<int64_t>(records.size()), end);
    auto next = p.Append(OneRecord("after"), Durability::kWaitDurable);
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next->value(), end);
    records = ReadAll(p);
    ASSERT_EQ(static_cast<int64_t>(records.size()), end + 1);
    EXPECT_EQ(records.back().second, ValueFor("after"));
  }
  TempDir dir_;
};

TEST_F(TornTail, PartialBatchAtTheEndIsCutOnReopen) {
  WriteThreeBatches();
  const auto good_size = fs::file_size(Segment0());
  {
    // Half a batch header and some payload: a write the crash interrupted.
    std::ofstream f(Segment0(), std::ios::binary | std::ios::app);
    const char torn[] = "WLB1\x10\x00\x00\x00garbage";
    f.write(torn, sizeof(torn) - 1);
  }
  ExpectEndsAfterBatchesAndAppendsContinue(12);
  EXPECT_GT(fs::file_size(Segment0()), good_size);  // the append went where the torn bytes were
}

TEST_F(TornTail, FlippedByteInLastBatchCutsThatBatch) {
  WriteThreeBatches();
  {
    std::fstream f(Segment0(), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(-10, std::ios::end);  // inside the last batch's payload
    f.put('\x7f');
  }
  ExpectEndsAfterBatchesAndAppendsContinue(8);
}

TEST_F(TornTail, TruncatedLastBatchIsCut) {
  WriteThreeBatches();
  fs::resize_file(Segment0(), fs::file_size(Segment0()) - 1);
  ExpectEndsAfterBatchesAndAppendsContinue(8);
}

TEST(Corruption, BadBatchInAnEarlierSegmentRefusesToOpen) {
  TempDir dir;
  TopicConfig config;
  config.segment_bytes = 4096;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
    for (int i = 0; i < 100; ++i)
      ASSERT_TRUE(p.Append(OneRecord("r"), Durability::kWaitDurable).ok());
  }
  const auto files = SegmentFiles(dir.path() / "t" / "0");
  ASSERT_GT(files.size(), 2u);
  {
    std::fstream f(files[0], std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(0);
    f.put('X');  // the first batch's magic
  }
  auto store = LogStore::Open(Options(dir.path()));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kCorruption);
  EXPECT_NE(store.status().message().find(files[0].string()), std::string::npos)
      << store.status().ToString();
}

TEST(Corruption, ReaderReportsACorruptBatchWithItsFile) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  AppendN(p, 10);
  ASSERT_TRUE(p.WaitDurable(Offset(10)).ok());
  const fs::path segment = dir.path() / "t" / "0" / "00000000000000000000.log";
  {
    std::fstream f(segment, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(-5, std::ios::end);
    f.put('\x01');
  }
  PartitionReader reader(p, Offset(0));
  auto batch = reader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), StatusCode::kCorruption);
  EXPECT_NE(batch.status().message().find(segment.string()), std::string::npos);
}

// ---------------------------------------------------------------------------------------------

class Transactional : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    store_ = OpenOrDie(Options(dir_.path()));
    auto topic = store_->GetOrCreateTopic("out", config_);
    ASSERT_TRUE(topic.ok());
    topic_ = *topic;
    ASSERT_TRUE(topic_->ClaimForTransactions("app").ok());
  }
  void Reopen() {
    store_.reset();
    Open();
  }
  Partition& p() { return topic_->partition(PartitionId(0)); }
  TempDir dir_;
  TopicConfig config_;
  std::unique_ptr<LogStore> store_;
  Topic* topic_ = nullptr;
};

// A batch of `n` records tagged prefix0.., as one Append (so the committer finds it all pending).
RecordBatchBuilder Records(int n, const std::string& prefix) {
  RecordBatchBuilder b;
  for (int i = 0; i < n; ++i) {
    const std::string tag = prefix + std::to_string(i);
    b.AddRaw(EventTime(1000), KeySerde::kString, tag, ValueFor(tag));
  }
  return b;
}

// Past group_commit_bytes pending, the committer writes a transactional partition's records
// to its files ahead of the owner's Flush, invisible and not durable; a Flush with nothing left
// pending makes them durable (the fsync alone), a TruncateTo removes them, and a reopen without
// Publish does not show them.
class TransactionalWriteAhead : public Transactional {
 protected:
  void SetUp() override {
    Transactional::SetUp();
    ReopenWithSmallGroups();
  }
  void ReopenWithSmallGroups() {
    store_.reset();
    LogOptions options = Options(dir_.path());
    options.group_commit_bytes = 4096;
    store_ = OpenOrDie(options);
    topic_ = *store_->GetTopic("out");
  }
  // Appends `n` records in one batch and waits until the committer has written them ahead.
  void AppendWrittenAhead(int n, const std::string& prefix) {
    const int64_t before = p().SizeBytes();
    ASSERT_TRUE(p().Append(Records(n, prefix), Durability::kNoWait, "app").ok());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (p().SizeBytes() < before + n * 100 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GE(p().SizeBytes(), before + n * 100) << "the committer wrote nothing ahead";
  }
};

TEST_F(TransactionalWriteAhead, RecordsWrittenAheadStayInvisibleAndNotDurableUntilFlush) {
  AppendWrittenAhead(100, "a");
  EXPECT_EQ(p().WrittenEnd(), Offset(100));
  EXPECT_EQ(p().DurableEnd(), Offset(0));
  EXPECT_EQ(p().NextOffset(), Offset(0));
  EXPECT_TRUE(ReadAll(p()).empty());
  auto flushed = p().Flush("app");  // nothing pending: the fsync makes them durable
  ASSERT_TRUE(flushed.ok()) << flushed.status().ToString();
  EXPECT_EQ(*flushed, Offset(100));
  ASSERT_TRUE(p().Publish(Offset(100), "app").ok());
  auto records = ReadAll(p());
  ASSERT_EQ(records.size(), 100u);
  EXPECT_EQ(records[42], std::make_pair(int64_t{42}, ValueFor("a42")));
  // Written ahead, then more pending: one Flush writes the rest and covers both.
  AppendWrittenAhead(100, "b");
  AppendN(p(), 3, "c", "app");
  flushed = p().Flush("app");
  ASSERT_TRUE(flushed.ok());
  EXPECT_EQ(*flushed, Offset(203));
  ASSERT_TRUE(p().Publish(Offset(203), "app").ok());
  EXPECT_EQ(ReadAll(p()).size(), 203u);
}

TEST_F(TransactionalWriteAhead, TruncateToAndAReopenWithoutPublishDropRecordsWrittenAhead) {
  AppendN(p(), 10, "a", "app");
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(10), "app").ok());
  AppendWrittenAhead(100, "x");
  ASSERT_TRUE(p().TruncateTo(Offset(10), "app").ok());  // a recovery to the last checkpoint
  EXPECT_EQ(p().WrittenEnd(), Offset(10));
  AppendN(p(), 5, "c", "app");
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(15), "app").ok());
  auto records = ReadAll(p());
  ASSERT_EQ(records.size(), 15u);
  EXPECT_EQ(records[10].second, ValueFor("c0"));
  AppendWrittenAhead(100, "y");  // never flushed nor published
  ReopenWithSmallGroups();
  EXPECT_EQ(p().NextOffset(), Offset(15));
  records = ReadAll(p());
  ASSERT_EQ(records.size(), 15u);
  EXPECT_EQ(records[14].second, ValueFor("c4"));
}

TEST_F(Transactional, AppendsStayInvisibleUntilPublish) {
  AppendN(p(), 5, "r", "app");
  auto durable = p().Flush("app");
  ASSERT_TRUE(durable.ok());
  EXPECT_EQ(*durable, Offset(5));
  EXPECT_EQ(p().NextOffset(), Offset(0));
  EXPECT_TRUE(ReadAll(p()).empty());
  ASSERT_TRUE(p().Publish(Offset(5), "app").ok());
  EXPECT_EQ(p().NextOffset(), Offset(5));
  EXPECT_EQ(ReadAll(p()).size(), 5u);
}

TEST_F(Transactional, CommitterNeverFlushesThem) {
  AppendN(p(), 5, "r", "app");
  std::this_thread::sleep_for(50ms);  // many group commit intervals
  EXPECT_EQ(p().DurableEnd(), Offset(0));
  EXPECT_EQ(fs::file_size(dir_.path() / "out" / "0" / "00000000000000000000.log"), 0u);
}

TEST_F(Transactional, PublishBeyondDurableIsRefused) {
  AppendN(p(), 5, "r", "app");
  EXPECT_EQ(p().Publish(Offset(5), "app").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(3), "app").ok());
  EXPECT_EQ(p().Publish(Offset(2), "app").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll(p()).size(), 3u);  // a publish inside a batch shows exactly up to it
}

TEST_F(Transactional, TruncateToDropsTheUnpublishedTail) {
  AppendN(p(), 5, "a", "app");
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(5), "app").ok());
  AppendN(p(), 4, "b", "app");  // flushed, not published: a crashed checkpoint
  ASSERT_TRUE(p().Flush("app").ok());
  AppendN(p(), 3, "c", "app");  // still pending
  ASSERT_TRUE(p().TruncateTo(Offset(5), "app").ok());
  EXPECT_EQ(p().WrittenEnd(), Offset(5));
  EXPECT_EQ(p().DurableEnd(), Offset(5));
  AppendN(p(), 2, "d", "app");
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(7), "app").ok());
  auto records = ReadAll(p());
  ASSERT_EQ(records.size(), 7u);
  EXPECT_EQ(records[4].second, ValueFor("a4"));
  EXPECT_EQ(records[5].second, ValueFor("d0"));
  EXPECT_EQ(records[6].second, ValueFor("d1"));
  Reopen();
  records = ReadAll(p());
  ASSERT_EQ(records.size(), 7u);
  EXPECT_EQ(records[5].second, ValueFor("d0"));
}

TEST_F(Transactional, TruncateToInsidePendingRecordsKeepsThoseBefore) {
  AppendN(p(), 6, "a", "app");  // one pending run of 6 records
  ASSERT_TRUE(p().TruncateTo(Offset(4), "app").ok());
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(4), "app").ok());
  auto records = ReadAll(p());
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[3].second, ValueFor("a3"));
}

TEST_F(Transactional, WaitersForRecordsThatTruncateToRemovesGetAborted) {
  // A waiter that only starts after the truncation is refused (kInvalidArgument) instead: then
  // try again with a longer head start.
  for (int attempt = 0; attempt < 6; ++attempt) {
    ASSERT_TRUE(p().TruncateTo(Offset(0), "app").ok());
    AppendN(p(), 5, "a", "app");  // pending: only the owner's Flush would make them durable
    Status waited;
    std::thread waiter([&] { waited = p().WaitDurable(Offset(5), std::chrono::seconds(30)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(10 << attempt));
    ASSERT_TRUE(p().TruncateTo(Offset(2), "app").ok());
    waiter.join();
    if (waited.code() == StatusCode::kInvalidArgument) continue;
    EXPECT_EQ(waited.code(), StatusCode::kAborted) << waited.ToString();
    return;
  }
  FAIL() << "the waiter never started before the truncation";
}

TEST_F(Transactional, TruncateToInsideAWrittenBatchIsInvalidArgument) {
  AppendN(p(), 6, "a", "app");
  ASSERT_TRUE(p().Flush("app").ok());  // one batch [0, 6)
  Status s = p().TruncateTo(Offset(3), "app");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p().WrittenEnd(), Offset(6));  // nothing changed
  EXPECT_TRUE(p().TruncateTo(Offset(0), "app").ok());
  EXPECT_EQ(p().WrittenEnd(), Offset(0));
}

TEST_F(Transactional, TruncateToAcrossSegmentsRemovesLaterSegments) {
  store_.reset();
  config_.segment_bytes = 4096;
  TempDir other;
  store_ = OpenOrDie(Options(other.path()));
  topic_ = CreateOrDie(*store_, "out", config_);
  ASSERT_TRUE(topic_->ClaimForTransactions("app").ok());
  AppendN(p(), 10, "a", "app");
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(10), "app").ok());
  for (int i = 0; i < 20; ++i) {
    AppendN(p(), 10, "b", "app");
    ASSERT_TRUE(p().Flush("app").ok());
  }
  ASSERT_GT(SegmentFiles(other.path() / "out" / "0").size(), 3u);
  ASSERT_TRUE(p().TruncateTo(Offset(10), "app").ok());
  EXPECT_EQ(SegmentFiles(other.path() / "out" / "0").size(), 1u);
  store_.reset();
  store_ = OpenOrDie(Options(other.path()));
  topic_ = *store_->GetTopic("out");
  EXPECT_EQ(p().WrittenEnd(), Offset(10));
  EXPECT_EQ(ReadAll(p()).size(), 10u);
}

TEST_F(Transactional, CommittedFileRestoresTheVisibleEndAfterReopen) {
  AppendN(p(), 8, "a", "app");
  ASSERT_TRUE(p().Flush("app").ok());
  ASSERT_TRUE(p().Publish(Offset(8), "app").ok());
  AppendN(p(), 4, "b", "app");
  ASSERT_TRUE(p().Flush("app").ok());  // durable, never published
  Reopen();
  EXPECT_EQ(p().NextOffset(), Offset(8));
  EXPECT_EQ(p().WrittenEnd(), Offset(12));
  EXPECT_EQ(ReadAll(p()).size(), 8u);
  EXPECT_EQ(topic_->owner(), "app");
}

TEST_F(Transactional, AppendByAnotherOwnerIsRefusedNamingTheOwner) {
  auto refused = p().Append(OneRecord("x"), Durability::kNoWait, "intruder");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("'app'"), std::string::npos);
  EXPECT_EQ(p().Append(OneRecord("x")).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p().Flush("intruder").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p().WrittenEnd(), Offset(0));
}

TEST_F(Transactional, ClaimByAnotherOwnerIsRefusedAndSameOwnerIsIdempotent) {
  EXPECT_TRUE(topic_->ClaimForTransactions("app").ok());
  Status s = topic_->ClaimForTransactions("other");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("'app'"), std::string::npos);
}

TEST_F(Transactional, WaitDurableAppendFlushesWithoutPublishing) {
  auto offset = p().Append(OneRecord("x"), Durability::kWaitDurable, "app");
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(p().DurableEnd(), Offset(1));
  EXPECT_EQ(p().NextOffset(), Offset(0));
}

TEST(TransactionalClaim, RecordsAppendedBeforeTheClaimStayVisible) {
  TempDir dir;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Topic* topic = CreateOrDie(*store, "t");
    AppendN(topic->partition(PartitionId(0)), 5);  // plain, maybe not yet flushed
    ASSERT_TRUE(topic->ClaimForTransactions("app").ok());
    EXPECT_EQ(topic->partition(PartitionId(0)).NextOffset(), Offset(5));
  }
  auto store = OpenOrDie(Options(dir.path()));
  EXPECT_EQ((*store->GetTopic("t"))->partition(PartitionId(0)).NextOffset(), Offset(5));
}

TEST(TransactionalClaim, PlainPartitionRefusesTransactionalOperations) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  EXPECT_EQ(p.Flush("app").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.Publish(Offset(0), "app").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.TruncateTo(Offset(0), "app").code(), StatusCode::kFailedPrecondition);
}

// ---------------------------------------------------------------------------------------------

TEST(Retention, ByBytesRemovesOldSegmentsAndMovesFirstOffset) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_bytes = 10000;
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  for (int i = 0; i < 400; ++i) {
    ASSERT_TRUE(p.Append(OneRecord("r" + std::to_string(i)), Durability::kWaitDurable).ok());
  }
  const int64_t before = p.SizeBytes();
  auto removed = p.EnforceRetention(std::chrono::system_clock::now());
  ASSERT_TRUE(removed.ok());
  EXPECT_GT(*removed, 0);
  EXPECT_EQ(p.FirstOffset(), Offset(*removed));
  EXPECT_GE(p.SizeBytes(), 10000);
  EXPECT_LT(p.SizeBytes(), 10000 + 4096);
  EXPECT_EQ(before - p.SizeBytes() > 0, true);
  auto records = ReadAll(p, p.FirstOffset().value());
  ASSERT_EQ(static_cast<int64_t>(records.size()), 400 - *removed);
  EXPECT_EQ(records.back().second, ValueFor("r399"));
  // The first offset survives a reopen: it is the first segment's name.
  store.reset();
  store = OpenOrDie(Options(dir.path()));
  EXPECT_EQ((*store->GetTopic("t"))->partition(PartitionId(0)).FirstOffset(), Offset(*removed));
}

TEST(Retention, ByAgeRemovesSegmentsWhoseNewestAppendIsOld) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_age = std::chrono::minutes(1);
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  for (int i = 0; i < 200; ++i)
    ASSERT_TRUE(p.Append(OneRecord("r"), Durability::kWaitDurable).ok());
  auto none = p.EnforceRetention(std::chrono::system_clock::now());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  auto removed = p.EnforceRetention(std::chrono::system_clock::now() + std::chrono::hours(1));
  ASSERT_TRUE(removed.ok());
  EXPECT_GT(*removed, 150);  // all but the active segment
  EXPECT_EQ(SegmentFiles(dir.path() / "t" / "0").size(), 1u);
  EXPECT_EQ(p.FirstOffset(), Offset(*removed));
  EXPECT_EQ(p.NextOffset(), Offset(200));
}

TEST(Retention, ReaderBelowFirstOffsetGetsOutOfRange) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_bytes = 0;
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(p.Append(OneRecord("r"), Durability::kWaitDurable).ok());
  PartitionReader reader(p, Offset(0));
  ASSERT_TRUE(reader.Next(10).ok());
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
  ASSERT_GT(p.FirstOffset(), Offset(10));
  auto batch = reader.Next();
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(batch.status().message().find("retention"), std::string::npos);
  reader.Seek(p.FirstOffset());
  auto rest = reader.Next(1000);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(static_cast<int64_t>(rest->size()), 100 - p.FirstOffset().value());
}

TEST(Retention, CommitterEnforcesItPeriodically) {
  TempDir dir;
  LogOptions options = Options(dir.path());
  options.retention_check_interval = 20ms;
  auto store = OpenOrDie(options);
  TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_bytes = 0;
  Partition& p = CreateOrDie(*store, "t", config)->partition(PartitionId(0));
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(p.Append(OneRecord("r"), Durability::kWaitDurable).ok());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (p.FirstOffset() == Offset(0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GT(p.FirstOffset(), Offset(0));
}

TEST(Retention, NeverRemovesUnpublishedRecords) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_bytes = 0;
  Topic* topic = CreateOrDie(*store, "t", config);
  ASSERT_TRUE(topic->ClaimForTransactions("app").ok());
  Partition& p = topic->partition(PartitionId(0));
  for (int i = 0; i < 10; ++i) {
    AppendN(p, 10, "r", "app");
    ASSERT_TRUE(p.Flush("app").ok());
  }
  auto removed = p.EnforceRetention(std::chrono::system_clock::now());
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0);
  EXPECT_EQ(p.FirstOffset(), Offset(0));
}

// ---------------------------------------------------------------------------------------------

// The base offsets of a partition's segment files, oldest first (their names).
std::vector<int64_t> SegmentBases(const fs::path& partition_dir) {
  std::vector<int64_t> bases;
  for (const fs::path& f : SegmentFiles(partition_dir))
    bases.push_back(std::stoll(f.stem().string()));
  return bases;
}

// Appends n records as one batch each (so 4 KiB segments roll every ~25 records).
void AppendEachDurable(Partition& p, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(p.Append(OneRecord("r" + std::to_string(i)), Durability::kWaitDurable).ok());
  }
}

TopicConfig SmallSegments() {
  TopicConfig config;
  config.segment_bytes = 4096;
  return config;
}

TEST(DeleteBefore, RemovesExactlyTheSegmentsWhollyBelowTheOffset) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t", SmallSegments())->partition(PartitionId(0));
  AppendEachDurable(p, 300);
  const fs::path pdir = dir.path() / "t" / "0";
  const std::vector<int64_t> bases = SegmentBases(pdir);
  ASSERT_GE(bases.size(), 6u);
  const size_t k = bases.size() / 2;
  const int64_t target = bases[k] + 3;  // inside segment k, which must stay
  ASSERT_LT(target, bases[k + 1]);

  PartitionReader retained(p, Offset(target));
  ASSERT_TRUE(retained.Next(2).ok());
  PartitionReader below(p, Offset(0));
  ASSERT_TRUE(below.Next(2).ok());
  const int64_t size_before = p.SizeBytes();

  auto removed = p.DeleteBefore(Offset(target));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, bases[k]);
  EXPECT_EQ(p.FirstOffset(), Offset(bases[k]));
  EXPECT_EQ(p.NextOffset(), Offset(300));
  EXPECT_LT(p.SizeBytes(), size_before);
  EXPECT_EQ(SegmentBases(pdir), std::vector<int64_t>(bases.begin() + k, bases.end()));

  // A reader in a retained segment reads on; one below the first offset is out of range.
  int64_t next = target + 2;
  for (;;) {
    auto batch = retained.Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (batch->empty()) break;
    for (const StoredRecord& r : *batch) {
      ASSERT_EQ(r.offset.value(), next);
      EXPECT_EQ(r.value, ValueFor("r" + std::to_string(next)));
      ++next;
    }
  }
  EXPECT_EQ(next, 300);
  auto out = below.Next();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange);
  PartitionReader fresh(p, Offset(bases[k] - 1));
  EXPECT_EQ(fresh.Next().status().code(), StatusCode::kOutOfRange);
  auto rest = ReadAll(p, bases[k]);
  ASSERT_EQ(static_cast<int64_t>(rest.size()), 300 - bases[k]);
  EXPECT_EQ(rest.front().second, ValueFor("r" + std::to_string(bases[k])));

  // Again at the same offset, or below the first offset: nothing more goes.
  auto again = p.DeleteBefore(Offset(target));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  auto lower = p.DeleteBefore(Offset(1));
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ(*lower, 0);
  EXPECT_EQ(p.FirstOffset(), Offset(bases[k]));
}

TEST(DeleteBefore, AnOffsetAtASegmentBoundaryRemovesTheSegmentEndingThere) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t", SmallSegments())->partition(PartitionId(0));
  AppendEachDurable(p, 100);
  const std::vector<int64_t> bases = SegmentBases(dir.path() / "t" / "0");
  ASSERT_GE(bases.size(), 3u);
  auto removed = p.DeleteBefore(Offset(bases[2]));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, bases[2]);
  EXPECT_EQ(p.FirstOffset(), Offset(bases[2]));
}

TEST(DeleteBefore, NeverRemovesTheActiveSegment) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t", SmallSegments())->partition(PartitionId(0));
  const fs::path pdir = dir.path() / "t" / "0";
  AppendEachDurable(p, 10);
  ASSERT_EQ(SegmentBases(pdir).size(), 1u);
  auto none = p.DeleteBefore(Offset(1'000'000));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);

  AppendEachDurable(p, 90);
  const std::vector<int64_t> bases = SegmentBases(pdir);
  ASSERT_GE(bases.size(), 2u);
  auto removed = p.DeleteBefore(Offset(1'000'000));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, bases.back());
  EXPECT_EQ(SegmentBases(pdir), std::vector<int64_t>{bases.back()});
  EXPECT_EQ(p.FirstOffset(), Offset(bases.back()));
  EXPECT_EQ(p.NextOffset(), Offset(100));
  EXPECT_EQ(static_cast<int64_t>(ReadAll(p, bases.back()).size()), 100 - bases.back());
  // Appends go on with dense offsets.
  auto offset = p.Append(OneRecord("after"), Durability::kWaitDurable);
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(*offset, Offset(100));
}

TEST(DeleteBefore, TransactionalNeedsTheOwnerAndKeepsUnpublishedRecords) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "t", SmallSegments());
  ASSERT_TRUE(topic->ClaimForTransactions("app").ok());
  Partition& p = topic->partition(PartitionId(0));
  for (int i = 0; i < 10; ++i) {  // ten flushed batches of ten records
    AppendN(p, 10, "b" + std::to_string(i), "app");
    ASSERT_TRUE(p.Flush("app").ok());
  }
  ASSERT_TRUE(p.Publish(Offset(50), "app").ok());
  const fs::path pdir = dir.path() / "t" / "0";
  const std::vector<int64_t> bases = SegmentBases(pdir);
  ASSERT_GE(bases.size(), 3u);
  ASSERT_GT(bases.back(), 50);  // some whole segments hold only unpublished records
  // What DeleteBefore(visible end) keeps: the segment holding offset 50 on.
  const int64_t expected_first = *std::prev(std::upper_bound(bases.begin(), bases.end(), 50));
  ASSERT_GT(expected_first, 0);

  for (std::string_view who : {"", "other"}) {
    auto refused = p.DeleteBefore(Offset(100), who);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find("'app'"), std::string::npos);
  }
  EXPECT_EQ(SegmentBases(pdir), bases);
  EXPECT_EQ(p.FirstOffset(), Offset(0));

  auto removed = p.DeleteBefore(Offset(100), "app");  // clamped to the visible end, 50
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, expected_first);
  EXPECT_EQ(p.FirstOffset(), Offset(expected_first));
  EXPECT_EQ(p.NextOffset(), Offset(50));
  EXPECT_EQ(p.DurableEnd(), Offset(100));

  // The unpublished records are all there once published.
  ASSERT_TRUE(p.Publish(Offset(100), "app").ok());
  auto records = ReadAll(p, expected_first);
  ASSERT_EQ(static_cast<int64_t>(records.size()), 100 - expected_first);
  EXPECT_EQ(records.front().first, expected_first);
  EXPECT_EQ(records.back().first, 99);
  EXPECT_EQ(records.back().second, ValueFor("b99"));
}

TEST(DeleteBefore, SurvivesAReopen) {
  TempDir dir;
  int64_t first;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Partition& p = CreateOrDie(*store, "t", SmallSegments())->partition(PartitionId(0));
    AppendEachDurable(p, 200);
    const std::vector<int64_t> bases = SegmentBases(dir.path() / "t" / "0");
    ASSERT_GE(bases.size(), 4u);
    auto removed = p.DeleteBefore(Offset(bases[3] + 1));
    ASSERT_TRUE(removed.ok());
    first = bases[3];
    ASSERT_EQ(*removed, first);
  }
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = (*store->GetTopic("t"))->partition(PartitionId(0));
  EXPECT_EQ(p.FirstOffset(), Offset(first));
  EXPECT_EQ(p.NextOffset(), Offset(200));
  PartitionReader below(p, Offset(first - 1));
  EXPECT_EQ(below.Next().status().code(), StatusCode::kOutOfRange);
  auto records = ReadAll(p, first);
  ASSERT_EQ(static_cast<int64_t>(records.size()), 200 - first);
  EXPECT_EQ(records.front().second, ValueFor("r" + std::to_string(first)));
}

// ---------------------------------------------------------------------------------------------

TEST(Topics, BadNamesAreRefused) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  for (const std::string& name : std::vector<std::string>{
           "", ".", "..", "a/b", "a b", "caf\xc3\xa9", "x~deleted", std::string(201, 'a')}) {
    auto topic = store->CreateTopic(name, {});
    ASSERT_FALSE(topic.ok()) << name;
    EXPECT_EQ(topic.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(topic.status().message().find("topic name"), std::string::npos);
  }
  EXPECT_TRUE(store->CreateTopic(std::string(200, 'a'), {}).ok());
  EXPECT_TRUE(store->CreateTopic("Ok.name_with-all-9", {}).ok());
}

TEST(Topics, BadConfigsAreRefusedNamingTheField) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  auto refused = [&](TopicConfig config, const std::string& field) {
    auto topic = store->CreateTopic("t", config);
    ASSERT_FALSE(topic.ok()) << field;
    EXPECT_EQ(topic.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(topic.status().message().find(field), std::string::npos) << topic.status().ToString();
  };
  TopicConfig c;
  c.partitions = 0;
  refused(c, "partitions");
  c.partitions = 10001;
  refused(c, "partitions");
  c = {};
  c.segment_bytes = 4095;
  refused(c, "segment_bytes");
  c = {};
  c.retention_bytes = -2;
  refused(c, "retention_bytes");
  c = {};
  c.retention_age = std::chrono::milliseconds(-2);
  refused(c, "retention_age");
  EXPECT_TRUE(store->ListTopics().empty());
  EXPECT_FALSE(fs::exists(dir.path() / "t"));
}

TEST(Topics, UnknownTopicIsNotFoundListingKnownTopics) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  auto none = store->GetTopic("x");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  CreateOrDie(*store, "alpha");
  CreateOrDie(*store, "beta");
  auto missing = store->GetTopic("gamma");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'gamma'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("alpha, beta"), std::string::npos);
}

TEST(Topics, CreateExistingIsAlreadyExistsAndGetOrCreateReturnsIt) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "t");
  EXPECT_EQ(store->CreateTopic("t", {}).status().code(), StatusCode::kAlreadyExists);
  TopicConfig other;
  other.partitions = 5;
  auto same = store->GetOrCreateTopic("t", other);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, topic);
  EXPECT_EQ((*same)->num_partitions(), 1);
}

TEST(Topics, ConfigAndPartitionsPersistAcrossReopen) {
  TempDir dir;
  TopicConfig config;
  config.partitions = 4;
  config.retention_bytes = 123456;
  config.retention_age = std::chrono::hours(2);
  config.segment_bytes = 1 << 20;
  {
    auto store = OpenOrDie(Options(dir.path()));
    CreateOrDie(*store, "t", config);
  }
  auto store = OpenOrDie(Options(dir.path()));
  auto topic = store->GetTopic("t");
  ASSERT_TRUE(topic.ok());
  EXPECT_EQ((*topic)->config().partitions, 4);
  EXPECT_EQ((*topic)->config().retention_bytes, 123456);
  EXPECT_EQ((*topic)->config().retention_age, std::chrono::hours(2));
  EXPECT_EQ((*topic)->config().segment_bytes, 1 << 20);
  EXPECT_EQ((*topic)->owner(), "");
  EXPECT_EQ(store->ListTopics(), std::vector<std::string>{"t"});
}

TEST(Topics, PartitionForMatchesKafkaPartitionOfTheKeyBytes) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  TopicConfig config;
  config.partitions = 12;
  Topic* topic = CreateOrDie(*store, "t", config);
  for (const Key& key : {Key::String("user-1"), Key::Int(99), Key(), Key::Bytes("\x01\x02")}) {
    EXPECT_EQ(topic->PartitionFor(key), KafkaPartition(key.bytes(), 12));
  }
}

TEST(Topics, DeleteTopicRemovesItsFilesAndName) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  AppendN(p, 10);
  ASSERT_TRUE(store->DeleteTopic("t").ok());
  EXPECT_FALSE(fs::exists(dir.path() / "t"));
  EXPECT_EQ(store->GetTopic("t").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(p.Append(OneRecord("late")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteTopic("t").code(), StatusCode::kNotFound);
  // The name can be used again, from offset 0.
  Partition& again = CreateOrDie(*store, "t")->partition(PartitionId(0));
  EXPECT_EQ(again.WrittenEnd(), Offset(0));
}

TEST(Topics, InterruptedCreateIsCleanedUpOnOpen) {
  TempDir dir;
  fs::create_directories(dir.path() / "t~creating" / "0");
  auto store = OpenOrDie(Options(dir.path()));
  EXPECT_TRUE(store->ListTopics().empty());
  EXPECT_FALSE(fs::exists(dir.path() / "t~creating"));
}

TEST(LogStore, SecondOpenOfTheSameDirectoryIsRefused) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  auto second = LogStore::Open(Options(dir.path()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

TEST(LogStore, BadOptionsAreRefused) {
  LogOptions options;
  EXPECT_EQ(LogStore::Open(options).status().code(), StatusCode::kInvalidArgument);
  TempDir dir;
  options.dir = dir.path();
  options.group_commit_interval = std::chrono::microseconds(0);
  auto refused = LogStore::Open(options);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("group_commit_interval"), std::string::npos);
}

TEST(LogStore, WaitDurableBeyondTheWrittenEndIsInvalidArgument) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Partition& p = CreateOrDie(*store, "t")->partition(PartitionId(0));
  EXPECT_EQ(p.WaitDurable(Offset(1), 10ms).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(p.WaitDurable(Offset(0), 10ms).ok());
}

// ---------------------------------------------------------------------------------------------

TopicConfig KeepNothing() {
  TopicConfig config;
  config.segment_bytes = 4096;
  config.retention_bytes = 0;
  return config;
}

TEST(RetentionFloor, APlainTopicHasNone) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "t", KeepNothing());
  Partition& p = topic->partition(PartitionId(0));
  EXPECT_FALSE(topic->archived());
  EXPECT_FALSE(p.RetentionFloor().has_value());
  EXPECT_EQ(p.RaiseRetentionFloor(Offset(5)).code(), StatusCode::kFailedPrecondition);
}

TEST(RetentionFloor, AnArchivedTopicKeepsEverythingUntilTheFloorRises) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "t", KeepNothing());
  Partition& p = topic->partition(PartitionId(0));
  ASSERT_TRUE(topic->SetArchived(true).ok());
  EXPECT_EQ(p.RetentionFloor(), Offset(0));
  AppendEachDurable(p, 200);
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
  EXPECT_EQ(p.FirstOffset(), Offset(0));
  ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now() + std::chrono::hours(24)).ok());
  EXPECT_EQ(p.FirstOffset(), Offset(0));
  // The archive holds [0, 100): segments wholly below 100 may go, none holding 100 or more.
  ASSERT_TRUE(p.RaiseRetentionFloor(Offset(100)).ok());
  auto removed = p.EnforceRetention(std::chrono::system_clock::now());
  ASSERT_TRUE(removed.ok());
  EXPECT_GT(*removed, 0);
  EXPECT_LE(p.FirstOffset(), Offset(100));
  const std::vector<int64_t> bases = SegmentBases(dir.path() / "t" / "0");
  ASSERT_GE(bases.size(), 2u);
  EXPECT_GT(bases[1], 100);  // the first segment left holds offset 100
  auto records = ReadAll(p, 100);
  ASSERT_EQ(records.size(), 100u);
  EXPECT_EQ(records.front().first, 100);
}

TEST(RetentionFloor, NeverLowered) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "t", KeepNothing());
  ASSERT_TRUE(topic->SetArchived(true).ok());
  Partition& p = topic->partition(PartitionId(0));
  ASSERT_TRUE(p.RaiseRetentionFloor(Offset(50)).ok());
  ASSERT_TRUE(p.RaiseRetentionFloor(Offset(20)).ok());
  EXPECT_EQ(p.RetentionFloor(), Offset(50));
}

TEST(RetentionFloor, HoldsDeleteBeforeToo) {
  TempDir dir;
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = CreateOrDie(*store, "t", KeepNothing());
  ASSERT_TRUE(topic->SetArchived(true).ok());
  Partition& p = topic->partition(PartitionId(0));
  AppendEachDurable(p, 200);
  auto removed = p.DeleteBefore(Offset(150));
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0);
  EXPECT_EQ(p.FirstOffset(), Offset(0));
}

TEST(RetentionFloor, TheHoldSurvivesARestartBeforeTheArchiveRaisesIt) {
  TempDir dir;
  int64_t first;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Topic* topic = CreateOrDie(*store, "t", KeepNothing());
    ASSERT_TRUE(topic->SetArchived(true).ok());
    Partition& p = topic->partition(PartitionId(0));
    AppendEachDurable(p, 100);
    ASSERT_TRUE(p.RaiseRetentionFloor(Offset(60)).ok());
    ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
    first = p.FirstOffset().value();
    ASSERT_GT(first, 0);
    AppendEachDurable(p, 100);
  }
  // A restart with the committer enforcing retention at once: the floor starts at the first
  // retained offset, so nothing more goes until the archive raises it.
  LogOptions options = Options(dir.path());
  options.retention_check_interval = 1ms;
  auto store = OpenOrDie(options);
  Topic* topic = *store->GetTopic("t");
  Partition& p = topic->partition(PartitionId(0));
  EXPECT_TRUE(topic->archived());
  EXPECT_EQ(p.RetentionFloor(), Offset(first));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(p.FirstOffset(), Offset(first));
  EXPECT_EQ(ReadAll(p, first).size(), static_cast<size_t>(200 - first));
}

// Declared before it exists (a lake's archive view of a topic not yet created): the topic is born
// archived, holds its records from the first, and stays archived after a restart; other topics
// are not.
TEST(RetentionFloor, ATopicDeclaredBeforeItIsCreatedIsBornArchived) {
  TempDir dir;
  {
    auto store = OpenOrDie(Options(dir.path()));
    store->ArchiveWhenCreated("t");
    Topic* topic = CreateOrDie(*store, "t", KeepNothing());
    EXPECT_TRUE(topic->archived());
    Partition& p = topic->partition(PartitionId(0));
    EXPECT_EQ(p.RetentionFloor(), Offset(0));
    AppendEachDurable(p, 100);
    ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
    EXPECT_EQ(p.FirstOffset(), Offset(0));
    EXPECT_FALSE(CreateOrDie(*store, "u", KeepNothing())->archived());
  }
  auto store = OpenOrDie(Options(dir.path()));
  EXPECT_TRUE((*store->GetTopic("t"))->archived());
  EXPECT_FALSE((*store->GetTopic("u"))->archived());
}

TEST(RetentionFloor, UnarchivingRemovesTheFloorAndPersists) {
  TempDir dir;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Topic* topic = CreateOrDie(*store, "t", KeepNothing());
    ASSERT_TRUE(topic->SetArchived(true).ok());
    ASSERT_TRUE(topic->SetArchived(false).ok());
    Partition& p = topic->partition(PartitionId(0));
    EXPECT_FALSE(p.RetentionFloor().has_value());
    AppendEachDurable(p, 100);
    ASSERT_TRUE(p.EnforceRetention(std::chrono::system_clock::now()).ok());
    EXPECT_GT(p.FirstOffset(), Offset(0));
  }
  auto store = OpenOrDie(Options(dir.path()));
  EXPECT_FALSE((*store->GetTopic("t"))->archived());
}

TEST(RetentionFloor, ClaimingForTransactionsKeepsTheArchivedMark) {
  TempDir dir;
  {
    auto store = OpenOrDie(Options(dir.path()));
    Topic* topic = CreateOrDie(*store, "t", KeepNothing());
    ASSERT_TRUE(topic->SetArchived(true).ok());
    ASSERT_TRUE(topic->ClaimForTransactions("app").ok());
  }
  auto store = OpenOrDie(Options(dir.path()));
  Topic* topic = *store->GetTopic("t");
  EXPECT_TRUE(topic->archived());
  EXPECT_EQ(topic->owner(), "app");
}

TEST(RetentionFloor, AMalformedArchivedFieldIsCorruption) {
  TempDir dir;
  {
    auto store = OpenOrDie(Options(dir.path()));
    CreateOrDie(*store, "t", KeepNothing());
  }
  const auto path = dir.path() / "t" / "topic.json";
  std::string json = *ReadFile(path);
  json.insert(json.rfind('}'), ",\"archived\":1");
  ASSERT_TRUE(ReplaceFileAtomically(path, json).ok());
  auto store = LogStore::Open(Options(dir.path()));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kCorruption);
  EXPECT_NE(store.status().message().find("archived"), std::string::npos);
}

}  // namespace
}  // namespace weir::log
