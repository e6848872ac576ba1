// The Nexmark source kind: the benchmark's events (generator.h) as a partitioned source of a
// Weir application. The engine does not depend on it: a program registers it
// (RegisterNexmarkSource, for YAML `source: {nexmark: {...}}`) or adds it with FromNexmark.
#pragma once

#include <cstdint>

#include "dataflow/kind_registry.h"
#include "nexmark/generator.h"
#include "weir/application.h"

namespace weir::nexmark {

// The Nexmark benchmark's stream of people, auctions and bids (src/nexmark/README.md: the
// reference generator's model, every parameter and its source), generated in-process. Event n of
// the stream goes to partition n % partitions, so each partition's events are in event-time
// order (with out_of_order_group_size 1) and the partitions advance together. Records have the
// null key, the event's dateTime as timestamp, and a flat JSON object as value with "type"
// ("person", "auction", "bid") and the reference's field names (times in epoch ms, prices in
// cents). The same options always give the same events; a restart resumes where the last
// checkpoint left off.
struct NexmarkSourceOptions {
  int32_t partitions = 1;
  int64_t events = -1;  // in all; -1: unbounded
  // Event time: event n is at first_event_ms + n / events_per_second (s).
  int64_t first_event_ms = 1'700'000'000'000;
  double events_per_second = 10'000;  // the reference's default
  // A live source: each event is released once the wall clock (system_clock) reaches its event
  // time, so events come at events_per_second and an output's latency is the wall clock at
  // output minus the event time that caused it. Off: as fast as possible.
  bool real_time = false;
  int64_t seed = 0;                     // 0: the reference's events exactly
  int64_t out_of_order_group_size = 1;  // the reference's disorder (1: in order)
};

// The generator's model for a source's options (the reference's defaults for the rest).
NexmarkConfig NexmarkConfigOf(const NexmarkSourceOptions& options);

// A Nexmark source of `app`. Definition errors are reported by app.Run().
Stream FromNexmark(Application& app, NexmarkSourceOptions options);

// Adds the nexmark source kind to `kinds`: `source: {nexmark: {partitions, events,
// events_per_second, first_event_ms, seed, out_of_order_group_size, real_time}}`.
void RegisterNexmarkSource(dataflow::KindRegistry& kinds);

}  // namespace weir::nexmark
