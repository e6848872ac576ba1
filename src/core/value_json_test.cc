// Value's JSON text handling checked against plain models:
//   - random JSON text (whitespace, escapes, \u sequences and surrogate pairs, nesting, numbers
//     in many spellings), valid and corrupted, through Value::Parse and through a small
//     reference parser written here that produces the canonical text directly: both accept or
//     both refuse, and Value's ToJson equals the reference's text;
//   - AssignJson over a value holding another document gives exactly what a fresh Parse gives;
//   - ObjectWriter / ArrayWriter rewriting one value through random shapes give what was asked;
//   - the depth, size and UTF-8 limits refuse with a reason naming them.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/value.h"

namespace weir {
namespace {

// ---------------------------------------------------------------------------------------------
// The reference: RFC 8259 by recursive descent, writing the canonical form as it goes. The
// canonical form is Value's documented one: compact; integers that fit int64 as integers, other
// numbers as doubles in the shortest form that reads back (std::to_chars), with ".0" added when
// that form has neither '.' nor 'e'; strings with '"', '\\' and the control characters escaped
// (\n \r \t \b \f by name, the rest as \u00xx in lower case) and everything else as UTF-8.

std::string CanonicalDouble(double d) {
  if (!std::isfinite(d)) return "null";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string CanonicalString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

struct ReferenceResult {
  bool ok = false;
  std::string canonical;
  // An integer literal outside both int64 and uint64: the contract makes it a double, Value
  // (simdjson 3.0) refuses it (see the disabled test IntegersBeyondInt64ParseAsDoubles).
  bool integer_beyond_64_bits = false;
  // A number that rounds to infinity: refused by both, as an implementation limit (RFC 8259 §6).
  bool number_overflows = false;
};

class ReferenceParser {
 public:
  static ReferenceResult Canonicalize(std::string_view text) {
    ReferenceParser p(text);
    ReferenceResult result;
    p.SkipSpace();
    result.ok = p.ParseValue() && (p.SkipSpace(), p.pos_ == text.size());
    if (result.ok) result.canonical = std::move(p.out_);
    result.integer_beyond_64_bits = p.integer_beyond_64_bits_;
    result.number_overflows = p.number_overflows_;
    return result;
  }

 private:
  explicit ReferenceParser(std::string_view in) : in_(in) {}

  bool AtEnd() const { return pos_ >= in_.size(); }
  char Peek() const { return AtEnd() ? '\0' : in_[pos_]; }
  bool IsDigit() const { return !AtEnd() && in_[pos_] >= '0' && in_[pos_] <= '9'; }
  bool Consume(char c) {
    if (AtEnd() || in_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (!AtEnd() &&
           (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool ParseValue() {
    if (AtEnd()) return false;
    switch (in_[pos_]) {
      case '{':
        return ParseObject();
      case '[':
        return ParseArray();
      case '"': {
        std::string s;
        if (!ParseString(s)) return false;
        out_ += CanonicalString(s);
        return true;
      }
      case 't':
        return ParseLiteral("true");
      case 'f':
        return ParseLiteral("false");
      case 'n':
        return ParseLiteral("null");
      default:
        return ParseNumber();
    }
  }

  bool ParseLiteral(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    out_ += word;
    return true;
  }

  bool ParseObject() {
    ++pos_;
    out_ += '{';
    SkipSpace();
    if (Consume('}')) {
      out_ += '}';
      return true;
    }
    for (bool first = true;; first = false) {
      if (!first) out_ += ',';
      if (Peek() != '"') return false;
      std::string name;
      if (!ParseString(name)) return false;
      out_ += CanonicalString(name);
      SkipSpace();
      if (!Consume(':')) return false;
      out_ += ':';
      SkipSpace();
      if (!ParseValue()) return false;
      SkipSpace();
      if (Consume('}')) {
        out_ += '}';
        return true;
      }
      if (!Consume(',')) return false;
      SkipSpace();
    }
  }

  bool ParseArray() {
    ++pos_;
    out_ += '[';
    SkipSpace();
    if (Consume(']')) {
      out_ += ']';
      return true;
    }
    for (bool first = true;; first = false) {
      if (!first) out_ += ',';
      if (!ParseValue()) return false;
      SkipSpace();
      if (Consume(']')) {
        out_ += ']';
        return true;
      }
      if (!Consume(',')) return false;
      SkipSpace();
    }
  }

  bool ParseHex4(uint32_t& v) {
    if (pos_ + 4 > in_.size()) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = in_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  bool ParseEscape(std::string& s) {
    if (AtEnd()) return false;
    switch (in_[pos_++]) {
      case '"':
        s += '"';
        return true;
      case '\\':
        s += '\\';
        return true;
      case '/':
        s += '/';
        return true;
      case 'b':
        s += '\b';
        return true;
      case 'f':
        s += '\f';
        return true;
      case 'n':
        s += '\n';
        return true;
      case 'r':
        s += '\r';
        return true;
      case 't':
        s += '\t';
        return true;
      case 'u': {
        uint32_t cp;
        if (!ParseHex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
        if (cp >= 0xD800 && cp <= 0xDBFF) {              // a high one needs its low one
          if (!Consume('\\') || !Consume('u')) return false;
          uint32_t low;
          if (!ParseHex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        AppendUtf8(cp, s);
        return true;
      }
      default:
        return false;
    }
  }

  // One UTF-8 sequence of two to four bytes (RFC 3629: no overlongs, no surrogates, at most
  // U+10FFFF), copied to `s`.
  bool ParseMultibyte(std::string& s) {
    const auto lead = static_cast<unsigned char>(in_[pos_]);
    size_t n;
    uint32_t cp;
    uint32_t min;
    if ((lead & 0xE0) == 0xC0) {
      n = 2, cp = lead & 0x1F, min = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      n = 3, cp = lead & 0x0F, min = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      n = 4, cp = lead & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (pos_ + n > in_.size()) return false;
    for (size_t i = 1; i < n; ++i) {
      const auto c = static_cast<unsigned char>(in_[pos_ + i]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    s.append(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }

  bool ParseString(std::string& s) {
    ++pos_;  // the opening quote
    while (!AtEnd()) {
      const auto c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++pos_;
        if (!ParseEscape(s)) return false;
      } else if (c < 0x80) {
        s += static_cast<char>(c);
        ++pos_;
      } else if (!ParseMultibyte(s)) {
        return false;
      }
    }
    return false;
  }

  bool ParseNumber() {
    const size_t start = pos_;
    bool integral = true;
    Consume('-');
    if (Consume('0')) {
    } else if (IsDigit()) {
      while (IsDigit()) ++pos_;
    } else {
      return false;
    }
    if (Consume('.')) {
      integral = false;
      if (!IsDigit()) return false;
      while (IsDigit()) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      integral = false;
      if (!Consume('+')) Consume('-');
      if (!IsDigit()) return false;
      while (IsDigit()) ++pos_;
    }
    const std::string text(in_.substr(start, pos_ - start));
    if (integral) {
      int64_t i;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
      if (ec == std::errc() && end == text.data() + text.size()) {
        out_ += std::to_string(i);
        return true;
      }
      uint64_t u;
      auto [uend, uec] = std::from_chars(text.data(), text.data() + text.size(), u);
      if (uec != std::errc() || uend != text.data() + text.size()) integer_beyond_64_bits_ = true;
    }
    const double d = std::strtod(text.c_str(), nullptr);  // correctly rounded (glibc)
    if (std::isinf(d)) {
      number_overflows_ = true;
      return false;
    }
    out_ += CanonicalDouble(d);
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string out_;
  bool integer_beyond_64_bits_ = false;
  bool number_overflows_ = false;
};

// ---------------------------------------------------------------------------------------------
// Random JSON text.

class DocumentGenerator {
 public:
  explicit DocumentGenerator(uint64_t seed) : rng_(seed) {}

  // A valid document (unless a number overflows a double) with random whitespace.
  std::string Document() {
    std::string out;
    Space(out);
    ValueText(out, 0);
    Space(out);
    return out;
  }

  // An object with some of a few fixed fields in random order, as a stream of records of a few
  // shapes looks: consecutive records reuse each other's members.
  std::string Record() {
    static constexpr std::string_view kFields[] = {"user", "ts", "page", "amount", "tags", "meta"};
    std::string out = "{";
    bool first = true;
    for (std::string_view field : kFields) {
      if (OneIn(4)) continue;
      if (!first) out += ',';
      first = false;
      Space(out);
      out += CanonicalString(field);
      out += ':';
      Space(out);
      ValueText(out, 3);
    }
    out += '}';
    return out;
  }

  // `doc` with one corruption: mostly invalid afterwards, sometimes still valid.
  std::string Corrupt(std::string doc) {
    static constexpr unsigned char kBytes[] = {0x00, 0x01, 0x1f, '"',  '\\', 0x7f, 0x80, 0xbf, 0xc0,
                                               0xc1, 0xe0, 0xed, 0xf4, 0xf5, 0xff, '{',  '}',  '[',
                                               ']',  ',',  ':',  'e',  '.',  '-',  '0',  ' ',  'u'};
    static constexpr std::string_view kInserts[] = {
        "\\ud800", "\\udc00",      "\\ud800\\u0041", "\\ude00\\ud83d",   "\\u12",
        "\\x",     "\xed\xa0\x80", "\xc0\xaf",       "\xf4\x90\x80\x80", "\xe2\x82"};
    const size_t at = Below(doc.size() + 1);
    switch (Below(6)) {
      case 0:
        if (at < doc.size()) doc[at] = static_cast<char>(kBytes[Below(sizeof kBytes)]);
        break;
      case 1:
        if (at < doc.size()) doc.erase(at, 1);
        break;
      case 2:
        doc.insert(doc.begin() + static_cast<ptrdiff_t>(at),
                   static_cast<char>(kBytes[Below(sizeof kBytes)]));
        break;
      case 3:
        doc.resize(at);
        break;
      case 4: {
        // Inside a string if there is one: the UTF-8 and surrogate checks.
        const size_t quote = doc.find('"', at);
        const size_t where = quote == std::string::npos ? at : quote + 1;
        doc.insert(where, kInserts[Below(std::size(kInserts))]);
        break;
      }
      default: {
        static constexpr std::string_view kTails[] = {" x", "[]", ",", std::string_view("\0", 1),
                                                      "}",  "1"};
        doc += kTails[Below(std::size(kTails))];
        break;
      }
    }
    return doc;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  void Space(std::string& out) {
    if (!OneIn(3)) return;
    for (size_t n = 1 + Below(3); n > 0; --n) out += " \t\n\r"[Below(4)];
  }

  void ValueText(std::string& out, int depth) {
    switch (Below(depth >= 5 ? 5 : 7)) {
      case 0: {
        static constexpr std::string_view kLiterals[] = {"null", "true", "false"};
        out += kLiterals[Below(3)];
        return;
      }
      case 1:
      case 2:
        NumberText(out);
        return;
      case 3:
      case 4:
        StringText(out);
        return;
      case 5: {
        out += '[';
        Space(out);
        for (size_t i = 0, n = Below(5); i < n; ++i) {
          if (i > 0) {
            out += ',';
            Space(out);
          }
          ValueText(out, depth + 1);
          Space(out);
        }
        out += ']';
        return;
      }
      default: {
        out += '{';
        Space(out);
        for (size_t i = 0, n = Below(5); i < n; ++i) {
          if (i > 0) {
            out += ',';
            Space(out);
          }
          if (OneIn(3)) {
            StringText(out);
          } else {  // few names, so duplicates and reuse of members happen
            static constexpr std::string_view kNames[] = {"a", "b", "id", "ts", "", "user"};
            out += CanonicalString(kNames[Below(std::size(kNames))]);
          }
          Space(out);
          out += ':';
          Space(out);
          ValueText(out, depth + 1);
          Space(out);
        }
        out += '}';
        return;
      }
    }
  }

  std::string Digits(size_t n, bool leading_nonzero) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      s += static_cast<char>(i == 0 && leading_nonzero ? '1' + Below(9) : '0' + Below(10));
    }
    return s;
  }
  std::string IntegerPart() { return OneIn(4) ? "0" : Digits(1 + Below(6), true); }

  double RandomFiniteDouble() {
    for (;;) {
      const uint64_t bits = rng_();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      if (std::isfinite(d)) return d;
    }
  }

  void NumberText(std::string& out) {
    // Forms without a sign of their own get one at random.
    std::string n;
    bool signable = true;
    switch (Below(12)) {
      case 0:
        n = std::to_string(Below(1000));
        break;
      case 1: {
        static constexpr std::string_view kEdges[] = {"0",
                                                      "-0",
                                                      "9223372036854775807",
                                                      "-9223372036854775808",
                                                      "9223372036854775806",
                                                      "-9223372036854775807",
                                                      "9223372036854775808",
                                                      "18446744073709551615",
                                                      "18446744073709551614",
                                                      "9007199254740992",
                                                      "9007199254740993",
                                                      "-9007199254740993",
                                                      "4294967296",
                                                      "2147483648",
                                                      "-2147483649"};
        n = kEdges[Below(std::size(kEdges))];
        signable = false;
        break;
      }
      case 2:
        n = std::to_string(static_cast<int64_t>(rng_()) >> Below(64));
        signable = false;
        break;
      case 3:
        n = std::to_string(rng_() | (uint64_t{1} << 63));  // above int64: a double
        signable = false;
        break;
      case 4:
        n = IntegerPart() + "." + Digits(1 + Below(20), false);
        break;
      case 5: {
        n = IntegerPart();
        if (OneIn(2)) n += "." + Digits(1 + Below(8), false);
        n += OneIn(2) ? 'e' : 'E';
        if (!OneIn(3)) n += OneIn(2) ? '+' : '-';
        if (OneIn(5)) n += "0";  // a leading zero in an exponent is allowed
        n += std::to_string(Below(OneIn(4) ? 400 : 30));
        break;
      }
      case 6: {
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, RandomFiniteDouble());
        n.assign(buf, r.ptr);
        signable = false;
        break;
      }
      case 7: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*g", static_cast<int>(1 + Below(17)),
                      RandomFiniteDouble());
        n = buf;
        signable = false;
        break;
      }
      case 8:  // more digits than a double holds: the slow, exact path
        n = OneIn(2) ? "0." + Digits(20 + Below(30), false)
                     : Digits(1 + Below(3), true) + "." + Digits(20 + Below(30), false);
        if (OneIn(2)) n += "e" + std::to_string(static_cast<int>(Below(80)) - 40);
        break;
      case 9: {
        static constexpr std::string_view kEdges[] = {"4.9e-324",
                                                      "5e-324",
                                                      "2.4703282292062327e-324",
                                                      "2.4703282292062328e-324",
                                                      "2.2250738585072011e-308",
                                                      "2.2250738585072014e-308",
                                                      "1.7976931348623157e308",
                                                      "1.7976931348623158e308",
                                                      "1e-400",
                                                      "0e0",
                                                      "0.0e-999",
                                                      "0e999",
                                                      "1e308",
                                                      "1E-7",
                                                      "9.999999999999999e22",
                                                      "1e23",
                                                      "0.30000000000000004",
                                                      "1e15",
                                                      "1e16",
                                                      "1e21",
                                                      "123456789012345678.5",
                                                      "1.7976931348623159e308",
                                                      "1e309"};
        n = kEdges[Below(std::size(kEdges))];
        break;
      }
      case 10: {
        const double d =
            std::ldexp(static_cast<double>(Below(1u << 30)), static_cast<int>(Below(200)) - 100);
        char buf[400];
        const auto format = OneIn(2) ? std::chars_format::scientific : std::chars_format::fixed;
        auto r = std::to_chars(buf, buf + sizeof buf, d, format, static_cast<int>(Below(25)));
        n.assign(buf, r.ptr);
        break;
      }
      default: {
        const double d = static_cast<double>(Below(1000000)) / static_cast<double>(1 + Below(1000));
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, d);
        n.assign(buf, r.ptr);
        break;
      }
    }
    if (signable && OneIn(3)) out += '-';
    out += n;
  }

  void HexEscape(uint32_t cp, std::string& out) {
    static constexpr char kLower[] = "0123456789abcdef";
    static constexpr char kUpper[] = "0123456789ABCDEF";
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) {
      // Two statements: GCC 12's -fsanitize=shift miscompiles `(Call() ? a : b)[x >> s]`.
      const char* digits = OneIn(2) ? kLower : kUpper;
      out += digits[(cp >> shift) & 0xF];
    }
  }

  uint32_t RandomScalar() {  // a Unicode scalar value above ASCII, not a surrogate
    for (;;) {
      uint32_t cp;
      switch (Below(3)) {
        case 0:
          cp = 0x80 + static_cast<uint32_t>(Below(0x800 - 0x80));
          break;
        case 1:
          cp = 0x800 + static_cast<uint32_t>(Below(0x10000 - 0x800));
          break;
        default:
          cp = 0x10000 + static_cast<uint32_t>(Below(0x110000 - 0x10000));
      }
      if (cp < 0xD800 || cp > 0xDFFF) return cp;
    }
  }

  void StringText(std::string& out) {
    out += '"';
    for (size_t pieces = Below(8); pieces > 0; --pieces) {
      switch (Below(10)) {
        case 0:
        case 1:
        case 2:
          for (size_t n = 1 + Below(5); n > 0; --n) {
            char c = static_cast<char>(0x20 + Below(0x7f - 0x20));
            out += (c == '"' || c == '\\') ? 'q' : c;
          }
          break;
        case 3: {
          static constexpr std::string_view kEscapes[] = {"\\\"", "\\\\", "\\/", "\\b",
                                                          "\\f",  "\\n",  "\\r", "\\t"};
          out += kEscapes[Below(std::size(kEscapes))];
          break;
        }
        case 4:  // \u escapes of ASCII, control characters included
          HexEscape(static_cast<uint32_t>(Below(0x80)), out);
          break;
        case 5: {  // \u escapes of the BMP
          uint32_t cp;
          do {
            cp = static_cast<uint32_t>(Below(0x10000));
          } while (cp >= 0xD800 && cp <= 0xDFFF);
          HexEscape(cp, out);
          break;
        }
        case 6: {  // a surrogate pair
          const uint32_t cp = 0x10000 + static_cast<uint32_t>(Below(0x100000));
          HexEscape(0xD800 + ((cp - 0x10000) >> 10), out);
          HexEscape(0xDC00 + ((cp - 0x10000) & 0x3FF), out);
          break;
        }
        case 7:
          AppendUtf8(RandomScalar(), out);
          break;
        case 8: {
          static constexpr std::string_view kRaw[] = {
              "\x7f", "\xe2\x80\xa8", "\xef\xbb\xbf", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf",
              "/",    "\xc2\x80"};
          out += kRaw[Below(std::size(kRaw))];
          break;
        }
        default:
          out += "'";
      }
    }
    out += '"';
  }

  std::mt19937_64 rng_;
};

// Bytes as a C string literal would show them, for failure messages.
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 2000)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 2000) out += "...";
  return out;
}

std::string Binary(const Value& v) {
  std::string out;
  v.AppendBinary(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parsing against the reference.

// Integers are written without std::to_chars (eight digits at a time, by multiplies): every
// length, both sides of every power of ten, both ends of the range and random values of every
// magnitude must come out as std::to_chars writes them, also after other text and inside a
// document (the writer stores whole words past the digits).
TEST(ValueJson, IntegersAreWrittenAsToCharsWritesThem) {
  auto expected = [](int64_t v) {
    char buf[24];
    return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
  };
  std::vector<int64_t> values = {0, 1, -1, 9, 10, 99, 100, 12345678, 100000000, 1700000000000,
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::min() + 1};
  for (int64_t power = 1; power <= std::numeric_limits<int64_t>::max() / 10; power *= 10) {
    for (int64_t v : {power - 1, power, power + 1, 10 * power - 1}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  for (int64_t v = -20000; v <= 20000; ++v) values.push_back(v);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const int bits = std::uniform_int_distribution<int>(1, 63)(rng);
    const auto v = static_cast<int64_t>(rng() >> (64 - bits));
    values.push_back(i % 2 == 0 ? v : -v);
  }
  for (int64_t v : values) {
    std::string out = "x";
    Value(v).AppendJson(out);
    ASSERT_EQ(out, "x" + expected(v)) << v;
  }
  const Value document = Value::MakeObject(
      {{"a", std::numeric_limits<int64_t>::min()}, {"b", 7}, {"c", Value::MakeArray({10, -3})}});
  EXPECT_EQ(document.ToJson(), R"({"a":-9223372036854775808,"b":7,"c":[10,-3]})");
}

TEST(ValueJson, TrickyDocumentsHaveTheirCanonicalForm) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {R"( { "a" : [ 1 , 2 ] , "b" : { } } )", R"({"a":[1,2],"b":{}})"},
      {R"("\u00e9\u00C9")", "\"\xc3\xa9\xc3\x89\""},
      {R"("\ud83d\ude00")", "\"\xf0\x9f\x98\x80\""},
      {R"("\uDBFF\uDFFF")", "\"\xf4\x8f\xbf\xbf\""},
      {R"("\/\b\f\n\r\t\"\\")", R"("/\b\f\n\r\t\"\\")"},
      {R"("\u0000\u001F\u007f\u0020")", "\"\\u0000\\u001f\x7f \""},
      {"\"\xe2\x80\xa8\"", "\"\xe2\x80\xa8\""},
      {"-0", "0"},
      {"-0.0", "-0.0"},
      {"-1e-400", "-0.0"},
      {"1e-400", "0.0"},
      {"1E2", "100.0"},
      {"1e16", "1e+16"},
      {"0.1", "0.1"},
      {"123e-2", "1.23"},
      {"5e-324", "5e-324"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"9223372036854775808", "9223372036854775808.0"},
      {"18446744073709551615", "18446744073709551616.0"},
      {"1.7976931348623157e308", "1.7976931348623157e+308"},
      {R"({"a":1,"a":2})", R"({"a":1,"a":2})"},
      {R"({"\u0000":[[],{}]})", R"({"\u0000":[[],{}]})"},
  };
  for (const auto& [input, canonical] : cases) {
    auto parsed = Value::Parse(input);
    ASSERT_TRUE(parsed.ok()) << input << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->ToJson(), canonical) << input;
    const ReferenceResult ref = ReferenceParser::Canonicalize(input);
    ASSERT_TRUE(ref.ok) << input;
    EXPECT_EQ(ref.canonical, canonical) << input;
  }
}

TEST(ValueJson, RandomTextParsesLikeTheReferenceParser) {
  DocumentGenerator gen(20240601);
  int accepted = 0;
  int refused = 0;
  int beyond_64_bits = 0;
  for (int i = 0; i < 100000; ++i) {
    const bool corrupt = i % 4 == 3;
    const std::string doc = corrupt ? gen.Corrupt(gen.Document()) : gen.Document();
    const ReferenceResult ref = ReferenceParser::Canonicalize(doc);
    if (ref.integer_beyond_64_bits) {  // only a corruption makes one; see the disabled test
      ++beyond_64_bits;
      continue;
    }
    if (!corrupt) {
      ASSERT_TRUE(ref.ok || ref.number_overflows) << "the generator wrote " << Printable(doc);
    }
    auto parsed = Value::Parse(doc);
    ASSERT_EQ(parsed.ok(), ref.ok)
        << Printable(doc)
        << "\n  Value: " << (parsed.ok() ? parsed->ToJson() : parsed.status().ToString());
    if (!parsed.ok()) {
      ++refused;
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
      continue;
    }
    ++accepted;
    ASSERT_EQ(parsed->ToJson(), ref.canonical) << Printable(doc);
  }
  EXPECT_GT(accepted, 70000);
  EXPECT_GT(refused, 15000);
  EXPECT_LT(beyond_64_bits, 500);
}

TEST(ValueJson, CanonicalTextIsAFixedPoint) {
  DocumentGenerator gen(99);
  for (int i = 0; i < 5000; ++i) {
    auto parsed = Value::Parse(gen.Document());
    if (!parsed.ok()) continue;  // an overflowing number
    const std::string text = parsed->ToJson();
    auto again = Value::Parse(text);
    ASSERT_TRUE(again.ok()) << Printable(text);
    ASSERT_EQ(again->ToJson(), text);
    ASSERT_EQ(Binary(*again), Binary(*parsed)) << Printable(text);
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing in place.

TEST(ValueJson, AssignJsonOverAnotherDocumentEqualsAFreshParse) {
  DocumentGenerator gen(7);
  for (int i = 0; i < 5000; ++i) {
    const std::string before = i % 2 == 0 ? gen.Document() : gen.Record();
    std::string after = i % 3 == 0 ? gen.Document() : gen.Record();
    if (i % 7 == 0) after = gen.Corrupt(after);
    Value v;
    (void)v.AssignJson(before);
    const Status status = v.AssignJson(after);
    auto fresh = Value::Parse(after);
    ASSERT_EQ(status.ok(), fresh.ok()) << Printable(before) << " then " << Printable(after);
    if (!status.ok()) {
      EXPECT_TRUE(v.is_null()) << Printable(after);
      EXPECT_EQ(status.message(), fresh.status().message());
      continue;
    }
    ASSERT_EQ(v, *fresh) << Printable(before) << " then " << Printable(after);
    ASSERT_EQ(Binary(v), Binary(*fresh)) << Printable(before) << " then " << Printable(after);
  }
}

TEST(ValueJson, OneSlotReusedForAStreamOfDocumentsHoldsEachInTurn) {
  DocumentGenerator gen(8);
  Value slot;
  int failures = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string doc = i % 5 == 0 ? gen.Document() : gen.Record();
    if (i % 11 == 0) doc = gen.Corrupt(doc);
    const Status status = slot.AssignJson(doc);
    auto fresh = Value::Parse(doc);
    ASSERT_EQ(status.ok(), fresh.ok()) << Printable(doc);
    if (!status.ok()) {
      ++failures;
      ASSERT_TRUE(slot.is_null());
      continue;
    }
    ASSERT_EQ(Binary(slot), Binary(*fresh)) << i << ": " << Printable(doc);
  }
  EXPECT_GT(failures, 100);
}

// The binary form read in place (internal topics' records into reused slots): over whatever the
// slot held before, it gives what ReadBinary gives, consumes exactly the value's bytes, and a cut
// or corrupt form leaves the slot null with an error.
TEST(ValueJson, AssignBinaryOverAnotherValueEqualsAFreshRead) {
  DocumentGenerator gen(9);
  Value slot;
  int failures = 0;
  for (int i = 0; i < 5000; ++i) {
    (void)slot.AssignJson(i % 2 == 0 ? gen.Document() : gen.Record());
    auto doc = Value::Parse(i % 3 == 0 ? gen.Document() : gen.Record());
    if (!doc.ok()) continue;
    std::string bin = Binary(*doc);
    if (i % 7 == 0) bin.resize(bin.size() / 2);     // cut
    if (i % 11 == 0) bin[bin.size() / 3] = '\x09';  // an unknown tag, or a bad length
    bin += "next";
    std::string_view in = bin;
    const Status status = slot.AssignBinary(in);
    std::string_view fresh_in = bin;
    auto fresh = Value::ReadBinary(fresh_in);
    ASSERT_EQ(status.ok(), fresh.ok()) << i;
    if (!status.ok()) {
      ++failures;
      EXPECT_TRUE(slot.is_null());
      EXPECT_EQ(status.code(), StatusCode::kCorruption);
      continue;
    }
    ASSERT_EQ(Binary(slot), Binary(*fresh)) << i;
    if (i % 7 != 0 && i % 11 != 0) {
      ASSERT_EQ(slot, *doc) << i;
      ASSERT_EQ(in, "next") << i;
    }
  }
  EXPECT_GT(failures, 500);
}

TEST(ValueJson, AssignBinaryKeepsTheSlotsMemory) {
  Value slot = *Value::Parse(R"({"bidder":1,"name":"a name of some length","tags":[1,2,3]})");
  const char* name_bytes = slot.Find("name")->as_string().data();
  const Value::Member* members = slot.as_object().data();
  const std::string bin = Binary(*Value::Parse(R"({"bidder":2,"name":"another","tags":[4]})"));
  std::string_view in = bin;
  ASSERT_TRUE(slot.AssignBinary(in).ok());
  EXPECT_EQ(slot.ToJson(), R"({"bidder":2,"name":"another","tags":[4]})");
  EXPECT_EQ(slot.Find("name")->as_string().data(), name_bytes);
  EXPECT_EQ(slot.as_object().data(), members);
}

// ---------------------------------------------------------------------------------------------
// Writers.

// Writes `spec` into `target` through the in-place writers, as a source fills a record slot.
void WriteInPlace(const Value& spec, Value& target) {
  switch (spec.type()) {
    case Value::Type::kObject: {
      Value::ObjectWriter members(target);
      for (const Value::Member& m : spec.as_object()) WriteInPlace(m.second, members.Add(m.first));
      return;
    }
    case Value::Type::kArray: {
      Value::ArrayWriter items(target);
      for (const Value& item : spec.as_array()) WriteInPlace(item, items.Add());
      return;
    }
    case Value::Type::kString:
      target.AssignString(spec.as_string());
      return;
    default:
      target = spec;
  }
}

Value RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth >= 4 ? 5 : 7)) {
    case 0:
      return rng() % 2 == 0 ? Value() : Value(rng() % 2 == 0);
    case 1:
      return Value(static_cast<int64_t>(rng()) >> (rng() % 64));
    case 2: {
      static constexpr double kDoubles[] = {0.0,
                                            -0.0,
                                            1.5,
                                            -2.25e300,
                                            5e-324,
                                            std::numeric_limits<double>::quiet_NaN(),
                                            std::numeric_limits<double>::infinity()};
      return Value(kDoubles[rng() % std::size(kDoubles)]);
    }
    case 3:
    case 4: {
      // Lengths either side of the short-string buffer, so buffers grow and shrink.
      std::string s(rng() % 3 == 0 ? rng() % 100 : rng() % 8, 'x');
      for (char& c : s) c = static_cast<char>('a' + rng() % 26);
      return Value(s);
    }
    case 5: {
      Value::Array a;
      for (size_t n = rng() % 6; n > 0; --n) a.push_back(RandomValue(rng, depth + 1));
      return Value(std::move(a));
    }
    default: {
      static constexpr std::string_view kNames[] = {"a", "b", "c", "a_rather_longer_member_name"};
      Value::Object o;
      for (size_t n = rng() % 6; n > 0; --n) {
        o.emplace_back(std::string(kNames[rng() % std::size(kNames)]), RandomValue(rng, depth + 1));
      }
      return Value(std::move(o));
    }
  }
}

TEST(ValueJson, WritersReusingOneValueGiveWhatAFreshValueHolds) {
  std::mt19937_64 rng(11);
  Value target;
  for (int i = 0; i < 20000; ++i) {
    const Value spec = RandomValue(rng, 0);
    WriteInPlace(spec, target);
    // Binary, not ==: NaN is in the mix, and -0.0 must stay -0.0.
    ASSERT_EQ(Binary(target), Binary(spec)) << i << ": " << spec.ToJson();
    ASSERT_EQ(target.ToJson(), spec.ToJson());
  }
}

// The writer scans and copies strings 16 bytes at a time, a shorter tail through a padded block:
// every length around those sizes, with a byte of each kind (escaped or not) at every position,
// alone and beside another escape, gives the reference's text, after what `out` held.
TEST(ValueJson, StringsAreEscapedAtEveryPositionAndLength) {
  const unsigned char kinds[] = {0x00, 0x01, 0x1f, '"',  '\\', '\n',
                                 '\t', 0x20, 'a',  0x7f, 0x80, 0xff};
  for (size_t length = 0; length <= 49; ++length) {
    for (size_t at = 0; at < std::max<size_t>(length, 1); ++at) {
      for (unsigned char kind : kinds) {
        for (bool second : {false, true}) {
          std::string s(length, 'x');
          for (size_t i = 0; i < length; ++i) s[i] = static_cast<char>('a' + i % 26);
          if (length > 0) s[at] = static_cast<char>(kind);
          if (second && length > 1) s[(at + 7) % length] = '"';
          std::string out = "prefix";
          AppendJsonString(out, s);
          ASSERT_EQ(out, "prefix" + CanonicalString(s))
              << "length " << length << " at " << at << " byte " << int{kind};
        }
      }
    }
  }
}

TEST(ValueJson, ObjectWriterShrinksGrowsAndRenamesMembers) {
  Value v;
  {
    Value::ObjectWriter w(v);
    w.Add("a") = 1;
    w.Add("b").AssignString("a string longer than any small-string buffer");
    w.Add("c") = Value::MakeObject({{"x", 1}, {"y", 2}});
    w.Add("d") = Value::Array{1, 2, 3};
  }
  EXPECT_EQ(v.ToJson(),
            R"({"a":1,"b":"a string longer than any small-string buffer","c":{"x":1,"y":2},)"
            R"("d":[1,2,3]})");
  {
    Value::ObjectWriter w(v);
    w.Add("b").AssignString("short");  // a renamed slot: "a" becomes "b"
    w.Add("c") = 2.5;                  // an object member becomes a double
  }
  EXPECT_EQ(v.ToJson(), R"({"b":"short","c":2.5})");
  {
    Value::ObjectWriter w(v);
    w.Add("b") = nullptr;
    Value::ArrayWriter items(w.Add("c"));  // a double member becomes an array
    items.Add() = 1;
    Value::ObjectWriter inner(items.Add());
    inner.Add("deep") = true;
  }
  EXPECT_EQ(v.ToJson(), R"({"b":null,"c":[1,{"deep":true}]})");
  {
    Value::ObjectWriter w(v);
    for (int i = 0; i < 10; ++i) w.Add("m" + std::to_string(i)) = i;
  }
  EXPECT_EQ(v.as_object().size(), 10u);
  EXPECT_EQ(v.Find("m9")->as_int(), 9);
  { Value::ObjectWriter w(v); }
  EXPECT_EQ(v.ToJson(), "{}");
}

TEST(ValueJson, WritersChangeTheTypeOfTheirTarget) {
  Value v("a string");
  { Value::ArrayWriter w(v); }
  EXPECT_EQ(v.ToJson(), "[]");
  {
    Value::ObjectWriter w(v);
    w.Add("k").AssignString("v");
  }
  EXPECT_EQ(v.ToJson(), R"({"k":"v"})");
  {
    Value::ArrayWriter w(v);
    w.Add().AssignString("x");
    w.Add() = Value::MakeObject({{"n", 1}});
  }
  EXPECT_EQ(v.ToJson(), R"(["x",{"n":1}])");
  {
    Value::ArrayWriter w(v);
    w.Add() = 1;  // a string item becomes an int, the object item is dropped
  }
  EXPECT_EQ(v.ToJson(), "[1]");
  v.AssignString("back to a string");
  EXPECT_EQ(v.ToJson(), R"("back to a string")");
}

TEST(ValueJson, ObjectWriterAddGivesTheReusedSlotsOldValue) {
  Value v = Value::MakeObject({{"a", Value::MakeObject({{"x", 1}})}, {"b", 2}});
  {
    Value::ObjectWriter w(v);
    Value& a = w.Add("a");
    EXPECT_EQ(a.ToJson(), R"({"x":1})");  // untouched until written
    Value& renamed = w.Add("z");
    EXPECT_EQ(renamed.as_int(), 2);
    renamed = 3;
  }
  EXPECT_EQ(v.ToJson(), R"({"a":{"x":1},"z":3})");
}

// ---------------------------------------------------------------------------------------------
// Limits.

std::string NestedArrays(int levels, std::string_view innermost) {
  return std::string(levels, '[') + std::string(innermost) + std::string(levels, ']');
}

std::string NestedObjects(int levels, std::string_view innermost) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += R"({"k":)";
  s += innermost;
  s += std::string(levels, '}');
  return s;
}

void ExpectRefusedNaming(std::string_view doc, std::string_view words) {
  SCOPED_TRACE(Printable(doc.substr(0, 80)));
  auto parsed = Value::Parse(doc);
  ASSERT_FALSE(parsed.ok()) << Printable(doc.substr(0, 80));
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find(words), std::string::npos) << parsed.status().message();
  Value reused = Value::MakeObject({{"held", "before"}});
  EXPECT_FALSE(reused.AssignJson(doc).ok());
  EXPECT_TRUE(reused.is_null());
}

TEST(ValueJson, NestingOf512LevelsParses) {
  // 512 containers, the innermost empty (see the disabled test below for one holding a value).
  for (const std::string& doc :
       {NestedArrays(Value::kMaxDepth - 1, "[]"), NestedObjects(Value::kMaxDepth - 1, "{}"),
        NestedArrays(Value::kMaxDepth - 1, "{}"),
        NestedArrays(Value::kMaxDepth - 2, R"({"k":[]})")}) {
    auto parsed = Value::Parse(doc);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->ToJson(), doc);
    // Whatever parses can be stored: the binary form takes the same depth.
    const std::string bin = Binary(*parsed);
    std::string_view in = bin;
    auto back = Value::ReadBinary(in);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, *parsed);
  }
}

