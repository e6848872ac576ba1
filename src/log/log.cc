#include "log/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>

#include "core/coding.h"
#include "core/names.h"
#include "log/partition_state.h"
#include "weir/value.h"

namespace weir::log {
namespace fs = std::filesystem;
namespace {

// Batches stay below this many payload bytes (a single bigger record gets a batch of its own),
// so a reader never needs a huge buffer however much a checkpoint flushes at once.
constexpr size_t kMaxBatchPayload = 1 << 20;
// Topic directories being created or deleted carry a suffix no topic name can have.
constexpr std::string_view kCreatingSuffix = "~creating";
constexpr std::string_view kDeletedSuffix = "~deleted";
constexpr const char* kTopicFile = "topic.json";
constexpr const char* kCommittedFile = "committed";
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
constexpr int64_t kKeepVisible = std::numeric_limits<int64_t>::min();

int64_t NowMs(std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

bool HasSuffix(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Byte length of the first `n` records of encoded records (RecordBatchBuilder's format).
size_t RecordsPrefixBytes(std::string_view records, int64_t n) {
  size_t pos = 0;
  for (int64_t i = 0; i < n; ++i) pos += 4 + coding::DecodeFixed32(records.data() + pos);
  WEIR_CHECK(pos <= records.size(), "pending records are malformed");
  return pos;
}

std::string EncodeTopicJson(const TopicConfig& config, const std::string& owner,
                            bool archived = false) {
  Value json =
      Value::MakeObject({{"version", 1},
                         {"partitions", config.partitions},
                         {"retention_bytes", config.retention_bytes},
                         {"retention_age_ms", static_cast<int64_t>(config.retention_age.count())},
                         {"segment_bytes", config.segment_bytes},
                         {"owner", owner}});
  // Only when set, so the files of topics without an archive stay as they were.
  if (archived) json.Set("archived", true);
  return json.ToJson();
}

Status DecodeTopicJson(const fs::path& path, std::string_view text, TopicConfig& config,
                       std::string& owner, bool& archived) {
  auto bad = [&](const std::string& why) { return Status::Corruption(path.string() + ": " + why); };
  auto parsed = Value::Parse(text);
  if (!parsed.ok()) return bad(parsed.status().message());
  const Value& v = *parsed;
  if (!v.is_object()) return bad("not a JSON object");
  auto int_field = [&](const char* name, int64_t& out) -> Status {
    const Value* f = v.Find(name);
    if (f == nullptr || !f->is_int())
      return bad("field '" + std::string(name) + "' must be an integer");
    out = f->as_int();
    return Status::OK();
  };
  int64_t partitions, age_ms;
  WEIR_RETURN_IF_ERROR(int_field("partitions", partitions));
  WEIR_RETURN_IF_ERROR(int_field("retention_bytes", config.retention_bytes));
  WEIR_RETURN_IF_ERROR(int_field("retention_age_ms", age_ms));
  WEIR_RETURN_IF_ERROR(int_field("segment_bytes", config.segment_bytes));
  if (partitions < 1 || partitions > std::numeric_limits<int32_t>::max()) {
    return bad("field 'partitions' out of range");
  }
  config.partitions = static_cast<int32_t>(partitions);
  config.retention_age = std::chrono::milliseconds(age_ms);
  const Value* o = v.Find("owner");
  if (o == nullptr || !o->is_string()) return bad("field 'owner' must be a string");
  owner = o->as_string();
  const Value* a = v.Find("archived");
  if (a != nullptr && !a->is_bool()) return bad("field 'archived' must be a boolean");
  archived = a != nullptr && a->as_bool();
  Status valid = config.Validate();
  if (!valid.ok()) return bad(valid.message());
  return Status::OK();
}

}  // namespace

Status TopicConfig::Validate() const {
  if (partitions < 1 || partitions > kMaxPartitions) {
    return Status::InvalidArgument("TopicConfig.partitions must be between 1 and " +
                                   std::to_string(kMaxPartitions) + ", got " +
                                   std::to_string(partitions));
  }
  if (segment_bytes < 4096) {
    return Status::InvalidArgument("TopicConfig.segment_bytes must be at least 4096, got " +
                                   std::to_string(segment_bytes));
  }
  if (retention_bytes < -1) {
    return Status::InvalidArgument(
        "TopicConfig.retention_bytes must be -1 (keep everything) or >= 0, got " +
        std::to_string(retention_bytes));
  }
  if (retention_age.count() < -1) {
    return Status::InvalidArgument(
        "TopicConfig.retention_age must be -1 ms (keep everything) or >= 0, got " +
        std::to_string(retention_age.count()) + " ms");
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// ChunkPool

std::unique_ptr<char[]> ChunkPool::Get() {
  {
    std::lock_guard lk(mu_);
    if (!free_.empty()) {
      auto chunk = std::move(free_.back());
      free_.pop_back();
      return chunk;
    }
  }
  return std::make_unique_for_overwrite<char[]>(kChunkBytes);
}

void ChunkPool::Recycle(std::vector<PendingChunk>& chunks) {
  {
    std::lock_guard lk(mu_);
    for (PendingChunk& c : chunks) {
      if (c.capacity == kChunkBytes && free_.size() < max_free_) free_.push_back(std::move(c.data));
    }
  }
  chunks.clear();  // frees what the pool did not take, outside its lock
}

// ---------------------------------------------------------------------------------------------
// Partition::State

Partition::State::State(Partition* self, LogStore* store, fs::path dir, const TopicConfig& config)
    : self(self), store(store), dir(std::move(dir)), config(config) {}

std::string Partition::State::Where() const {
  return "topic '" + self->topic_name_ + "' partition " + std::to_string(self->id_.value());
}

Status Partition::State::Materialize(const fs::path& dir) {
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) return FileError(ec.value(), "creating directory", dir);
  const fs::path first = dir / SegmentFileName(0);
  const int fd = ::open(first.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, "creating segment", first);
  ::close(fd);
  return SyncDirectory(dir);
}

Status Partition::State::Open(bool is_transactional) {
  std::vector<std::pair<int64_t, fs::path>> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t base = ParseSegmentFileName(it->path().filename().string());
    if (base >= 0) files.emplace_back(base, it->path());
  }
  if (ec) return FileError(ec.value(), "listing", dir);
  std::sort(files.begin(), files.end());

  std::vector<std::shared_ptr<Segment>> opened;
  if (files.empty()) {
    WEIR_ASSIGN_OR_RETURN(auto segment, Segment::Create(dir, 0));
    opened.push_back(std::move(segment));
  }
  int64_t total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const bool last = i + 1 == files.size();
    const auto& [base, path] = files[i];
    if (!opened.empty() && opened.back()->end_offset() != base) {
      return Status::Corruption(path.string() + " starts at offset " + std::to_string(base) +
                                " but the segment before it ends at " +
                                std::to_string(opened.back()->end_offset()));
    }
    // Only the last segment can hold a torn write: a segment is fsynced before the next one is
    // created. Checking its crcs is what makes a flipped bit there a torn tail, not data.
    WEIR_ASSIGN_OR_RETURN(auto segment, Segment::Open(path, base, /*verify_crc=*/last,
                                                      /*cut_torn_tail=*/last));
    total += segment->size();
    opened.push_back(std::move(segment));
  }
  const int64_t first = opened.front()->base_offset();
  const int64_t end = opened.back()->end_offset();
  segments = std::move(opened);
  first_offset.store(first);
  size_bytes.store(total);
  written_end = end;
  written_end_atomic.store(end);
  file_end = end;
  self->durable_end_.store(end);
  transactional.store(is_transactional);

  int64_t visible = end;
  if (is_transactional) {
    visible = first;
    auto committed = ReadFile(dir / kCommittedFile);
    if (committed.ok()) {
      if (committed->size() != 8) {
        return Status::Corruption((dir / kCommittedFile).string() + " is not 8 bytes long");
      }
      const auto value = static_cast<int64_t>(coding::DecodeFixed64(committed->data()));
      visible = std::clamp(value, first, end);
    } else if (committed.status().code() != StatusCode::kNotFound) {
      return committed.status();
    }
  }
  self->visible_end_.store(visible);
  return Status::OK();
}

Status Partition::State::CheckOwner(std::string_view who, std::string_view operation) const {
  if (owner.empty()) {
    return Status::FailedPrecondition(Where() + " is not transactional: " + std::string(operation) +
                                      " needs a topic claimed with ClaimForTransactions");
  }
  if (who != owner) {
    return Status::FailedPrecondition(Where() + " is owned by '" + owner +
                                      "': " + std::string(operation) + " by '" + std::string(who) +
                                      "' refused");
  }
  return Status::OK();
}

void Partition::State::AddPending(std::string_view payload, int64_t count) {
  if (pending.empty() || pending.back().capacity - pending.back().size < payload.size()) {
    PendingChunk chunk;
    if (payload.size() <= kChunkBytes) {
      chunk.data = store->chunk_pool_->Get();
      chunk.capacity = kChunkBytes;
    } else {
      chunk.data = std::make_unique_for_overwrite<char[]>(payload.size());
      chunk.capacity = payload.size();
    }
    pending.push_back(std::move(chunk));
  }
  PendingChunk& chunk = pending.back();
  std::memcpy(chunk.data.get() + chunk.size, payload.data(), payload.size());
  chunk.size += payload.size();
  chunk.count += count;
  pending_bytes += payload.size();
  pending_count += count;
}

void Partition::State::KeepPending(int64_t records) {
  int64_t left = records;
  size_t i = 0;
  while (i < pending.size() && left >= pending[i].count) left -= pending[i++].count;
  if (i < pending.size() && left > 0) {
    PendingChunk& cut = pending[i++];
    const size_t keep = RecordsPrefixBytes(cut.bytes(), left);
    pending_bytes -= cut.size - keep;
    cut.size = keep;
    cut.count = left;
  }
  std::vector<PendingChunk> dropped;
  for (size_t j = i; j < pending.size(); ++j) {
    pending_bytes -= pending[j].size;
    dropped.push_back(std::move(pending[j]));
  }
  pending.resize(i);
  pending_count = records;
  store->chunk_pool_->Recycle(dropped);
}

void Partition::State::ClearPending() {
  pending_bytes = 0;
  pending_count = 0;
  store->chunk_pool_->Recycle(pending);
}

void Partition::State::ResolveWaiters(const Status& failure) {
  const int64_t durable = self->durable_end_.load(std::memory_order_relaxed);
  const int64_t visible = self->visible_end_.load(std::memory_order_relaxed);
  const bool is_transactional = !owner.empty();
  std::erase_if(waiters, [&](DurableWaiter* w) {
    if (durable >= w->end && (is_transactional || visible >= w->end)) {
      w->done = true;
      return true;
    }
    if (!failure.ok() && w->end > durable) {
      w->done = true;
      w->status = failure;
      failure_reported = true;  // the waiter returns it
      return true;
    }
    return false;
  });
}

void Partition::State::FailWaitersAbove(int64_t end, const Status& status) {
  std::erase_if(waiters, [&](DurableWaiter* w) {
    if (w->end <= end) return false;
    w->done = true;
    w->status = status;
    return true;
  });
}

Status Partition::State::WriteCommittedFile(int64_t end) const {
  std::string bytes;
  coding::PutFixed64(bytes, static_cast<uint64_t>(end));
  // No fsync: a committed file that a crash leaves stale is lower than the truth, and the owner
  // publishes again from its checkpoint on recovery.
  return ReplaceFileAtomically(dir / kCommittedFile, bytes, {.sync = false}).WithContext(Where());
}

Status Partition::State::ReportFailure() {
  failure_reported = true;
  return failure;
}

Status Partition::State::ToCaller(Status s) {
  if (!s.ok()) {
    std::lock_guard lk(append_mu);
    if (!failure.ok()) failure_reported = true;
  }
  return s;
}

Status Partition::State::FlushPlain() {
  std::lock_guard io(io_mu);
  if (deleted_atomic.load()) return Status::OK();
  if (transactional.load()) {
    std::lock_guard lk(append_mu);
    return failure;
  }
  return WritePendingLocked(store->options().fsync != FsyncPolicy::kNever, kNoLimit);
}

Status Partition::State::WritePendingLocked(bool sync, int64_t visible_limit) {
  int64_t base, count;
  {
    std::lock_guard lk(append_mu);
    if (!failure.ok()) return failure;
    if (pending_count == 0) {
      if (file_end <= self->durable_end_.load(std::memory_order_relaxed)) return Status::OK();
      count = 0;  // only records written ahead: the fsync makes them durable
      base = file_end;
    } else {
      std::tie(base, count) = TakePending();
    }
  }
  durable_cv.notify_all();  // appenders held back by a full pending buffer

  if (count == 0) {
    std::shared_ptr<Segment> active;
    {
      std::lock_guard lk(index_mu);
      active = segments.back();  // rolls fsync the segments before it: only it can be unsynced
    }
    Status status = sync ? SyncFile(active->fd(), active->path()) : Status::OK();
    if (!status.ok()) return UndoWrite({}, status, self->durable_end_.load());
    PublishDurable(base, visible_limit);
    return Status::OK();
  }

  WEIR_RETURN_IF_ERROR(WriteFlushing(base, count, sync));
  PublishDurable(base + count, visible_limit);
  return Status::OK();
}

Status Partition::State::WriteAheadLocked() {
  if (deleted_atomic.load()) return Status::OK();
  int64_t base, count;
  {
    std::lock_guard lk(append_mu);
    if (!failure.ok()) return failure;
    if (pending_bytes < store->options().group_commit_bytes) return Status::OK();
    std::tie(base, count) = TakePending();
  }
  WEIR_RETURN_IF_ERROR(WriteFlushing(base, count, /*sync=*/false));
  std::lock_guard lk(append_mu);
  file_end = base + count;
  return Status::OK();
}

std::pair<int64_t, int64_t> Partition::State::TakePending() {
  flushing.swap(pending);
  const int64_t count = pending_count;
  pending_count = 0;
  pending_bytes = 0;
  return {written_end - count, count};
}

Status Partition::State::WriteFlushing(int64_t base, int64_t count, bool sync) {
  const std::vector<PlannedBatch> planned = PlanBatches();
  int64_t planned_count = 0;
  for (const PlannedBatch& b : planned) planned_count += b.count;
  WEIR_CHECK(planned_count == count, "pending record count does not match the pending bytes");

  std::vector<SegmentRun> runs;
  Status status = WriteRuns(planned, base, sync, runs);
  // Every record past the durable end is lost then, those written ahead included.
  if (!status.ok()) status = UndoWrite(runs, status, self->durable_end_.load());
  if (status.ok()) IndexWrite(runs);
  store->chunk_pool_->Recycle(flushing);
  return status;
}

std::vector<Partition::State::PlannedBatch> Partition::State::PlanBatches() const {
  std::vector<PlannedBatch> planned;
  for (const PendingChunk& chunk : flushing) {
    const char* d = chunk.data.get();
    if (chunk.size <= kMaxBatchPayload) {
      // One batch, its count kept by AddPending and KeepPending: no walk over records whose
      // bytes have left the caches since they were appended (5% of q0 with the topic sink).
      if (chunk.count > 0) planned.push_back({d, chunk.size, static_cast<uint32_t>(chunk.count)});
      continue;
    }
    size_t begin = 0, pos = 0;
    uint32_t n = 0;
    while (pos < chunk.size) {
      const size_t record = 4 + coding::DecodeFixed32(d + pos);
      if (n > 0 && pos + record - begin > kMaxBatchPayload) {
        planned.push_back({d + begin, pos - begin, n});
        begin = pos;
        n = 0;
      }
      pos += record;
      ++n;
    }
    if (n > 0) planned.push_back({d + begin, pos - begin, n});
  }
  return planned;
}

Status Partition::State::WriteRuns(const std::vector<PlannedBatch>& planned, int64_t base,
                                   bool sync, std::vector<SegmentRun>& runs) {
  {
    std::lock_guard lk(index_mu);
    const auto& active = segments.back();
    runs.push_back({active, active->size(), active->size(), false, {}, {}});
  }
  std::vector<std::array<char, kBatchHeaderSize>> headers(planned.size());
  const int64_t now_ms = NowMs();
  int64_t offset = base;
  auto write_run = [](const SegmentRun& run) {
    return WriteAt(run.segment->fd(), run.iov, run.start_size, run.segment->path());
  };
  for (size_t i = 0; i < planned.size(); ++i) {
    const PlannedBatch& b = planned[i];
    const auto payload_len = static_cast<int64_t>(b.len);
    const int64_t bytes = static_cast<int64_t>(kBatchHeaderSize) + payload_len;
    if (runs.back().size > 0 && runs.back().size + bytes > config.segment_bytes) {
      // Roll. The old segment is fsynced first, whatever the policy, so that a later segment
      // never holds data that an earlier one lacks: only the last segment can be torn.
      WEIR_RETURN_IF_ERROR(write_run(runs.back()));
      WEIR_RETURN_IF_ERROR(SyncFile(runs.back().segment->fd(), runs.back().segment->path()));
      WEIR_ASSIGN_OR_RETURN(std::shared_ptr<Segment> created, Segment::Create(dir, offset));
      runs.push_back({std::move(created), 0, 0, true, {}, {}});
    }
    SegmentRun& run = runs.back();
    BatchHeader h;
    h.payload_len = static_cast<uint32_t>(payload_len);
    h.count = b.count;
    h.base_offset = offset;
    h.append_time_ms = now_ms;
    const std::string_view payload(b.data, b.len);
    h.EncodeWithCrc(payload, headers[i].data());
    run.iov.push_back({headers[i].data(), kBatchHeaderSize});
    run.iov.push_back({const_cast<char*>(payload.data()), payload.size()});
    run.batches.emplace_back(h, run.size);
    run.size += bytes;
    offset += b.count;
  }
  WEIR_RETURN_IF_ERROR(write_run(runs.back()));
  if (sync) WEIR_RETURN_IF_ERROR(SyncFile(runs.back().segment->fd(), runs.back().segment->path()));
  return Status::OK();
}

Status Partition::State::UndoWrite(const std::vector<SegmentRun>& runs, const Status& status,
                                   int64_t base) {
  // Leave the files as they were before this write, so that they hold exactly the durable
  // records (a full disk is not corruption). The records from `base` on are lost, and
  // kNoWait appenders already hold their offsets: the partition fails for good rather than
  // hand those offsets out again to records that a later WaitDurable would call durable.
  bool unlinked = false;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->created) {
      ::unlink(it->segment->path().c_str());
      unlinked = true;
    } else if (::ftruncate(it->segment->fd(), it->start_size) == 0) {
      ::fdatasync(it->segment->fd());
    }
  }
  if (unlinked) (void)SyncDirectory(dir);
  Status result;
  {
    std::lock_guard lk(append_mu);
    std::string message = Where() + ": " + status.message() + "; records from offset " +
                          std::to_string(base) +
                          " on were not stored, and the partition refuses writes until the "
                          "log is reopened";
    failure = Status(status.code(), std::move(message));
    failed.store(true, std::memory_order_release);
    ClearPending();  // so appenders held back by back-pressure stop waiting when notified
    ResolveWaiters(failure);
    result = failure;
  }
  durable_cv.notify_all();
  return result;
}

void Partition::State::IndexWrite(const std::vector<SegmentRun>& runs) {
  int64_t written_bytes = 0;
  {
    std::lock_guard lk(index_mu);
    for (const SegmentRun& run : runs) {
      for (const auto& [h, pos] : run.batches) run.segment->AddBatch(h, pos);
      run.segment->set_size(run.size);
      written_bytes += run.size - run.start_size;
      if (run.created) segments.push_back(run.segment);
    }
  }
  size_bytes.fetch_add(written_bytes, std::memory_order_relaxed);
}

void Partition::State::PublishDurable(int64_t new_end, int64_t visible_limit) {
  bool visible_moved = false;
  {
    std::lock_guard lk(append_mu);
    file_end = new_end;
    self->durable_end_.store(new_end, std::memory_order_release);
    const int64_t visible = std::min(new_end, visible_limit);
    if (visible > self->visible_end_.load(std::memory_order_relaxed)) {
      self->visible_end_.store(visible, std::memory_order_release);
      visible_moved = true;
    }
    ResolveWaiters(Status::OK());
  }
  durable_cv.notify_all();
  if (visible_moved) store->NotifyChange();
}

Result<int64_t> Partition::State::DeleteOldestSegmentsLocked(
    const std::function<bool(const Segment&)>& should_delete) {
  const int64_t visible = self->NextOffset().value();
  const int64_t floor = retention_floor.load(std::memory_order_acquire);
  std::vector<std::shared_ptr<Segment>> doomed;
  {
    std::lock_guard lk(index_mu);
    for (size_t i = 0; i + 1 < segments.size(); ++i) {
      const Segment& s = *segments[i];
      if (s.end_offset() > visible || s.end_offset() > floor || !should_delete(s)) break;
      doomed.push_back(segments[i]);
    }
  }
  size_t removed_segments = 0;
  int64_t removed_records = 0, removed_bytes = 0;
  Status status;
  for (const auto& s : doomed) {  // oldest first: a crash leaves no hole
    if (::unlink(s->path().c_str()) != 0) {
      status = FileError(errno, "deleting", s->path()).WithContext(Where());
      break;
    }
    ++removed_segments;
    removed_bytes += s->size();
  }
  if (removed_segments > 0) {
    std::lock_guard lk(index_mu);
    for (size_t i = 0; i < removed_segments; ++i) {
      removed_records += segments[i]->end_offset() - segments[i]->base_offset();
    }
    segments.erase(segments.begin(), segments.begin() + static_cast<ptrdiff_t>(removed_segments));
    first_offset.store(segments.front()->base_offset(), std::memory_order_release);
    size_bytes.fetch_sub(removed_bytes, std::memory_order_relaxed);
  }
  if (!status.ok()) return status;
  return removed_records;
}

// ---------------------------------------------------------------------------------------------
// Partition

Partition::Partition(std::string topic_name, PartitionId id)
    : topic_name_(std::move(topic_name)), id_(id) {}

Partition::~Partition() = default;

Offset Partition::FirstOffset() const {
  return Offset(state_->first_offset.load(std::memory_order_acquire));
}

std::optional<Offset> Partition::RetentionFloor() const {
  const int64_t floor = state_->retention_floor.load(std::memory_order_acquire);
  if (floor == kNoRetentionFloor) return std::nullopt;
  return Offset(floor);
}

Status Partition::RaiseRetentionFloor(Offset floor) {
  State& st = *state_;
  // Under io_mu: a retention pass in progress finishes with the floor it read.
  std::lock_guard io(st.io_mu);
  const int64_t current = st.retention_floor.load(std::memory_order_acquire);
  if (current == kNoRetentionFloor) {
    return Status::FailedPrecondition(st.Where() + " is not archived: it has no retention floor");
  }
  if (floor.value() > current) st.retention_floor.store(floor.value(), std::memory_order_release);
  return Status::OK();
}

Offset Partition::WrittenEnd() const {
  return Offset(state_->written_end_atomic.load(std::memory_order_acquire));
}

int64_t Partition::SizeBytes() const { return state_->size_bytes.load(std::memory_order_relaxed); }

Result<Offset> Partition::Append(const RecordBatchBuilder& batch, Durability durability,
                                 std::string_view owner) {
  State& st = *state_;
  const LogOptions& options = st.store->options();
  // Back-pressure: producers faster than the disk wait rather than grow memory without bound.
  const size_t max_pending = std::max<size_t>(16 << 20, 4 * options.group_commit_bytes);
  DurableWaiter waiter;
  int64_t base;
  bool is_transactional, write_now, wake, urgent;
  {
    std::unique_lock lk(st.append_mu);
    is_transactional = !st.owner.empty();
    if (is_transactional) {
      WEIR_RETURN_IF_ERROR(st.CheckOwner(owner, "append"));
    } else {
      // A failed write empties the pending buffer, so a failure also ends this wait.
      while (st.pending_bytes >= max_pending && !st.deleted) {
        lk.unlock();
        st.store->WakeCommitter(/*urgent=*/true);
        lk.lock();
        st.durable_cv.wait(lk, [&] { return st.pending_bytes < max_pending || st.deleted; });
      }
    }
    if (st.deleted) return Status::NotFound(st.Where() + " was deleted");
    if (!st.failure.ok()) return st.ReportFailure();
    if (batch.empty()) return Offset(st.written_end);
    write_now = options.fsync == FsyncPolicy::kAlways ||
                (is_transactional && durability == Durability::kWaitDurable);
    const size_t before = st.pending_bytes;
    st.AddPending(batch.payload(), static_cast<int64_t>(batch.count()));
    base = st.written_end;
    st.written_end = base + static_cast<int64_t>(batch.count());
    st.written_end_atomic.store(st.written_end, std::memory_order_release);
    wake = before == 0;
    urgent = before <= options.group_commit_bytes && st.pending_bytes > options.group_commit_bytes;
    if (write_now || (durability == Durability::kWaitDurable && !is_transactional)) {
      waiter.end = st.written_end;
      st.waiters.push_back(&waiter);
    }
  }

  if (write_now) {
    {
      std::lock_guard io(st.io_mu);
      bool done;
      {
        std::lock_guard lk(st.append_mu);
        done = waiter.done;  // another writer may have taken our records along, or lost them
      }
      // Resolves the waiter either way; its status is what matters, not this one.
      if (!done) {
        (void)st.WritePendingLocked(options.fsync != FsyncPolicy::kNever,
                                    is_transactional ? kKeepVisible : kNoLimit);
      }
    }
    std::lock_guard lk(st.append_mu);
    if (!waiter.done) {
      std::erase(st.waiters, &waiter);
      return Status::Internal(st.Where() + ": records at offset " + std::to_string(base) +
                              " were neither written nor discarded");
    }
    if (!waiter.status.ok()) return waiter.status;
    return Offset(base);
  }
  if (is_transactional) {
    // The owner's Flush writes it; past group_commit_bytes the committer writes ahead.
    if (urgent) st.store->WakeCommitter(/*urgent=*/true);
    return Offset(base);
  }

  if (durability != Durability::kNoWait) urgent = true;
  if (wake || urgent) st.store->WakeCommitter(urgent);
  if (durability == Durability::kWaitDurable) {
    std::unique_lock lk(st.append_mu);
    st.durable_cv.wait(lk, [&] { return waiter.done; });
    if (!waiter.status.ok()) return waiter.status;
  }
  return Offset(base);
}

Status Partition::WaitDurable(Offset end_offset, std::chrono::milliseconds timeout) {
  State& st = *state_;
  const int64_t end = end_offset.value();
  std::unique_lock lk(st.append_mu);
  const bool is_transactional = !st.owner.empty();
  auto done = [&] {
    return DurableEnd().value() >= end && (is_transactional || NextOffset().value() >= end);
  };
  if (done()) return Status::OK();
  if (st.deleted) return Status::NotFound(st.Where() + " was deleted");
  // Nothing beyond the durable end of a failed partition will ever become durable.
  if (!st.failure.ok()) return st.ReportFailure();
  if (end > st.written_end) {
    return Status::InvalidArgument(st.Where() + ": cannot wait for offset " + std::to_string(end) +
                                   ", beyond the written end " + std::to_string(st.written_end));
  }
  DurableWaiter waiter;
  waiter.end = end;
  st.waiters.push_back(&waiter);
  if (!is_transactional) {
    lk.unlock();
    st.store->WakeCommitter(/*urgent=*/true);
    lk.lock();
  }
  if (!st.durable_cv.wait_for(lk, timeout, [&] { return waiter.done; })) {
    std::erase(st.waiters, &waiter);
    return Status::Unavailable(st.Where() + ": offset " + std::to_string(end) +
                               " not durable after " + std::to_string(timeout.count()) +
                               " ms (durable end " + std::to_string(DurableEnd().value()) + ")");
  }
  return waiter.status;
}

Result<Offset> Partition::Flush(std::string_view owner) {
  State& st = *state_;
  std::lock_guard io(st.io_mu);
  {
    std::lock_guard lk(st.append_mu);
    if (st.deleted) return Status::NotFound(st.Where() + " was deleted");
    WEIR_RETURN_IF_ERROR(st.CheckOwner(owner, "Flush"));
    if (!st.failure.ok()) return st.ReportFailure();
  }
  WEIR_RETURN_IF_ERROR(st.ToCaller(
      st.WritePendingLocked(st.store->options().fsync != FsyncPolicy::kNever, kKeepVisible)));
  return DurableEnd();
}

Status Partition::Publish(Offset end_offset, std::string_view owner) {
  State& st = *state_;
  const int64_t end = end_offset.value();
  std::lock_guard io(st.io_mu);
  {
    std::lock_guard lk(st.append_mu);
    if (st.deleted) return Status::NotFound(st.Where() + " was deleted");
    WEIR_RETURN_IF_ERROR(st.CheckOwner(owner, "Publish"));
    if (!st.failure.ok()) return st.ReportFailure();
  }
  const int64_t visible = NextOffset().value();
  if (end > DurableEnd().value()) {
    return Status::InvalidArgument(st.Where() + ": cannot publish up to offset " +
                                   std::to_string(end) + ", beyond the durable end " +
                                   std::to_string(DurableEnd().value()) + " (Flush first)");
  }
  if (end < visible) {
    return Status::InvalidArgument(st.Where() + ": cannot publish up to offset " +
                                   std::to_string(end) + ", below the visible end " +
                                   std::to_string(visible) + " (use TruncateTo)");
  }
  if (end == visible) return Status::OK();
  WEIR_RETURN_IF_ERROR(st.WriteCommittedFile(end));
  visible_end_.store(end, std::memory_order_release);
  st.store->NotifyChange();
  return Status::OK();
}

Status Partition::TruncateTo(Offset end_offset, std::string_view owner) {
  State& st = *state_;
  const int64_t end = end_offset.value();
  std::lock_guard io(st.io_mu);
  {
    std::lock_guard lk(st.append_mu);
    if (st.deleted) return Status::NotFound(st.Where() + " was deleted");
    WEIR_RETURN_IF_ERROR(st.CheckOwner(owner, "TruncateTo"));
    if (!st.failure.ok()) return st.ReportFailure();
    const int64_t first = FirstOffset().value();
    if (end < first || end > st.written_end) {
      return Status::InvalidArgument(
          st.Where() + ": cannot truncate to offset " + std::to_string(end) +
          ": it must be between the first offset " + std::to_string(first) +
          " and the written end " + std::to_string(st.written_end));
    }
    if (end >= st.written_end - st.pending_count) {  // only unflushed records go
      st.TruncatePending(end);
      return Status::OK();
    }
  }
  // Found before changing anything, so a refusal leaves all as it was.
  WEIR_ASSIGN_OR_RETURN(const State::TruncationCut cut, st.FindTruncationCut(end));
  const bool visible_moved = st.MoveEndsBackTo(end);
  WEIR_RETURN_IF_ERROR(st.CutFilesAt(cut, end));
  if (visible_moved) {
    WEIR_RETURN_IF_ERROR(st.WriteCommittedFile(end));
    st.store->NotifyChange();
  }
  return Status::OK();
}

Status Partition::State::RemovedByTruncation(int64_t from) const {
  return Status::Aborted(Where() + ": records from offset " + std::to_string(from) +
                         " on were removed by TruncateTo");
}

void Partition::State::TruncatePending(int64_t end) {
  KeepPending(end - (written_end - pending_count));
  written_end = end;
  written_end_atomic.store(end, std::memory_order_release);
  FailWaitersAbove(end, RemovedByTruncation(end));
  durable_cv.notify_all();
}

Result<Partition::State::TruncationCut> Partition::State::FindTruncationCut(int64_t end) {
  TruncationCut cut;
  int64_t start;
  {
    std::lock_guard lk(index_mu);
    cut.keep = segments.size();
    while (cut.keep > 1 && segments[cut.keep - 1]->base_offset() > end) --cut.keep;
    cut.segment = segments[cut.keep - 1];
    start = cut.segment->IndexLookup(end);
  }
  WEIR_ASSIGN_OR_RETURN(cut.position, cut.segment->FindBatchStart(end, start));
  return cut;
}

bool Partition::State::MoveEndsBackTo(int64_t end) {
  truncations.fetch_add(1, std::memory_order_acq_rel);
  bool visible_moved = false;
  {
    std::lock_guard lk(append_mu);
    ClearPending();
    written_end = end;
    written_end_atomic.store(end, std::memory_order_release);
    file_end = std::min(file_end, end);
    if (self->NextOffset().value() > end) {
      self->visible_end_.store(end, std::memory_order_release);
      visible_moved = true;
    }
    self->durable_end_.store(end, std::memory_order_release);
    FailWaitersAbove(end, RemovedByTruncation(end));
  }
  durable_cv.notify_all();
  return visible_moved;
}

Status Partition::State::CutFilesAt(const TruncationCut& cut, int64_t end) {
  std::vector<std::shared_ptr<Segment>> dropped;
  {
    std::lock_guard lk(index_mu);
    dropped.assign(segments.begin() + static_cast<ptrdiff_t>(cut.keep), segments.end());
    segments.resize(cut.keep);
  }
  // Newest first: a crash part-way leaves a log that is merely less truncated.
  for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
    if (::unlink((*it)->path().c_str()) != 0) return FileError(errno, "deleting", (*it)->path());
  }
  Segment& segment = *cut.segment;
  if (::ftruncate(segment.fd(), cut.position) != 0) {
    return FileError(errno, "truncating", segment.path());
  }
  WEIR_RETURN_IF_ERROR(SyncFile(segment.fd(), segment.path()));
  if (!dropped.empty()) WEIR_RETURN_IF_ERROR(SyncDirectory(dir));
  {
    std::lock_guard lk(index_mu);
    segment.TrimIndex(cut.position, end);
    segment.set_size(cut.position);
    int64_t total = 0;
    for (const auto& s : segments) total += s->size();
    size_bytes.store(total, std::memory_order_relaxed);
  }
  return Status::OK();
}

