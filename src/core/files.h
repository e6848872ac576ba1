// File mechanics every module shares, written once: whole writes and reads, replacing a file so
// that a crash leaves the old or the new contents and never a mix, and the lock that keeps a
// second process (or a second open) out of a directory.
//
// Contract: every system call's result is checked, close(2) included; errors are a Status naming
// the operation and the file (FileError). ReplaceFileAtomically removes its temporary file on
// every failure before the rename; after the rename the new contents are in place even if the
// directory fsync then fails (the error says so).
// Threads: free functions are safe from any thread on distinct paths; two concurrent replaces of
// one path share its temporary file and must be ordered by the caller. A DirectoryLock is owned
// by one thread at a time.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "weir/status.h"

namespace weir {

// A failed system call: "<op> <path>: <strerror>". ENOSPC/EDQUOT ("disk full") and EFBIG ("file
// size limit", RLIMIT_FSIZE) are kResourceExhausted, ENOENT kNotFound, anything else kIOError.
Status FileError(int err, std::string_view op, const std::filesystem::path& path);

// write(2) of all of `bytes` at the file position, retrying EINTR and short writes. On an error
// some prefix may have been written. `path` only names the file in errors.
Status WriteAll(int fd, std::string_view bytes, const std::filesystem::path& path);

// The whole file. kNotFound if it does not exist; kIOError (naming it) if it cannot be read.
Result<std::string> ReadFile(const std::filesystem::path& path);

// fsync of a directory, so that the names created, renamed or removed in it survive a crash.
Status SyncDirectory(const std::filesystem::path& dir);

struct ReplaceFileOptions {
  // Fsync the temporary file before the rename and the directory after it: once this returns,
  // the new contents survive a crash. Without it a crash may leave the old contents (never a
  // mix, never an empty file where a full one was).
  bool sync = true;
};

// Replaces `path` with `bytes`: writes `<path>.tmp` beside it, fsyncs it, renames it over `path`
// and fsyncs the directory (the fsyncs per `options`).
Status ReplaceFileAtomically(const std::filesystem::path& path, std::string_view bytes,
                             ReplaceFileOptions options = {});

// An exclusive flock(2) on <dir>/LOCK, held until the DirectoryLock is destroyed (or its process
// dies: the kernel releases it, so a crash leaves no stale lock). flock belongs to an open file
// description: a second Acquire of the same directory is refused even from the same process,
// which is what keeps two stores of one process from sharing a directory.
class DirectoryLock {
 public:
  struct Options {
    // Names the directory in errors: "data directory /x is in use ...".
    std::string_view what = "directory";
    // Writes the holder's pid into LOCK, so that a refused Acquire can say who holds it.
    bool write_pid = false;
    // Appended to the in-use error (what to do about it).
    std::string_view hint;
  };

  // Creates `dir` if needed and locks it. kUnavailable "<what> <dir> is in use by another
  // process (pid N)<hint>" if it is held (the pid when the holder wrote one); a Status naming
  // the path if the directory or LOCK cannot be created or written.
  static Result<DirectoryLock> Acquire(const std::filesystem::path& dir, Options options);
  static Result<DirectoryLock> Acquire(const std::filesystem::path& dir) {
    return Acquire(dir, Options{});
  }

  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  ~DirectoryLock();

  const std::filesystem::path& dir() const { return dir_; }

 private:
  DirectoryLock(std::filesystem::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::filesystem::path dir_;
  int fd_ = -1;
};

}  // namespace weir
