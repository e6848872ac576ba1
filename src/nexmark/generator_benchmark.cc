// What one Nexmark event costs to make, and then to turn into what the engine carries: the
// generator alone (EventAt, returning a new Event or writing into a reused one), with the Value
// tree a record holds (a new one from ToValue, or a reused one rewritten by WriteValue), and
// encoded as JSON (AppendJson). Issue 14's target for the generator alone is 10 M events/s per
// core. Each case also reports its heap allocations per event (`allocs/event`).
//   build/src/nexmark/generator_benchmark --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "nexmark/generator.h"

// Heap allocations, counted by hooks on glibc's malloc, calloc and realloc, as the weir binary's
// (src/cli/heap_counter.cc): std::string's and the Value pool's alike. Single-threaded: a plain
// counter. Without the hooks under a sanitizer, which owns malloc.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEIR_BENCHMARK_COUNTS_HEAP 0
#else
#define WEIR_BENCHMARK_COUNTS_HEAP 1
#endif
namespace {
int64_t allocations = 0;
}  // namespace

#if WEIR_BENCHMARK_COUNTS_HEAP
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);

void* malloc(size_t size) {
  ++allocations;
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  ++allocations;
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  ++allocations;
  return __libc_realloc(pointer, size);
}
}
#endif

namespace weir::nexmark {
namespace {

const NexmarkGenerator& Generator() {
  static const NexmarkGenerator generator{NexmarkConfig{}};
  return generator;
}

// Counts the allocations from its construction, just before the timed loop.
class AllocationsPerEvent {
 public:
  AllocationsPerEvent() : start_(allocations) {}
  void Report(benchmark::State& state, int64_t events) const {
    if (!WEIR_BENCHMARK_COUNTS_HEAP) return;
    state.counters["allocs/event"] =
        static_cast<double>(allocations - start_) / static_cast<double>(events);
  }

 private:
  int64_t start_;
};

void BM_EventAt(benchmark::State& state) {
  int64_t n = 0;
  const AllocationsPerEvent meter;
  for (auto _ : state) benchmark::DoNotOptimize(Generator().EventAt(n++));
  meter.Report(state, n);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAt);

// The in-place form: one Event reused, as a source filling the same slots batch after batch.
void BM_EventAtInPlace(benchmark::State& state) {
  int64_t n = 0;
  Event event;
  const AllocationsPerEvent meter;
  for (auto _ : state) {
    Generator().EventAt(n++, event);
    benchmark::DoNotOptimize(event);
  }
  meter.Report(state, n);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAtInPlace);

void BM_EventAtToValue(benchmark::State& state) {
  int64_t n = 0;
  const AllocationsPerEvent meter;
  for (auto _ : state) benchmark::DoNotOptimize(Generator().EventAt(n++).ToValue());
  meter.Report(state, n);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAtToValue);

// Both in place: the Event and the Value a record slot holds, rewritten event after event.
void BM_EventAtWriteValue(benchmark::State& state) {
  int64_t n = 0;
  Event event;
  Value value;
  const AllocationsPerEvent meter;
  for (auto _ : state) {
    Generator().EventAt(n++, event);
    event.WriteValue(value);
    benchmark::DoNotOptimize(value);
  }
  meter.Report(state, n);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAtWriteValue);

void BM_EventAtAppendJson(benchmark::State& state) {
  int64_t n = 0;
  std::string out;
  Event event;
  const AllocationsPerEvent meter;
  for (auto _ : state) {
    out.clear();
    Generator().EventAt(n++, event);
    event.AppendJson(out);
    benchmark::DoNotOptimize(out.data());
  }
  meter.Report(state, n);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAtAppendJson);

}  // namespace
}  // namespace weir::nexmark

BENCHMARK_MAIN();