Result<int64_t> Partition::EnforceRetention(std::chrono::system_clock::time_point now) {
  State& st = *state_;
  const TopicConfig& config = st.config;
  if (config.retention_bytes < 0 && config.retention_age.count() < 0) return int64_t{0};
  std::lock_guard io(st.io_mu);
  if (st.deleted_atomic.load()) return int64_t{0};
  const int64_t cutoff_ms = NowMs(now) - config.retention_age.count();
  int64_t total = st.size_bytes.load(std::memory_order_relaxed);
  return st.DeleteOldestSegmentsLocked([&](const Segment& s) {
    // As Kafka: a segment goes when the newer ones alone hold retention_bytes.
    const bool by_bytes = config.retention_bytes >= 0 && total - s.size() >= config.retention_bytes;
    const bool by_age = config.retention_age.count() >= 0 && s.newest_append_ms() < cutoff_ms;
    if (!by_bytes && !by_age) return false;
    total -= s.size();
    return true;
  });
}

Result<int64_t> Partition::DeleteBefore(Offset offset, std::string_view owner) {
  State& st = *state_;
  std::lock_guard io(st.io_mu);
  {
    std::lock_guard lk(st.append_mu);
    if (st.deleted) return Status::NotFound(st.Where() + " was deleted");
    if (!st.owner.empty()) WEIR_RETURN_IF_ERROR(st.CheckOwner(owner, "DeleteBefore"));
  }
  // The visible end only moves under io_mu, so it holds while the segments go.
  const int64_t limit = std::min(offset.value(), NextOffset().value());
  return st.DeleteOldestSegmentsLocked([&](const Segment& s) { return s.end_offset() <= limit; });
}

