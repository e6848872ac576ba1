// The per-thread pool behind Value's strings, arrays and objects (weir/value.h).
//
// Blocks are grouped by size class, a power of two from 16 bytes to 64 KiB; a free block holds
// the pointer to the next free block of its class. Each class keeps at most kCachedBytesPerClass
// of free blocks (and at least kMinCachedBlocks), so a thread that frees many values at once (a
// window firing) gives most of them back to malloc. A thread's pool is freed when it exits.
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#include "weir/value.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEIR_VALUE_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WEIR_VALUE_POOL 0
#endif
#endif
#ifndef WEIR_VALUE_POOL
#define WEIR_VALUE_POOL 1
#endif

namespace weir::internal {
namespace {

constexpr int kMinClassLog2 = 4;   // 16 bytes
constexpr int kMaxClassLog2 = 16;  // 64 KiB
constexpr int kClasses = kMaxClassLog2 - kMinClassLog2 + 1;
constexpr size_t kCachedBytesPerClass = size_t{4} << 20;
constexpr size_t kMinCachedBlocks = 64;

struct FreeBlock {
  FreeBlock* next;
};

// The size class of a block of `bytes` (> 0, <= 64 KiB).
int ClassOf(size_t bytes) {
  const int log2 = std::bit_width(bytes - 1);
  return log2 <= kMinClassLog2 ? 0 : log2 - kMinClassLog2;
}

size_t ClassBytes(int size_class) { return size_t{1} << (size_class + kMinClassLog2); }

size_t MaxCached(int size_class) {
  const size_t by_bytes = kCachedBytesPerClass / ClassBytes(size_class);
  return by_bytes > kMinCachedBlocks ? by_bytes : kMinCachedBlocks;
}

// Set once the thread's pool is destroyed (thread exit): values freed after it (by other
// thread-locals' destructors) go straight to free. Trivially destructible, so always readable.
thread_local bool pool_gone = false;

class ThreadPool {
 public:
  ~ThreadPool() {
    pool_gone = true;
    for (FreeBlock*& head : free_) {
      while (head != nullptr) std::free(std::exchange(head, head->next));
    }
  }

  void* Allocate(int size_class) {
    FreeBlock* block = free_[size_class];
    if (block == nullptr) return Malloc(ClassBytes(size_class));
    free_[size_class] = block->next;
    --cached_[size_class];
    return block;
  }

  void Deallocate(void* p, int size_class) {
    if (cached_[size_class] >= MaxCached(size_class)) {
      std::free(p);
      return;
    }
    auto* block = static_cast<FreeBlock*>(p);
    block->next = free_[size_class];
    free_[size_class] = block;
    ++cached_[size_class];
  }

  static void* Malloc(size_t bytes) {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

 private:
  FreeBlock* free_[kClasses] = {};
  size_t cached_[kClasses] = {};
};

thread_local ThreadPool pool;

}  // namespace

void* PoolAllocate(size_t bytes) {
  if (!WEIR_VALUE_POOL || bytes > ClassBytes(kClasses - 1) || pool_gone) {
    return ThreadPool::Malloc(bytes);
  }
  return pool.Allocate(ClassOf(bytes == 0 ? 1 : bytes));
}

void PoolDeallocate(void* block, size_t bytes) noexcept {
  if (!WEIR_VALUE_POOL || bytes > ClassBytes(kClasses - 1) || pool_gone) {
    std::free(block);
    return;
  }
  pool.Deallocate(block, ClassOf(bytes == 0 ? 1 : bytes));
}

}  // namespace weir::internal
