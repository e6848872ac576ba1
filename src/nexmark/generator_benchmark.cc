// What one Nexmark event costs to make, and then to turn into what the engine carries: the
// generator alone (EventAt, returning a new Event or writing into a reused one), with the Value
// tree a record holds (a new one from ToValue, or a reused one rewritten by WriteValue), and
// encoded as JSON (Event::AppendJson; Value::AppendJson, as a topic sink writes a record). Issue
// 14's target for the generator alone is 10 M events/s per core. Each case also reports its heap
// allocations per event (`allocs/event`).
//   build/src/nexmark/generator_benchmark --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/heap_counter.h"
#include "nexmark/generator.h"

namespace weir::nexmark {
namespace {

const NexmarkGenerator& Generator() {
  static const NexmarkGenerator generator{NexmarkConfig{}};
  return generator;
}

// Counts the allocations from its construction, just before the timed loop (the weir binary's
// malloc hook, core/heap_counter.h: std::string's and the Value pool's alike; none under a
// sanitizer, which owns malloc).
class AllocationsPerEvent {
 public:
  AllocationsPerEvent() : start_(HeapAllocations()) {}
  void Report(benchmark::State& state, int64_t events) const {
    const std::optional<int64_t> now = HeapAllocations();
    if (!start_ || !now) return;
    state.counters["allocs/event"] =
        static_cast<double>(*now - *start_) / static_cast<double>(events);
  }

 private:
  std::optional<int64_t> start_;
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

// What a topic sink's encoding costs: events' Value trees (made before the timed loop) written as
// JSON by Value::AppendJson into a reused output buffer, as RecordBatchBuilder does.
void BM_ValueAppendJson(benchmark::State& state) {
  constexpr int64_t kValues = 1024;
  std::vector<Value> values;
  for (int64_t i = 0; i < kValues; ++i) values.push_back(Generator().EventAt(i).ToValue());
  std::string out;
  int64_t n = 0;
  const AllocationsPerEvent meter;
  for (auto _ : state) {
    if (n % kValues == 0) out.clear();
    values[n++ % kValues].AppendJson(out);
    benchmark::DoNotOptimize(out.data());
  }
  meter.Report(state, n);
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_ValueAppendJson);

}  // namespace
}  // namespace weir::nexmark

BENCHMARK_MAIN();
