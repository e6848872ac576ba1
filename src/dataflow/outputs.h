// A task's output buffers. Records are encoded once, into per-partition batches (topics) or
// lines (files, stdout), and handed over at the end of each processing batch with one locked
// append each: no lock per record. A topic partition's batch that reaches kEarlyAppendBytes is
// handed over at once, so a burst (a watermark closing every key's windows) reuses one warm
// buffer instead of growing it into pages the process has never touched (bench/first_touch.sh).
//
// Threads: a TopicWriter or LineWriter belongs to one task (one thread). SharedFile is shared
// by every task writing the same file and locks per hand-over.
// Durability: topics' appends become durable and visible at the application's checkpoint (the
// topics are transactional); a SharedFile that is a regular file is fsynced at the checkpoint
// and cut back to its last checkpointed length on recovery. One that is not (a device such as
// /dev/null, a FIFO) and stdout are written as records come, at least once: nothing is synced
// or cut back, and a restart writes again what followed the last checkpoint.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "log/log.h"
#include "weir/record.h"
#include "weir/status.h"

namespace weir::dataflow {

class TopicWriter {
 public:
  // Values are stored in `encoding`: kBinary only for topics that Weir alone reads back
  // (repartition topics; log::ValueEncoding).
  TopicWriter(log::Topic* topic, std::string owner,
              log::ValueEncoding encoding = log::ValueEncoding::kJson);
  // A batch is appended to its partition as soon as it holds this many bytes. Below the log's
  // kChunkBytes, so the partition copies it into a pooled chunk, not a new allocation.
  static constexpr size_t kEarlyAppendBytes = 256 << 10;

  // Encodes the record into its partition's batch: the key's Kafka partition. An append it
  // makes (kEarlyAppendBytes) that fails is kept for the next Flush, and no further early append
  // is made until then: the batches grow until the Flush that fails the task.
  // `json`: the JSON text of the record's value (UnchangedInput; empty: none), which a topic of
  // JSON values stores as it is instead of encoding the value.
  void Write(const Record& record, std::string_view json = {}) {
    WriteTo(topic_->PartitionFor(record.key), record, json);
  }
  void WriteTo(PartitionId partition, const Record& record, std::string_view json = {});
  // Encodes `producer`'s watermark mark into every partition's batch (watermark_marks.h); marks
  // are not counted in records_written().
  void WriteWatermarkMark(std::string_view producer, Watermark watermark);
  // Appends every non-empty batch to its partition. If an early append failed since the last
  // Flush, returns that failure instead and appends nothing.
  Status Flush();
  // The failure of an early append that the next Flush returns; OK if none.
  const Status& early_append_failure() const { return early_append_failure_; }
  log::Topic* topic() const { return topic_; }
  int64_t records_written() const { return records_written_; }

 private:
  // Appends partition p's batch and clears it.
  Status Append(size_t p);

  log::Topic* topic_;
  std::string owner_;
  std::vector<log::RecordBatchBuilder> batches_;
  int64_t records_written_ = 0;
  Status early_append_failure_;
};

// A file of lines written by several tasks, or the process's stdout.
class SharedFile {
 public:
  // Opens `path` for writing, creating a regular file if missing: a regular file is cut to
  // `length` bytes (recovery); anything else is written from where it stands (a FIFO: the open
  // waits for a reader, as any writer's does).
  static Result<std::unique_ptr<SharedFile>> Open(const std::string& path, int64_t length);
  static std::unique_ptr<SharedFile> Stdout();
  ~SharedFile();

  Status Append(std::string_view lines);
  // Writes what is buffered and fsyncs; returns the file's length (0 unless a regular file).
  Result<int64_t> Sync();
  const std::string& path() const { return path_; }

 private:
  enum class Kind {
    kRegular,  // synced and cut back: exactly once
    kStream,   // a device or a FIFO: at least once
    kStdout,   // the process's, not closed
  };
  SharedFile(std::string path, int fd, Kind kind, int64_t length)
      : path_(std::move(path)), fd_(fd), kind_(kind), length_(length) {}

  std::string path_;
  int fd_;
  Kind kind_;
  std::mutex mu_;
  int64_t length_;  // guarded by mu_
};

// One task's buffer of lines for a SharedFile.
class LineWriter {
 public:
  explicit LineWriter(SharedFile* file) : file_(file) {}
  // {"key": ..., "timestamp": ..., "value": ...}\n, the value as `json` (its JSON text, from
  // UnchangedInput) when that is given and holds no line break, else encoded.
  void Write(const Record& record, std::string_view json = {});
  Status Flush();
  int64_t records_written() const { return records_written_; }

 private:
  SharedFile* file_;
  std::string buffer_;
  int64_t records_written_ = 0;
};

}  // namespace weir::dataflow
