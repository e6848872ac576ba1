// The embedded log: durable, partitioned, append-only topics on local disk (docs/architecture.md
// §3).
//
// Layout under the log directory:
//   <dir>/<topic>/topic.json                  partitions, retention, segment size, owner,
//                                             archived
//   <dir>/<topic>/<partition>/<base offset, 20 digits>.log    segment files (record_format.h)
//   <dir>/<topic>/<partition>/committed       8-byte visible end of a transactional partition
//
// Three ends per partition, in this order: visible <= durable <= written.
//   written: everything appended so far (in memory or in the file);
//   durable: written to the segment file and fsynced (per the fsync policy);
//   visible: what readers may read. A record is durable before anyone can read it.
//
// Two kinds of partitions:
//   - Plain (the default): Append() returns at once; the group committer thread writes the
//     pending bytes and fsyncs every `group_commit_interval` (or sooner when a writer waits),
//     then makes them visible. Append(..., kWaitDurable) returns once the records are durable.
//   - Transactional: the topic is owned by an application (ClaimForTransactions) whose
//     checkpoint decides what is committed. The owner calls Flush() (write + fsync) at a
//     checkpoint, then Publish(end) once the checkpoint is committed, and TruncateTo(end) on
//     recovery to discard what the crashed run wrote after its last committed checkpoint.
//     Appends by anyone else are refused. The group committer only writes its records ahead
//     once group_commit_bytes are pending: to the files, not fsynced, neither durable nor
//     visible, so that a checkpoint interval of output is not all held in memory.
//
// Threads: every method of LogStore, Topic and Partition is thread-safe. Appends to one
// partition serialize on that partition's mutex (held for a memcpy, never for I/O). A
// PartitionReader belongs to one thread.
//
// Crash safety: on open, the last segment of each partition is scanned and cut at the first
// batch whose magic, length or crc is wrong (a torn write). Nothing acknowledged durable is lost.
//
// Failed writes are sticky, as a RocksDB background error: when writing or fsyncing a
// partition's records fails (a full disk, the file size limit, an I/O error), the partition's
// files are cut back to its durable records, every record not yet durable is discarded, and
// the partition fails for the life of this LogStore. From then on Append, Flush, Publish and
// TruncateTo return that error (kResourceExhausted "... (disk full)", kIOError, ...), so does
// WaitDurable for any end beyond the durable end, and so does LogStore::FlushAll. The written
// end stays where it was, so no offset handed out is ever handed out again by this store, and
// readers keep reading the durable, visible prefix. To resume (after freeing space), close the
// LogStore and Open it again: the partition recovers from its files and appends continue from
// its durable end.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "log/record_format.h"
#include "weir/fsync.h"
#include "weir/key.h"
#include "weir/status.h"
#include "weir/types.h"

namespace weir::log {

struct TopicConfig {
  int32_t partitions = 1;
  int64_t retention_bytes = -1;                 // per partition; -1 keeps everything
  std::chrono::milliseconds retention_age{-1};  // by append time; -1 keeps everything
  int64_t segment_bytes = 128 << 20;            // a new segment after this many bytes
  // Checks partitions >= 1 (<= 10000), segment_bytes >= 4096; names the offending field.
  Status Validate() const;
};

// Kafka's murmur2 (the Java client's Utils.murmur2, librdkafka's rd_murmur2).
uint32_t Murmur2(std::string_view data);
// The partition a Kafka producer's default partitioner picks for a keyed record:
// (murmur2(key) & 0x7fffffff) % partitions. A null key hashes as empty bytes, as librdkafka's
// murmur2 partitioner does.
PartitionId KafkaPartition(std::string_view key_bytes, int32_t partitions);

// kNoWait: returns at once; the group committer flushes within group_commit_interval.
// kFlushSoon: returns at once, and the committer flushes now instead of waiting for the interval
//   (a group still forms: appends arriving during a flush share the next one). For callers that
//   wait for durability elsewhere, as the server acknowledging publishes.
// kWaitDurable: returns once the records are durable.
enum class Durability : uint8_t { kNoWait, kFlushSoon, kWaitDurable };

class Segment;    // segment.h
class ChunkPool;  // partition_state.h

class Partition {
 public:
  const std::string& topic_name() const { return topic_name_; }
  PartitionId id() const { return id_; }

