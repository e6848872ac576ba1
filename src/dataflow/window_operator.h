// The window kind's options and operator (weir/window.h states what a window step does; the
// kind itself, its validation, fingerprint and YAML form, is kinds/window.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "dataflow/kind.h"
#include "dataflow/kinds/aggregations_yaml.h"
#include "dataflow/operators.h"
#include "weir/window.h"

namespace weir::dataflow {

// What a window step does: what WindowedStream (or the YAML) collected.
struct WindowOptions {
  WindowDefinition definition;
  NamedAggregations aggregations;
  bool single_unnamed = false;  // .Agg(one aggregation): {"start", "end", "value"}
  Closing closing = Closing::kKey;
  bool final = true;  // .Final(); else .Current()
  std::function<void(const LateRecord&)> on_late;
  std::string late_topic;
  std::string late_file;
  std::function<bool(const Value&)> trigger;
};

// Builds the operator and restores what the task's store holds for it. `options` outlives it.
// kCorruption/kIOError from the store.
Result<std::unique_ptr<Operator>> MakeWindowOperator(const WindowOptions& options,
                                                     const StepContext& context);

}  // namespace weir::dataflow
