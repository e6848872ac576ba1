#include "dataflow/sources.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "dataflow/watermark_marks.h"

namespace weir::dataflow {

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

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Parses "a:b" of two integers (a saved position).
bool ParsePair(std::string_view saved, int64_t& a, int64_t& b) {
  size_t colon = saved.find(':');
  if (colon == std::string_view::npos) return false;
  auto r1 = std::from_chars(saved.data(), saved.data() + colon, a);
  auto r2 = std::from_chars(saved.data() + colon + 1, saved.data() + saved.size(), b);
  return r1.ec == std::errc() && r2.ec == std::errc() && r1.ptr == saved.data() + colon &&
         r2.ptr == saved.data() + saved.size();
}

class FileSource : public Source {
 public:
  FileSource(FileSourceOptions options, int fd)
      : options_(std::move(options)), fd_(fd), limiter_(options_.max_rate) {
    extraction_.key = options_.key;
    extraction_.timestamp_field = options_.timestamp_field;
  }
  ~FileSource() override { ::close(fd_); }

  Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext& ctx) override {
    size_t allowed = limiter_.Allow(max);
    if (allowed == 0) return PollResult::kIdle;
    size_t consumed = 0;  // lines, good or bad: a file of bad lines still advances in steps
    while (consumed < allowed) {
      std::string_view line;
      const int64_t line_start = consumed_offset_;
      WEIR_ASSIGN_OR_RETURN(bool have, NextLine(line));
      if (!have) break;
      ++consumed;
      int64_t line_number = ++line_number_;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      if (line.back() == '\r') line.remove_suffix(1);
      auto record = DecodeJsonRecord(line, extraction_, Key(), EventTime(WallClockMs()));
      if (!record.ok()) {
        ctx.RawDeadLetter(record.status().message(), PositionValue(line_number), line);
        continue;
      }
      batch.records.push_back(std::move(record).value());
      batch.positions.push_back(line_number);
      batch.reread_tokens.push_back(line_start);
    }
    return consumed > 0 ? PollResult::kRecords : PollResult::kEnd;
  }

