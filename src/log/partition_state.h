// The private state of a log::Partition, shared by log.cc and partition_reader.cc.
//
// Three locks, always taken in this order: io_mu -> append_mu, io_mu -> index_mu.
//   append_mu  the pending buffer and the written end. Held by Append for a memcpy; by the
//              writer only to swap the pending buffer out and to publish a result.
//   io_mu      serializes everything that writes or removes files: flushes (committer, Flush,
//              kAlways appends), rolls, TruncateTo, Publish, retention. Held across I/O.
//   index_mu   the segment list and each segment's index. Held for in-memory lookups only,
//              so a reader never waits for an fsync.
// Readers read ends and sizes through atomics; the writer stores a segment's size before the
// durable end and the durable end before the visible end, so whatever a reader sees as visible
// is already in the file.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "log/log.h"
#include "log/segment.h"

namespace weir::log {

// Pending records live in chunks of kChunkBytes (an Append bigger than that gets a chunk of its
// own size), recycled through the store's ChunkPool: an append is a memcpy into memory that is
// already mapped, never a reallocation that copies what came before, and a chunk becomes one
// batch on disk.
inline constexpr size_t kChunkBytes = 1 << 20;
// Partition::State::retention_floor of a topic without an archive.
inline constexpr int64_t kNoRetentionFloor = INT64_MAX;

struct PendingChunk {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;
  size_t size = 0;
  int64_t count = 0;  // records in it
  std::string_view bytes() const { return {data.get(), size}; }
};

// Free kChunkBytes buffers shared by all partitions of a store, at most `max_free` of them.
// Thread-safe.
class ChunkPool {
 public:
  explicit ChunkPool(size_t max_free) : max_free_(max_free) {}
  std::unique_ptr<char[]> Get();
  // Takes back the standard-sized chunks (the rest are freed) and empties `chunks`.
  void Recycle(std::vector<PendingChunk>& chunks);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> free_;  // guarded by mu_
  const size_t max_free_;
};

// A thread waiting for records to become durable. The writer that decides its fate (makes
// [.., end) durable, or fails the partition while [.., end) is not durable) marks it done under
// append_mu.
struct DurableWaiter {
  int64_t end = 0;
  bool done = false;
  Status status;
};

struct Partition::State {
  State(Partition* self, LogStore* store, std::filesystem::path dir, const TopicConfig& config);

  // Recovers the partition directory (segments, torn tail, committed file). REQUIRES: before
  // the partition is shared.
  Status Open(bool transactional);
  // Creates the partition directory with an empty first segment (during topic creation).
  static Status Materialize(const std::filesystem::path& dir);