// DISABLED: Value::kMaxDepth says 512 levels, but simdjson's max_depth counts the document as a
// level, so AssignJson's parser.allocate(..., kMaxDepth) refuses 512 containers unless the
// innermost is empty (an empty container is not descended into). Reported; enable once fixed.
TEST(ValueJson, NestingOf512LevelsWithAValueInsideParses) {
  for (const std::string& doc :
       {NestedArrays(Value::kMaxDepth, "1"), NestedObjects(Value::kMaxDepth, R"("v")"),
        NestedArrays(Value::kMaxDepth - 1, R"({"k":1})")}) {
    auto parsed = Value::Parse(doc);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->ToJson(), doc);
  }
}

TEST(ValueJson, NestingOf513LevelsIsRefusedNamingTheLimit) {
  for (const std::string& doc :
       {NestedArrays(Value::kMaxDepth, "[]"), NestedObjects(Value::kMaxDepth, "{}"),
        NestedArrays(Value::kMaxDepth + 1, "1"),
        NestedArrays(Value::kMaxDepth / 2, NestedObjects(Value::kMaxDepth / 2, "[1]")),
        NestedArrays(100000, "")}) {
    ExpectRefusedNaming(doc, "deeper than the limit of 512 levels");
  }
}

TEST(ValueJson, DocumentOverTheSizeLimitIsRefusedNamingTheLimit) {
  // One string of exactly the limit parses; one byte more is refused before being copied.
  std::string doc(Value::kMaxJsonBytes, 'x');
  doc.front() = '"';
  doc.back() = '"';
  {
    auto parsed = Value::Parse(doc);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->as_string().size(), Value::kMaxJsonBytes - 2);
  }
  doc += ' ';  // trailing whitespace: valid JSON, one byte too long
  ExpectRefusedNaming(doc, "over the limit of 67108864");
}