// ---------------------------------------------------------------------------------------------
// Topic

Topic::Topic(std::string name, TopicConfig config, fs::path dir)
    : name_(std::move(name)), config_(config), dir_(std::move(dir)) {}

Partition& Topic::partition(PartitionId p) {
  WEIR_CHECK(p.value() >= 0 && p.value() < num_partitions(),
             "topic '" + name_ + "' has no partition " + std::to_string(p.value()));
  return *partitions_[static_cast<size_t>(p.value())];
}

std::string Topic::owner() const {
  std::lock_guard lk(mu_);
  return owner_;
}

bool Topic::archived() const {
  std::lock_guard lk(mu_);
  return archived_;
}

Status Topic::SetArchived(bool archived) {
  std::lock_guard lk(mu_);
  if (archived_ == archived) return Status::OK();
  // The floors first when turning on (nothing is evicted from here on), the file first when
  // turning off (a crash keeps the hold): never a moment where the file says archived and
  // retention runs without a floor.
  auto set_floors = [&](bool on) {
    for (auto& p : partitions_) {
      Partition::State& st = *p->state_;
      std::lock_guard io(st.io_mu);
      st.retention_floor.store(
          on ? st.first_offset.load(std::memory_order_acquire) : kNoRetentionFloor,
          std::memory_order_release);
    }
  };
  if (archived) set_floors(true);
  Status s = ReplaceFileAtomically(dir_ / kTopicFile, EncodeTopicJson(config_, owner_, archived));
  if (!s.ok()) {
    if (archived) set_floors(false);
    return s.WithContext("marking topic '" + name_ + "' archived");
  }
  if (!archived) set_floors(false);
  archived_ = archived;
  return Status::OK();
}

