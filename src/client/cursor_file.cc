#include "client/cursor_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/files.h"
#include "weir/value.h"

namespace weir::client {
namespace {

// A cursor is well under this; a larger file is not a cursor.
constexpr size_t kMaxCursorBytes = 4096;

std::string DirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

Result<std::optional<Cursor>> ReadCursorFile(const std::string& path) {
  auto read = ReadFile(path);
  if (!read.ok()) {
    if (read.status().code() == StatusCode::kNotFound) return std::optional<Cursor>();
    return read.status().WithContext("cursor file");
  }
  std::string& text = *read;
  const size_t size = text.size();
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
  return std::optional<Cursor>(Cursor{std::string(topic->as_string()),
                                      PartitionId(static_cast<int32_t>(partition->as_int())),
                                      Offset(last->as_int())});
}

Status WriteCursorFile(const std::string& path, const Cursor& cursor) {
  Value json = Value::MakeObject({{"topic", Value(cursor.topic)},
                                  {"partition", Value(int64_t{cursor.partition.value()})},
                                  {"last", Value(cursor.last.value())}});
  std::string text = json.ToJson() + "\n";
  return ReplaceFileAtomically(path, text).WithContext("writing cursor file");
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
