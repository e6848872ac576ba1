#include "core/heap_counter.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <string>

#include "core/sanitizers.h"

#if defined(WEIR_NO_HEAP_COUNTER) || WEIR_UNDER_SANITIZER
#define WEIR_COUNT_HEAP 0
#else
#define WEIR_COUNT_HEAP 1
#endif

namespace weir {
namespace {

// One counter per thread, each on its own cache line. The first kOwnedSlots threads to allocate
// own a slot each and count with a plain load and store (no locked instruction: the count is
// only theirs to write); later threads share the last slot with an atomic add. Readers sum the
// slots with relaxed loads.
constexpr int kSlots = 64;
constexpr int kOwnedSlots = kSlots - 1;
struct alignas(64) Slot {
  std::atomic<int64_t> allocations{0};
};
Slot slots[kSlots];
std::atomic<int> next_slot{0};
// Constant-initialized: reading it allocates nothing, so malloc may use it.
thread_local int thread_slot = -1;

[[maybe_unused]] inline void CountOne() {
  int slot = thread_slot;
  if (slot < 0) {
    slot = std::min(next_slot.fetch_add(1, std::memory_order_relaxed), kOwnedSlots);
    thread_slot = slot;
  }
  std::atomic<int64_t>& count = slots[slot].allocations;
  if (slot < kOwnedSlots) {
    count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  } else {
    count.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

std::optional<int64_t> HeapAllocations() {
  if (!WEIR_COUNT_HEAP) return std::nullopt;
  int64_t total = 0;
  for (const Slot& slot : slots) total += slot.allocations.load(std::memory_order_relaxed);
  return total;
}

std::string AllocationMeter::PerEvent(int64_t events) const {
  if (!start_ || !stop_ || events <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f",
                static_cast<double>(*stop_ - *start_) / static_cast<double>(events));
  return buf;
}

}  // namespace weir

#if WEIR_COUNT_HEAP
// glibc's own entry points, which its malloc, calloc and realloc are: the hooks below count and
// hand over. free, and the aligned allocators, stay glibc's (the same allocator).
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);

void* malloc(size_t size) {
  weir::CountOne();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  weir::CountOne();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  weir::CountOne();
  return __libc_realloc(pointer, size);
}
}
#endif
