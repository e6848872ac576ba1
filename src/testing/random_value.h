// Test support: random Values of every type, nested to a bounded depth, for round-trip and
// property tests. Doubles are finite (a NaN is not equal to itself); strings are ASCII.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "weir/value.h"

namespace weir::testing {

inline Value RandomValue(std::mt19937_64& rng, int depth = 0) {
  switch (rng() % (depth > 3 ? 5 : 7)) {
    case 0:
      return Value();
    case 1:
      return Value(rng() % 2 == 0);
    case 2:
      return Value(static_cast<int64_t>(rng()));
    case 3:
      return Value(
          std::ldexp(static_cast<double>(rng() % 1000000), static_cast<int>(rng() % 40) - 20));
    case 4: {
      std::string s;
      for (size_t n = rng() % 12; n > 0; --n) s.push_back(static_cast<char>(rng() % 128));
      return Value(s);
    }
    case 5: {
      Value::Array a;
      for (size_t n = rng() % 4; n > 0; --n) a.push_back(RandomValue(rng, depth + 1));
      return Value(std::move(a));
    }
    default: {
      Value::Object o;
      for (size_t n = rng() % 4; n > 0; --n) {
        o.emplace_back("k" + std::to_string(rng() % 100), RandomValue(rng, depth + 1));
      }
      return Value(std::move(o));
    }
  }
}

}  // namespace weir::testing
