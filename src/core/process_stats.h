// What this process has used so far, for run summaries and benchmarks.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace weir {

// User + system CPU time of the whole process, in seconds.
inline double ProcessCpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The largest resident set the process has had, in bytes.
inline int64_t ProcessPeakRssBytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

}  // namespace weir
