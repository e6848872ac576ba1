// Durability under kill -9 and under a full disk, checked against what the writer was told.
// Each test forks: the child writes and reports every acknowledged append through a pipe, the
// parent kills it (or lets it run into the limit), reopens the log and compares.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <random>
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

// Appends batches with kWaitDurable until one fails; returns the failure and records the acks.
Status FillUntilFailure(Partition& p, int32_t writer, std::vector<Ack>& acks) {
  for (int64_t seq = 0; seq < 1000000; ++seq) {
    auto offset = p.Append(BatchFor(writer, seq, 20), Durability::kWaitDurable);
    if (!offset.ok()) return offset.status();
    acks.push_back({offset->value(), 20, writer, seq});
  }
  return Status::Internal("the disk never filled up");
}

void ExpectConsistentAfterFailure(Partition& p, const std::vector<Ack>& acks) {
  const int64_t acked_end = acks.empty() ? 0 : acks.back().offset + acks.back().count;
  EXPECT_EQ(p.WrittenEnd().value(), acked_end);  // the failed records were not appended
  EXPECT_EQ(p.DurableEnd().value(), acked_end);
  EXPECT_EQ(p.NextOffset().value(), acked_end);
}

// A real full file system: a 1 MiB tmpfs.
void RunOnFullTmpfs(const fs::path& mnt) {
  const fs::path dir = mnt / "log";
  TopicConfig config;
  config.segment_bytes = 64 << 10;
  config.retention_bytes = 128 << 10;
  std::vector<Ack> acks;
  {
    auto store = LogStore::Open(Options(dir));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto topic = (*store)->CreateTopic("t", config);
    ASSERT_TRUE(topic.ok());
    Partition& p = (*topic)->partition(PartitionId(0));
    Status full = FillUntilFailure(p, 0, acks);
    EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
    EXPECT_NE(full.message().find("disk full"), std::string::npos) << full.ToString();
    EXPECT_NE(full.message().find("topic 't' partition 0"), std::string::npos) << full.ToString();
    ExpectConsistentAfterFailure(p, acks);
    EXPECT_GT(acks.size(), 10u);
  }
  ExpectAcknowledgedRecordsPresent(dir, acks);
  if (::testing::Test::HasFatalFailure()) return;

  // Still full after the reopen; retention frees space and appends continue at the right offset.
  {
    auto store = LogStore::Open(Options(dir));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Partition& p = (*(*store)->GetTopic("t"))->partition(PartitionId(0));
    auto refused = p.Append(BatchFor(1, 0, 200), Durability::kWaitDurable);
    EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
    ExpectConsistentAfterFailure(p, acks);
    auto removed = p.EnforceRetention(std::chrono::system_clock::now());
    ASSERT_TRUE(removed.ok()) << removed.status().ToString();
    EXPECT_GT(*removed, 0);
    auto offset = p.Append(BatchFor(1, 1, 20), Durability::kWaitDurable);
    ASSERT_TRUE(offset.ok()) << offset.status().ToString();
    EXPECT_EQ(offset->value(), acks.back().offset + acks.back().count);
    acks.push_back({offset->value(), 20, 1, 1});
  }
  ExpectAcknowledgedRecordsPresent(dir, acks);
}

// RLIMIT_FSIZE in a child: writes past the limit fail with EFBIG, which the log reports as
// kResourceExhausted ("file size limit"). The child's exit code says whether it saw what it
// should (0); the parent checks the files against the acks.
void RunAtFileSizeLimit(const fs::path& dir) {
  TopicConfig config;
  config.segment_bytes = 1 << 20;  // bigger than the limit: the segment file hits it
  CreateTopic(dir, config);
  if (::testing::Test::HasFatalFailure()) return;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // fail the write with EFBIG instead of killing the process
    auto store = LogStore::Open(Options(dir));
    if (!store.ok()) ::_exit(2);
    Partition& p = (*(*store)->GetTopic("t"))->partition(PartitionId(0));
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = 100 << 10;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    std::vector<Ack> acks;
    Status full = FillUntilFailure(p, 0, acks);
    for (const Ack& ack : acks) WriteAck(fds[1], ack);
    if (full.code() != StatusCode::kResourceExhausted) ::_exit(4);
    if (full.message().find("file size limit") == std::string::npos) ::_exit(5);
    const int64_t acked_end = acks.empty() ? 0 : acks.back().offset + acks.back().count;
    if (p.WrittenEnd().value() != acked_end || p.NextOffset().value() != acked_end) ::_exit(6);
    (*store).reset();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::vector<Ack> acks = ReadAcks(fds[0]);
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0) << "see the exit codes in RunAtFileSizeLimit";
  ASSERT_GT(acks.size(), 10u);
  ExpectAcknowledgedRecordsPresent(dir, acks);
  EXPECT_LE(fs::file_size(dir / "t" / "0" / "00000000000000000000.log"), 100u << 10);
  // Without the limit, appends continue right after the acknowledged ones.
  auto store = LogStore::Open(Options(dir));
  ASSERT_TRUE(store.ok());
  Partition& p = (*(*store)->GetTopic("t"))->partition(PartitionId(0));
  auto offset = p.Append(BatchFor(1, 0, 1), Durability::kWaitDurable);
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->value(), acks.back().offset + acks.back().count);
}

TEST(DiskFull, AppendsFailWithResourceExhaustedAndTheLogKeepsEveryAcknowledgedRecord) {
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") == 0) {
    RunOnFullTmpfs(mnt);
    ::umount2(mnt.c_str(), MNT_DETACH);
  } else {
    // Not allowed to mount here: a file size limit fails writes the same way.
    RunAtFileSizeLimit(dir.path() / "log");
  }
}

TEST(DiskFull, FileSizeLimitIsResourceExhaustedAndTheLogKeepsEveryAcknowledgedRecord) {
  TempDir dir;
  RunAtFileSizeLimit(dir.path() / "log");
}

}  // namespace
}  // namespace weir::log
