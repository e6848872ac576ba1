#include "app/data_dir.h"

namespace weir::app {

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::filesystem::path& dir,
                                                          std::string_view data_dir_option) {
  const std::string hint = "; stop it or choose another " + std::string(data_dir_option);
  WEIR_ASSIGN_OR_RETURN(
      DirectoryLock lock,
      DirectoryLock::Acquire(dir, {.what = "data directory", .write_pid = true, .hint = hint}));
  return std::unique_ptr<DataDirLock>(new DataDirLock(std::move(lock)));
}

}  // namespace weir::app
