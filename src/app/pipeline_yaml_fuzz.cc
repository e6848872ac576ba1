// Fuzz target for the YAML pipeline loader, the decoder of the one file every user writes: any
// bytes give an application or kInvalidArgument naming the file, with the kinds `weir run`
// knows. Nothing throws (yaml-cpp's exceptions become errors with their path), nothing crashes,
// and a loaded pipeline's definition resumes from itself. Built as pipeline_yaml_fuzz_replay (a
// ctest over yaml_fuzz_corpus/) and, with WEIR_FUZZ, as the libFuzzer target pipeline_yaml_fuzz.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/pipeline_yaml.h"
#include "connectors/nats/jetstream_kind.h"
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "nexmark/source.h"

namespace {

void Require(bool condition, const char* what, const std::string& detail = "") {
  if (condition) return;
  std::fprintf(stderr, "invariant violated: %s %s\n", what, detail.c_str());
  std::abort();
}

const weir::dataflow::KindRegistry& AllKinds() {
  static const weir::dataflow::KindRegistry kinds = [] {
    weir::dataflow::KindRegistry all = weir::dataflow::BuiltinKinds();
    weir::nexmark::RegisterNexmarkSource(all);
    weir::nats::RegisterJetStreamSource(all);
    return all;
  }();
  return kinds;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  weir::app::PipelineOverrides overrides;
  overrides.kinds = &AllKinds();
  auto app = weir::app::LoadPipelineText(text, "fuzz.yaml", "/pipelines", overrides);
  if (!app.ok()) {
    Require(app.status().code() == weir::StatusCode::kInvalidArgument, "bad input is bad input",
            app.status().ToString());
    Require(app.status().message().starts_with("fuzz.yaml: "), "the error names the file",
            app.status().ToString());
    return 0;
  }
  const std::string definition = (*app)->Definition();
  Require(!weir::dataflow::DefinitionChange(definition, definition).has_value(),
          "a definition resumes from itself", definition);
  return 0;
}
