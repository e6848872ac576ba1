// What every peer driver shares: the 100-byte messages, their checks, a latency histogram, the
// server's CPU time from /proc, flags, and the RESULT line run.sh reads. Header-only and free
// of Asio, so the cnats and hiredis drivers compile fast.
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace weir::peers {

inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::exit(1);
}

// `--name value` flags; every flag must be known to the program (Known lists them) and numbers
// must parse, so a typo in run.sh fails instead of running the wrong benchmark.
class Flags {
 public:
  Flags(int argc, char** argv, std::vector<std::string> known) {
    for (int i = 1; i < argc; ++i) {
      std::string name = argv[i];
      if (name.rfind("--", 0) != 0 || i + 1 >= argc) Die("bad argument " + name);
      name = name.substr(2);
      if (std::find(known.begin(), known.end(), name) == known.end()) Die("unknown flag --" + name);
      values_[name] = argv[++i];
    }
  }
  std::string Str(const std::string& name, const std::string& def) const {
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second;
  }
  std::string Required(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) Die("missing --" + name);
    return it->second;
  }
  int64_t Int(const std::string& name, int64_t def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    int64_t v = 0;
    const std::string& s = it->second;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) Die("--" + name + " is not an integer");
    return v;
  }

 private:
  std::map<std::string, std::string> values_;
};

// Fills `out` with a JSON object of exactly `size` bytes (size >= 48):
//   {"seq":SEQ,"t":T,"pad":"..."}
// The padding letters depend on seq, so a replay that returns the wrong record's bytes, or a
// torn one, differs from MakeMessage(seq) and is caught by a byte comparison.
inline void MakeMessage(uint64_t seq, uint64_t t_ns, size_t size, std::string* out) {
  char head[64];
  int n =
      std::snprintf(head, sizeof(head), "{\"seq\":%llu,\"t\":%llu,\"pad\":\"",
                    static_cast<unsigned long long>(seq), static_cast<unsigned long long>(t_ns));
  out->assign(head, static_cast<size_t>(n));
  if (out->size() + 2 > size) Die("message size " + std::to_string(size) + " is too small");
  size_t pad = size - out->size() - 2;
  for (size_t i = 0; i < pad; ++i) out->push_back(static_cast<char>('a' + (seq + i) % 26));
  out->append("\"}");
}

inline std::string MakeMessage(uint64_t seq, uint64_t t_ns, size_t size) {
  std::string s;
  MakeMessage(seq, t_ns, size, &s);
  return s;
}

// Reads the unsigned number after `key` (e.g. "\"seq\":") in `s`; false if absent.
inline bool FindNumber(std::string_view s, std::string_view key, uint64_t* value) {
  size_t at = s.find(key);
  if (at == std::string_view::npos) return false;
  const char* begin = s.data() + at + key.size();
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), *value);
  return ec == std::errc() && ptr != begin;
}

// A log-linear histogram of nanosecond values: exact below 256, then 128 buckets per power of
// two (relative error under 0.8%), as HdrHistogram does.
class Histogram {
 public:
  Histogram() : counts_(kSub * 60, 0) {}
  void Add(uint64_t v) {
    ++counts_[Index(v)];
    ++total_;
    max_ = std::max(max_, v);
  }
  uint64_t Count() const { return total_; }
  uint64_t Max() const { return max_; }
  // The smallest value v such that a fraction q of the values are <= v (bucket lower bound).
  uint64_t Quantile(double q) const {
    if (total_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(Value(i), max_);
    }
    return max_;
  }

 private:
  static constexpr uint64_t kSubBits = 7;
  static constexpr uint64_t kSub = 1 << kSubBits;
  static size_t Index(uint64_t v) {
    if (v < 2 * kSub) return v;
    uint64_t shift = static_cast<uint64_t>(std::bit_width(v)) - 1 - kSubBits;
    return (shift + 1) * kSub + ((v >> shift) - kSub);
  }
  static uint64_t Value(size_t i) {
    if (i < 2 * kSub) return i;
    uint64_t shift = i / kSub - 1;
    return ((i % kSub) + kSub) << shift;
  }
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

// utime + stime of a whole process (all its threads), in seconds, from /proc/PID/stat; the
// resolution is one clock tick (10 ms), so measured intervals are seconds long.
inline double ProcessCpuSeconds(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) Die("cannot read /proc/" + std::to_string(pid) + "/stat");
  // Field 2 (comm) may hold spaces: count fields from the last ')'.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// This process's own CPU time, to tell when the driver rather than the server was the limit.
inline double SelfCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One line `RESULT key=value ...` for run.sh, after the human-readable lines.
class ResultLine {
 public:
  ResultLine& Add(const std::string& key, const std::string& value) {
    line_ += " " + key + "=" + value;
    return *this;
  }
  ResultLine& Add(const std::string& key, double value) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", value);
    return Add(key, std::string(buf));
  }
  void Print() const { std::printf("RESULT%s\n", line_.c_str()); }

 private:
  std::string line_;
};

// The figures of a durable append + replay run, and its RESULT line.
inline void ReportDurable(const std::string& system, uint64_t messages, double append_s,
                          double replay_s, const std::string& append_note,
                          const std::string& replay_note) {
  double n = static_cast<double>(messages);
  std::printf("  appends  %.2f s = %.0f/s (%s)\n", append_s, n / append_s, append_note.c_str());
  std::printf("  replay   %.2f s = %.0f messages/s (%s), bytes checked\n", replay_s, n / replay_s,
              replay_note.c_str());
  ResultLine()
      .Add("bench", "durable")
      .Add("system", system)
      .Add("messages", n)
      .Add("appends_per_s", n / append_s)
      .Add("replay_per_s", n / replay_s)
      .Print();
}

}  // namespace weir::peers
