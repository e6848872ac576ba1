#include "dataflow/outputs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "dataflow/watermark_marks.h"

namespace weir::dataflow {

TopicWriter::TopicWriter(log::Topic* topic, std::string owner)
    : topic_(topic), owner_(std::move(owner)), batches_(topic->num_partitions()) {}

void TopicWriter::WriteTo(PartitionId partition, const Record& record) {
  batches_[partition.value()].Add(record.timestamp, record.key, record.value, record.headers);
  ++records_written_;
}

void TopicWriter::WriteWatermarkMark(std::string_view producer, Watermark watermark) {
  for (log::RecordBatchBuilder& batch : batches_) AppendWatermarkMark(batch, producer, watermark);
}

Status TopicWriter::Flush() {
  for (size_t p = 0; p < batches_.size(); ++p) {
    if (batches_[p].empty()) continue;
    auto appended = topic_->partition(PartitionId(static_cast<int32_t>(p)))
                        .Append(batches_[p], log::Durability::kNoWait, owner_);
    if (!appended.ok()) return appended.status();
    batches_[p].Clear();
  }
  return Status::OK();
}

Result<std::unique_ptr<SharedFile>> SharedFile::Open(const std::string& path, int64_t length) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "opening output file " + path);
  if (::ftruncate(fd, length) != 0 || ::lseek(fd, length, SEEK_SET) != length) {
    Status s = Status::FromErrno(errno, "cutting output file " + path + " back to its checkpoint");
    ::close(fd);
    return s;
  }
  return std::unique_ptr<SharedFile>(new SharedFile(path, fd, false, length));
}

std::unique_ptr<SharedFile> SharedFile::Stdout() {
  return std::unique_ptr<SharedFile>(new SharedFile("<stdout>", STDOUT_FILENO, true, 0));
}

SharedFile::~SharedFile() {
  if (!is_stdout_) ::close(fd_);
}

Status SharedFile::WriteAll(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "writing " + path_);
    }
    bytes.remove_prefix(n);
    length_ += n;
  }
  return Status::OK();
}

Status SharedFile::Append(std::string_view lines) {
  std::lock_guard lock(mu_);
  int64_t before = length_;
  Status s = WriteAll(lines);
  if (!s.ok() && !is_stdout_) {
    // A partial write (a full disk) must not leave half a line: cut back.
    if (::ftruncate(fd_, before) == 0 && ::lseek(fd_, before, SEEK_SET) == before) length_ = before;
  }
  return s;
}

Result<int64_t> SharedFile::Sync() {
  std::lock_guard lock(mu_);
  if (is_stdout_) return int64_t{0};
  if (::fdatasync(fd_) != 0) return Status::FromErrno(errno, "syncing " + path_);
  return length_;
}

void LineWriter::Write(const Record& record) {
  buffer_.append("{\"key\":");
  record.key.AppendJson(buffer_);
  buffer_.append(",\"timestamp\":");
  buffer_.append(std::to_string(record.timestamp.value()));
  buffer_.append(",\"value\":");
  record.value.AppendJson(buffer_);
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