Status Topic::ClaimForTransactions(std::string_view owner) {
  if (owner.empty()) {
    return Status::InvalidArgument("topic '" + name_ +
                                   "': the transaction owner must not be empty");
  }
  std::lock_guard lk(mu_);
  if (owner_ == owner) return Status::OK();
  if (!owner_.empty()) {
    return Status::FailedPrecondition("topic '" + name_ + "' is owned by '" + owner_ + "'; '" +
                                      std::string(owner) + "' cannot claim it");
  }
  auto revert = [&](size_t claimed) {
    for (size_t i = 0; i < claimed; ++i) {
      Partition::State& st = *partitions_[i]->state_;
      std::lock_guard io(st.io_mu);
      std::lock_guard al(st.append_mu);
      st.owner.clear();
      st.transactional.store(false);
    }
  };
  for (size_t i = 0; i < partitions_.size(); ++i) {
    Partition::State& st = *partitions_[i]->state_;
    std::lock_guard io(st.io_mu);
    int64_t claim_end;
    {
      std::lock_guard al(st.append_mu);
      st.owner = std::string(owner);
      st.transactional.store(true);
      claim_end = st.written_end;
    }
    // What was appended before the claim was appended as plain records: it stays visible.
    Status s = st.WritePendingLocked(st.store->options().fsync != FsyncPolicy::kNever, claim_end);
    if (s.ok()) s = st.WriteCommittedFile(partitions_[i]->NextOffset().value());
    if (!s.ok()) {
      revert(i + 1);
      return st.ToCaller(std::move(s));
    }
  }
  // topic.json last: until it names the owner, a reopen sees a plain topic, whose committed
  // files are ignored.
  Status s = ReplaceFileAtomically(dir_ / kTopicFile,
                                   EncodeTopicJson(config_, std::string(owner), archived_));
  if (!s.ok()) {
    revert(partitions_.size());
    return s.WithContext("claiming topic '" + name_ + "'");
  }
  owner_ = std::string(owner);
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// LogStore

// The pool holds enough free chunks for a couple of big groups in flight; beyond that, memory
// goes back to the system.
LogStore::LogStore(LogOptions options)
    : options_(std::move(options)),
      chunk_pool_(std::make_unique<ChunkPool>(
          std::max<size_t>(32, 2 * options_.group_commit_bytes / kChunkBytes))) {}

Result<std::unique_ptr<LogStore>> LogStore::Open(LogOptions options) {
  if (options.dir.empty()) return Status::InvalidArgument("LogOptions.dir is empty");
  if (options.group_commit_interval.count() <= 0) {
    return Status::InvalidArgument("LogOptions.group_commit_interval must be positive");
  }
  if (options.retention_check_interval.count() <= 0) {
    return Status::InvalidArgument("LogOptions.retention_check_interval must be positive");
  }
  std::unique_ptr<LogStore> store(new LogStore(options));
  WEIR_ASSIGN_OR_RETURN(store->lock_,
                        DirectoryLock::Acquire(options.dir, {.what = "log directory"}));

  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(options.dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) continue;
    const std::string name = it->path().filename().string();
    if (HasSuffix(name, kCreatingSuffix) || HasSuffix(name, kDeletedSuffix)) {
      fs::remove_all(it->path(), ec);  // an interrupted create or delete
      if (ec) return FileError(ec.value(), "removing", it->path());
      continue;
    }
    if (CheckName(name, "topic name").ok() && fs::exists(it->path() / kTopicFile))
      names.push_back(name);
  }
  if (ec) return FileError(ec.value(), "listing log directory", options.dir);
  for (const std::string& name : names) {
    auto topic = store->LoadTopic(name);
    if (!topic.ok()) return topic.status().WithContext("opening log " + options.dir.string());
    store->Register(std::move(topic).value());
  }
  store->committer_ = std::thread([s = store.get()] { s->CommitterLoop(); });
  return store;
}

