// The data directory: one process at a time.
//
//   <dir>/LOCK           flock()ed by the process using the directory; holds its pid
//   <dir>/log/           the embedded log (log/)
//   <dir>/apps/<name>/   an application's checkpoint manifest and task state (app/)
//
// Files in it are written with core/files.h (ReplaceFileAtomically, ReadFile).
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>

#include "core/files.h"
#include "weir/status.h"

namespace weir::app {

// The process's hold on a data directory (a DirectoryLock that names the holder's pid).
class DataDirLock {
 public:
  // Creates the directory if needed and locks it. kUnavailable "data directory X is in use by
  // another process (pid N); stop it or choose another <data_dir_option>" if another process
  // (or another DataDirLock of this one) holds it; kIOError/kResourceExhausted naming the path
  // if it cannot be created or written. `data_dir_option` is how the caller sets the directory
  // ("--data-dir", "ApplicationOptions::data_dir").
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::filesystem::path& dir,
                                                      std::string_view data_dir_option);
  const std::filesystem::path& dir() const { return lock_.dir(); }

 private:
  explicit DataDirLock(DirectoryLock lock) : lock_(std::move(lock)) {}
  DirectoryLock lock_;
};

}  // namespace weir::app
