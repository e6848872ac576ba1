// SQL text built by the lake: literals and identifiers quoted for DuckDB, so a name or a path
// never changes the statement it is put in.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace weir::lake {

// 'text' with every ' doubled.
inline std::string SqlString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// "name" with every " doubled.
inline std::string SqlIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A double that reads back as the same double.
inline std::string SqlDouble(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

// The number a value of a view's sort column is certified and pruned by (PartitionRecord::
// sort_min/max): the value itself for a number, epoch milliseconds for a timestamp or a date,
// NULL for anything else. `expr` is SQL.
inline std::string SortKeyNumber(std::string_view expr) {
  const std::string e(expr);
  return "COALESCE(TRY_CAST(" + e + " AS DOUBLE), epoch_ms(TRY_CAST(" + e +
         " AS TIMESTAMP))::DOUBLE)";
}

}  // namespace weir::lake
