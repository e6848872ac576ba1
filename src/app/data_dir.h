// The data directory: one process at a time.
//
//   <dir>/LOCK           flock()ed by the process using the directory; holds its pid
//   <dir>/log/           the embedded log (log/)
//   <dir>/apps/<name>/   an application's checkpoint manifest and task state (app/)
#pragma once

#include <filesystem>
#include <memory>

#include "weir/status.h"

namespace weir::app {

class DataDirLock {
 public:
  // Creates the directory if needed and locks it. kFailedPrecondition "data directory X is in
  // use by another process (pid N)" if another process holds it; kIOError/kResourceExhausted
  // naming the path if it cannot be created or written.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::filesystem::path& dir);
  ~DataDirLock();
  const std::filesystem::path& dir() const { return dir_; }

 private:
  DataDirLock(std::filesystem::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::filesystem::path dir_;
  int fd_;
};

// Writes `contents` to `path` atomically: a temporary file, fsync, rename, fsync of the
// directory. Either the old or the new contents survive a crash, never a mix.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents);
// The whole file; kNotFound if it does not exist.
Result<std::string> ReadFile(const std::filesystem::path& path);

}  // namespace weir::app
