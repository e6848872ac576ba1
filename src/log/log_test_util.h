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
#include "testing/temp_dir.h"

namespace weir::log::testing {

using TempDir = weir::testing::TempDir;

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
