// Test support for applications: input files, and reading what a run wrote (files and topics),
// all through the real log. Scratch directories: testing/temp_dir.h.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "log/log.h"
#include "testing/temp_dir.h"
#include "weir/application.h"
#include "weir/value.h"

namespace weir::testing {

// An application in the scratch directory's "data", checkpointing every 50 ms.
inline ApplicationOptions TestOptions(const TempDir& dir, std::string name = "app") {
  ApplicationOptions o;
  o.name = std::move(name);
  o.data_dir = dir / "data";
  o.checkpoint_interval = std::chrono::milliseconds(50);
  return o;
}

// A file of events keyed by their string field "user", timed by their field "ts".
inline FileSourceOptions UserFile(const std::string& path) {
  FileSourceOptions f;
  f.path = path;
  f.key = {"user", KeySerde::kString};
  f.timestamp_field = "ts";
  return f;
}

inline void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& line : lines) out << line << '\n';
}

inline std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A record of a topic as read back: partition, offset, key (as JSON), timestamp, value, and the
// value's bytes as stored.
struct TopicRecord {
  int32_t partition;
  int64_t offset;
  std::string key_json;
  int64_t timestamp;
  Value value;
  std::string stored;
};

// Every visible record of a topic of the data directory, partition by partition.
// REQUIRES: no process holds the data directory.
inline std::vector<TopicRecord> ReadTopic(const std::string& data_dir, const std::string& topic) {
  log::LogOptions options;
  options.dir = std::filesystem::path(data_dir) / "log";
  auto log = log::LogStore::Open(options);
  if (!log.ok()) return {};
  auto t = (*log)->GetTopic(topic);
  if (!t.ok()) return {};
  std::vector<TopicRecord> out;
  for (int32_t p = 0; p < (*t)->num_partitions(); ++p) {
    log::PartitionReader reader((*t)->partition(PartitionId(p)), Offset(0));
    while (true) {
      auto records = reader.Next(4096);
      if (!records.ok() || records->empty()) break;
      for (const log::StoredRecord& r : *records) {
        std::string key;
        auto k = r.DecodeKey();
        if (k.ok()) k->AppendJson(key);
        Value v;
        if (!log::DecodeStoredValue(r.value, v).ok()) v = Value(std::string(r.value));
        out.push_back(
            {p, r.offset.value(), key, r.timestamp.value(), std::move(v), std::string(r.value)});
      }
    }
  }
  return out;
}

}  // namespace weir::testing
