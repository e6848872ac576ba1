// WindowDefinition: what windows a window step makes (the kinds, sizes, steps and grace of
// docs/architecture.md §6). The rules that fill and close the windows are stated in weir/window.h;
// this header is the definition alone, so that the window rules (src/window/) need nothing of the
// Stream API.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "weir/status.h"

namespace weir {

enum class WindowKind : uint8_t {
  kTumbling,
  kHopping,
  kSliding,
  kSession,
  kCountTumbling,
  kCountHopping,
  kCountSliding,
};

// "tumbling", "count sliding", ...
std::string_view WindowKindName(WindowKind kind);

// What windows to make. The factories never fail; a definition that cannot be run (a size <= 0,
// a step above the size, a negative grace, grace on a count window) makes the application's
// Run() fail before anything runs, with the reason.
class WindowDefinition {
 public:
  static WindowDefinition Tumbling(std::chrono::milliseconds size);
  static WindowDefinition Hopping(std::chrono::milliseconds size, std::chrono::milliseconds step);
  static WindowDefinition Sliding(std::chrono::milliseconds size);
  static WindowDefinition Session(std::chrono::milliseconds inactivity_gap);
  static WindowDefinition CountTumbling(int64_t n);
  static WindowDefinition CountHopping(int64_t n, int64_t step);
  static WindowDefinition CountSliding(int64_t n);
  // How long after a window's close time events may still arrive for it (time windows).
  WindowDefinition& Grace(std::chrono::milliseconds grace);

  WindowKind kind() const { return kind_; }
  int64_t size() const { return size_; }  // ms, or events for count windows; the gap for sessions
  int64_t step() const { return step_; }  // ms or events (hopping); = size for tumbling
  int64_t grace() const { return grace_; }
  bool is_count() const {
    return kind_ == WindowKind::kCountTumbling || kind_ == WindowKind::kCountHopping ||
           kind_ == WindowKind::kCountSliding;
  }
  // OK, or kInvalidArgument naming what is wrong.
  Status Validate() const;
  // "session(gap=30000ms, grace=0ms)".
  std::string Describe() const;

 private:
  WindowDefinition(WindowKind kind, int64_t size, int64_t step)
      : kind_(kind), size_(size), step_(step) {}
  WindowKind kind_;
  int64_t size_;
  int64_t step_;
  int64_t grace_ = 0;
};

}  // namespace weir
