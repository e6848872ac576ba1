// What one Nexmark event costs to make, and then to turn into what the engine carries: the
// generator alone (EventAt), with the Value tree a record holds today (ToValue), and encoded
// as JSON (AppendJson). Issue 14's target for the generator alone is 10 M events/s per core.
//   build/src/nexmark/generator_benchmark --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <string>

#include "nexmark/generator.h"

namespace weir::nexmark {
namespace {

const NexmarkGenerator& Generator() {
  static const NexmarkGenerator generator{NexmarkConfig{}};
  return generator;
}

void BM_EventAt(benchmark::State& state) {
  int64_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(Generator().EventAt(n++));
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAt);

void BM_EventAtToValue(benchmark::State& state) {
  int64_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(Generator().EventAt(n++).ToValue());
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAtToValue);

void BM_EventAtAppendJson(benchmark::State& state) {
  int64_t n = 0;
  std::string out;
  for (auto _ : state) {
    out.clear();
    Generator().EventAt(n++).AppendJson(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(n);
}
BENCHMARK(BM_EventAtAppendJson);

}  // namespace
}  // namespace weir::nexmark

BENCHMARK_MAIN();
