#include "app/data_dir.h"

namespace weir::app {

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::filesystem::path& dir) {
  WEIR_ASSIGN_OR_RETURN(
      DirectoryLock lock,
      DirectoryLock::Acquire(dir, {.what = "data directory",
                                   .write_pid = true,
                                   .hint = "; stop it or choose another --data-dir"}));
  return std::unique_ptr<DataDirLock>(new DataDirLock(std::move(lock)));
}

}  // namespace weir::app
