// A brute-force model of the as-of join, written from include/weir/join.h alone (with the
// reading order and lateness of time_join_model.h), for property tests that run the real
// engine and compare. O(n^2): every right event is looked at for every left event.
//
// Each left event L that is not late is emitted once, at L.ts, with the right event R of its
// key that is not late and has the largest R.ts <= L.ts (among equal times, the last read),
// if R.ts >= L.ts - lookback when lookback > 0; else with a null right. A left event waits
// until the watermark - grace has passed its time, so every right event that could be its
// partner and is not late has been read by then: which right events were read before the left
// one plays no part.
#pragma once

#include <cstdint>
#include <vector>

#include "join/time_join_model.h"

namespace weir::join::testing {

struct AsOfModelOptions {
  int64_t lookback = 0;  // 0: unbounded
  int64_t grace = 0;
};

inline ModelJoinOutput RunAsOfModel(const std::vector<ModelEvent>& left,
                                    const std::vector<ModelEvent>& right,
                                    const AsOfModelOptions& options) {
  return RunJoinModel(
      left, right, options.grace,
      [&](const ModelEvent& l, const std::vector<const ModelEvent*>& rights,
          std::vector<ModelJoined>& joined) {
        const ModelEvent* partner = nullptr;
        for (const ModelEvent* r : rights) {  // in reading order: ties go last
          if (r->ts > l.ts) continue;
          if (options.lookback > 0 && r->ts < l.ts - options.lookback) continue;
          if (partner == nullptr || r->ts >= partner->ts) partner = r;
        }
        joined.push_back(
            {l.key, l.ts, l.id, partner ? std::optional<int64_t>(partner->id) : std::nullopt});
      });
}

}  // namespace weir::join::testing
