// CanonicalRow: the one text form of a Nexmark query's output row, shared by the batch reference
// (reference.h) and the streaming pipelines, so the benchmark can compare the two as multisets
// of strings.
//
// Cells are joined by '|'. Integers in decimal; Double() with 17 significant digits ("{:.17g}",
// enough to round-trip any double); Fixed4() with 4 decimals ("{:.4f}"), for averages whose last
// bits depend on the order of summation; a null is "\N". In text, '\' and '|' are escaped with a
// '\', so no text cell can pass for a separator or a null.
// Thread safety: a value; one thread at a time. Clear() reuses the buffer between rows.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace weir::nexmark {

class CanonicalRow {
 public:
  void Int(int64_t v) {
    Separate();
    fmt::format_to(std::back_inserter(text_), "{}", v);
  }
  void Double(double v) {
    Separate();
    fmt::format_to(std::back_inserter(text_), "{:.17g}", v);
  }
  void Fixed4(double v) {
    Separate();
    fmt::format_to(std::back_inserter(text_), "{:.4f}", v);
  }
  void Text(std::string_view v) {
    Separate();
    for (char c : v) {
      if (c == '\\' || c == '|') text_.push_back('\\');
      text_.push_back(c);
    }
  }
  void Null() {
    Separate();
    text_ += "\\N";
  }

  std::string_view str() const { return text_; }
  void Clear() {
    text_.clear();
    cells_ = 0;
  }

 private:
  void Separate() {
    if (cells_++ > 0) text_.push_back('|');
  }

  std::string text_;
  int cells_ = 0;
};

}  // namespace weir::nexmark
