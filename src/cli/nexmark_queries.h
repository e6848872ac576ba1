// The Nexmark queries as Weir pipelines, written with the public API (weir/stream.h).
//
// Each query reads a Nexmark source (nexmark::FromNexmark, src/nexmark/source.h) and writes one
// record per result row to an output topic; the row is a flat JSON object whose members are the
// query's columns, in order. The columns and semantics of each query are listed in
// src/nexmark/reference.h, whose DuckDB SQL computes the same answer in batch: the nexmark
// project's Flink SQL with event-time windows aligned to the epoch and half-open (deviations:
// src/nexmark/README.md). A query may emit a changelog rather than final rows; LastPerKey (query.h)
// says which.
//
// Windows close by the partition watermark (after a repartition: the slowest producer's,
// docs/architecture.md §2) plus `grace`, which only the generator's disorder (out_of_order_group)
// needs. An event later than that is written to `late_topic`, counted (RunSummary::late), and
// missing from the answer, which verification then reports.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "nexmark/generator.h"
#include "nexmark/query.h"
#include "nexmark/source.h"
#include "weir/application.h"
#include "weir/status.h"

namespace weir::nexmark {

struct QueryOptions {
  std::string output_topic = "nexmark.out";
  // Results dropped by a discard sink instead of written to output_topic: the engine measured
  // without its output log (late events still go to late_topic).
  bool discard_output = false;
  // Where every window and join writes the events it found late (and counts them).
  std::string late_topic = "nexmark.late";
  // Out-of-orderness the windows and time-bounded joins accept (event time).
  std::chrono::milliseconds grace{4000};
  // The model the source runs (for the bound on auction lengths that q4 joins within).
  NexmarkConfig model;
};

// Adds the query's pipeline, from `source` to the output topic (or a discard sink).
void AddQuery(Query query, Stream source, const QueryOptions& options);

// How far past an output record's timestamp the event time is when the result is complete:
// once an event that late has been seen, no engine could have emitted it earlier (0 for rows
// made by one event; a window's end + grace; a session's last event + gap + grace). With a
// real-time source, wall clock at output - (timestamp + this) is the result's latency.
int64_t CompletionDelayMs(Query query, const QueryOptions& options);

// The longest an auction of this model can be open: its expires - dateTime.
int64_t MaxAuctionLengthMs(const NexmarkConfig& model);

}  // namespace weir::nexmark
