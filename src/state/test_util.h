// Helpers for the state tests: a fresh directory per test, and the seed of a property test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>

#include "testing/temp_dir.h"

namespace weir::state {

using TestTempDir = weir::testing::TempDir;

// WEIR_TEST_SEED reproduces a failing run; otherwise each run explores a new seed. Tests print the
// seed they use (SCOPED_TRACE) so that a failure names it.
inline uint64_t TestSeed() {
  if (const char* seed = getenv("WEIR_TEST_SEED")) return std::stoull(seed);
  return std::random_device{}();
}

}  // namespace weir::state
