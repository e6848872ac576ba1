#include "log/segment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "core/coding.h"

namespace weir::log {
namespace fs = std::filesystem;

Status WriteAt(int fd, std::span<const iovec> iov_in, int64_t pos, const fs::path& path) {
  std::vector<iovec> iov(iov_in.begin(), iov_in.end());
  size_t first = 0;
  while (first < iov.size()) {
    // This call's iovecs: from `first` until kMostBytesPerWrite, the last one cut short.
    size_t end = first;
    size_t call_bytes = 0;
    while (end < iov.size() && end - first < IOV_MAX && call_bytes < kMostBytesPerWrite) {
      call_bytes += iov[end].iov_len;
      ++end;
    }
    const size_t cut = call_bytes > kMostBytesPerWrite ? call_bytes - kMostBytesPerWrite : 0;
    iov[end - 1].iov_len -= cut;
    const ssize_t written = ::pwritev(fd, iov.data() + first, static_cast<int>(end - first), pos);
    iov[end - 1].iov_len += cut;
    if (written < 0) {
      if (errno == EINTR) continue;
      return FileError(errno, "writing", path);
    }
    if (written == 0 && call_bytes > 0) return FileError(EIO, "writing (no progress)", path);
    pos += written;
    auto left = static_cast<size_t>(written);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return Status::OK();
}

Result<size_t> ReadAt(int fd, char* buf, size_t n, int64_t pos, const fs::path& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, buf + done, n - done, pos + static_cast<int64_t>(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return FileError(errno, "reading", path);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

Status SyncFile(int fd, const fs::path& path) {
  if (::fdatasync(fd) != 0) return FileError(errno, "fsyncing", path);
  return Status::OK();
}

bool BatchHeader::Parse(const char* p, BatchHeader& out) {
  if (coding::DecodeFixed32(p) != kBatchMagic) return false;
  out.payload_len = coding::DecodeFixed32(p + 4);
  out.crc = coding::DecodeFixed32(p + 8);
  out.count = coding::DecodeFixed32(p + 12);
  out.base_offset = static_cast<int64_t>(coding::DecodeFixed64(p + 16));
  out.append_time_ms = static_cast<int64_t>(coding::DecodeFixed64(p + 24));
  return true;
}

namespace {
// The crc covers the header from `count` on (byte 12), then the payload.
constexpr size_t kCrcStart = 12;
uint32_t BatchCrc(const char* header, std::string_view payload) {
  return Crc32c(Crc32c(0, std::string_view(header + kCrcStart, kBatchHeaderSize - kCrcStart)),
                payload);
}
}  // namespace

void BatchHeader::EncodeWithCrc(std::string_view payload, char* out) {
  const uint32_t magic = kBatchMagic;
  std::memcpy(out, &magic, 4);
  std::memcpy(out + 4, &payload_len, 4);
  std::memcpy(out + 12, &count, 4);
  std::memcpy(out + 16, &base_offset, 8);
  std::memcpy(out + 24, &append_time_ms, 8);
  crc = BatchCrc(out, payload);
  std::memcpy(out + 8, &crc, 4);
}

bool BatchHeader::CrcMatches(const char* p, std::string_view payload) {
  return coding::DecodeFixed32(p + 8) == BatchCrc(p, payload);
}

std::string SegmentFileName(int64_t base_offset) {
  char name[32];
  std::snprintf(name, sizeof(name), "%020lld.log", static_cast<long long>(base_offset));
  return name;
}

int64_t ParseSegmentFileName(std::string_view name) {
  if (name.size() != 24 || name.substr(20) != ".log") return -1;
  int64_t v = 0;
  for (char c : name.substr(0, 20)) {
    if (c < '0' || c > '9') return -1;
    if (v > (INT64_MAX - (c - '0')) / 10) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

Segment::Segment(fs::path path, int fd, int64_t base_offset)
    : path_(std::move(path)), fd_(fd), base_offset_(base_offset), end_offset_(base_offset) {}

Segment::~Segment() { ::close(fd_); }

Result<std::shared_ptr<Segment>> Segment::Create(const fs::path& dir, int64_t base_offset) {
  fs::path path = dir / SegmentFileName(base_offset);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, "creating segment", path);
  std::shared_ptr<Segment> segment(new Segment(path, fd, base_offset));
  // Without this a crash could lose the file, and with it batches fsynced into it.
  Status s = SyncDirectory(dir);
  if (!s.ok()) {
    ::unlink(path.c_str());
    return s;
  }
  return segment;
}

Result<std::shared_ptr<Segment>> Segment::Open(const fs::path& path, int64_t base_offset,
                                               bool verify_crc, bool cut_torn_tail) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return FileError(errno, "opening segment", path);
  std::shared_ptr<Segment> segment(new Segment(path, fd, base_offset));
  WEIR_RETURN_IF_ERROR(segment->Recover(verify_crc, cut_torn_tail));
  return segment;
}

void Segment::AddBatch(const BatchHeader& header, int64_t pos) {
  if (index_.empty() || pos >= index_.back().pos + kIndexIntervalBytes) {
    index_.push_back({header.base_offset, pos});
  }
  end_offset_ = header.base_offset + header.count;
  newest_append_ms_ = std::max(newest_append_ms_, header.append_time_ms);
}

int64_t Segment::IndexLookup(int64_t offset) const {
  auto it = std::upper_bound(index_.begin(), index_.end(), offset,
                             [](int64_t o, const IndexEntry& e) { return o < e.base_offset; });
  return it == index_.begin() ? 0 : std::prev(it)->pos;
}

void Segment::TrimIndex(int64_t pos, int64_t end_offset) {
  while (!index_.empty() && index_.back().pos >= pos) index_.pop_back();
  end_offset_ = end_offset;
}

Result<int64_t> Segment::FindBatchStart(int64_t offset, int64_t start) const {
  const int64_t file_size = size();
  char buf[kBatchHeaderSize];
  for (int64_t pos = start; pos < file_size;) {
    WEIR_ASSIGN_OR_RETURN(size_t got, ReadAt(fd_, buf, sizeof(buf), pos, path_));
    BatchHeader h;
    if (got != sizeof(buf) || !BatchHeader::Parse(buf, h)) {
      return Status::Corruption("segment " + path_.string() + ": no batch header at byte " +
                                std::to_string(pos));
    }
    if (h.base_offset == offset) return pos;
    if (h.base_offset < offset && offset < h.base_offset + h.count) {
      return Status::InvalidArgument(
          "offset " + std::to_string(offset) + " falls inside the batch [" +
          std::to_string(h.base_offset) + ", " + std::to_string(h.base_offset + h.count) + ") of " +
          path_.string() + "; only batch boundaries (flushed ends) can be truncated to");
    }
    pos += h.batch_bytes();
  }
  return file_size;
}

Status Segment::Recover(bool verify_crc, bool cut_torn_tail) {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return FileError(errno, "stat", path_);
  const int64_t file_size = st.st_size;

  // A window over the file: header hops hit it many times per read when batches are small,
  // and a whole batch is read at once when its crc is checked.
  std::string window;
  int64_t window_pos = 0;
  size_t window_len = 0;
  auto read = [&](int64_t pos, size_t n) -> Result<const char*> {
    if (pos < window_pos ||
        pos + static_cast<int64_t>(n) > window_pos + static_cast<int64_t>(window_len)) {
      const size_t want = std::max<size_t>(n, verify_crc ? (1 << 20) : (64 << 10));
      const size_t len = static_cast<size_t>(std::min<int64_t>(want, file_size - pos));
      if (window.size() < len) window.resize(len);
      WEIR_ASSIGN_OR_RETURN(size_t got, ReadAt(fd_, window.data(), len, pos, path_));
      window_pos = pos;
      window_len = got;
      if (got < n) return Status::IOError(path_.string() + " shrank while it was being recovered");
    }
    return window.data() + (pos - window_pos);
  };

  int64_t pos = 0;
  int64_t expected = base_offset_;
  std::string problem;
  while (pos < file_size) {
    BatchHeader h;
    if (file_size - pos < static_cast<int64_t>(kBatchHeaderSize)) {
      problem = "truncated batch header";
      break;
    }
    WEIR_ASSIGN_OR_RETURN(const char* p, read(pos, kBatchHeaderSize));
    if (!BatchHeader::Parse(p, h)) {
      problem = "bad batch magic";
      break;
    }
    if (h.count == 0 || h.base_offset != expected) {
      problem = "batch at offset " + std::to_string(h.base_offset) + " with " +
                std::to_string(h.count) + " records where offset " + std::to_string(expected) +
                " was expected";
      break;
    }
    if (h.batch_bytes() > file_size - pos) {
      problem = "batch runs past the end of the file";
      break;
    }
    if (verify_crc) {
      WEIR_ASSIGN_OR_RETURN(const char* batch, read(pos, h.batch_bytes()));
      if (!BatchHeader::CrcMatches(batch,
                                   std::string_view(batch + kBatchHeaderSize, h.payload_len))) {
        problem = "batch crc mismatch";
        break;
      }
    }
    AddBatch(h, pos);
    pos += h.batch_bytes();
    expected += h.count;
  }
  if (!problem.empty()) {
    if (!cut_torn_tail) {
      return Status::Corruption("segment " + path_.string() + " at byte " + std::to_string(pos) +
                                ": " + problem +
                                " (only the last segment of a partition can have a torn tail; "
                                "restore the partition from a replica or delete this segment "
                                "and the ones after it)");
    }
    if (::ftruncate(fd_, pos) != 0) return FileError(errno, "truncating torn tail of", path_);
    WEIR_RETURN_IF_ERROR(SyncFile(fd_, path_));
  }
  set_size(pos);
  return Status::OK();
}

}  // namespace weir::log
