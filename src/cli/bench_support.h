// What the benchmarks share: a scratch data directory, and reading back an output topic.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "log/log.h"
#include "weir/status.h"
#include "weir/value.h"

namespace weir::cli {

// A scratch data directory for a benchmark, removed afterwards unless the user named one.
class BenchDir {
 public:
  explicit BenchDir(const std::string& given) {
    if (!given.empty()) {
      path_ = given;
      return;
    }
    path_ = (std::filesystem::temp_directory_path() / ("weir-bench-" + std::to_string(::getpid())))
                .string();
    std::filesystem::remove_all(path_);
    owned_ = true;
  }
  ~BenchDir() {
    if (owned_) std::filesystem::remove_all(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

// The value at quantile `q` (0-1) of `v`, which it sorts; 0 when `v` is empty.
double Percentile(std::vector<double>& v, double q);

// `v` printed with `format`, or "-" when it is negative (a figure that was not measured).
std::string Figure(double v, const char* format);

// Reads every record of `topic` in the data directory, partition by partition, and hands each
// value, parsed, to `check` with its partition and record; the first error (the log's or `check`'s)
// stops it. REQUIRES: no application holds the data directory.
Status ForEachOutput(
    const std::string& data_dir, const std::string& topic_name,
    const std::function<Status(PartitionId, const log::StoredRecord&, const Value&)>& check);

}  // namespace weir::cli
