#include "dataflow/sources.h"

#include <algorithm>

#include "core/parse.h"
#include "dataflow/watermark_marks.h"

namespace weir::dataflow {

Record& RecordSlots::Add() {
  if (size_ == slots_.size()) slots_.emplace_back();
  Record& slot = slots_[size_++];
  slot.key = Key();
  slot.timestamp = EventTime();
  slot.headers.clear();
  return slot;
}

RateLimiter::RateLimiter(double per_second)
    : per_second_(per_second), start_(std::chrono::steady_clock::now()) {}

size_t RateLimiter::Allow(size_t wanted) {
  if (per_second_ <= 0) return wanted;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  int64_t due = static_cast<int64_t>(elapsed * per_second_) + 1;
  size_t allowed = due > granted_ ? std::min<size_t>(wanted, due - granted_) : 0;
  granted_ += static_cast<int64_t>(allowed);
  return allowed;
}

namespace {

class TopicSource : public Source {
 public:
  TopicSource(TopicSourceOptions options, log::Partition& partition, Offset start, Offset end,
              const RepartitionReading* repartition)
      : options_(std::move(options)),
        partition_(partition),
        reader_(partition, start),
        bounded_end_(end),
        repartition_(repartition ? *repartition : RepartitionReading()),
        limiter_(options_.max_rate) {
    extraction_.key = options_.key;
    extraction_.timestamp_field = options_.timestamp_field;
  }

  Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext& ctx) override {
    if (options_.bounded && reader_.position() >= bounded_end_) return PollResult::kEnd;
    size_t allowed = limiter_.Allow(max);
    if (allowed == 0) return PollResult::kIdle;
    if (options_.bounded) {
      allowed = std::min<size_t>(allowed, bounded_end_ - reader_.position());
    }
    // Read the flag before reading: if it was set, everything the producers wrote is visible.
    bool ended = repartition_.end_of_input != nullptr &&
                 repartition_.end_of_input->load(std::memory_order_acquire);
    auto records = reader_.Next(allowed);
    if (!records.ok()) return records.status().WithContext(Describe());
    if (records->empty()) return ended ? PollResult::kEnd : PollResult::kIdle;
    for (const log::StoredRecord& stored : *records) {
      if (!repartition_.producers.empty() && TakeMark(stored, batch, ctx)) continue;
      Status decoded = Decode(stored, batch.records.Add());
      if (!decoded.ok()) {
        batch.records.pop_back();
        ctx.RawDeadLetter(decoded.message(), PositionValue(stored.offset.value()), stored.value);
        continue;
      }
      batch.positions.push_back(stored.offset.value());
      // The reader's views stay valid until its next call: the next Poll (SourceBatch::json).
      batch.json.push_back(log::IsBinaryValue(stored.value) ? std::string_view() : stored.value);
    }
    return PollResult::kRecords;
  }

  std::string SavePosition() const override { return std::to_string(reader_.position().value()); }
  int64_t NextPosition() const override { return reader_.position().value(); }

  Result<Record> Reread(int64_t offset, int64_t) override {
    log::PartitionReader reader(partition_, Offset(offset));
    auto records = reader.Next(1);
    if (!records.ok()) return records.status().WithContext(Describe());
    if (records->empty() || records->front().offset != Offset(offset)) {
      return Status::NotFound(Describe() + ": offset " + std::to_string(offset) +
                              " is no longer retained");
    }
    Record record;
    WEIR_RETURN_IF_ERROR(Decode(records->front(), record));
    return record;
  }

  Status RestorePosition(std::string_view saved) override {
    auto offset = ParseInt64(saved, "saved position");
    if (!offset.ok()) return Status::Corruption(Describe() + ": bad saved position");
    reader_.Seek(Offset(*offset));
    return Status::OK();
  }

  std::string Describe() const override {
    return "topic " + options_.topic + " partition " + std::to_string(partition_.id().value());
  }

