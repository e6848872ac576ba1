// The per-thread pool behind Value's strings, arrays and objects (weir/value.h).
//
// Blocks are grouped by size class, a power of two from 16 bytes to 64 KiB; a free block holds
// the pointer to the next free block of its class. Each class keeps at most kCachedBytesPerClass
// of free blocks (and at least kMinCachedBlocks), so a thread that frees many values at once (a
// window firing) gives most of them back to malloc. A block enters a thread's lists only when it
// is freed there, and the lists are freed when the thread exits: an allocation pops a list (or
// mallocs), a free pushes one (or frees).
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#include "core/sanitizers.h"
#include "weir/value.h"

#define WEIR_VALUE_POOL (!WEIR_UNDER_SANITIZER)

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

void* Malloc(size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

enum class PoolState : uint8_t { kUnused, kLive, kGone };

// A thread's free lists. Trivially constructible and destructible, so reaching them is a plain
// thread-local access (no initialization guard on the per-value path); the Reaper below frees
// them when the thread exits.
struct FreeLists {
  FreeBlock* head[kClasses];
  size_t cached[kClasses];
  PoolState state;
};
constinit thread_local FreeLists lists{};

// Made on a thread's first use of the pool; frees its cached blocks at thread exit, after which
// blocks go straight to malloc and free (values destroyed by later thread-local destructors).
struct Reaper {
  Reaper() { lists.state = PoolState::kLive; }
  ~Reaper() {
    lists.state = PoolState::kGone;
    for (FreeBlock*& head : lists.head) {
      while (head != nullptr) std::free(std::exchange(head, head->next));
    }
  }
};

// Whether the pool may be used on this thread (making it live on first use).
bool PoolLive() {
  if (lists.state == PoolState::kUnused) {
    thread_local Reaper reaper;
  }
  return lists.state == PoolState::kLive;
}

}  // namespace

void* PoolAllocate(size_t bytes) {
  if (!WEIR_VALUE_POOL || bytes > ClassBytes(kClasses - 1)) return Malloc(bytes);
  const int size_class = ClassOf(bytes == 0 ? 1 : bytes);
  FreeBlock* block = lists.head[size_class];
  if (block == nullptr) return Malloc(ClassBytes(size_class));
  lists.head[size_class] = block->next;
  --lists.cached[size_class];
  return block;
}

void PoolDeallocate(void* block, size_t bytes) noexcept {
  if (!WEIR_VALUE_POOL || bytes > ClassBytes(kClasses - 1)) {
    std::free(block);
    return;
  }
  const int size_class = ClassOf(bytes == 0 ? 1 : bytes);
  if ((lists.state != PoolState::kLive && !PoolLive()) ||
      lists.cached[size_class] >= MaxCached(size_class)) {
    std::free(block);
    return;
  }
  auto* free_block = static_cast<FreeBlock*>(block);
  free_block->next = lists.head[size_class];
  lists.head[size_class] = free_block;
  ++lists.cached[size_class];
}

}  // namespace weir::internal
