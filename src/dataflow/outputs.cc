#include "dataflow/outputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "core/files.h"
#include "dataflow/watermark_marks.h"

namespace weir::dataflow {

TopicWriter::TopicWriter(log::Topic* topic, std::string owner, log::ValueEncoding encoding)
    : topic_(topic),
      owner_(std::move(owner)),
      batches_(topic->num_partitions(), log::RecordBatchBuilder(encoding)) {}

void TopicWriter::WriteTo(PartitionId partition, const Record& record, std::string_view json) {
  log::RecordBatchBuilder& batch = batches_[partition.value()];
  batch.Add(record.timestamp, record.key, record.value, record.headers, json);
  ++records_written_;
  if (batch.bytes() >= kEarlyAppendBytes && early_append_failure_.ok()) {
    early_append_failure_ = Append(partition.value());
  }
}

void TopicWriter::WriteWatermarkMark(std::string_view producer, Watermark watermark) {
  for (log::RecordBatchBuilder& batch : batches_) AppendWatermarkMark(batch, producer, watermark);
}

Status TopicWriter::Append(size_t p) {
  auto appended = topic_->partition(PartitionId(static_cast<int32_t>(p)))
                      .Append(batches_[p], log::Durability::kNoWait, owner_);
  if (!appended.ok()) return appended.status();
  batches_[p].Clear();
  return Status::OK();
}

Status TopicWriter::Flush() {
  WEIR_RETURN_IF_ERROR(std::exchange(early_append_failure_, Status::OK()));
  for (size_t p = 0; p < batches_.size(); ++p) {
    if (!batches_[p].empty()) WEIR_RETURN_IF_ERROR(Append(p));
  }
  return Status::OK();
}

Result<std::unique_ptr<SharedFile>> SharedFile::Open(const std::string& path, int64_t length) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "opening output file " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Status::FromErrno(errno, "opening output file " + path);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    return std::unique_ptr<SharedFile>(new SharedFile(path, fd, Kind::kStream, 0));
  }
  if (::ftruncate(fd, length) != 0 || ::lseek(fd, length, SEEK_SET) != length) {
    Status s = Status::FromErrno(errno, "cutting output file " + path + " back to its checkpoint");
    ::close(fd);
    return s;
  }
  return std::unique_ptr<SharedFile>(new SharedFile(path, fd, Kind::kRegular, length));
}

std::unique_ptr<SharedFile> SharedFile::Stdout() {
  return std::unique_ptr<SharedFile>(new SharedFile("<stdout>", STDOUT_FILENO, Kind::kStdout, 0));
}

SharedFile::~SharedFile() {
  if (kind_ != Kind::kStdout) ::close(fd_);
}

Status SharedFile::Append(std::string_view lines) {
  std::lock_guard lock(mu_);
  Status s = WriteAll(fd_, lines, path_);
  if (s.ok()) {
    length_ += static_cast<int64_t>(lines.size());
  } else if (kind_ == Kind::kRegular) {
    // A partial write (a full disk) must not leave half a line: cut back. If that fails too, the
    // file ends where the write stopped.
    if (::ftruncate(fd_, length_) != 0 || ::lseek(fd_, length_, SEEK_SET) != length_) {
      length_ = std::max<int64_t>(length_, ::lseek(fd_, 0, SEEK_CUR));
    }
  }
  return s;
}

Result<int64_t> SharedFile::Sync() {
  std::lock_guard lock(mu_);
  if (kind_ != Kind::kRegular) return int64_t{0};
  if (::fdatasync(fd_) != 0) return Status::FromErrno(errno, "syncing " + path_);
  return length_;
}

void LineWriter::Write(const Record& record, std::string_view json) {
  buffer_.append("{\"key\":");
  record.key.AppendJson(buffer_);
  buffer_.append(",\"timestamp\":");
  buffer_.append(std::to_string(record.timestamp.value()));
  buffer_.append(",\"value\":");
  if (!json.empty() && json.find_first_of("\r\n") == std::string_view::npos) {
    buffer_.append(json);
  } else {
    record.value.AppendJson(buffer_);
  }
  buffer_.append("}\n");
  ++records_written_;
}

Status LineWriter::Flush() {
  if (buffer_.empty()) return Status::OK();
  Status s = file_->Append(buffer_);
  buffer_.clear();
  return s;
}

}  // namespace weir::dataflow
