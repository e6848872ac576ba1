// How many heap allocations this process has made, for the benchmarks' allocations per event.
//
// The count comes from a hook around glibc's malloc, calloc and realloc (heap_counter.cc, the
// library weir::heap_counter) in the binaries that link it, the `weir` binary and the
// generator benchmark: every allocation of the process, the C++ operator new (which calls
// malloc) and the libraries' included, on every thread. Aligned allocations (posix_memalign,
// aligned_alloc, aligned operator new) go straight to glibc and are not counted. A build with
// AddressSanitizer or ThreadSanitizer leaves malloc to the sanitizer and counts nothing.
//
// The hook hands over to glibc's own entry points, so a tool that interposes malloc from outside
// the binary (heaptrack's LD_PRELOAD, valgrind's memcheck) no longer sees the binary's
// allocations: build with -DWEIR_HEAP_COUNTER=OFF for those tools (the count is then n/a).
//
// Thread safety: HeapAllocations may be called from any thread; the count is exact once the
// threads that allocated have finished what is being measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace weir {

// Allocations so far; nullopt when this build does not count (a sanitizer owns malloc).
std::optional<int64_t> HeapAllocations();

// The allocations made from its construction to Stop(): construct it just before the work
// measured, stop it just after.
class AllocationMeter {
 public:
  AllocationMeter() : start_(HeapAllocations()) {}
  void Stop() { stop_ = HeapAllocations(); }
  // "3.10": the allocations per event, or "n/a" when they are not counted.
  // REQUIRES: Stop() was called.
  std::string PerEvent(int64_t events) const;

 private:
  std::optional<int64_t> start_;
  std::optional<int64_t> stop_;
};

}  // namespace weir