LogStore::~LogStore() {
  {
    std::lock_guard lk(commit_mu_);
    stop_ = true;
  }
  commit_cv_.notify_all();
  if (committer_.joinable()) committer_.join();
  // A failure some caller was already given is not repeated; one nobody heard of (a kNoWait
  // producer that never waited) is the last chance to say that records were lost.
  for (Partition* p : LivePartitions()) {
    Partition::State& st = *p->state_;
    bool told;
    {
      std::lock_guard lk(st.append_mu);
      told = st.failure_reported;
    }
    Status s = st.FlushPlain();
    if (!s.ok() && !told) {
      std::fprintf(stderr, "weir log: flush at close failed: %s\n", s.ToString().c_str());
    }
  }
}

Result<std::unique_ptr<Topic>> LogStore::LoadTopic(const std::string& name) {
  const fs::path dir = options_.dir / name;
  WEIR_ASSIGN_OR_RETURN(std::string json, ReadFile(dir / kTopicFile));
  TopicConfig config;
  std::string owner;
  bool archived = false;
  WEIR_RETURN_IF_ERROR(DecodeTopicJson(dir / kTopicFile, json, config, owner, archived));
  std::unique_ptr<Topic> topic(new Topic(name, config, dir));
  topic->owner_ = owner;
  topic->archived_ = archived;
  for (int32_t p = 0; p < config.partitions; ++p) {
    std::unique_ptr<Partition> partition(new Partition(name, PartitionId(p)));
    partition->state_ =
        std::make_unique<Partition::State>(partition.get(), this, dir / std::to_string(p), config);
    partition->state_->owner = owner;
    WEIR_RETURN_IF_ERROR(partition->state_->Open(!owner.empty()));
    if (archived) {
      // Nothing is evicted until the archive says how far it holds the records.
      partition->state_->retention_floor.store(partition->FirstOffset().value());
    }
    topic->partitions_.push_back(std::move(partition));
  }
  return topic;
}

