// The file source kind: JSON lines from a file, one partition, ending at the end of the file
// (Application::FromFile; YAML `source: {file: PATH, key, timestamp, dead_letter, rate}`). A
// line that is not a record (malformed JSON, a missing or mistyped key or timestamp) goes to the
// dead-letter topic with its line number. The position (byte, line) is checkpointed; a file
// shorter than its checkpointed position is refused (it changed).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/parse.h"
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/json_records.h"
#include "dataflow/kind_registry.h"
#include "dataflow/sources.h"
#include "weir/application.h"

namespace weir::dataflow {
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
  auto first = ParseInt64(saved.substr(0, colon), "saved position");
  auto second = ParseInt64(saved.substr(colon + 1), "saved position");
  if (!first.ok() || !second.ok()) return false;
  a = *first;
  b = *second;
  return true;
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
      Record& record = batch.records.Add();
      record.timestamp = EventTime(WallClockMs());
      Status decoded = DecodeJsonRecordInto(line, extraction_, record);
      if (!decoded.ok()) {
        batch.records.pop_back();
        ctx.RawDeadLetter(decoded.message(), PositionValue(line_number), line);
        continue;
      }
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

class FileSourceDefinition : public SourceDefinition {
 public:
  explicit FileSourceDefinition(FileSourceOptions options) : options_(std::move(options)) {}
  std::string_view kind() const override { return "file-source"; }
  Status Validate() const override {
    if (options_.path.empty()) return Status::InvalidArgument("a file source needs a path");
    if (options_.key.field.empty()) {
      return Status::InvalidArgument("file source " + options_.path + " needs a key field");
    }
    return Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    // The checkpointed position is a byte of this file.
    fingerprint.Fixed("path", options_.path);
    DescribeRecordExtraction(fingerprint, options_.key, options_.timestamp_field,
                             options_.dead_letter_topic);
    // Pacing only.
    fingerprint.MayChange("rate", options_.max_rate);
  }
  Result<int32_t> Partitions(log::LogStore&) const override { return 1; }
  Result<std::unique_ptr<Source>> Open(log::LogStore&, PartitionId) const override {
    return OpenFileSource(options_);
  }
  std::string_view dead_letter_topic() const override { return options_.dead_letter_topic; }

 private:
  FileSourceOptions options_;
};

Result<std::shared_ptr<const SourceDefinition>> ParseFileSource(const SourceYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(CommonSourceOptions common, yaml.Common());
  if (common.key.field.empty()) {
    return yaml.source().Error("missing 'key' (the value field that keys records)");
  }
  FileSourceOptions options;
  WEIR_ASSIGN_OR_RETURN(std::string path, yaml.body().String());
  options.path = yaml.context().ResolvePath(path);
  CopyRecordOptions(common, options);
  options.max_rate = common.rate;
  return std::make_shared<FileSourceDefinition>(std::move(options));
}

}  // namespace

void RegisterFileSource(KindRegistry& kinds) {
  kinds.Add(SourceKind{"file", {"key", "timestamp", "dead_letter", "rate"}, ParseFileSource});
}

}  // namespace weir::dataflow

namespace weir {

Stream Application::FromFile(FileSourceOptions options) {
  return dataflow::GraphAccess::AddSource(
      *this, std::make_shared<dataflow::FileSourceDefinition>(std::move(options)));
}

}  // namespace weir
