// TaskAlignment: keeps the tasks of one sub-topology within a bound of event time of each other
// (ApplicationOptions::max_task_drift), as Flink's watermark alignment does for sources.
//
// Why: a task's watermark is the largest event time it has seen (DESIGN.md §2), so a task that
// reads a repartition topic sees its producers' records interleaved, and whatever one producer
// lags behind another arrives late there unless the windows' grace covers it. Unthrottled, event
// time runs far faster than the wall clock, and a producer that is not scheduled for a few
// milliseconds falls minutes of event time behind. Holding back the task that is ahead bounds
// that skew without changing what any task computes: it only decides when a task runs.
//
// A task is held back while its watermark is more than the drift ahead of the slowest sibling
// that is still running, has seen an event, and has advanced within the last `stall` of wall
// clock (a sibling with no input for that long holds nobody back, so an idle partition cannot
// stop the others). The slowest task is never held back, so tasks cannot wait on each other in
// a cycle. Thread safety: every method may be called from any worker thread (atomics only).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "weir/types.h"

namespace weir::app {

class TaskAlignment {
 public:
  TaskAlignment(int32_t tasks, std::chrono::milliseconds drift,
                std::chrono::milliseconds stall = std::chrono::seconds(5))
      : tasks_(tasks), drift_(drift.count()), stall_(stall), progress_(new Progress[tasks]) {}

  // Task `index` has reached `watermark` (finished: it holds nobody back any more).
  void Publish(int32_t index, Watermark watermark, bool finished) {
    Progress& p = progress_[index];
    const int64_t now = Now();
    if (finished) {
      p.finished.store(true, std::memory_order_relaxed);
    } else if (watermark.value() != p.watermark.load(std::memory_order_relaxed)) {
      p.watermark.store(watermark.value(), std::memory_order_relaxed);
      p.advanced_at.store(now, std::memory_order_relaxed);
    }
  }

  // True if task `index`, at `watermark`, should wait for a slower sibling.
  bool HoldsBack(int32_t index, Watermark watermark) const {
    if (watermark == Watermark::Min() || watermark == Watermark::Max()) return false;
    const int64_t now = Now();
    const int64_t stall = stall_.count();
    for (int32_t i = 0; i < tasks_; ++i) {
      if (i == index) continue;
      const Progress& p = progress_[i];
      if (p.finished.load(std::memory_order_relaxed)) continue;
      const int64_t w = p.watermark.load(std::memory_order_relaxed);
      if (w == Watermark::Min().value()) continue;
      if (now - p.advanced_at.load(std::memory_order_relaxed) > stall) continue;
      if (watermark.value() - w > drift_) return true;
    }
    return false;
  }

 private:
  struct Progress {
    std::atomic<int64_t> watermark{Watermark::Min().value()};
    std::atomic<int64_t> advanced_at{0};  // steady clock, ms
    std::atomic<bool> finished{false};
  };
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  int32_t tasks_;
  int64_t drift_;
  std::chrono::milliseconds stall_;
  std::unique_ptr<Progress[]> progress_;
};

}  // namespace weir::app
