// Segment files of the embedded log, and the positioned I/O the log shares (whole-file helpers
// are core/files.h). Internal to log/.
//
// A Segment is one `<base offset>.log` file of a partition: batches back to back (format in
// record_format.h), plus an in-memory sparse index of them. The index has an entry for the
// first batch and then for the first batch starting at least kIndexIntervalBytes after the
// previous entry (Kafka's index.interval.bytes), so a lookup lands at most a few KiB before the
// wanted batch and the index stays small even when every append is its own batch.
//
// Thread safety: fd(), path() and base_offset() are immutable. size() is an atomic that the
// writer advances only after whole batches are in the file, so a reader may pread [0, size())
// at any time. Everything else (index, end offset, newest append time) is guarded by the owning
// partition's index mutex. The fd is closed when the last shared_ptr goes, so a reader keeps
// reading a segment that retention has unlinked.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/files.h"
#include "log/record_format.h"
#include "weir/status.h"

namespace weir::log {

inline constexpr int64_t kIndexIntervalBytes = 4096;

// At most this many bytes per write call. A write of a whole 2 MiB-aligned 2 MiB range makes the
// kernel's page cache (ext4's large folios, Linux 6.x) take a 2 MiB folio; on a VM whose host
// takes back free memory (virtio-balloon free page reporting hands back exactly those free 2 MiB
// blocks) each such folio is faulted in and zeroed by the host: copying the log's output into the
// page cache ran 12x slower in CPU than with 1 MiB writes (BENCHMARKS.md, issue 14, seventeenth
// pass). Writes of 1 MiB cost the same elsewhere: one more syscall per MiB.
inline constexpr size_t kMostBytesPerWrite = size_t{1} << 20;

// pwritev of all of `iov` at `pos`, at most kMostBytesPerWrite per call, retrying short writes
// and EINTR.
Status WriteAt(int fd, std::span<const iovec> iov, int64_t pos, const std::filesystem::path& path);
// Reads up to `n` bytes at `pos`; fewer only at the end of the file. Returns the count.
Result<size_t> ReadAt(int fd, char* buf, size_t n, int64_t pos, const std::filesystem::path& path);
Status SyncFile(int fd, const std::filesystem::path& path);

// The fixed-size header in front of every batch (record_format.h).
struct BatchHeader {
  uint32_t payload_len = 0;
  uint32_t crc = 0;
  uint32_t count = 0;
  int64_t base_offset = 0;
  int64_t append_time_ms = 0;

  // False if the magic is wrong.
  static bool Parse(const char* p, BatchHeader& out);
  // Writes the 32 bytes, computing crc over the header tail and `payload`.
  void EncodeWithCrc(std::string_view payload, char* out);
  // True if `crc` matches the encoded header at `p` and `payload`.
  static bool CrcMatches(const char* p, std::string_view payload);
  int64_t batch_bytes() const { return static_cast<int64_t>(kBatchHeaderSize) + payload_len; }
};

// "00000000000000001234.log"
std::string SegmentFileName(int64_t base_offset);
// The base offset a segment file name encodes; -1 if it is not a segment file name.
int64_t ParseSegmentFileName(std::string_view name);

class Segment {
 public:
  // Creates an empty segment file (it must not exist) and fsyncs the directory.
  static Result<std::shared_ptr<Segment>> Create(const std::filesystem::path& dir,
                                                 int64_t base_offset);
  // Opens an existing file and rebuilds the index by hopping the batch headers. With
  // `verify_crc` every payload is read and checked too. A batch with a wrong magic, length,
  // offset or crc is a torn write: with `cut_torn_tail` the file is truncated there (and the
  // cut fsynced); otherwise it is kCorruption naming the file and byte position.
  static Result<std::shared_ptr<Segment>> Open(const std::filesystem::path& path,
                                               int64_t base_offset, bool verify_crc,
                                               bool cut_torn_tail);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  int64_t base_offset() const { return base_offset_; }
  int64_t size() const { return size_.load(std::memory_order_acquire); }
  void set_size(int64_t size) { size_.store(size, std::memory_order_release); }

  // REQUIRES: the partition's index mutex held (for all below).
  int64_t end_offset() const { return end_offset_; }
  int64_t newest_append_ms() const { return newest_append_ms_; }
  // Records a batch written at `pos` (size() is advanced separately, after the index).
  void AddBatch(const BatchHeader& header, int64_t pos);
  // The file position of the last indexed batch whose base offset is <= `offset`.
  // REQUIRES: base_offset() <= offset.
  int64_t IndexLookup(int64_t offset) const;
  // Drops index entries at or after `pos` and sets the end offset; the caller truncates the file.
  void TrimIndex(int64_t pos, int64_t end_offset);

  // The file position where the batch with base offset `offset` starts (or size() if `offset`
  // is the end offset). kInvalidArgument if `offset` falls inside a batch.
  // REQUIRES: base_offset() <= offset <= end_offset(); the partition's I/O mutex held (the file
  // does not change underneath) and `start` from IndexLookup(offset).
  Result<int64_t> FindBatchStart(int64_t offset, int64_t start) const;

 private:
  struct IndexEntry {
    int64_t base_offset;
    int64_t pos;
  };
  Segment(std::filesystem::path path, int fd, int64_t base_offset);
  Status Recover(bool verify_crc, bool cut_torn_tail);

  const std::filesystem::path path_;
  const int fd_;
  const int64_t base_offset_;
  std::atomic<int64_t> size_{0};
  int64_t end_offset_;
  int64_t newest_append_ms_ = 0;
  std::vector<IndexEntry> index_;
};

}  // namespace weir::log