  // Writes the pending records as batches (rolling segments as needed), fsyncs when `sync`,
  // and advances the durable end; the visible end becomes min(new durable end, visible_limit)
  // if that is higher. Records written ahead (WriteAheadLocked) and not yet durable are made
  // durable too, by the fsync alone when nothing is pending. On failure the files are cut back to
  // their last good size, every record not yet durable is discarded, the partition fails
  // (`failure`, for good) and waiters get the error. Returns `failure` at once if the partition has
  // failed. REQUIRES: io_mu held.
  Status WritePendingLocked(bool sync, int64_t visible_limit);
  // A transactional partition's pending records written to the files ahead of its owner's
  // Flush, without an fsync and without moving the durable or visible end (so no waiter is
  // released and no reader sees them): what bounds the memory a checkpoint interval of output
  // would hold. The owner's Flush makes them durable, TruncateTo removes them, and a reopen
  // keeps only what the committed file says is visible. Nothing if fewer than
  // group_commit_bytes are pending. REQUIRES: io_mu held.
  Status WriteAheadLocked();
  // Their shared steps. TakePending moves the pending records to `flushing` and returns their
  // base offset and count (REQUIRES: append_mu held too); WriteFlushing writes them from `base`
  // (fsyncing the last segment when `sync`), then indexes them, or on failure cuts the files
  // back and fails the partition (UndoWrite); it recycles the chunks either way.
  std::pair<int64_t, int64_t> TakePending();
  Status WriteFlushing(int64_t base, int64_t count, bool sync);
  // WritePendingLocked's steps, in its order. REQUIRES: io_mu held (each).
  //
  // A batch to write: whole records of one pending chunk. One batch per chunk, except that a
  // chunk bigger than kMaxBatchPayload (one big Append) is cut at record boundaries.
  struct PlannedBatch {
    const char* data;
    size_t len;
    uint32_t count;
  };
  // What one write puts in one segment file: the active segment's tail, or a segment created by
  // a roll (`created`), with the batches to add to its index once durable.
  struct SegmentRun {
    std::shared_ptr<Segment> segment;
    int64_t start_size;
    int64_t size;
    bool created;
    std::vector<iovec> iov;                                // valid during WriteRuns only
    std::vector<std::pair<BatchHeader, int64_t>> batches;  // header, position in the file
  };
  std::vector<PlannedBatch> PlanBatches() const;  // of `flushing`
  // Writes the batches from offset `base` on, rolling segments as needed (an old segment is
  // fsynced before its successor gets data), fsyncing the last when `sync`. `runs` holds what
  // was (or was being) written, for UndoWrite or IndexWrite.
  Status WriteRuns(const std::vector<PlannedBatch>& planned, int64_t base, bool sync,
                   std::vector<SegmentRun>& runs);
  // After a failed write: cuts the files back, fails the partition with `status` (records from
  // `base` on lost) and the waiters with it; returns the partition's failure.
  Status UndoWrite(const std::vector<SegmentRun>& runs, const Status& status, int64_t base);
  // After a write: adds the batches to the segment indexes and the new segments to the list.
  void IndexWrite(const std::vector<SegmentRun>& runs);
  // Once records up to `new_end` are durable: moves the durable end there and the visible end
  // as WritePendingLocked says, and releases the waiters.
  void PublishDurable(int64_t new_end, int64_t visible_limit);
  // TruncateTo's steps, in its order, after it has checked `end`. REQUIRES: io_mu held (each).
  //
  // When only pending records go (end >= written_end - pending_count): drops them, with no file
  // change, and fails their waiters. REQUIRES: append_mu held too.
  void TruncatePending(int64_t end);
  // Where the files are cut: the first `keep` segments stay, the last of them (`segment`) cut at
  // `position`, the start of the batch holding offset `end`.
  struct TruncationCut {
    size_t keep = 0;
    std::shared_ptr<Segment> segment;
    int64_t position = 0;
  };
  Result<TruncationCut> FindTruncationCut(int64_t end);
  // Drops every pending record and moves the written, durable and (if above) visible ends back
  // to `end`, failing the waiters beyond it; true if the visible end moved (the committed file
  // must follow). Bumps `truncations` first, so readers drop their buffers.
  bool MoveEndsBackTo(int64_t end);
  // Deletes the segments after the cut (newest first: a crash part-way leaves a log merely less
  // truncated), cuts and fsyncs the last one kept, then trims its index and recounts size_bytes.
  Status CutFilesAt(const TruncationCut& cut, int64_t end);
  // kAborted: the records from `from` on were removed by TruncateTo.
  Status RemovedByTruncation(int64_t from) const;
  // One flush of a plain partition per the fsync policy (committer, FlushAll, destructor).
  // A transactional partition is left alone; either kind returns `failure` if it has failed.
  Status FlushPlain();
  // The failure, now told to a caller. REQUIRES: append_mu held.
  Status ReportFailure();
  // Returns `s`, an error from WritePendingLocked or FlushPlain, noting that the caller has
  // been told. REQUIRES: append_mu not held.
  Status ToCaller(Status s);
  Status CheckOwner(std::string_view owner,
                    std::string_view operation) const;  // REQUIRES: append_mu
  // The pending records. REQUIRES: append_mu held (all three).
  void AddPending(std::string_view payload, int64_t count);
  void KeepPending(int64_t records);  // drops every pending record after the first `records`
  void ClearPending();
  // Marks done every waiter whose records are now durable (plain: and visible); with a
  // `failure`, also every waiter waiting for records above the durable end, with that status.
  // REQUIRES: append_mu held.
  void ResolveWaiters(const Status& failure);
  // Marks done, with `status`, every waiter for records above `end`. REQUIRES: append_mu held.
  void FailWaitersAbove(int64_t end, const Status& status);
  // Deletes segment files from the oldest on while `should_delete` says so of the next one,
  // stopping at the active segment and at the first segment holding records at or past the
  // visible end (what readers have not been allowed to see, as an unpublished transaction).
  // Oldest first: a crash part-way leaves a shorter prefix removed, never a hole. A reader
  // holding a deleted segment keeps reading it. Moves first_offset and size_bytes; returns how
  // many records went. `should_delete` runs under index_mu (it may read Segment::end_offset).
  // Shared by EnforceRetention and DeleteBefore. REQUIRES: io_mu held.
  Result<int64_t> DeleteOldestSegmentsLocked(
      const std::function<bool(const Segment&)>& should_delete);
  Status WriteCommittedFile(int64_t end) const;
  std::string Where() const;  // "topic 'x' partition 3"

  Partition* const self;
  LogStore* const store;
  const std::filesystem::path dir;
  const TopicConfig config;

  // Guarded by append_mu.
  mutable std::mutex append_mu;
  std::condition_variable durable_cv;  // durable end moved, a write failed, or deleted
  std::vector<PendingChunk> pending;   // records not yet handed to the writer
  size_t pending_bytes = 0;
  int64_t pending_count = 0;
  int64_t written_end = 0;
  // The end of what the files hold (written ahead of a transactional Flush, or durable): at or
  // above the durable end, at or below written_end - pending_count.
  int64_t file_end = 0;
  std::string owner;  // empty for a plain partition
  bool deleted = false;
  std::vector<DurableWaiter*> waiters;
  // Set by the first failed write or fsync and kept until the store closes: the records from
  // the durable end up to the written end are gone, and their offsets are never handed out
  // again. Every Append, Flush, Publish, TruncateTo and WaitDurable beyond the durable end
  // returns it. A reopen recovers the partition from its files.
  Status failure;
  bool failure_reported = false;  // returned to some caller (the close stays quiet then)

  std::atomic<int64_t> written_end_atomic{0};
  std::atomic<bool> failed{false};  // failure is set; for the committer, which skips it
  std::atomic<bool> transactional{false};
  std::atomic<bool> deleted_atomic{false};

  // Guarded by io_mu.
  std::mutex io_mu;
  std::vector<PendingChunk> flushing;  // the pending chunks being written

  // Guarded by index_mu.
  mutable std::mutex index_mu;
  std::vector<std::shared_ptr<Segment>> segments;  // by base offset; back() is active

  std::atomic<int64_t> first_offset{0};
  std::atomic<int64_t> size_bytes{0};
  // Retention and DeleteBefore never delete a segment holding records at or above it
  // (kNoRetentionFloor: no floor). Written under io_mu, read by them under io_mu.
  std::atomic<int64_t> retention_floor{kNoRetentionFloor};
  // Bumped before TruncateTo changes what is in the files, so readers drop their buffers.
  std::atomic<uint64_t> truncations{0};
};

}  // namespace weir::log
