// The Nexmark queries Weir runs (queries.h) and verifies against DuckDB (reference.h).
#pragma once

#include <string>
#include <string_view>

#include "weir/status.h"

namespace weir::nexmark {

enum class Query { kQ0, kQ1, kQ2, kQ3, kQ4, kQ5, kQ7, kQ8, kQ11, kQ12 };

inline constexpr Query kAllQueries[] = {Query::kQ0,  Query::kQ1, Query::kQ2, Query::kQ3,
                                        Query::kQ4,  Query::kQ5, Query::kQ7, Query::kQ8,
                                        Query::kQ11, Query::kQ12};

inline std::string_view QueryName(Query query) {
  constexpr std::string_view kNames[] = {"q0", "q1", "q2", "q3",  "q4",
                                         "q5", "q7", "q8", "q11", "q12"};
  return kNames[static_cast<int>(query)];
}

// kInvalidArgument listing the known names.
inline Result<Query> ParseQuery(std::string_view name) {
  std::string known;
  for (Query q : kAllQueries) {
    if (QueryName(q) == name) return q;
    known += (known.empty() ? "" : ", ") + std::string(QueryName(q));
  }
  return Status::InvalidArgument("unknown Nexmark query '" + std::string(name) +
                                 "' (known: " + known + ")");
}

// True when the query's output is a changelog whose answer is the last record of each key
// (q4's running average per category); otherwise every output record is a row of the answer.
inline bool LastPerKey(Query query) { return query == Query::kQ4; }

}  // namespace weir::nexmark
