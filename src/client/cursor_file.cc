#include "client/cursor_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "weir/value.h"

namespace weir::client {
namespace {

// A cursor is well under this; a larger file is not a cursor.
constexpr size_t kMaxCursorBytes = 4096;

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "writing cursor file " + path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

std::string DirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

Result<std::optional<Cursor>> ReadCursorFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<Cursor>();
    return Status::FromErrno(errno, "opening cursor file " + path);
  }
  std::string text(kMaxCursorBytes + 1, '\0');
  size_t size = 0;
  while (size < text.size()) {
    ssize_t n = ::read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::FromErrno(errno, "reading cursor file " + path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(size);
  auto corrupt = [&](const std::string& why) {
    std::string quoted = text.substr(0, 120);
    return Status::Corruption("cursor file " + path + " is corrupt (" + why + "): '" + quoted +
                              "'; it must hold {\"topic\":T,\"partition\":P,\"last\":OFFSET}. "
                              "Fix it, or delete it to start from the start position");
  };
  if (size > kMaxCursorBytes) return corrupt("larger than a cursor can be");
  if (size == 0) return corrupt("empty");
  auto parsed = Value::Parse(text);
  if (!parsed.ok()) return corrupt("not JSON: " + parsed.status().message());
  if (!parsed->is_object()) return corrupt("not a JSON object");
  const Value* topic = parsed->Find("topic");
  const Value* partition = parsed->Find("partition");
  const Value* last = parsed->Find("last");
  if (topic == nullptr || !topic->is_string()) return corrupt("no string member \"topic\"");
  if (partition == nullptr || !partition->is_int() || partition->as_int() < 0 ||
      partition->as_int() > INT32_MAX) {
    return corrupt("no partition number in \"partition\"");
  }
  if (last == nullptr || !last->is_int() || last->as_int() < 0) {
    return corrupt("no offset (0 or more) in \"last\"");
  }
  if (parsed->as_object().size() != 3) return corrupt("members other than topic, partition, last");
  return std::optional<Cursor>(Cursor{topic->as_string(),
                                      PartitionId(static_cast<int32_t>(partition->as_int())),
                                      Offset(last->as_int())});
}

Status WriteCursorFile(const std::string& path, const Cursor& cursor) {
  Value json = Value::MakeObject({{"topic", Value(cursor.topic)},
                                  {"partition", Value(int64_t{cursor.partition.value()})},
                                  {"last", Value(cursor.last.value())}});
  std::string text = json.ToJson() + "\n";
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "creating cursor file " + tmp);
  Status s = WriteAll(fd, text, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Status::FromErrno(errno, "fsync of cursor file " + tmp);
  if (::close(fd) != 0 && s.ok()) s = Status::FromErrno(errno, "closing cursor file " + tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno(errno, "renaming " + tmp + " to " + path);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself is durable only once the directory is.
  std::string dir = DirectoryOf(path);
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Status::FromErrno(errno, "opening directory " + dir);
  if (::fsync(dir_fd) != 0) s = Status::FromErrno(errno, "fsync of directory " + dir);
  ::close(dir_fd);
  return s;
}

Status CheckCursorFileWritable(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("cursor file " + path + " is a directory");
  }
  std::string dir = DirectoryOf(path);
  if (::stat(dir.c_str(), &st) != 0) {
    return Status::FromErrno(errno, "directory " + dir + " of cursor file " + path);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("cursor file " + path + ": " + dir + " is not a directory");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return Status::FromErrno(errno, "directory " + dir + " of cursor file " + path);
  }
  return Status::OK();
}

}  // namespace weir::client