  // `token`: the line's first byte.
  Result<Record> Reread(int64_t line_number, int64_t token) override {
    std::string line;
    char chunk[4096];
    for (int64_t at = token;;) {
      ssize_t n = ::pread(fd_, chunk, sizeof chunk, at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::FromErrno(errno, "reading " + options_.path);
      const void* nl = std::memchr(chunk, '\n', static_cast<size_t>(n));
      size_t take = nl ? static_cast<const char*>(nl) - chunk : static_cast<size_t>(n);
      line.append(chunk, take);
      if (nl != nullptr || n == 0) break;
      at += n;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto record = DecodeJsonRecord(line, extraction_, Key(), EventTime(WallClockMs()));
    if (!record.ok()) {
      return Status::FailedPrecondition("input file " + options_.path + " changed: line " +
                                        std::to_string(line_number) + " no longer parses");
    }
    return record;
  }

  std::string SavePosition() const override {
    return std::to_string(consumed_offset_) + ":" + std::to_string(line_number_);
  }

  Status RestorePosition(std::string_view saved) override {
    int64_t byte, line;
    if (!ParsePair(saved, byte, line)) {
      return Status::Corruption("file source " + options_.path + ": bad saved position");
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "reading " + options_.path);
    if (st.st_size < byte) {
      return Status::FailedPrecondition(
          "input file " + options_.path + " is shorter (" + std::to_string(st.st_size) +
          " bytes) than the position its last checkpoint read up to (" + std::to_string(byte) +
          "): the file changed; restore it or reset the pipeline");
    }
    consumed_offset_ = file_offset_ = byte;
    line_number_ = line;
    buffer_begin_ = buffer_end_ = 0;
    at_eof_ = false;
    return Status::OK();
  }

  std::string Describe() const override { return "file " + options_.path; }

  Value PositionValue(int64_t line) const override {
    return Value::MakeObject({{"file", Value(options_.path)}, {"line", Value(line)}});
  }

 private:
  // The next line without its '\n' (the last line may lack one). false at the end of the file.
  // The view is valid until the next call.
  Result<bool> NextLine(std::string_view& line) {
    while (true) {
      const char* begin = buffer_.data() + buffer_begin_;
      const void* nl = std::memchr(begin, '\n', buffer_end_ - buffer_begin_);
      if (nl != nullptr) {
        size_t len = static_cast<const char*>(nl) - begin;
        line = std::string_view(begin, len);
        buffer_begin_ += len + 1;
        consumed_offset_ += static_cast<int64_t>(len + 1);
        return true;
      }
      if (at_eof_) {
        if (buffer_begin_ == buffer_end_) return false;
        line = std::string_view(begin, buffer_end_ - buffer_begin_);
        consumed_offset_ += static_cast<int64_t>(line.size());
        buffer_begin_ = buffer_end_;
        return true;
      }
      WEIR_RETURN_IF_ERROR(Fill());
    }
  }

  // Moves the unread tail to the front and reads more, growing the buffer for long lines.
  Status Fill() {
    size_t tail = buffer_end_ - buffer_begin_;
    if (buffer_.size() < kChunk) buffer_.resize(kChunk);
    std::memmove(buffer_.data(), buffer_.data() + buffer_begin_, tail);
    buffer_begin_ = 0;
    buffer_end_ = tail;
    if (buffer_.size() - tail < kChunk / 2) buffer_.resize(buffer_.size() * 2);
    ssize_t n;
    do {
      n = ::pread(fd_, buffer_.data() + buffer_end_, buffer_.size() - buffer_end_, file_offset_);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return Status::FromErrno(errno, "reading " + options_.path);
    if (n == 0) at_eof_ = true;
    buffer_end_ += n;
    file_offset_ += n;
    return Status::OK();
  }

  static constexpr size_t kChunk = 1 << 20;
  FileSourceOptions options_;
  RecordExtraction extraction_;
  int fd_;
  RateLimiter limiter_;
  std::string buffer_;
  size_t buffer_begin_ = 0;
  size_t buffer_end_ = 0;
  int64_t file_offset_ = 0;      // next byte to read from the file
  int64_t consumed_offset_ = 0;  // first byte of the next unconsumed line
  int64_t line_number_ = 0;      // lines consumed
  bool at_eof_ = false;
};

class TopicSource : public Source {
 public:
  TopicSource(TopicSourceOptions options, log::Partition& partition, Offset end,
              const RepartitionReading* repartition)
      : options_(std::move(options)),
        partition_(partition),
        reader_(partition, partition.FirstOffset()),
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
      auto record = Decode(stored);
      if (!record.ok()) {
        ctx.RawDeadLetter(record.status().message(), PositionValue(stored.offset.value()),
                          stored.value);
        continue;
      }
      batch.records.push_back(std::move(record).value());
      batch.positions.push_back(stored.offset.value());
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
    return Decode(records->front());
  }

  Status RestorePosition(std::string_view saved) override {
    int64_t offset;
    auto r = std::from_chars(saved.data(), saved.data() + saved.size(), offset);
    if (r.ec != std::errc() || r.ptr != saved.data() + saved.size()) {
      return Status::Corruption(Describe() + ": bad saved position");
    }
    reader_.Seek(Offset(offset));
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

  Result<Record> Decode(const log::StoredRecord& stored) {
    WEIR_ASSIGN_OR_RETURN(Key key, stored.DecodeKey());
    WEIR_ASSIGN_OR_RETURN(std::vector<Header> headers, stored.DecodeHeaders());
    WEIR_ASSIGN_OR_RETURN(Record record, DecodeJsonRecord(stored.value, extraction_, std::move(key),
                                                          stored.timestamp));
    record.headers = std::move(headers);
    return record;
  }

  TopicSourceOptions options_;
  RecordExtraction extraction_;
  log::Partition& partition_;
  log::PartitionReader reader_;
  Offset bounded_end_;
  RepartitionReading repartition_;
  RateLimiter limiter_;
};

// A source whose position is the number of records it has made (the generators): next_.
class CountingSource : public Source {
 public:
  std::string SavePosition() const override { return std::to_string(next_); }

  Status RestorePosition(std::string_view saved) override {
    auto r = std::from_chars(saved.data(), saved.data() + saved.size(), next_);
    if (r.ec != std::errc() || r.ptr != saved.data() + saved.size()) {
      return Status::Corruption(Describe() + ": bad saved position");
    }
    return Status::OK();
  }

 protected:
  int64_t next_ = 0;
};

class GeneratorSource : public CountingSource {
 public:
  GeneratorSource(std::shared_ptr<const ClickstreamModel> model, PartitionId partition,
                  double max_rate)
      : model_(std::move(model)),
        partition_(partition),
        end_(model_->EventsIn(partition)),
        limiter_(max_rate) {}

  Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext&) override {
    if (end_ >= 0 && next_ >= end_) return PollResult::kEnd;
    size_t n = limiter_.Allow(end_ >= 0 ? std::min<int64_t>(max, end_ - next_) : max);
    if (n == 0) return PollResult::kIdle;
    for (size_t i = 0; i < n; ++i, ++next_) {
      batch.records.push_back(model_->EventAt(partition_, next_));
      batch.positions.push_back(next_);
    }
    return PollResult::kRecords;
  }

  Result<Record> Reread(int64_t sequence, int64_t) override {
    return model_->EventAt(partition_, sequence);
  }

  std::string Describe() const override {
    return "generator partition " + std::to_string(partition_.value());
  }

  Value PositionValue(int64_t sequence) const override {
    return Value::MakeObject(
        {{"partition", Value(partition_.value())}, {"sequence", Value(sequence)}});
  }

 private:
  std::shared_ptr<const ClickstreamModel> model_;
  PartitionId partition_;
  int64_t end_;
  RateLimiter limiter_;
};

// Position k is the partition's k-th event, event number partition + k * partitions.
class NexmarkSource : public CountingSource {
 public:
  NexmarkSource(std::shared_ptr<const nexmark::NexmarkGenerator> model,
                const NexmarkSourceOptions& options, PartitionId partition)
      : model_(std::move(model)),
        partition_(partition),
        stride_(options.partitions),
        end_(options.events < 0 ? -1
                                : (options.events - partition.value() + stride_ - 1) / stride_),
        real_time_(options.real_time) {}

  Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext&) override {
    if (end_ >= 0 && next_ >= end_) return PollResult::kEnd;
    const size_t n = end_ >= 0 ? std::min<int64_t>(max, end_ - next_) : max;
    const int64_t now_ms = real_time_ ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count()
                                      : INT64_MAX;
    size_t added = 0;
    // An event not yet due is not generated: its time alone is cheap to compute.
    for (; added < n && (!real_time_ || TimeAt(next_) <= now_ms); ++added, ++next_) {
      batch.records.push_back(RecordAt(next_));
      batch.positions.push_back(next_);
    }
    return added == 0 ? PollResult::kIdle : PollResult::kRecords;
  }

  Result<Record> Reread(int64_t position, int64_t) override { return RecordAt(position); }

  std::string Describe() const override {
    return "nexmark partition " + std::to_string(partition_.value());
  }

  Value PositionValue(int64_t position) const override {
    return Value::MakeObject(
        {{"partition", Value(partition_.value())}, {"event", Value(EventNumber(position))}});
  }

 private:
  int64_t EventNumber(int64_t position) const { return partition_.value() + position * stride_; }

  int64_t TimeAt(int64_t position) const {
    return model_->TimestampForNumber(model_->EventIdAt(EventNumber(position))).value();
  }

  Record RecordAt(int64_t position) const {
    nexmark::Event event = model_->EventAt(EventNumber(position));
    Record record;
    record.timestamp = event.timestamp;
    record.value = std::move(event).ToValue();
    return record;
  }

  std::shared_ptr<const nexmark::NexmarkGenerator> model_;
  PartitionId partition_;
  int64_t stride_;
  int64_t end_;  // positions in this partition; -1: unbounded
  bool real_time_;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenFileSource(const FileSourceOptions& options) {
  int fd = ::open(options.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "cannot read input file " + options.path);
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("input file " + options.path + " is a directory");
  }
  return std::unique_ptr<Source>(new FileSource(options, fd));
}

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
  return std::unique_ptr<Source>(new TopicSource(options, p, p.NextOffset(), repartition));
}

std::unique_ptr<Source> OpenGeneratorSource(std::shared_ptr<const ClickstreamModel> model,
                                            PartitionId partition, double max_rate) {
  return std::make_unique<GeneratorSource>(std::move(model), partition, max_rate);
}

}  // namespace weir::dataflow

namespace weir::dataflow {

Result<Record> Source::Reread(int64_t, int64_t) {
  return Status::FailedPrecondition(Describe() + " cannot read a record again");
}

void Source::Resolve(int64_t, Resolution) {}

nexmark::NexmarkConfig NexmarkConfigOf(const NexmarkSourceOptions& options) {
  nexmark::NexmarkConfig config;
  config.first_event_ms = options.first_event_ms;
  config.events_per_second = options.events_per_second;
  config.seed = options.seed;
  config.out_of_order_group_size = options.out_of_order_group_size;
  return config;
}

std::unique_ptr<Source> OpenNexmarkSource(std::shared_ptr<const nexmark::NexmarkGenerator> model,
                                          const NexmarkSourceOptions& options,
                                          PartitionId partition) {
  return std::make_unique<NexmarkSource>(std::move(model), options, partition);
}

}  // namespace weir::dataflow
