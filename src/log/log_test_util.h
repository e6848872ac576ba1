// Helpers shared by the log tests: a fresh directory per test and recognisable records.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "log/log.h"

namespace weir::log::testing {

// A new empty directory under the system temp dir, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("weir-log-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A 100-byte value that names its tag, so a test can tell which append a record came from.
inline std::string ValueFor(const std::string& tag) {
  std::string v = "{\"id\":\"" + tag + "\",\"pad\":\"";
  while (v.size() < 98) v.push_back('x');
  return v + "\"}";
}

inline RecordBatchBuilder OneRecord(const std::string& tag) {
  RecordBatchBuilder b;
  b.AddRaw(EventTime(1000), KeySerde::kString, tag, ValueFor(tag));
  return b;
}

// Every visible record of a partition from `from`, as (offset, value).
inline std::vector<std::pair<int64_t, std::string>> ReadAll(Partition& p, int64_t from = 0) {
  std::vector<std::pair<int64_t, std::string>> out;
  PartitionReader reader(p, Offset(from));
  for (;;) {
    auto batch = reader.Next();
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok() || batch->empty()) break;
    for (const StoredRecord& r : *batch) out.emplace_back(r.offset.value(), std::string(r.value));
  }
  return out;
}

inline LogOptions Options(const std::filesystem::path& dir) {
  LogOptions o;
  o.dir = dir;
  return o;
}

}  // namespace weir::log::testing
