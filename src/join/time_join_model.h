// What the brute-force models of the interval and as-of joins (interval_model.h, asof_model.h)
// share: how a task reads the two inputs of a join and which events are late, written from
// include/weir/join.h and docs/architecture.md §2 alone, for property tests that run the real
// engine.
//
// A task reads its two inputs merged in event-time order: of the two inputs' next events, the
// earlier is read first (ties: the left). An input's watermark is the largest event time read
// from it so far, the event being read included, and +infinity once every event of it has been
// read; the task's watermark is the smaller of the two (docs/architecture.md §2). An event is late
// when its time is before watermark - grace as it is read; a late event joins nothing and is
// reported with late_by_ms = (watermark - grace) - ts.
//
// Thread safety: none; a model is used by one test thread.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "window/window_model.h"

namespace weir::join::testing {

inline constexpr int kModelLeft = 0;
inline constexpr int kModelRight = 1;

struct ModelEvent {
  std::string key;
  int64_t ts = 0;
  int64_t id = 0;  // unique over both inputs
};

// An output of a join: the ids of its left and right events (none: a null right).
struct ModelJoined {
  std::string key;
  int64_t ts = 0;
  int64_t left_id = 0;
  std::optional<int64_t> right_id;
  friend auto operator<=>(const ModelJoined&, const ModelJoined&) = default;
  std::string ToString() const {
    return key + "@" + std::to_string(ts) + " left " + std::to_string(left_id) + " right " +
           (right_id ? std::to_string(*right_id) : "null");
  }
};

// A late event as a late topic reports it: {key, ts, late_by_ms, id}, as windows report theirs.
using window::testing::ModelLate;

// What a join emits and finds late, each sorted (the specification orders neither across keys).
struct ModelJoinOutput {
  std::vector<ModelJoined> joined;
  std::vector<ModelLate> late;
};

// An event as the task reads it.
struct ModelArrival {
  int input = kModelLeft;
  const ModelEvent* event = nullptr;
  bool late = false;
};

// The two inputs in the order the task reads them, each event marked late or not; the late
// ones are added to `late`.
inline std::vector<ModelArrival> ReadInputs(const std::vector<ModelEvent>& left,
                                            const std::vector<ModelEvent>& right, int64_t grace,
                                            std::vector<ModelLate>& late) {
  std::vector<ModelArrival> arrivals;
  size_t l = 0, r = 0;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t left_watermark = left.empty() ? kMax : kMin;
  int64_t right_watermark = right.empty() ? kMax : kMin;
  while (l < left.size() || r < right.size()) {
    bool take_left = r == right.size() || (l < left.size() && left[l].ts <= right[r].ts);
    ModelArrival a{take_left ? kModelLeft : kModelRight, take_left ? &left[l++] : &right[r++]};
    int64_t& input_watermark = take_left ? left_watermark : right_watermark;
    input_watermark = std::max(input_watermark, a.event->ts);
    const int64_t watermark = std::min(left_watermark, right_watermark);
    const int64_t horizon = watermark == kMin ? kMin : watermark - grace;
    if (a.event->ts < horizon) {
      a.late = true;
      late.push_back({a.event->key, a.event->ts, horizon - a.event->ts, a.event->id});
    }
    arrivals.push_back(a);
    if (l == left.size()) left_watermark = kMax;
    if (r == right.size()) right_watermark = kMax;
  }
  return arrivals;
}

// Runs a join model: `join_left(left, rights, joined)` is given each left event that is not late
// with every right event of its key that is not late, in reading order, and adds what the left
// event makes to `joined`.
template <typename JoinLeft>
ModelJoinOutput RunJoinModel(const std::vector<ModelEvent>& left,
                             const std::vector<ModelEvent>& right, int64_t grace,
                             const JoinLeft& join_left) {
  ModelJoinOutput out;
  std::vector<ModelArrival> arrivals = ReadInputs(left, right, grace, out.late);
  for (const ModelArrival& l : arrivals) {
    if (l.input != kModelLeft || l.late) continue;
    std::vector<const ModelEvent*> rights;
    for (const ModelArrival& r : arrivals) {
      if (r.input == kModelRight && !r.late && r.event->key == l.event->key) {
        rights.push_back(r.event);
      }
    }
    join_left(*l.event, rights, out.joined);
  }
  std::sort(out.joined.begin(), out.joined.end());
  std::sort(out.late.begin(), out.late.end());
  return out;
}

}  // namespace weir::join::testing
