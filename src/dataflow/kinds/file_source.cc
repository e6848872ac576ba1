// The file source kind: JSON lines from a file, one partition, ending at the end of the file
// (Application::FromFile; YAML `source: {file: PATH, key, timestamp, dead_letter, rate}`). A
// line that is not a record (malformed JSON, a missing or mistyped key or timestamp) goes to the
// dead-letter topic with its line number.
//
// The checkpointed position is "byte:line:window:crc": the first unread byte, the lines read,
// and the CRC-32C of the `window` bytes before that byte (the last 64 KiB read, or all of them
// if fewer). A restart checks the file against it: a file shorter than the byte, or whose
// window no longer has that checksum, was rewritten or truncated, not appended to, and is
// refused, naming the file, the byte and what differs. A file that only grew resumes at the
// byte. The window is kept in the read buffer, so a checkpoint costs a checksum of 64 KiB and
// no read; an edit further back than the window is not seen. A position saved before the
// window was recorded ("byte:line") is checked for length only.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/parse.h"
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/json_records.h"
#include "dataflow/kind_registry.h"
#include "dataflow/sources.h"
#include "log/record_format.h"
#include "weir/application.h"

namespace weir::dataflow {
namespace {

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The integers of a saved position, "a:b:...": false unless there are `count` of them.
bool ParseFields(std::string_view saved, int64_t* fields, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const size_t colon = i + 1 < count ? saved.find(':') : saved.size();
    if (colon == std::string_view::npos) return false;
    auto field = ParseInt64(saved.substr(0, colon), "saved position");
    if (!field.ok()) return false;
    fields[i] = *field;
    saved.remove_prefix(std::min(colon + 1, saved.size()));
  }
  return true;
}

std::string Hex(uint32_t crc) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
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
    // Each record's line, copied: a Fill later in this poll moves the buffer's lines.
    json_text_.clear();
    json_ends_.clear();
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
      json_text_.append(line);
      json_ends_.push_back(json_text_.size());
    }
    // The lines' text for the sinks (SourceBatch::json), valid until the next Poll clears it.
    size_t start = 0;
    for (size_t end : json_ends_) {
      batch.json.push_back(std::string_view(json_text_).substr(start, end - start));
      start = end;
    }
    return consumed > 0 ? PollResult::kRecords : PollResult::kEnd;
  }

  // `token`: the line's first byte.
  Result<Record> Reread(int64_t line_number, int64_t token) override {
    std::string line;
    char chunk[4096];
    for (int64_t at = token;;) {
      WEIR_ASSIGN_OR_RETURN(size_t n, ReadAt(at, chunk, sizeof chunk));
      const void* nl = std::memchr(chunk, '\n', n);
      size_t take = nl ? static_cast<const char*>(nl) - chunk : n;
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
    const size_t window = std::min(kWindow, buffer_begin_);
    const uint32_t crc =
        log::Crc32c(0, std::string_view(buffer_.data() + buffer_begin_ - window, window));
    return std::to_string(consumed_offset_) + ":" + std::to_string(line_number_) + ":" +
           std::to_string(window) + ":" + std::to_string(crc);
  }

  Status RestorePosition(std::string_view saved) override {
    int64_t fields[4] = {};  // byte, line, window, crc
    const bool windowed = ParseFields(saved, fields, 4);
    const bool parsed = windowed || ParseFields(saved, fields, 2);
    const int64_t byte = fields[0];
    const int64_t line = fields[1];
    const int64_t window = windowed ? fields[2] : std::min<int64_t>(kWindow, byte);
    if (!parsed || byte < 0 || line < 0 || window < 0 || window > byte ||
        window > int64_t{kChunk / 2}) {
      return Status::Corruption("file source " + options_.path + ": bad saved position '" +
                                std::string(saved) + "'");
    }
    const std::string checkpointed = "the position its last checkpoint read up to (byte " +
                                     std::to_string(byte) + ", line " + std::to_string(line) + ")";
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "reading " + options_.path);
    if (st.st_size < byte) {
      return Status::FailedPrecondition(
          "input file " + options_.path + " is shorter (" + std::to_string(st.st_size) +
          " bytes) than " + checkpointed + ": it was truncated or replaced; restore it as it was");
    }
    // The window becomes the read buffer's history, as if it had just been read.
    buffer_.resize(std::max(buffer_.size(), kChunk));
    size_t have = 0;
    while (have < static_cast<size_t>(window)) {
      WEIR_ASSIGN_OR_RETURN(size_t n, ReadAt(byte - window + static_cast<int64_t>(have),
                                             buffer_.data() + have, window - have));
      if (n == 0) break;
      have += n;
    }
    const uint32_t crc = log::Crc32c(0, std::string_view(buffer_.data(), have));
    if (windowed && (have != static_cast<size_t>(window) || crc != fields[3])) {
      return Status::FailedPrecondition(
          "input file " + options_.path + " changed before " + checkpointed + ": the " +
          std::to_string(window) + " bytes before that byte had CRC-32C " +
          Hex(static_cast<uint32_t>(fields[3])) + " and now have " + Hex(crc) +
          "; it was rewritten, not only appended to; restore it as it was");
    }
    consumed_offset_ = file_offset_ = byte;
    line_number_ = line;
    buffer_begin_ = buffer_end_ = have;
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

  // Moves the unread tail, and the last kWindow bytes read before it (the checksum's window),
  // to the front and reads more, growing the buffer for long lines.
  Status Fill() {
    const size_t keep_from = buffer_begin_ - std::min(kWindow, buffer_begin_);
    const size_t kept = buffer_end_ - keep_from;
    if (buffer_.size() < kChunk) buffer_.resize(kChunk);
    std::memmove(buffer_.data(), buffer_.data() + keep_from, kept);
    buffer_begin_ -= keep_from;
    buffer_end_ = kept;
    if (buffer_.size() - kept < kChunk / 2) buffer_.resize(buffer_.size() * 2);
    WEIR_ASSIGN_OR_RETURN(
        size_t n, ReadAt(file_offset_, buffer_.data() + buffer_end_, buffer_.size() - buffer_end_));
    if (n == 0) at_eof_ = true;
    buffer_end_ += n;
    file_offset_ += static_cast<int64_t>(n);
    return Status::OK();
  }

  // One pread at `at`: the bytes read, 0 at the end of the file.
  Result<size_t> ReadAt(int64_t at, char* out, size_t n) const {
    ssize_t got;
    do {
      got = ::pread(fd_, out, n, at);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return Status::FromErrno(errno, "reading " + options_.path);
    return static_cast<size_t>(got);
  }

  static constexpr size_t kChunk = 1 << 20;
  static constexpr size_t kWindow = 64 << 10;
  FileSourceOptions options_;
  RecordExtraction extraction_;
  int fd_;
  RateLimiter limiter_;
  // [0, buffer_begin_): bytes read before consumed_offset_, at least its last kWindow (or all
  // of them if fewer); [buffer_begin_, buffer_end_): read, not consumed yet.
  std::string buffer_;
  size_t buffer_begin_ = 0;
  // The last poll's records' lines, one after another, and where each ends (Poll).
  std::string json_text_;
  std::vector<size_t> json_ends_;
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
