// The engine's own kinds (kinds/): a new kind of the engine adds its Register function here and
// one line to BuiltinKinds(). Kinds outside the engine (connectors, the Nexmark source) have a
// Register function of their own, which the program that links them calls.
#pragma once

#include "dataflow/kind_registry.h"

namespace weir::dataflow {

// Every kind above that has a YAML form, in the order errors list them.
KindRegistry BuiltinKinds();

void RegisterFileSource(KindRegistry& kinds);
void RegisterTopicSource(KindRegistry& kinds);
void RegisterGeneratorSource(KindRegistry& kinds);
void RegisterFilter(KindRegistry& kinds);
void RegisterSelect(KindRegistry& kinds);
void RegisterGroupBy(KindRegistry& kinds);
void RegisterAggregate(KindRegistry& kinds);
void RegisterWindow(KindRegistry& kinds);
void RegisterJoin(KindRegistry& kinds);
void RegisterIntervalJoin(KindRegistry& kinds);
void RegisterAsOfJoin(KindRegistry& kinds);
void RegisterFileSink(KindRegistry& kinds);
void RegisterTopicSink(KindRegistry& kinds);
void RegisterStdoutSink(KindRegistry& kinds);
void RegisterDiscardSink(KindRegistry& kinds);

}  // namespace weir::dataflow
