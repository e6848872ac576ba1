#include "core/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace weir {
namespace fs = std::filesystem;

Status FileError(int err, std::string_view op, const fs::path& path) {
  std::string what = std::string(op) + " " + path.string();
  if (err == EFBIG) {
    return Status::ResourceExhausted(what + ": " + std::strerror(err) + " (file size limit)");
  }
  return Status::FromErrno(err, what);
}

Status WriteAll(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FileError(errno, "writing", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Result<std::string> ReadFile(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, "opening", path);
  std::string out;
  char buf[16384];
  Status s;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = FileError(errno, "reading", path);
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);  // read-only: nothing to lose if close fails
  if (!s.ok()) return s;
  return out;
}

Status SyncDirectory(const fs::path& dir) {
  const fs::path name = dir.empty() ? fs::path(".") : dir;
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FileError(errno, "opening directory", name);
  Status s;
  if (::fsync(fd) != 0) s = FileError(errno, "fsyncing directory", name);
  ::close(fd);  // opened read-only for the fsync alone
  return s;
}

Status ReplaceFileAtomically(const fs::path& path, std::string_view bytes,
                             ReplaceFileOptions options) {
  fs::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, "creating", tmp);
  Status s = WriteAll(fd, bytes, tmp);
  if (s.ok() && options.sync && ::fsync(fd) != 0) s = FileError(errno, "fsyncing", tmp);
  // A failed close may be the first report of a failed write (NFS, quotas).
  if (::close(fd) != 0 && s.ok()) s = FileError(errno, "closing", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = FileError(errno, "renaming " + tmp.string() + " to", path);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (!options.sync) return Status::OK();
  return SyncDirectory(path.parent_path());
}

Result<DirectoryLock> DirectoryLock::Acquire(const fs::path& dir, Options options) {
  const std::string what(options.what);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return FileError(ec.value(), "creating " + what, dir);
  const fs::path lock_path = dir / "LOCK";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return FileError(errno, "opening", lock_path);
  DirectoryLock lock(dir, fd);  // closes fd on every return below but the last
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return FileError(errno, "locking", lock_path);
    char pid[32] = {0};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    std::string holder(pid, n > 0 ? std::strlen(pid) : 0);
    while (!holder.empty() && holder.back() == '\n') holder.pop_back();
    holder = holder.empty() ? " (" + lock_path.string() + " is locked)" : " (pid " + holder + ")";
    return Status::Unavailable(what + " " + dir.string() + " is in use by another process" +
                               holder + std::string(options.hint));
  }
  if (options.write_pid) {
    if (::ftruncate(fd, 0) != 0) return FileError(errno, "writing", lock_path);
    WEIR_RETURN_IF_ERROR(WriteAll(fd, std::to_string(::getpid()) + "\n", lock_path));
  }
  return lock;
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept
    : dir_(std::move(other.dir_)), fd_(std::exchange(other.fd_, -1)) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(other.dir_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

// Closing the last descriptor of the open file description releases the flock.
DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace weir