Topic* LogStore::Register(std::unique_ptr<Topic> topic) {
  Topic* raw = topic.get();
  {
    std::lock_guard lk(live_mu_);
    for (auto& p : raw->partitions_) live_.push_back(p.get());
  }
  topics_.emplace(raw->name(), std::move(topic));
  return raw;
}

Result<Topic*> LogStore::CreateTopicLocked(const std::string& name, const TopicConfig& config) {
  WEIR_RETURN_IF_ERROR(config.Validate().WithContext("topic '" + name + "'"));
  // Built under a temporary name and renamed into place, so a crash never leaves half a topic.
  const fs::path tmp = options_.dir / (name + std::string(kCreatingSuffix));
  const fs::path dir = options_.dir / name;
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return FileError(ec.value(), "creating directory", tmp);
  Status s;
  for (int32_t p = 0; p < config.partitions && s.ok(); ++p) {
    s = Partition::State::Materialize(tmp / std::to_string(p));
  }
  if (s.ok()) {
    s = ReplaceFileAtomically(tmp / kTopicFile,
                              EncodeTopicJson(config, "", archive_when_created_.contains(name)));
  }
  if (s.ok() && ::rename(tmp.c_str(), dir.c_str()) != 0) s = FileError(errno, "renaming", tmp);
  if (s.ok()) s = SyncDirectory(options_.dir);
  if (!s.ok()) {
    fs::remove_all(tmp, ec);
    return s.WithContext("creating topic '" + name + "'");
  }
  WEIR_ASSIGN_OR_RETURN(auto topic, LoadTopic(name));
  return Register(std::move(topic));
}

