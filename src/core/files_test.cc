#include "core/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include "testing/temp_dir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string Slurp(const fs::path& path) {
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

TEST(ReplaceFileAtomically, ReplacesTheContentsAndLeavesNoTemporaryFile) {
  TempDir dir;
  const fs::path path = dir.path() / "manifest.json";
  ASSERT_TRUE(ReplaceFileAtomically(path, "old contents, longer than the new").ok());
  ASSERT_TRUE(ReplaceFileAtomically(path, "new").ok());
  EXPECT_EQ(Slurp(path), "new");
  ASSERT_TRUE(ReplaceFileAtomically(path, "unsynced", {.sync = false}).ok());
  EXPECT_EQ(Slurp(path), "unsynced");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(ReplaceFileAtomically, AFailedRenameRemovesTheTemporaryFileAndKeepsTheTarget) {
  TempDir dir;
  const fs::path path = dir.path() / "target";
  fs::create_directory(path);  // a file cannot be renamed over a directory
  Status s = ReplaceFileAtomically(path, "bytes");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("renaming"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(dir.path() / "target.tmp"));
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(ReplaceFileAtomically, AMissingDirectoryIsNamedAndLeavesNothing) {
  TempDir dir;
  Status s = ReplaceFileAtomically(dir.path() / "nope" / "file", "bytes");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("nope/file.tmp"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(dir.path() / "nope"));
}

// A write that fails half-way (the file size limit; works as root, unlike a read-only directory)
// leaves the old contents and no temporary file. In a child: the limit is per process.
TEST(ReplaceFileAtomically, AFailedWriteRemovesTheTemporaryFileAndKeepsTheOldContents) {
  TempDir dir;
  const fs::path path = dir.path() / "target";
  ASSERT_TRUE(ReplaceFileAtomically(path, "old").ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    Status s = ReplaceFileAtomically(path, std::string(100'000, 'x'));
    const bool named = s.code() == StatusCode::kResourceExhausted &&
                       s.message().find("file size limit") != std::string::npos;
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the write failure was not kResourceExhausted";
  EXPECT_EQ(Slurp(path), "old");
  EXPECT_FALSE(fs::exists(dir.path() / "target.tmp"));
}

TEST(ReadFile, AMissingFileIsNotFoundNamingIt) {
  TempDir dir;
  auto text = ReadFile(dir.path() / "missing");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_NE(text.status().message().find("missing"), std::string::npos);
}

TEST(ReadFile, ADirectoryIsAnErrorNamingIt) {
  TempDir dir;
  auto text = ReadFile(dir.path());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kIOError);
  EXPECT_NE(text.status().message().find(dir.path().string()), std::string::npos);
}

// A pipe takes at most its buffer per write(2): the rest goes in later writes.
TEST(WriteAll, WritesEverythingThroughShortWrites) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string bytes(1 << 20, 'z');
  std::string received;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) received.append(buf, n);
  });
  Status s = WriteAll(fds[1], bytes, "<pipe>");
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(received, bytes);
}

TEST(DirectoryLock, ASecondLockOfTheDirectoryIsRefusedNamingItAndTheHolder) {
  TempDir dir;
  const fs::path data = dir.path() / "data";
  auto first = DirectoryLock::Acquire(data, {.what = "data directory", .write_pid = true});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->dir(), data);
  // flock belongs to the open file description: the same process opening LOCK again is refused.
  auto second = DirectoryLock::Acquire(data, {.what = "data directory", .hint = "; stop it"});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(), "data directory " + data.string() +
                                           " is in use by another process (pid " +
                                           std::to_string(::getpid()) + "); stop it");
}

TEST(DirectoryLock, AHolderThatWroteNoPidIsNamedByItsLockFile) {
  TempDir dir;
  auto first = DirectoryLock::Acquire(dir.path());
  ASSERT_TRUE(first.ok());
  auto second = DirectoryLock::Acquire(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("(" + (dir.path() / "LOCK").string() + " is locked)"),
            std::string::npos)
      << second.status().ToString();
}

TEST(DirectoryLock, TheLockIsFreeOnceItsHolderIsGoneOrMoved) {
  TempDir dir;
  {
    auto first = DirectoryLock::Acquire(dir.path());
    ASSERT_TRUE(first.ok());
    DirectoryLock moved = std::move(first).value();
    EXPECT_FALSE(DirectoryLock::Acquire(dir.path()).ok());
  }
  EXPECT_TRUE(DirectoryLock::Acquire(dir.path()).ok());
}

TEST(DirectoryLock, ALockHeldByAnotherProcessIsRefused) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = DirectoryLock::Acquire(dir.path(), {.write_pid = true});
    char c = held.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();  // until killed
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto refused = DirectoryLock::Acquire(dir.path());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("(pid " + std::to_string(child) + ")"),
            std::string::npos)
      << refused.status().ToString();
  // The kernel released the dead holder's lock.
  EXPECT_TRUE(DirectoryLock::Acquire(dir.path()).ok());
}

}  // namespace
}  // namespace weir
