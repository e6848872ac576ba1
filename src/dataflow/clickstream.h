// The clickstream model behind the generator source, `weir demo` and the benchmarks.
//
// Every event is a pure function of (options, partition, sequence number): a restart resumes
// exactly, two runs agree record for record, and partition p holds only users whose key
// murmur2 puts on p (so the stream is correctly keyed for p of `partitions`).
//
// Users come and go: at any event time a window of each partition's users is active, and the
// window slides, so each user has sessions of activity (minutes) separated by quiet spells,
// which is what session windows are for. Within a session, a user views pages (70%), clicks
// (20%), adds to cart (7%) and buys (3%, with an amount). Some events arrive late (out of
// order by up to max_out_of_order_ms).
//
// Event value: {"user": "user-42", "page": "/products/7", "action": "view",
//               "device": "mobile", "country": "FR", "ts": 1767225600123,
//               "amount": 19.99  (purchases only)}
// Threads: immutable after construction; shared by every task.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weir/record.h"
#include "weir/stream.h"

namespace weir::dataflow {

class ClickstreamModel {
 public:
  explicit ClickstreamModel(const GeneratorOptions& options);

  const GeneratorOptions& options() const { return options_; }
  // How many events partition p generates (-1: unbounded).
  int64_t EventsIn(PartitionId p) const;
  // The event at `sequence` of partition p. REQUIRES: sequence < EventsIn(p) when bounded.
  Record EventAt(PartitionId p, int64_t sequence) const;
  // The same into `into`, reusing its memory (a RecordSlots slot).
  void WriteEventAt(PartitionId p, int64_t sequence, Record& into) const;

 private:
  GeneratorOptions options_;
  // The ids of each partition's users (names are formatted per event: cheaper than the cache
  // miss of looking a stored name up when any of 100k users may come next).
  std::vector<std::vector<int32_t>> users_by_partition_;
  int64_t active_window_;  // users active at once, per partition
  int64_t window_step_;    // how far the active window slides per period
  static constexpr int64_t kPeriodMs = 60'000;
};

}  // namespace weir::dataflow
