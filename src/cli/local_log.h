// The embedded log of a data directory, opened and locked for one CLI command.
#pragma once

#include <memory>
#include <string>

#include "app/data_dir.h"
#include "log/log.h"

namespace weir::cli {

struct LocalLog {
  std::unique_ptr<app::DataDirLock> lock;
  std::unique_ptr<log::LogStore> log;  // destroyed before the lock is released

  ~LocalLog() { log.reset(); }
  static Result<LocalLog> Open(const std::string& data_dir, const std::string& fsync = "group") {
    LocalLog local;
    WEIR_ASSIGN_OR_RETURN(local.lock, app::DataDirLock::Acquire(data_dir, "--data-dir"));
    log::LogOptions options;
    options.dir = std::filesystem::path(data_dir) / "log";
    WEIR_ASSIGN_OR_RETURN(options.fsync, ParseFsyncPolicy(fsync));
    WEIR_ASSIGN_OR_RETURN(local.log, log::LogStore::Open(options));
    return local;
  }
  LocalLog() = default;
  LocalLog(LocalLog&&) = default;
  LocalLog& operator=(LocalLog&&) = default;
};

}  // namespace weir::cli