TEST(ValueJson, InvalidUtf8IsRefused) {
  for (std::string_view doc : {
           "\"\xff\"",              // never valid
           "\"\x80\"",              // a lone continuation byte
           "\"\xc0\xaf\"",          // overlong '/'
           "\"\xe0\x80\xaf\"",      // overlong, three bytes
           "\"\xed\xa0\x80\"",      // an encoded surrogate
           "\"\xf4\x90\x80\x80\"",  // above U+10FFFF
           "\"\xe2\x82\"",          // truncated
           "{\"k\xfe\":1}",         // in a member name
           "[\"ok\",\"\xc3\"]",     // truncated at the end of a string
           "[1]\xc3",               // after the document
       }) {
    ExpectRefusedNaming(doc, "UTF-8");
    EXPECT_FALSE(ReferenceParser::Canonicalize(doc).ok) << Printable(doc);
  }
}

TEST(ValueJson, LoneSurrogateEscapesAreRefused) {
  for (std::string_view doc : {R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")",
                               R"("\ude00\ud83d")", R"("\ud800x")", R"({"\udbff":1})"}) {
    ExpectRefusedNaming(doc, "malformed JSON");
    EXPECT_FALSE(ReferenceParser::Canonicalize(doc).ok) << doc;
  }
}

TEST(ValueJson, IntegersJustBeyondInt64ParseAsDoubles) {
  for (std::string_view doc : {"9223372036854775808", "18446744073709551615"}) {
    auto parsed = Value::Parse(doc);
    ASSERT_TRUE(parsed.ok()) << doc;
    EXPECT_TRUE(parsed->is_double()) << doc;
    EXPECT_EQ(parsed->as_double(), std::strtod(std::string(doc).c_str(), nullptr));
  }
}