Result<Topic*> LogStore::CreateTopic(const std::string& name, const TopicConfig& config) {
  WEIR_RETURN_IF_ERROR(CheckName(name, "topic name"));
  std::lock_guard lk(mu_);
  if (topics_.count(name) > 0) return Status::AlreadyExists("topic '" + name + "' already exists");
  return CreateTopicLocked(name, config);
}

Result<Topic*> LogStore::GetOrCreateTopic(const std::string& name, const TopicConfig& config) {
  WEIR_RETURN_IF_ERROR(CheckName(name, "topic name"));
  std::lock_guard lk(mu_);
  auto it = topics_.find(name);
  if (it != topics_.end()) return it->second.get();
  return CreateTopicLocked(name, config);
}

void LogStore::ArchiveWhenCreated(const std::string& name) {
  std::lock_guard lk(mu_);
  archive_when_created_.insert(name);
}

Result<Topic*> LogStore::GetTopic(const std::string& name) {
  std::lock_guard lk(mu_);
  auto it = topics_.find(name);
  if (it != topics_.end()) return it->second.get();
  std::string known;
  for (const auto& [n, t] : topics_) known += (known.empty() ? "" : ", ") + n;
  return Status::NotFound("unknown topic '" + name + "'; " +
                          (known.empty() ? "no topics exist" : "known topics: " + known));
}

