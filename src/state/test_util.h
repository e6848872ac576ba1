// Helpers for the state tests: a fresh directory per test, and the seed of a property test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>

namespace weir::state {

// A directory removed with everything in it when the test ends.
class TestTempDir {
 public:
  TestTempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "weir-state-XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~TestTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TestTempDir(const TestTempDir&) = delete;
  TestTempDir& operator=(const TestTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// WEIR_TEST_SEED reproduces a failing run; otherwise each run explores a new seed. Tests print the
// seed they use (SCOPED_TRACE) so that a failure names it.
inline uint64_t TestSeed() {
  if (const char* seed = getenv("WEIR_TEST_SEED")) return std::stoull(seed);
  return std::random_device{}();
}

}  // namespace weir::state
