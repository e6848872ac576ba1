// What the lake learns of a query before running it, from DuckDB's parse tree of the statement
// (the output of json_serialize_sql, parsed into a weir::Value): that it is one SELECT, whether
// the certified scan order answers it, and which range of a view's sort column its WHERE keeps,
// so that partitions wholly outside that range are never opened. Everything here is
// conservative: a query it does not recognize is answered by reading every partition.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lake/catalog.h"
#include "sql/database.h"
#include "weir/status.h"
#include "weir/value.h"

namespace weir::lake {

// How many times `name` appears in `sql` as a word (an identifier, quoted or not), ignoring
// case. Names in string literals count too: a count is an upper bound.
int Occurrences(std::string_view sql, std::string_view name);
inline bool Mentions(std::string_view sql, std::string_view name) {
  return Occurrences(sql, name) > 0;
}

// OK when `tree` holds exactly one statement and it is a SELECT (WITH ... SELECT, VALUES,
// DESCRIBE and SHOW parse as one); kInvalidArgument saying what it is otherwise, including
// DuckDB's parser error. Parsing only: the names the statement uses need not exist.
Status CheckOneSelect(const Value& tree);

// Whether `p` records the range its rows have of `column` (sort_min/max): its file is sorted by
// `column` first, which is a number or a timestamp and never NULL in it.
bool CertifiesRange(const PartitionRecord& p, std::string_view column);

// A query the certified scan order can answer: ORDER BY the first sort column of a view
// declaring a concatenated order, with a LIMIT and nothing that looks across rows.
struct OrderedScan {
  const CatalogView* view = nullptr;  // one of `views` given to MatchOrderedScan
  bool descending = false;
  int64_t limit = 0;
};
std::optional<OrderedScan> MatchOrderedScan(const Value& tree,
                                            const std::vector<CatalogView>& views);

// A range of a view's first sort column outside which the query keeps no row of the view: the
// statement names the view once, as the FROM of a plain SELECT (no CTE, no join), whose WHERE is
// a conjunction holding comparisons or BETWEENs of that column with constants (numbers,
// strings, CASTs of strings to TIMESTAMP or DATE). The constants are SQL, evaluated by
// EvaluateSortRange.
struct SortRangeQuery {
  const CatalogView* view = nullptr;  // one of `views` given to MatchSortRange
  std::vector<std::string> lower;     // the column is >= (or >) each of these
  std::vector<std::string> upper;     // and <= (or <) each of these
};
std::optional<SortRangeQuery> MatchSortRange(const Value& tree, std::string_view statement,
                                             const std::vector<CatalogView>& views);

// The range, in the units of PartitionRecord::sort_min/max (SortKeyNumber), inclusive: strict
// comparisons are widened to non-strict ones, which never drops a partition holding a row.
struct SortRange {
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  // False only when `p` certifies its range of `column` (the view's first sort column) and that
  // range lies wholly outside this one.
  bool MayHold(const PartitionRecord& p, std::string_view column) const;
};
// Evaluates the constants on `db` (a constant that is no number or timestamp bounds nothing).
Result<SortRange> EvaluateSortRange(sql::Database& db, const SortRangeQuery& query);

}  // namespace weir::lake