std::vector<std::string> LogStore::ListTopics() const {
  std::lock_guard lk(mu_);
  std::vector<std::string> names;
  for (const auto& [name, topic] : topics_) names.push_back(name);
  return names;
}

Status LogStore::DeleteTopic(const std::string& name) {
  std::lock_guard lk(mu_);
  auto it = topics_.find(name);
  if (it == topics_.end()) return Status::NotFound("unknown topic '" + name + "'");
  Topic* topic = it->second.get();
  // Renamed out of the way first: after a crash the topic is either whole or gone.
  const fs::path tomb = options_.dir / (name + std::string(kDeletedSuffix));
  std::error_code ec;
  fs::remove_all(tomb, ec);
  if (::rename((options_.dir / name).c_str(), tomb.c_str()) != 0) {
    return FileError(errno, "renaming", options_.dir / name);
  }
  WEIR_RETURN_IF_ERROR(SyncDirectory(options_.dir));
  for (auto& p : topic->partitions_) {
    Partition::State& st = *p->state_;
    std::lock_guard io(st.io_mu);
    {
      std::lock_guard al(st.append_mu);
      st.deleted = true;
      st.deleted_atomic.store(true);
      st.ClearPending();
      st.FailWaitersAbove(-1, Status::NotFound(st.Where() + " was deleted"));
    }
    st.durable_cv.notify_all();
    std::lock_guard il(st.index_mu);
    st.segments.clear();  // closes the files once no reader holds them
  }
  {
    std::lock_guard ll(live_mu_);
    std::erase_if(live_, [&](Partition* p) { return p->topic_name() == name; });
  }
  // Callers may still hold the Topic* and Partition&: keep the objects until the store closes.
  retired_.push_back(std::move(it->second));
  topics_.erase(it);
  fs::remove_all(tomb, ec);  // a leftover is removed by the next Open
  NotifyChange();
  return Status::OK();
}

std::vector<Partition*> LogStore::LivePartitions() {
  std::lock_guard lk(live_mu_);
  return live_;
}

Status LogStore::FlushAll() {
  Status first_error;
  int failed = 0;
  for (Partition* p : LivePartitions()) {
    Status s = p->state_->ToCaller(p->state_->FlushPlain());
    if (s.ok()) continue;
    if (first_error.ok()) first_error = std::move(s);
    ++failed;
  }
  if (failed > 1) {
    std::string message =
        first_error.message() + " (and " + std::to_string(failed - 1) + " more partitions failed)";
    first_error = Status(first_error.code(), std::move(message));
  }
  return first_error;
}

void LogStore::WakeCommitter(bool urgent) {
  {
    std::lock_guard lk(commit_mu_);
    commit_work_ = true;
    commit_urgent_ = commit_urgent_ || urgent;
  }
  commit_cv_.notify_one();
}

void LogStore::CommitterLoop() {
  using Clock = std::chrono::steady_clock;
  auto next_retention = Clock::now() + options_.retention_check_interval;
  std::unique_lock lk(commit_mu_);
  while (!stop_) {
    if (!commit_urgent_) {
      if (commit_work_) {
        // A group: whatever arrives within the interval shares one write and one fsync.
        commit_cv_.wait_for(lk, options_.group_commit_interval,
                            [&] { return commit_urgent_ || stop_.load(); });
      } else {
        commit_cv_.wait_until(lk, next_retention,
                              [&] { return commit_work_ || commit_urgent_ || stop_.load(); });
      }
    }
    if (stop_) break;  // the destructor flushes what is left
    commit_work_ = false;
    commit_urgent_ = false;
    lk.unlock();
    for (Partition* p : LivePartitions()) {
      Partition::State& st = *p->state_;
      if (st.transactional.load(std::memory_order_relaxed) &&
          !st.failed.load(std::memory_order_acquire)) {
        // Unless its owner is writing (a Flush, TruncateTo): then there is nothing to do.
        std::unique_lock io(st.io_mu, std::try_to_lock);
        if (io.owns_lock()) (void)st.WriteAheadLocked();  // a failure stays in the partition
        continue;
      }
      if (st.transactional.load(std::memory_order_relaxed) ||
          st.failed.load(std::memory_order_acquire) ||
          st.written_end_atomic.load(std::memory_order_acquire) <= p->DurableEnd().value()) {
        continue;
      }
      // A failure is delivered to the waiters and kept in the partition for every later call.
      (void)st.FlushPlain();
    }
    if (Clock::now() >= next_retention) {
      const auto now = std::chrono::system_clock::now();
      for (Partition* p : LivePartitions()) (void)p->EnforceRetention(now);
      next_retention = Clock::now() + options_.retention_check_interval;
    }
    lk.lock();
  }
}

void LogStore::NotifyChange() {
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  { std::lock_guard lk(change_mu_); }
  change_cv_.notify_all();
}

void LogStore::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lk(change_mu_);
  change_cv_.wait_for(lk, timeout, [&] { return epoch_.load(std::memory_order_acquire) != seen; });
}

}  // namespace weir::log
