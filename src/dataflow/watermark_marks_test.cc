// Watermark marks in a real topic of the embedded log, read by the topic source as a task reads
// a repartition topic: marks come out of the stream at their place between the records; a
// malformed mark, or one from a task that does not write the topic, is a dead letter.
#include "dataflow/watermark_marks.h"

#include <gtest/gtest.h>

#include <atomic>

#include "dataflow/sources.h"
#include "log/log.h"
#include "testing/recording_context.h"
#include "testing/temp_dir.h"

namespace weir::dataflow {
namespace {

using testing::RecordingContext;
using testing::TempDir;

class WatermarkMarks : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions options;
    options.dir = dir_.path() / "log";
    log_ = std::move(log::LogStore::Open(options)).value();
    topic_ = *log_->CreateTopic("app.repartition.by-page", log::TopicConfig{});
  }

  void Append(const log::RecordBatchBuilder& batch) {
    ASSERT_TRUE(
        topic_->partition(PartitionId(0)).Append(batch, log::Durability::kWaitDurable).ok());
  }

  // Everything visible, read once by a repartition reader whose producers are 0_0 and 0_1.
  SourceBatch ReadAll() {
    RepartitionReading reading{&ended_, {"0_0", "0_1"}};
    TopicSourceOptions options;
    options.topic = topic_->name();
    auto source = OpenTopicSource(*log_, options, PartitionId(0), &reading);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    SourceBatch batch;
    auto polled = (*source)->Poll(100, batch, ctx_);
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    return batch;
  }

  TempDir dir_;
  std::unique_ptr<log::LogStore> log_;
  log::Topic* topic_ = nullptr;
  std::atomic<bool> ended_{false};
  RecordingContext ctx_;
};

TEST_F(WatermarkMarks, MarksComeOutOfTheStreamAtTheirPlace) {
  log::RecordBatchBuilder batch;
  batch.Add(EventTime(100), Key::String("a"), Value(1));
  AppendWatermarkMark(batch, "0_1", Watermark(90));
  batch.Add(EventTime(120), Key::String("b"), Value(2));
  AppendWatermarkMark(batch, "0_0", Watermark(120));
  AppendWatermarkMark(batch, "0_1", Watermark::Max());
  Append(batch);

  SourceBatch read = ReadAll();
  ASSERT_EQ(read.records.size(), 2u);
  EXPECT_EQ(read.records[0].timestamp, EventTime(100));
  EXPECT_EQ(read.records[1].timestamp, EventTime(120));
  EXPECT_EQ(read.positions, (std::vector<int64_t>{0, 2}));
  ASSERT_EQ(read.marks.size(), 3u);
  EXPECT_EQ(read.marks[0].before, 1u);  // after record a
  EXPECT_EQ(read.marks[0].position, 1);
  EXPECT_EQ(read.marks[0].producer, 1);
  EXPECT_EQ(read.marks[0].watermark, Watermark(90));
  EXPECT_EQ(read.marks[1].before, 2u);
  EXPECT_EQ(read.marks[1].producer, 0);
  EXPECT_EQ(read.marks[2].watermark, Watermark::Max());
  EXPECT_TRUE(ctx_.raw_letters.empty());
}

TEST_F(WatermarkMarks, AMarkFromATaskThatDoesNotWriteTheTopicIsADeadLetter) {
  log::RecordBatchBuilder batch;
  AppendWatermarkMark(batch, "7_3", Watermark(50));
  batch.Add(EventTime(100), Key::String("a"), Value(1));
  Append(batch);

  SourceBatch read = ReadAll();
  EXPECT_EQ(read.records.size(), 1u);
  EXPECT_TRUE(read.marks.empty());
  ASSERT_EQ(ctx_.raw_letters.size(), 1u);
  EXPECT_NE(ctx_.raw_letters[0].reason.find("'7_3'"), std::string::npos)
      << ctx_.raw_letters[0].reason;
  EXPECT_EQ(ctx_.raw_letters[0].position.Find("offset")->as_int(), 0);
}

TEST_F(WatermarkMarks, AMalformedMarkIsADeadLetterAndReadingGoesOn) {
  log::RecordBatchBuilder batch;
  const Header not_a_number{std::string(kWatermarkHeader), "soon"};
  batch.AddRaw(EventTime(0), KeySerde::kString, "0_0", "", {&not_a_number, 1});
  const Header fine{std::string(kWatermarkHeader), "10"};
  batch.AddRaw(EventTime(0), KeySerde::kString, "0_0", "{\"x\":1}", {&fine, 1});  // has a value
  batch.Add(EventTime(100), Key::String("a"), Value(1));
  Append(batch);

  SourceBatch read = ReadAll();
  EXPECT_EQ(read.records.size(), 1u);
  EXPECT_TRUE(read.marks.empty());
  ASSERT_EQ(ctx_.raw_letters.size(), 2u);
  EXPECT_NE(ctx_.raw_letters[0].reason.find("malformed watermark mark"), std::string::npos);
  EXPECT_EQ(ctx_.raw_letters[1].raw, "{\"x\":1}");
}

TEST_F(WatermarkMarks, ARecordWithOtherHeadersIsAnOrdinaryRecord) {
  log::RecordBatchBuilder batch;
  const Header trace{"trace-id", "abc"};
  batch.Add(EventTime(100), Key::String("a"), Value(1), {&trace, 1});
  Append(batch);

  SourceBatch read = ReadAll();
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].headers, (std::vector<Header>{trace}));
  EXPECT_TRUE(read.marks.empty());
}

}  // namespace
}  // namespace weir::dataflow
