#include "app/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace weir::app {
namespace {

Status WriteAll(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, what);
    }
    bytes.remove_prefix(n);
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::FromErrno(ec.value(), "creating data directory " + dir.string());
  std::string lock_path = (dir / "LOCK").string();
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "opening " + lock_path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = {0};
    ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      std::string holder_pid(pid, n > 0 ? std::strlen(pid) : 0);
      while (!holder_pid.empty() && holder_pid.back() == '\n') holder_pid.pop_back();
      std::string holder = holder_pid.empty() ? "" : " (pid " + holder_pid + ")";
      return Status::FailedPrecondition("data directory " + dir.string() +
                                        " is in use by another process" + holder +
                                        "; stop it or choose another --data-dir");
    }
    return Status::FromErrno(err, "locking " + lock_path);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0) {
    Status s = Status::FromErrno(errno, "writing " + lock_path);
    ::close(fd);
    return s;
  }
  Status s = WriteAll(fd, pid, "writing " + lock_path);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(dir, fd));
}

DataDirLock::~DataDirLock() { ::close(fd_); }

Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "creating " + tmp.string());
  Status s = WriteAll(fd, contents, "writing " + tmp.string());
  if (s.ok() && ::fsync(fd) != 0) s = Status::FromErrno(errno, "syncing " + tmp.string());
  ::close(fd);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(errno, "renaming " + tmp.string());
  }
  int dir_fd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Status::FromErrno(errno, "opening " + path.parent_path().string());
  int rc = ::fsync(dir_fd);
  int err = errno;
  ::close(dir_fd);
  if (rc != 0) return Status::FromErrno(err, "syncing " + path.parent_path().string());
  return Status::OK();
}

Result<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return Status::NotFound(path.string() + " does not exist");
    return Status::IOError("cannot read " + path.string());
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read " + path.string());
  return out.str();
}

}  // namespace weir::app