  Value PositionValue(int64_t offset) const override {
    return Value::MakeObject({{"topic", Value(options_.topic)},
                              {"partition", Value(partition_.id().value())},
                              {"offset", Value(offset)}});
  }

 private:
  // Whether `stored` was a watermark mark (put into the batch, or dead-lettered if malformed or
  // from an unknown producer).
  bool TakeMark(const log::StoredRecord& stored, SourceBatch& batch, TaskContext& ctx) {
    auto mark = DecodeWatermarkMark(stored);
    if (mark.ok() && !mark->has_value()) return false;
    const int64_t offset = stored.offset.value();
    if (!mark.ok()) {
      ctx.RawDeadLetter(mark.status().message(), PositionValue(offset), stored.value);
      return true;
    }
    const auto& producers = repartition_.producers;
    auto it = std::find(producers.begin(), producers.end(), (*mark)->producer);
    if (it == producers.end()) {
      ctx.RawDeadLetter("watermark mark from task '" + std::string((*mark)->producer) +
                            "', which does not write this topic",
                        PositionValue(offset), stored.value);
      return true;
    }
    batch.marks.push_back({batch.records.size(), offset,
                           static_cast<int32_t>(it - producers.begin()), (*mark)->watermark});
    return true;
  }

  // Into `record` (a slot: see RecordSlots).
  Status Decode(const log::StoredRecord& stored, Record& record) {
    WEIR_RETURN_IF_ERROR(stored.DecodeKeyInto(record.key));
    if (stored.header_count > 0) {
      WEIR_ASSIGN_OR_RETURN(record.headers, stored.DecodeHeaders());
    }
    record.timestamp = stored.timestamp;
    WEIR_RETURN_IF_ERROR(log::DecodeStoredValue(stored.value, record.value));
    return ExtractKeyAndTimestamp(extraction_, record);
  }

  TopicSourceOptions options_;
  RecordExtraction extraction_;
  log::Partition& partition_;
  log::PartitionReader reader_;
  Offset bounded_end_;
  RepartitionReading repartition_;
  RateLimiter limiter_;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenTopicSource(log::LogStore& log,
                                                const TopicSourceOptions& options,
                                                PartitionId partition,
                                                const RepartitionReading* repartition) {
  WEIR_ASSIGN_OR_RETURN(log::Topic * topic, log.GetTopic(options.topic));
  if (partition.value() >= topic->num_partitions()) {
    return Status::InvalidArgument("topic " + options.topic + " has no partition " +
                                   std::to_string(partition.value()));
  }
  log::Partition& p = topic->partition(partition);
  const Offset end = p.NextOffset();
  Offset start = p.FirstOffset();
  if (options.start == TopicStart::kLatest) {
    start = end;
  } else if (options.start == TopicStart::kOffset) {
    start = std::clamp(Offset(options.start_offset), start, end);
  }
  return std::unique_ptr<Source>(new TopicSource(options, p, start, end, repartition));
}

void DescribeRecordExtraction(Fingerprint& fingerprint, const KeySpec& key,
                              std::string_view timestamp_field,
                              std::string_view dead_letter_topic) {
  fingerprint.Fixed("key", key.field)
      .Fixed("key_type", key.type)
      .Fixed("timestamp", timestamp_field)
      .Fixed("dead_letter", dead_letter_topic);
}

std::string CountingSource::SavePosition() const { return std::to_string(next_); }

Status CountingSource::RestorePosition(std::string_view saved) {
  auto next = ParseInt64(saved, "saved position");
  if (!next.ok()) return Status::Corruption(Describe() + ": bad saved position");
  next_ = *next;
  return Status::OK();
}

Result<Record> Source::Reread(int64_t, int64_t) {
  return Status::FailedPrecondition(Describe() + " cannot read a record again");
}

void Source::Resolve(int64_t, Resolution) {}

}  // namespace weir::dataflow
