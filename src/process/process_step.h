// The process step: a keyed process function over a stream (weir/process.h), as a dataflow kind.
// Stream::Process makes one with a native function; the YAML kind `process:` with a remote worker.
// The module README describes the semantics, normatively.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "dataflow/kind.h"
#include "dataflow/kind_registry.h"
#include "process/invoker.h"
#include "weir/process.h"

namespace weir::process {

// Makes the invoker of one task of the step (each task calls its own handler: a remote step
// starts one worker per task). Errors: the handler cannot be started.
using InvokerFactory = std::function<Result<std::unique_ptr<Invoker>>(std::string_view step_name)>;

// A process step running `options` with the invokers `make_invoker` makes. `describe_handler`
// adds what a restart may or may not change about the handler itself (a worker's command,
// deadline) to the step's fingerprint; the descriptor (id, version, state and timer names,
// limits, implementation digest) is always fixed.
std::shared_ptr<const dataflow::StepDefinition> MakeProcessStep(
    ProcessOptions options, InvokerFactory make_invoker,
    std::function<void(dataflow::Fingerprint&)> describe_handler = nullptr);

// The YAML kind `process:`, a remote worker (process_yaml.cc has the form).
void RegisterProcessStep(dataflow::KindRegistry& kinds);

}  // namespace weir::process