  // The first retained offset (retention moves it forward) and the visible end.
  Offset FirstOffset() const;
  Offset NextOffset() const { return Offset(visible_end_.load(std::memory_order_acquire)); }
  Offset DurableEnd() const { return Offset(durable_end_.load(std::memory_order_acquire)); }
  Offset WrittenEnd() const;

  // Appends the builder's records; returns the offset of the first. With kWaitDurable, returns
  // once they are durable (and, for a plain partition, visible). kFailedPrecondition if the
  // partition is transactional and `owner` is not its owner.
  // A write that fails (full disk or file size limit: kResourceExhausted; I/O error: kIOError)
  // fails the partition (see the top of this file): the kWaitDurable appenders and WaitDurable
  // callers waiting for the lost records get the error, a kNoWait appender gets it from its
  // next Append, from WaitDurable or from FlushAll, and every later Append returns it without
  // appending.
  // Back-pressure: an append to a plain partition waits while 16 MiB (or 4 x
  // group_commit_bytes) are pending. kAlways, and kWaitDurable on a transactional partition,
  // write and fsync in the calling thread.
  Result<Offset> Append(const RecordBatchBuilder& batch,
                        Durability durability = Durability::kNoWait, std::string_view owner = {});
  // Blocks until [.., end) is durable (plain partitions: and visible), or the timeout passes
  // (kUnavailable). Returns at once if already so. The partition's failure if it has failed
  // and [.., end) is not durable (those records are lost). Otherwise kInvalidArgument if `end`
  // is beyond the written end. OK means every record below `end` is durable: offsets are never
  // reused within a LogStore, so it cannot be about other records.
  Status WaitDurable(Offset end, std::chrono::milliseconds timeout = std::chrono::minutes(1));

  // Transactional partitions only (REQUIRES: claimed by `owner`). Once the partition has failed
  // (a Flush or kWaitDurable append that could not write), all three return the failure; the
  // owner recovers by reopening the LogStore and truncating to its last committed checkpoint.
  // Writes every pending byte to the segment file and fsyncs (whatever the fsync policy, unless
  // kNever). Returns the durable end. Readers do not see it until Publish.
  Result<Offset> Flush(std::string_view owner);
  // Makes [.., end) visible and records `end` in the partition's `committed` file.
  // REQUIRES: end <= DurableEnd().
  Status Publish(Offset end, std::string_view owner);
  // Discards every record at or after `end` (files and memory), for recovery.
  // REQUIRES: end >= FirstOffset(); end <= WrittenEnd().
  // `end` must be a batch boundary in the files (every end that Flush returned is one) or fall
  // in the records not yet flushed (any offset there). Inside a written batch it is
  // kInvalidArgument and nothing changes. Truncating below the visible end while readers read
  // the partition is not supported (they may return records that are being removed).
  Status TruncateTo(Offset end, std::string_view owner);

  // Deletes whole segments (never the active one) that are beyond retention_bytes or whose
  // newest append is older than retention_age. Returns how many records it removed. Never
  // removes a segment holding records at or above the retention floor (an archived topic's).
  // Like Kafka, a segment goes once the newer segments alone hold retention_bytes, so a
  // partition keeps at least retention_bytes and at most that plus one segment. Never removes a
  // segment holding records beyond the visible end (an unpublished transaction).
  Result<int64_t> EnforceRetention(std::chrono::system_clock::time_point now);
  // Deletes whole segments every record of which lies below `offset` (never the active
  // segment), as Kafka's DeleteRecords does for a repartition topic once its reader's commit has
  // passed them. Returns how many records it removed. FirstOffset() moves to the base offset of
  // the first remaining segment, so up to a segment's worth of records below `offset` stays.
  // For transactional partitions REQUIRES owner (kFailedPrecondition otherwise); `owner` is
  // ignored for a plain partition. An offset above the visible end is clamped to the visible end
  // (never deletes unpublished records). A reader below the new first offset gets
  // kOutOfRange. kNotFound once the topic is deleted. Works on a failed partition too (like
  // retention; it does not clear the failure).
  Result<int64_t> DeleteBefore(Offset offset, std::string_view owner = {});

