// Sources: one reader per task, turning one partition of an input (a file, a topic partition,
// a generator, a broker) into records, in order, with a position that the task checkpoints.
// Each source kind (kind.h) makes its own; the topic reader is here because a task also reads
// repartition topics with it.
//
// Threads: a Source belongs to its task's thread.
// Durability: SavePosition() is stored with the task's state at each checkpoint;
// RestorePosition() puts a restarted task exactly where that checkpoint left off.
// Bad input (malformed JSON, a missing or mistyped key or timestamp) is never an error: it goes
// to the dead-letter topic through the TaskContext, and the source moves on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataflow/json_records.h"
#include "dataflow/kind.h"
#include "dataflow/task_context.h"
#include "log/log.h"
#include "weir/record.h"
#include "weir/stream.h"

namespace weir::dataflow {

enum class PollResult {
  kRecords,  // the batch has records (maybe fewer than asked)
  kIdle,     // nothing now; more may come (a followed topic, a throttled source)
  kEnd,      // a bounded source has ended
};

// The records of a batch in slots kept from batch to batch: clear() keeps them, and Add() hands
// out the next one with the memory of the record it last held, so that a source writing values
// in place (Value::AssignJson, Value::ObjectWriter) makes no heap allocation once the slots have
// grown to its records' sizes. A step that keeps a record moves it out of its slot (the slot is
// then empty and grows again).
class RecordSlots {
 public:
  // The next slot: key null, timestamp 0, no headers; its value is the last record's, to be
  // overwritten (in place, or by assignment).
  Record& Add();
  void push_back(Record record) { Add() = std::move(record); }
  // Gives back the last slot Add() returned (a record that turned out malformed).
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Record& operator[](size_t i) { return slots_[i]; }
  const Record& operator[](size_t i) const { return slots_[i]; }
  Record& back() { return slots_[size_ - 1]; }
  Record* begin() { return slots_.data(); }
  Record* end() { return slots_.data() + size_; }

 private:
  std::vector<Record> slots_;
  size_t size_ = 0;  // slots in use; those after them wait for reuse
};

struct SourceBatch {
  RecordSlots records;
  std::vector<int64_t> positions;  // per record: what PositionValue describes
  // Per record, only from sources that fill them (else: the position):
  // what Reread needs to read the record again (the file source: its first byte);
  std::vector<int64_t> reread_tokens;
  // the message's identity across redeliveries (JetStream: the stream sequence, while the
  // position names one delivery).
  std::vector<int64_t> identities;
  // the JSON text its value was parsed from, exactly (the topic source: its stored bytes, empty
  // for a value in the binary form; the file source: its line; JetStream: the message's data),
  // valid at least while the task processes the record (the topic and file sources: until their
  // next Poll): what a JSON sink may write instead of encoding a value no step has changed
  // (operators.h, UnchangedInput).
  std::vector<std::string_view> json;
  int64_t reread_token(size_t i) const {
    return reread_tokens.empty() ? positions[i] : reread_tokens[i];
  }
  int64_t identity(size_t i) const { return identities.empty() ? positions[i] : identities[i]; }
  std::string_view json_of(size_t i) const {
    return i < json.size() ? json[i] : std::string_view();
  }
  // Watermark marks read between the records (repartition topics only, watermark_marks.h), in
  // order: mark k applies once records [0, marks[k].before) have been processed.
  struct Mark {
    size_t before;
    int64_t position;  // the mark's own offset
    int32_t producer;  // index into RepartitionReading::producers
    Watermark watermark;
  };
  std::vector<Mark> marks;
  void Clear() {
    records.clear();
    positions.clear();
    reread_tokens.clear();
    identities.clear();
    json.clear();
    marks.clear();
  }
};

// Paces a source to a rate in records per second (0: unthrottled).
class RateLimiter {
 public:
  explicit RateLimiter(double per_second);
  // How many records may go now, at most `wanted`.
  size_t Allow(size_t wanted);

 private:
  double per_second_;
  std::chrono::steady_clock::time_point start_;
  int64_t granted_ = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  // Appends up to `max` records to `batch`.
  virtual Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext& ctx) = 0;
  virtual std::string SavePosition() const = 0;
  virtual Status RestorePosition(std::string_view saved) = 0;
  // Sources whose positions are log offsets (topics): the offset Poll reads next. -1 otherwise.
  virtual int64_t NextPosition() const { return -1; }
  // "file events.jsonl", "topic clicks partition 3", "generator partition 0".
  virtual std::string Describe() const = 0;
  // Where a record came from, for dead letters: {"line": 12, "byte": 3456},
  // {"topic": "clicks", "partition": 3, "offset": 17}, {"partition": 0, "sequence": 5}.
  virtual Value PositionValue(int64_t position) const = 0;

  // Delivery handles (docs/architecture.md §7). A record is resolved (acknowledged) once the task has
  // processed it, unless a step holds it; a held record is resolved when the step says so.
  //
  // Sources of the embedded kind (files, topics, the generator) are redelivered by the task:
  // it reads a nak'd or still-held record again with Reread (after a restart too: the held
  // records are saved with the checkpoint), so their positions commit as they are read.
  // A broker source that redelivers by itself (JetStream) says so here, and gets every
  // resolution through Resolve instead.
  virtual bool RedeliversItself() const { return false; }
  // The record at `position` again, as Poll made it (`token`: the batch's reread token).
  // kFailedPrecondition for sources that redeliver themselves.
  virtual Result<Record> Reread(int64_t position, int64_t token);
  // REQUIRES: RedeliversItself(). A delivery Poll returned in this run, by its position.
  // Records the task processed without holding them are resolved as kAck by the task.
  virtual void Resolve(int64_t position, Resolution resolution);
  // A checkpoint covering every acknowledgement resolved so far has committed: a broker source
  // may now acknowledge them to the broker.
  virtual Status OnCheckpointCommitted() { return Status::OK(); }
};

// How a task reads a repartition topic.
struct RepartitionReading {
  // Set once the topic's producers have all finished and published: the source then ends once
  // it has read everything visible.
  const std::atomic<bool>* end_of_input = nullptr;
  // The ids of the tasks that write the topic. Their watermark marks come out of the stream
  // into SourceBatch::marks; a mark from a task not listed goes to the dead-letter topic.
  std::vector<std::string> producers;
};

// One partition of a topic of the embedded log; `repartition` when it is a repartition topic.
Result<std::unique_ptr<Source>> OpenTopicSource(log::LogStore& log,
                                                const TopicSourceOptions& options,
                                                PartitionId partition,
                                                const RepartitionReading* repartition = nullptr);

// The options of a source that makes records of JSON values (a file, a topic, JetStream): the
// field that keys them, the one that stamps them, and where the bad ones go. Fixed: state is
// kept by those keys and times.
void DescribeRecordExtraction(Fingerprint& fingerprint, const KeySpec& key,
                              std::string_view timestamp_field, std::string_view dead_letter_topic);

// A value a source definition makes on first use, once, thread-safely, and then shares with
// every task (a generator's model).
template <typename T>
class MadeOnce {
 public:
  template <typename Make>
  std::shared_ptr<const T> Get(Make&& make) const {
    std::call_once(once_, [&] { value_ = make(); });
    return value_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::shared_ptr<const T> value_;
};

// A source whose position is the number of records it has made (the generators): next_.
class CountingSource : public Source {
 public:
  std::string SavePosition() const override;
  Status RestorePosition(std::string_view saved) override;

 protected:
  int64_t next_ = 0;
};

}  // namespace weir::dataflow
