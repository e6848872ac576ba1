// TopicWriter against a real topic of the embedded log: a partition's batch is appended as soon
// as it reaches kEarlyAppendBytes, whole and in order, the other partitions' batches waiting for
// Flush; an early append that fails is kept when it happens and returned, once, by the next
// Flush, which then appends nothing.
#include "dataflow/outputs.h"

#include <gtest/gtest.h>

#include <string>

#include "log/log.h"
#include "testing/temp_dir.h"

namespace weir::dataflow {
namespace {

using testing::TempDir;

constexpr size_t kValueBytes = 1000;

class TopicWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions options;
    options.dir = dir_.path() / "log";
    log_ = std::move(log::LogStore::Open(options)).value();
    log::TopicConfig config;
    config.partitions = 2;
    topic_ = *log_->CreateTopic("out", config);
  }

  // Record i: timestamp i, a value of kValueBytes bytes that starts with i.
  static Record RecordNumber(int64_t i) {
    std::string text = std::to_string(i) + ":";
    text.resize(kValueBytes, 'x');
    return Record{Key::Int(i), Value(std::move(text)), EventTime(i), {}};
  }

  Offset WrittenEnd(int32_t partition) {
    return topic_->partition(PartitionId(partition)).WrittenEnd();
  }

  TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  log::Topic* topic_ = nullptr;
};

TEST_F(TopicWriterTest, ABatchIsAppendedWholeAsSoonAsItReachesTheEarlyAppendSize) {
  TopicWriter writer(topic_, "");
  const int64_t total = 3 * TopicWriter::kEarlyAppendBytes / kValueBytes;
  int64_t first_append_at = -1;  // records written when partition 0 first grew
  for (int64_t i = 0; i < total; ++i) {
    writer.WriteTo(PartitionId(0), RecordNumber(i));
    if (i % 10 == 0) writer.WriteTo(PartitionId(1), RecordNumber(-i));
    const int64_t written = WrittenEnd(0).value();
    if (first_append_at < 0 && written > 0) {
      first_append_at = i + 1;
      EXPECT_EQ(written, i + 1) << "the whole batch, at once";
    }
    EXPECT_TRUE(written == 0 ||
                written > i - static_cast<int64_t>(TopicWriter::kEarlyAppendBytes / kValueBytes))
        << "partition 0 holds back no more than kEarlyAppendBytes at record " << i;
  }
  ASSERT_GT(first_append_at, 0) << "nothing was appended before Flush";
  EXPECT_GE(first_append_at * static_cast<int64_t>(kValueBytes),
            static_cast<int64_t>(TopicWriter::kEarlyAppendBytes) - first_append_at * 64)
      << "appended before the batch reached kEarlyAppendBytes";
  EXPECT_LT(WrittenEnd(0).value(), total);
  EXPECT_EQ(WrittenEnd(1).value(), 0) << "a small batch waits for Flush";

  ASSERT_TRUE(writer.Flush().ok());
  EXPECT_EQ(WrittenEnd(0).value(), total);
  EXPECT_EQ(WrittenEnd(1).value(), (total + 9) / 10);
  EXPECT_EQ(writer.records_written(), total + (total + 9) / 10);

  // Every record once, in the order written.
  log::Partition& p0 = topic_->partition(PartitionId(0));
  ASSERT_TRUE(p0.WaitDurable(Offset(total)).ok());
  log::PartitionReader reader(p0, Offset(0));
  int64_t next = 0;
  while (next < total) {
    auto batch = reader.Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_FALSE(batch->empty());
    for (const log::StoredRecord& stored : *batch) {
      EXPECT_EQ(stored.timestamp, EventTime(next));
      EXPECT_EQ(stored.value.substr(0, std::to_string(next).size() + 2),
                "\"" + std::to_string(next) + ":");
      ++next;
    }
  }
  EXPECT_EQ(next, total);
}

TEST_F(TopicWriterTest, AFailedEarlyAppendIsReturnedByTheNextFlush) {
  ASSERT_TRUE(topic_->ClaimForTransactions("app-a").ok());
  TopicWriter writer(topic_, "app-b");
  const int64_t total = 2 * TopicWriter::kEarlyAppendBytes / kValueBytes;
  int64_t failed_at = -1;  // records written when the early append failed
  for (int64_t i = 0; i < total; ++i) {
    writer.WriteTo(PartitionId(0), RecordNumber(i));
    if (failed_at < 0 && !writer.early_append_failure().ok()) failed_at = i + 1;
  }
  writer.WriteTo(PartitionId(1), RecordNumber(-1));
  ASSERT_GT(failed_at, 0) << "the early append's failure was not kept when it happened";
  EXPECT_LT(failed_at, total);
  const Status failure = writer.early_append_failure();
  EXPECT_NE(failure.ToString().find("app-b"), std::string::npos) << failure.ToString();

  EXPECT_EQ(writer.Flush().ToString(), failure.ToString());
  EXPECT_TRUE(writer.early_append_failure().ok()) << "Flush returns a failure once";
  EXPECT_EQ(WrittenEnd(0).value(), 0);
  EXPECT_EQ(WrittenEnd(1).value(), 0);
}

}  // namespace
}  // namespace weir::dataflow