  // Bytes held in segment files.
  int64_t SizeBytes() const;

  // The retention floor of an archived topic's partition (Topic::SetArchived): retention and
  // DeleteBefore never delete a segment holding records at or above it, so the log keeps every
  // record its archive does not hold yet. nullopt when the topic is not archived. It starts at
  // the first retained offset (when the topic is marked archived, and at every open), so nothing
  // is evicted before the archive says how far it holds the records.
  std::optional<Offset> RetentionFloor() const;
  // Raises the floor to `floor` (never lowers it): the archive holds every record below it.
  // kFailedPrecondition if the topic is not archived.
  Status RaiseRetentionFloor(Offset floor);

  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;
  ~Partition();

 private:
  friend class Topic;
  friend class PartitionReader;
  friend class LogStore;
  struct State;  // segments, pending buffer, index; guarded by mu_
  Partition(std::string topic_name, PartitionId id);

  std::string topic_name_;
  PartitionId id_;
  std::atomic<int64_t> visible_end_{0};
  std::atomic<int64_t> durable_end_{0};
  std::unique_ptr<State> state_;
};

class Topic {
 public:
  const std::string& name() const { return name_; }
  const TopicConfig& config() const { return config_; }
  int32_t num_partitions() const { return config_.partitions; }
  // REQUIRES: 0 <= p < num_partitions() (checked).
  Partition& partition(PartitionId p);
  PartitionId PartitionFor(const Key& key) const {
    return KafkaPartition(key.bytes(), config_.partitions);
  }
  // The application that owns this topic's commits, or empty for a plain topic.
  std::string owner() const;
  // Makes every partition transactional under `owner` (persisted in topic.json).
  // kFailedPrecondition if another owner holds it; idempotent for the same owner.
  Status ClaimForTransactions(std::string_view owner);
  // Whether an archive (a lake view, src/lake) keeps this topic's records past retention: its
  // partitions then have a retention floor (Partition::RetentionFloor). Persisted in topic.json
  // ("archived": true), so the hold survives a restart before the archive raises the floors
  // again. Turning it on sets each floor to the partition's first retained offset; off removes
  // the floors.
  bool archived() const;
  Status SetArchived(bool archived);

 private:
  friend class LogStore;
  Topic(std::string name, TopicConfig config, std::filesystem::path dir);
  std::string name_;
  TopicConfig config_;
  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::string owner_;      // guarded by mu_
  bool archived_ = false;  // guarded by mu_
  std::vector<std::unique_ptr<Partition>> partitions_;
};

// Reads one partition in offset order. Owned by one thread.
class PartitionReader {
 public:
  PartitionReader(Partition& partition, Offset position);

  // Up to max_records records from the position, all below the visible end; empty when caught
  // up. The views stay valid until the next call. kOutOfRange when the position is below the
  // first retained offset (retention removed it) or above the visible end.
  // May return fewer than max_records before the end (at a segment boundary); kCorruption
  // naming the segment file if a batch's crc or format is wrong; kNotFound once the topic is
  // deleted.
  Result<std::span<const StoredRecord>> Next(size_t max_records = 4096);
  Offset position() const { return position_; }
  void Seek(Offset position) { position_ = position; }

 private:
  // Reads and decodes whole batches from the one holding `position` on, none at or past
  // `visible`, into buffer_/records_.
  Status Fill(int64_t position, int64_t visible);

  Partition& partition_;
  Offset position_;
  std::string buffer_;                 // bytes read from segment_; records_ point into it
  std::vector<StoredRecord> records_;  // decoded from buffer_; records_[i] is records_base_ + i
  int64_t records_base_ = 0;
  // Where the batch after the last decoded one starts, to read on without an index lookup;
  // -1 when unknown.
  int64_t next_batch_offset_ = -1;
  int64_t next_file_pos_ = 0;
  uint64_t truncations_seen_ = 0;
  std::shared_ptr<Segment> segment_;  // keeps the file open if retention deletes it
};

struct LogOptions {
  std::filesystem::path dir;
  FsyncPolicy fsync = FsyncPolicy::kGroup;
  std::chrono::microseconds group_commit_interval{2000};
  // Plain partitions' pending bytes that make the committer flush before the interval ends,
  // and transactional partitions' that make it write them ahead of their owner's Flush.
  size_t group_commit_bytes = 4 << 20;
  // How often the committer thread enforces retention.
  std::chrono::milliseconds retention_check_interval{10000};
};

class LogStore {
 public:
  // Opens (creating the directory if needed) and recovers every topic: torn tails cut, visible
  // ends of transactional partitions read from their `committed` files. Starts the group
  // committer thread. Partitions that failed in an earlier LogStore are usable again, from
  // their durable end.
  static Result<std::unique_ptr<LogStore>> Open(LogOptions options);
  // Flushes plain partitions (durable and visible) and stops the committer. A partition failure
  // that no call returned to anyone is printed to stderr.
  ~LogStore();

