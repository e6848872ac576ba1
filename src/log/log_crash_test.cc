// Durability under kill -9 and under a full disk, checked against what the writer was told.
// The tests fork (all but the tmpfs one): the child writes and reports every acknowledged
// append through a pipe, the parent kills it (or lets it run into the limit), reopens the log
// and compares.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "log/log.h"
#include "log/log_test_util.h"

namespace weir::log {
namespace {

namespace fs = std::filesystem;
using testing::Options;
using testing::TempDir;
using testing::ValueFor;

// One acknowledged append as the child reports it: records [offset, offset + count) carry the
// values ValueFor(Tag(writer, seq, k)). 24 bytes, under PIPE_BUF, so each write is atomic.
struct Ack {
  int64_t offset;
  int32_t count;
  int32_t writer;
  int64_t seq;
};

std::string Tag(int32_t writer, int64_t seq, int k) {
  return std::to_string(writer) + "/" + std::to_string(seq) + "/" + std::to_string(k);
}

RecordBatchBuilder BatchFor(int32_t writer, int64_t seq, int count) {
  RecordBatchBuilder b;
  for (int k = 0; k < count; ++k) {
    const std::string tag = Tag(writer, seq, k);
    b.AddRaw(EventTime(seq), KeySerde::kString, tag, ValueFor(tag));
  }
  return b;
}

void WriteAck(int fd, const Ack& ack) {
  while (::write(fd, &ack, sizeof(ack)) < 0 && errno == EINTR) {
  }
}

// Reads acks until the writer closes the pipe, or until `limit` acks have arrived.
std::vector<Ack> ReadAcks(int fd, size_t limit = SIZE_MAX) {
  std::vector<Ack> acks;
  Ack ack;
  size_t have = 0;
  while (acks.size() < limit) {
    const ssize_t n = ::read(fd, reinterpret_cast<char*>(&ack) + have, sizeof(ack) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    if (have == sizeof(ack)) {
      acks.push_back(ack);
      have = 0;
    }
  }
  return acks;
}

// Every acknowledged record at or after the first retained offset is in the log, byte for byte,
// and the whole log reads back without error.
void ExpectAcknowledgedRecordsPresent(const fs::path& dir, const std::vector<Ack>& acks) {
  auto store = LogStore::Open(Options(dir));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto topic = (*store)->GetTopic("t");
  ASSERT_TRUE(topic.ok());
  Partition& p = (*topic)->partition(PartitionId(0));
  const int64_t first = p.FirstOffset().value();
  std::vector<std::string> values;
  PartitionReader reader(p, Offset(first));
  for (;;) {
    auto batch = reader.Next();
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    if (batch->empty()) break;
    for (const StoredRecord& r : *batch) {
      ASSERT_EQ(r.offset.value(), first + static_cast<int64_t>(values.size()));
      values.emplace_back(r.value);
    }
  }
  EXPECT_EQ(p.NextOffset().value(), first + static_cast<int64_t>(values.size()));
  for (const Ack& ack : acks) {
    for (int k = 0; k < ack.count; ++k) {
      const int64_t offset = ack.offset + k;
      if (offset < first) continue;
      ASSERT_LT(offset - first, static_cast<int64_t>(values.size()))
          << "acknowledged offset " << offset << " is missing";
      ASSERT_EQ(values[static_cast<size_t>(offset - first)], ValueFor(Tag(ack.writer, ack.seq, k)))
          << "at offset " << offset;
    }
  }
}

void CreateTopic(const fs::path& dir, TopicConfig config = {}) {
  auto store = LogStore::Open(Options(dir));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->CreateTopic("t", config).ok());
}

// The child of the crash test: three writers append until killed. Writer 0 waits on each
// append; writer 1 sends ten without waiting, then waits for the last; writer 2 uses
// kWaitDurable with bigger batches.
[[noreturn]] void AppendUntilKilled(const fs::path& dir, int ack_fd, int32_t round) {
  auto store = LogStore::Open(Options(dir));
  if (!store.ok()) ::_exit(2);
  auto topic = (*store)->GetTopic("t");
  if (!topic.ok()) ::_exit(3);
  Partition& p = (*topic)->partition(PartitionId(0));
  std::vector<std::thread> writers;
  for (int32_t w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      const int32_t writer = round * 10 + w;
      for (int64_t seq = 0;; ++seq) {
        if (w == 1) {
          std::vector<Ack> sent;
          for (int i = 0; i < 10; ++i, ++seq) {
            auto offset = p.Append(BatchFor(writer, seq, 2), Durability::kNoWait);
            if (!offset.ok()) ::_exit(4);
            sent.push_back({offset->value(), 2, writer, seq});
          }
          if (!p.WaitDurable(Offset(sent.back().offset + 2)).ok()) ::_exit(5);
          for (const Ack& ack : sent) WriteAck(ack_fd, ack);
        } else {
          const int count = w == 0 ? 1 : 50;
          auto offset = p.Append(BatchFor(writer, seq, count), Durability::kWaitDurable);
          if (!offset.ok()) ::_exit(6);
          WriteAck(ack_fd, {offset->value(), count, writer, seq});
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  ::_exit(0);
}

TEST(CrashDurability, EveryAcknowledgedRecordSurvivesSigkill) {
  TempDir dir;
  TopicConfig config;
  config.segment_bytes = 256 << 10;  // rolls happen during the run
  CreateTopic(dir.path(), config);
  std::mt19937 rng(std::random_device{}());
  std::vector<Ack> acks;
  for (int32_t round = 0; round < 6; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      AppendUntilKilled(dir.path(), fds[1], round);
    }
    ::close(fds[1]);
    // The kill comes at a random moment after the writers have started acknowledging, however
    // long the child takes to open the log (it hops every segment header first).
    const std::vector<Ack> first = ReadAcks(fds[0], 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    ::kill(pid, SIGKILL);
    int wstatus = 0;
    ::waitpid(pid, &wstatus, 0);
    ASSERT_TRUE(WIFSIGNALED(wstatus))
        << "the writer stopped by itself, exit code " << WEXITSTATUS(wstatus);
    ASSERT_EQ(first.size(), 1u) << "round " << round << " acknowledged nothing";
    acks.push_back(first[0]);
    for (const Ack& ack : ReadAcks(fds[0])) acks.push_back(ack);
    ::close(fds[0]);
    ExpectAcknowledgedRecordsPresent(dir.path(), acks);
    if (HasFatalFailure()) return;
  }
}

constexpr int kBatchRecords = 20;

// Appends batches with kWaitDurable until one fails; returns the failure and records the acks.
Status FillUntilFailure(Partition& p, int32_t writer, std::vector<Ack>& acks) {
  for (int64_t seq = 0; seq < 1000000; ++seq) {
    auto offset = p.Append(BatchFor(writer, seq, kBatchRecords), Durability::kWaitDurable);
    if (!offset.ok()) return offset.status();
    acks.push_back({offset->value(), kBatchRecords, writer, seq});
  }
  return Status::Internal("the disk never filled up");
}

int64_t AckedEnd(const std::vector<Ack>& acks) {
  int64_t end = 0;
  for (const Ack& ack : acks) end = std::max(end, ack.offset + ack.count);
  return end;
}

bool SameStatus(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}

// Empty if plain partition `p`, failed with `failure` when `durable_end` was durable, answers
// as a failed partition must: every write and every WaitDurable beyond the durable end returns
// the failure (FlushAll too), WaitDurable up to it is OK, no offset is handed out, and readers
// see exactly the durable records. Otherwise, the first call that answered wrong.
std::string StickyFailureMismatch(LogStore& store, Partition& p, const Status& failure,
                                  int64_t durable_end) {
  auto wrong = [&](const std::string& call, const Status& s) {
    return call + " returned '" + s.ToString() + "', expected '" + failure.ToString() + "'";
  };
  const int64_t written = p.WrittenEnd().value();
  if (p.DurableEnd().value() != durable_end || p.NextOffset().value() != durable_end) {
    return "durable end " + std::to_string(p.DurableEnd().value()) + " and visible end " +
           std::to_string(p.NextOffset().value()) + ", expected " + std::to_string(durable_end);
  }
  if (written <= durable_end) {
    return "written end " + std::to_string(written) + " is not beyond the durable end";
  }
  Status s = p.Append(BatchFor(99, 0, 1), Durability::kNoWait).status();
  if (!SameStatus(s, failure)) return wrong("Append(kNoWait)", s);
  s = p.Append(BatchFor(99, 1, 1), Durability::kWaitDurable).status();
  if (!SameStatus(s, failure)) return wrong("Append(kWaitDurable)", s);
  s = p.WaitDurable(Offset(written));
  if (!SameStatus(s, failure)) return wrong("WaitDurable(written end)", s);
  s = p.WaitDurable(Offset(durable_end + 1));
  if (!SameStatus(s, failure)) return wrong("WaitDurable(durable end + 1)", s);
  s = store.FlushAll();
  if (!SameStatus(s, failure)) return wrong("FlushAll", s);
  s = p.WaitDurable(Offset(durable_end));
  if (!s.ok()) return "WaitDurable(durable end) returned '" + s.ToString() + "'";
  if (p.WrittenEnd().value() != written) {
    return "the written end moved from " + std::to_string(written) + " to " +
           std::to_string(p.WrittenEnd().value());
  }
  int64_t next = p.FirstOffset().value();
  PartitionReader reader(p, Offset(next));
  for (;;) {
    auto batch = reader.Next();
    if (!batch.ok()) return "reading: " + batch.status().ToString();
    if (batch->empty()) break;
    for (const StoredRecord& r : *batch) {
      if (r.offset.value() != next++) return "read offset " + std::to_string(r.offset.value());
    }
  }
  if (next != durable_end) return "readers see up to offset " + std::to_string(next);
  return "";
}

// A check inside a forked child (gtest assertions there would not reach the parent): says on
// stderr what went wrong and exits 1, which the parent reports.
void ChildCheck(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "check in the child failed: %s\n", what.c_str());
  std::fflush(stderr);
  ::_exit(1);
}

// Runs `body` in a forked child on the log at `options.dir`, whose files may not grow past
// 100 KiB (RLIMIT_FSIZE: a write past it fails with EFBIG, which the log reports as
// kResourceExhausted "file size limit"). `body` sends the appends it saw acknowledged to
// `ack_fd`; returns them once the child has exited 0 (every ChildCheck held).
std::vector<Ack> RunAtFileSizeLimit(const LogOptions& options,
                                    const std::function<void(LogStore&, int ack_fd)>& body) {
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // fail the write with EFBIG instead of killing the process
    auto store = LogStore::Open(options);
    ChildCheck(store.ok(), "opening the log: " + store.status().ToString());
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = 100 << 10;
    ChildCheck(::setrlimit(RLIMIT_FSIZE, &limit) == 0, "setrlimit(RLIMIT_FSIZE)");
    body(**store, fds[1]);
    store->reset();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<Ack> acks = pid > 0 ? ReadAcks(fds[0]) : std::vector<Ack>{};
  ::close(fds[0]);
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return {};
  }
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
      << "the child failed a check (its stderr above says which)";
  return acks;
}

// After a reopen, the partition that had failed takes appends again, with dense offsets from
// its durable end, which holds exactly the acknowledged records.
void ExpectReopenResumesAt(const fs::path& dir, int64_t durable_end) {
  auto store = LogStore::Open(Options(dir));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Partition& p = (*(*store)->GetTopic("t"))->partition(PartitionId(0));
  EXPECT_EQ(p.NextOffset().value(), durable_end);
  EXPECT_EQ(p.WrittenEnd().value(), durable_end);
  for (int64_t i = 0; i < 2; ++i) {
    auto offset = p.Append(BatchFor(7, i, 1), Durability::kWaitDurable);
    ASSERT_TRUE(offset.ok()) << offset.status().ToString();
    EXPECT_EQ(offset->value(), durable_end + i);
  }
}

// A real full file system: a 1 MiB tmpfs.
void RunOnFullTmpfs(const fs::path& mnt) {
  const fs::path dir = mnt / "log";
  TopicConfig config;
  config.segment_bytes = 64 << 10;
  config.retention_bytes = 128 << 10;
  std::vector<Ack> acks;
  {
    LogOptions options = Options(dir);
    options.retention_check_interval = std::chrono::hours(1);  // the test enforces it itself
    auto store = LogStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto topic = (*store)->CreateTopic("t", config);
    ASSERT_TRUE(topic.ok());
    Partition& p = (*topic)->partition(PartitionId(0));
    Status full = FillUntilFailure(p, 0, acks);
    EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
    EXPECT_NE(full.message().find("disk full"), std::string::npos) << full.ToString();
    EXPECT_NE(full.message().find("topic 't' partition 0"), std::string::npos) << full.ToString();
    EXPECT_GT(acks.size(), 10u);
    const int64_t acked_end = AckedEnd(acks);
    // The failed append's offsets stay taken.
    EXPECT_EQ(p.WrittenEnd().value(), acked_end + kBatchRecords);
    EXPECT_EQ(StickyFailureMismatch(**store, p, full, acked_end), "");
    // Freeing space does not clear the failure; only a reopen does.
    auto removed = p.EnforceRetention(std::chrono::system_clock::now());
    ASSERT_TRUE(removed.ok()) << removed.status().ToString();
    EXPECT_GT(*removed, 0);
    EXPECT_EQ(StickyFailureMismatch(**store, p, full, acked_end), "");
  }
  ExpectAcknowledgedRecordsPresent(dir, acks);
  if (::testing::Test::HasFatalFailure()) return;
  ExpectReopenResumesAt(dir, AckedEnd(acks));
}

TEST(DiskFull, FullDiskFailsThePartitionUntilReopenedAndKeepsEveryAcknowledgedRecord) {
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "); the file size limit tests fail writes the same way";
  }
  RunOnFullTmpfs(mnt);
  ::umount2(mnt.c_str(), MNT_DETACH);
}

TEST(DiskFull, FileSizeLimitFailsThePartitionUntilReopenedAndKeepsEveryAcknowledgedRecord) {
  TempDir dir;
  const fs::path log_dir = dir.path() / "log";
  TopicConfig config;
  config.segment_bytes = 1 << 20;  // bigger than the limit: the segment file hits it
  CreateTopic(log_dir, config);
  if (HasFatalFailure()) return;
  std::vector<Ack> acks = RunAtFileSizeLimit(Options(log_dir), [](LogStore& store, int ack_fd) {
    Partition& p = (*store.GetTopic("t"))->partition(PartitionId(0));
    std::vector<Ack> acks;
    Status full = FillUntilFailure(p, 0, acks);
    for (const Ack& ack : acks) WriteAck(ack_fd, ack);
    ChildCheck(full.code() == StatusCode::kResourceExhausted &&
                   full.message().find("file size limit") != std::string::npos &&
                   full.message().find("topic 't' partition 0") != std::string::npos,
               "unexpected failure: " + full.ToString());
    const int64_t acked_end = AckedEnd(acks);
    ChildCheck(p.WrittenEnd().value() == acked_end + kBatchRecords,
               "written end " + std::to_string(p.WrittenEnd().value()) + ", acknowledged end " +
                   std::to_string(acked_end));
    const std::string mismatch = StickyFailureMismatch(store, p, full, acked_end);
    ChildCheck(mismatch.empty(), mismatch);
  });
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(acks.size(), 10u);
  ExpectAcknowledgedRecordsPresent(log_dir, acks);
  EXPECT_LE(fs::file_size(log_dir / "t" / "0" / "00000000000000000000.log"), 100u << 10);
  ExpectReopenResumesAt(log_dir, AckedEnd(acks));
}

TEST(DiskFull, NoWaitProducerGetsTheFailureAndItsOffsetsAreNeverHandedOutAgain) {
  TempDir dir;
  const fs::path log_dir = dir.path() / "log";
  TopicConfig config;
  config.segment_bytes = 1 << 20;
  CreateTopic(log_dir, config);
  if (HasFatalFailure()) return;
  std::vector<Ack> acks = RunAtFileSizeLimit(Options(log_dir), [](LogStore& store, int ack_fd) {
    Partition& p = (*store.GetTopic("t"))->partition(PartitionId(0));
    // Appends without waiting, and every 8 appends waits for the last: what WaitDurable
    // confirms is acknowledged. The loop ends at the first call that reports the failure.
    std::vector<Ack> unconfirmed;
    int64_t end = 0;
    Status failure;
    for (int64_t seq = 0; failure.ok(); ++seq) {
      ChildCheck(seq < 1000000, "the file size limit never failed a write");
      auto offset = p.Append(BatchFor(0, seq, kBatchRecords), Durability::kNoWait);
      if (!offset.ok()) {
        failure = offset.status();
        break;
      }
      ChildCheck(offset->value() == end, "Append handed out offset " +
                                             std::to_string(offset->value()) + " where " +
                                             std::to_string(end) + " was next");
      unconfirmed.push_back({offset->value(), kBatchRecords, 0, seq});
      end += kBatchRecords;
      if (unconfirmed.size() == 8) {
        failure = p.WaitDurable(Offset(end));
        if (!failure.ok()) break;
        for (const Ack& ack : unconfirmed) WriteAck(ack_fd, ack);
        unconfirmed.clear();
      }
    }
    ChildCheck(failure.code() == StatusCode::kResourceExhausted &&
                   failure.message().find("file size limit") != std::string::npos &&
                   failure.message().find("topic 't' partition 0") != std::string::npos,
               "unexpected failure: " + failure.ToString());
    const int64_t durable = p.DurableEnd().value();
    ChildCheck(durable < end, "nothing the producer appended was lost");
    ChildCheck(p.WrittenEnd().value() == end, "the written end moved from " + std::to_string(end) +
                                                  " to " + std::to_string(p.WrittenEnd().value()));
    // The next Append, WaitDurable for the lost records and FlushAll all report it, and no
    // Append hands out an offset again.
    const std::string mismatch = StickyFailureMismatch(store, p, failure, durable);
    ChildCheck(mismatch.empty(), mismatch);
    // WaitDurable(durable end) was OK: the records below it are acknowledged.
    for (const Ack& ack : unconfirmed) {
      if (ack.offset + ack.count <= durable) WriteAck(ack_fd, ack);
    }
  });
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(acks.size(), 8u);
  ExpectAcknowledgedRecordsPresent(log_dir, acks);
  ExpectReopenResumesAt(log_dir, AckedEnd(acks));
}

TEST(DiskFull, FsyncAlwaysAppendReturnsTheFailureAndSoDoesEveryLaterCall) {
  TempDir dir;
  const fs::path log_dir = dir.path() / "log";
  TopicConfig config;
  config.segment_bytes = 1 << 20;
  CreateTopic(log_dir, config);
  if (HasFatalFailure()) return;
  LogOptions options = Options(log_dir);
  options.fsync = FsyncPolicy::kAlways;
  std::vector<Ack> acks = RunAtFileSizeLimit(options, [](LogStore& store, int ack_fd) {
    Partition& p = (*store.GetTopic("t"))->partition(PartitionId(0));
    Status failure;
    int64_t end = 0;
    for (int64_t seq = 0; failure.ok(); ++seq) {
      ChildCheck(seq < 1000000, "the file size limit never failed a write");
      // kAlways: durable when Append returns, whatever the Durability asked for.
      auto offset = p.Append(BatchFor(0, seq, kBatchRecords), Durability::kNoWait);
      if (!offset.ok()) {
        failure = offset.status();
        break;
      }
      ChildCheck(offset->value() == end, "offset " + std::to_string(offset->value()));
      WriteAck(ack_fd, {offset->value(), kBatchRecords, 0, seq});
      end += kBatchRecords;
    }
    ChildCheck(failure.code() == StatusCode::kResourceExhausted &&
                   failure.message().find("topic 't' partition 0") != std::string::npos,
               "unexpected failure: " + failure.ToString());
    ChildCheck(p.WrittenEnd().value() == end + kBatchRecords,
               "written end " + std::to_string(p.WrittenEnd().value()));
    const std::string mismatch = StickyFailureMismatch(store, p, failure, end);
    ChildCheck(mismatch.empty(), mismatch);
  });
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(acks.size(), 10u);
  ExpectAcknowledgedRecordsPresent(log_dir, acks);
  ExpectReopenResumesAt(log_dir, AckedEnd(acks));
}

TEST(DiskFull, FailedFlushFailsTheTransactionalPartitionUntilReopened) {
  TempDir dir;
  const fs::path log_dir = dir.path() / "log";
  TopicConfig config;
  config.segment_bytes = 1 << 20;
  CreateTopic(log_dir, config);
  if (HasFatalFailure()) return;
  {
    auto store = LogStore::Open(Options(log_dir));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*(*store)->GetTopic("t"))->ClaimForTransactions("app").ok());
  }
  std::vector<Ack> acks = RunAtFileSizeLimit(Options(log_dir), [](LogStore& store, int ack_fd) {
    Partition& p = (*store.GetTopic("t"))->partition(PartitionId(0));
    // A checkpoint per append: Flush, then Publish; what is published is acknowledged.
    Status failure;
    for (int64_t seq = 0; failure.ok(); ++seq) {
      ChildCheck(seq < 1000000, "the file size limit never failed a write");
      auto offset = p.Append(BatchFor(0, seq, kBatchRecords), Durability::kNoWait, "app");
      ChildCheck(offset.ok(), "append: " + offset.status().ToString());
      auto flushed = p.Flush("app");
      if (!flushed.ok()) {
        failure = flushed.status();
        break;
      }
      const Status published = p.Publish(*flushed, "app");
      ChildCheck(published.ok(), "publish: " + published.ToString());
      WriteAck(ack_fd, {offset->value(), kBatchRecords, 0, seq});
    }
    ChildCheck(failure.code() == StatusCode::kResourceExhausted &&
                   failure.message().find("topic 't' partition 0") != std::string::npos,
               "unexpected failure: " + failure.ToString());
    const int64_t published = p.NextOffset().value();
    ChildCheck(p.DurableEnd().value() == published, "durable end moved past the published end");
    ChildCheck(p.WrittenEnd().value() == published + kBatchRecords, "the written end moved");
    auto expect_failure = [&](const std::string& call, const Status& s) {
      ChildCheck(SameStatus(s, failure), call + " returned '" + s.ToString() + "'");
    };
    expect_failure("Flush", p.Flush("app").status());
    expect_failure("Publish", p.Publish(Offset(published), "app"));
    expect_failure("TruncateTo", p.TruncateTo(Offset(published), "app"));
    expect_failure("Append", p.Append(BatchFor(0, -1, 1), Durability::kNoWait, "app").status());
    expect_failure("Append(kWaitDurable)",
                   p.Append(BatchFor(0, -2, 1), Durability::kWaitDurable, "app").status());
    expect_failure("WaitDurable", p.WaitDurable(Offset(published + 1)));
    expect_failure("FlushAll", store.FlushAll());
  });
  ASSERT_FALSE(HasFailure());
  ASSERT_GT(acks.size(), 10u);
  ExpectAcknowledgedRecordsPresent(log_dir, acks);
  if (HasFatalFailure()) return;
  // The owner's recovery after a reopen: truncate to the last committed checkpoint, go on.
  auto store = LogStore::Open(Options(log_dir));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Partition& p = (*(*store)->GetTopic("t"))->partition(PartitionId(0));
  const int64_t end = AckedEnd(acks);
  EXPECT_EQ(p.NextOffset().value(), end);
  ASSERT_TRUE(p.TruncateTo(Offset(end), "app").ok());
  auto offset = p.Append(BatchFor(7, 0, 1), Durability::kNoWait, "app");
  ASSERT_TRUE(offset.ok()) << offset.status().ToString();
  EXPECT_EQ(offset->value(), end);
  auto flushed = p.Flush("app");
  ASSERT_TRUE(flushed.ok()) << flushed.status().ToString();
  EXPECT_TRUE(p.Publish(*flushed, "app").ok());
  EXPECT_EQ(p.NextOffset().value(), end + 1);
}

}  // namespace
}  // namespace weir::log
