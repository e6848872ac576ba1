// A brute-force model of the interval join, written from include/weir/join.h alone (with the
// reading order and lateness of time_join_model.h), for property tests that run the real
// engine and compare. Every pair of events is looked at: O(n^2), obviously correct, not fast.
//
// A left event L and a right event R of one key, neither late, are joined when
// L.ts - lower <= R.ts <= L.ts + upper, at max(L.ts, R.ts). With left_outer, a left event that
// is not late and joined no right event is emitted at L.ts with a null right. Late events join
// nothing. Whether a pair is emitted does not depend on when state expires: an event is only
// dropped once no event that is not late can match it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "join/time_join_model.h"

namespace weir::join::testing {

struct IntervalModelOptions {
  int64_t lower = 0;
  int64_t upper = 0;
  int64_t grace = 0;
  bool left_outer = false;
};

inline ModelJoinOutput RunIntervalModel(const std::vector<ModelEvent>& left,
                                        const std::vector<ModelEvent>& right,
                                        const IntervalModelOptions& options) {
  return RunJoinModel(left, right, options.grace,
                      [&](const ModelEvent& l, const std::vector<const ModelEvent*>& rights,
                          std::vector<ModelJoined>& joined) {
                        bool matched = false;
                        for (const ModelEvent* r : rights) {
                          if (l.ts - options.lower <= r->ts && r->ts <= l.ts + options.upper) {
                            joined.push_back({l.key, std::max(l.ts, r->ts), l.id, r->id});
                            matched = true;
                          }
                        }
                        if (!matched && options.left_outer) {
                          joined.push_back({l.key, l.ts, l.id, std::nullopt});
                        }
                      });
}

}  // namespace weir::join::testing
