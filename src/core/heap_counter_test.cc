// The hook around malloc counts what this process allocates, on every thread.
#include "core/heap_counter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

namespace weir {
namespace {

TEST(HeapCounter, CountsEveryAllocationOnEveryThread) {
  if (!HeapAllocations())
    GTEST_SKIP() << "this build does not count (a sanitizer, or WEIR_HEAP_COUNTER=OFF)";
  AllocationMeter meter;
  const std::optional<int64_t> before = HeapAllocations();
  constexpr int kEach = 1000;
  // Kept until the end, so that the compiler cannot pair an allocation with its free and drop
  // both.
  auto allocate = [] {
    std::vector<void*> blocks;
    std::vector<std::unique_ptr<std::vector<int>>> vectors;
    blocks.reserve(2 * kEach);
    vectors.reserve(kEach);
    for (int i = 0; i < kEach; ++i) {
      blocks.push_back(std::malloc(64 + static_cast<size_t>(i)));
      blocks.push_back(std::calloc(2, 32));
      vectors.push_back(std::make_unique<std::vector<int>>(100));  // the vector and its storage
    }
    for (void* block : blocks) std::free(block);
  };
  std::thread other(allocate);
  allocate();
  other.join();
  meter.Stop();
  const int64_t counted = *HeapAllocations() - *before;
  // 4 allocations an iteration on each of two threads, 2 reserves each; the thread itself and
  // gtest may add a few.
  EXPECT_GE(counted, 2 * (4 * kEach + 2));
  EXPECT_LT(counted, 2 * 4 * kEach + 100);
  EXPECT_EQ(meter.PerEvent(2 * kEach).substr(0, 3), "4.0");
}

TEST(HeapCounter, NothingToDivideIsNotANumber) {
  AllocationMeter meter;
  meter.Stop();
  EXPECT_EQ(meter.PerEvent(0), "n/a");
}

}  // namespace
}  // namespace weir