  // kAlreadyExists if the topic exists (whatever its config); kInvalidArgument for a bad name
  // ([A-Za-z0-9._-], 1-200 chars, not "." or "..") or config.
  Result<Topic*> CreateTopic(const std::string& name, const TopicConfig& config);
  // The existing topic, or a new one with `config`.
  Result<Topic*> GetOrCreateTopic(const std::string& name, const TopicConfig& config);
  // A topic of this name created from now on is born archived (Topic::SetArchived): retention
  // holds its records from the first one, before anything raised its floors. A lake declares the
  // topic of each archive view whose topic does not exist yet (at every open: not persisted
  // here; a created topic's topic.json keeps "archived").
  void ArchiveWhenCreated(const std::string& name);
  // kNotFound: "unknown topic 'x'" with the known topics listed.
  Result<Topic*> GetTopic(const std::string& name);
  std::vector<std::string> ListTopics() const;
  Status DeleteTopic(const std::string& name);

  // Makes every plain partition's appends durable and visible now. Fails if any partition has
  // failed (now or earlier): the first failed partition's error, which names its topic and
  // partition (with how many more failed).
  Status FlushAll();

  // Change notification for readers in this process: the epoch increases whenever any
  // partition's visible end moves. WaitForChange returns when it differs from `seen` or the
  // timeout passes.
  uint64_t ChangeEpoch() const { return epoch_.load(std::memory_order_acquire); }
  void WaitForChange(uint64_t seen, std::chrono::milliseconds timeout);

  const LogOptions& options() const { return options_; }

 private:
  explicit LogStore(LogOptions options);
  void CommitterLoop();
  void NotifyChange();
  // Tells the committer there is work: a group to flush after the interval, or now if urgent.
  void WakeCommitter(bool urgent);
  Result<std::unique_ptr<Topic>> LoadTopic(const std::string& name);
  // REQUIRES: mu_ held.
  Result<Topic*> CreateTopicLocked(const std::string& name, const TopicConfig& config);
  // REQUIRES: mu_ held, or the store not yet shared.
  Topic* Register(std::unique_ptr<Topic> topic);
  std::vector<Partition*> LivePartitions();

  LogOptions options_;
  mutable std::mutex mu_;  // guards topics_ and archive_when_created_
  std::map<std::string, std::unique_ptr<Topic>> topics_;
  std::set<std::string, std::less<>> archive_when_created_;
  std::atomic<uint64_t> epoch_{0};
  std::mutex change_mu_;
  std::condition_variable change_cv_;
  std::atomic<bool> stop_{false};
  std::thread committer_;
  // The committer's wake-ups; stop_ is also set under commit_mu_.
  std::mutex commit_mu_;
  std::condition_variable commit_cv_;
  bool commit_work_ = false;    // guarded by commit_mu_
  bool commit_urgent_ = false;  // guarded by commit_mu_
  // Every partition of every live topic, for the committer without taking mu_ (which topic
  // creation holds across its file I/O).
  std::mutex live_mu_;
  std::vector<Partition*> live_;  // guarded by live_mu_
  // Deleted topics: callers may still hold their Topic* or Partition&. Guarded by mu_.
  std::vector<std::unique_ptr<Topic>> retired_;
  std::optional<DirectoryLock> lock_;      // one LogStore per directory
  std::unique_ptr<ChunkPool> chunk_pool_;  // pending-record buffers, reused across partitions
  friend class Partition;
};

}  // namespace weir::log
