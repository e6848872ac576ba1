// PartitionReader: sequential replay out of the segment files.
//
// It preads big chunks (kReadChunk, more for a bigger batch) and decodes every whole batch in
// the chunk at once, so the per-record cost is the decode alone; locks are taken once per chunk
// at most (to find a segment), never per record.
#include <algorithm>

#include "log/log.h"
#include "log/partition_state.h"

namespace weir::log {
namespace {
constexpr size_t kReadChunk = 1 << 20;

// Checks the batch whose header `h` and bytes start at `batch` (byte `at` of the segment file
// `path`) and decodes its records onto `records`, which must stay contiguous from `records_base`
// (set by the first batch).
Status AppendBatch(const BatchHeader& h, const char* batch, const std::string& path, int64_t at,
                   std::vector<StoredRecord>& records, int64_t& records_base) {
  const std::string_view payload(batch + kBatchHeaderSize, h.payload_len);
  if (!BatchHeader::CrcMatches(batch, payload)) {
    return Status::Corruption(path + ": crc mismatch in the batch at byte " + std::to_string(at));
  }
  if (records.empty()) records_base = h.base_offset;
  const int64_t expected = records_base + static_cast<int64_t>(records.size());
  if (h.base_offset != expected) {
    return Status::Corruption(path + ": batch at byte " + std::to_string(at) +
                              " starts at offset " + std::to_string(h.base_offset) +
                              " where the previous batch ended at " + std::to_string(expected));
  }
  const size_t first = records.size();
  Status s = DecodeRecords(payload, h.count, Offset(h.base_offset), records);
  if (!s.ok()) return s.WithContext(path);
  for (size_t i = first; i < records.size(); ++i) records[i].append_time_ms = h.append_time_ms;
  return s;
}

}  // namespace

PartitionReader::PartitionReader(Partition& partition, Offset position)
    : partition_(partition), position_(position) {}

Result<std::span<const StoredRecord>> PartitionReader::Next(size_t max_records) {
  Partition::State& st = *partition_.state_;
  // Truncations first: TruncateTo bumps it before it lowers the visible end.
  const uint64_t truncations = st.truncations.load(std::memory_order_acquire);
  const int64_t visible = partition_.NextOffset().value();
  if (truncations != truncations_seen_) {
    truncations_seen_ = truncations;
    records_.clear();
    next_batch_offset_ = -1;
    segment_.reset();
  }
  if (st.deleted_atomic.load(std::memory_order_acquire)) {
    return Status::NotFound(st.Where() + " was deleted");
  }
  const int64_t pos = position_.value();
  auto below_first = [&](int64_t first) {
    return Status::OutOfRange(st.Where() + ": offset " + std::to_string(pos) +
                              " is below the first retained offset " + std::to_string(first) +
                              " (removed by retention)");
  };
  const int64_t first = partition_.FirstOffset().value();
  if (pos < first) return below_first(first);
  if (pos > visible) {
    return Status::OutOfRange(st.Where() + ": offset " + std::to_string(pos) +
                              " is beyond the end " + std::to_string(visible));
  }
  if (pos == visible || max_records == 0) return std::span<const StoredRecord>();
  const auto cached = [&] {
    return pos >= records_base_ && pos < records_base_ + static_cast<int64_t>(records_.size());
  };
  if (!cached()) {
    WEIR_RETURN_IF_ERROR(Fill(pos, visible));
    if (!cached()) {
      // Retention may have removed the segment since the check above.
      const int64_t now_first = partition_.FirstOffset().value();
      if (pos < now_first) return below_first(now_first);
      return Status::Internal(st.Where() + ": offset " + std::to_string(pos) +
                              " is below the visible end " + std::to_string(visible) +
                              " but not in the segment files");
    }
  }
  const auto i = static_cast<size_t>(pos - records_base_);
  const size_t n = std::min({max_records, records_.size() - i, static_cast<size_t>(visible - pos)});
  position_ = Offset(pos + static_cast<int64_t>(n));
  return std::span<const StoredRecord>(records_.data() + i, n);
}

Status PartitionReader::Fill(int64_t position, int64_t visible) {
  Partition::State& st = *partition_.state_;
  records_.clear();
  records_base_ = position;
  int64_t read_pos;
  if (segment_ && next_batch_offset_ == position && next_file_pos_ < segment_->size()) {
    read_pos = next_file_pos_;  // sequential: the next batch follows the last one decoded
  } else {
    std::lock_guard lk(st.index_mu);
    const auto& segments = st.segments;
    auto it = std::upper_bound(
        segments.begin(), segments.end(), position,
        [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); });
    if (it == segments.begin()) return Status::OK();  // retention got there first
    segment_ = *std::prev(it);
    read_pos = segment_->IndexLookup(position);
  }
  next_batch_offset_ = -1;
  if (buffer_.size() < kReadChunk) buffer_.resize(kReadChunk);

  for (;;) {
    const int64_t available = segment_->size() - read_pos;
    if (available <= 0) return Status::OK();
    const auto want = static_cast<size_t>(std::min<int64_t>(available, buffer_.size()));
    WEIR_ASSIGN_OR_RETURN(const size_t len,
                          ReadAt(segment_->fd(), buffer_.data(), want, read_pos, segment_->path()));
    size_t p = 0;
    int64_t skip_to = -1;  // the file position to read again from, if the chunk held nothing
    while (p + kBatchHeaderSize <= len) {
      BatchHeader h;
      if (!BatchHeader::Parse(buffer_.data() + p, h)) {
        return Status::Corruption(segment_->path().string() + ": no batch header at byte " +
                                  std::to_string(read_pos + static_cast<int64_t>(p)));
      }
      const auto total = static_cast<size_t>(h.batch_bytes());
      if (h.base_offset + h.count <= position) {  // before the position: hop over it
        if (p + total > len) {
          skip_to = read_pos + static_cast<int64_t>(p + total);
          break;
        }
        p += total;
        continue;
      }
      if (h.base_offset >= visible) break;
      if (p + total > len) {
        if (!records_.empty()) break;  // serve what we have; the rest next time
        // The wanted batch is bigger than the buffer, or starts near its end: read it whole.
        if (total > buffer_.size()) buffer_.resize(total);
        skip_to = read_pos + static_cast<int64_t>(p);
        break;
      }
      WEIR_RETURN_IF_ERROR(AppendBatch(h, buffer_.data() + p, segment_->path().string(),
                                       read_pos + static_cast<int64_t>(p), records_,
                                       records_base_));
      p += total;
      next_file_pos_ = read_pos + static_cast<int64_t>(p);
      next_batch_offset_ = h.base_offset + h.count;
    }
    if (!records_.empty()) break;
    if (skip_to < 0) {
      if (p == 0) return Status::OK();  // nothing wanted in this segment below `visible`
      skip_to = read_pos + static_cast<int64_t>(p);
    }
    read_pos = skip_to;
  }
  // A transactional partition may publish inside a batch: keep nothing readers may not see.
  const int64_t limit = visible - records_base_;
  if (static_cast<int64_t>(records_.size()) > limit) {
    records_.resize(static_cast<size_t>(limit));
    next_batch_offset_ = -1;
  }
  return Status::OK();
}

}  // namespace weir::log