// DISABLED: the header says "JSON integers that fit int64 are ints; other numbers are doubles",
// but simdjson 3.0 refuses an integer literal outside both int64 and uint64 ("malformed JSON:
// Problem while parsing a number"), so -9223372036854775809 or a 20-digit id becomes a dead
// letter while 18446744073709551615 is read. Reported; enable once fixed.
// An integer that fits uint64 but not int64 is a double; beyond 64 bits it is refused as out of
// range (a dead letter at a source), as value.h says.
TEST(ValueJson, IntegersBeyond64BitsAreRefusedAsOutOfRange) {
  auto uint64_max = Value::Parse("18446744073709551615");
  ASSERT_TRUE(uint64_max.ok());
  EXPECT_TRUE(uint64_max->is_double());
  for (std::string_view doc : {"-9223372036854775809", "18446744073709551616",
                               "100000000000000000000000", "[-100000000000000000000000]"}) {
    ExpectRefusedNaming(doc, "number out of range");
  }
}

TEST(ValueJson, NumbersThatOverflowADoubleAreRefused) {
  for (std::string_view doc : {"1e400", "-1e400", "1.7976931348623159e308", "[1e309]"}) {
    auto parsed = Value::Parse(doc);
    EXPECT_FALSE(parsed.ok()) << doc;
    EXPECT_TRUE(ReferenceParser::Canonicalize(doc).number_overflows) << doc;
  }
}

}  // namespace
}  // namespace weir
