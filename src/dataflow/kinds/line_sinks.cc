// The file and stdout sink kinds: one JSON object per line, {"key", "timestamp", "value"}
// (Stream::ToFile, exactly once: the file is cut back to the last checkpoint on recovery, unless
// it is not a regular file (/dev/null, a FIFO), which is written at least once;
// Stream::ToStdout, at least once, as it happens). YAML `sink: {file: PATH}`,
// `sink: {stdout: true}`.
#include "dataflow/builtin_kinds.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/operators.h"

namespace weir::dataflow {
namespace {

class LineSinkOperator : public Operator {
 public:
  explicit LineSinkOperator(LineWriter& writer) : writer_(writer) {}
  // A value no step has changed is written as the JSON text it was read from (UnchangedInput)
  // unless that text spans lines.
  void Process(Record&& r) override { writer_.Write(r, UnchangedJson(r.value)); }
  void ProcessShared(const Record& r) override { writer_.Write(r, UnchangedJson(r.value)); }

 private:
  LineWriter& writer_;
};

class FileSink : public SinkDefinition {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {}
  std::string_view kind() const override { return "to-file"; }
  Status Validate() const override {
    return path_.empty() ? Status::InvalidArgument("ToFile needs a path") : Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override { fingerprint.Fixed("path", path_); }
  void DeclareOutputs(OutputDeclarations& outputs) const override { outputs.File(path_); }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new LineSinkOperator(context.task.FileOutput(path_)));
  }

 private:
  std::string path_;
};

class StdoutSink : public SinkDefinition {
 public:
  std::string_view kind() const override { return "to-stdout"; }
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const override {
    return std::unique_ptr<Operator>(new LineSinkOperator(context.task.StdoutOutput()));
  }
};

Result<std::shared_ptr<const SinkDefinition>> ParseFileSink(const SinkYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(std::string path, yaml.body.String());
  return std::make_shared<FileSink>(yaml.context.ResolvePath(path));
}

Result<std::shared_ptr<const SinkDefinition>> ParseStdoutSink(const SinkYaml& yaml) {
  WEIR_ASSIGN_OR_RETURN(bool on, yaml.body.Bool());
  if (!on) return yaml.body.Error("stdout: false writes nowhere; remove the sink");
  return std::make_shared<StdoutSink>();
}

}  // namespace

void RegisterFileSink(KindRegistry& kinds) { kinds.Add(SinkKind{"file", {}, ParseFileSink}); }
void RegisterStdoutSink(KindRegistry& kinds) { kinds.Add(SinkKind{"stdout", {}, ParseStdoutSink}); }

}  // namespace weir::dataflow

namespace weir {

void Stream::ToFile(std::string path) {
  dataflow::GraphAccess::AddStep(*this, std::make_shared<dataflow::FileSink>(std::move(path)));
}

void Stream::ToStdout() {
  dataflow::GraphAccess::AddStep(*this, std::make_shared<dataflow::StdoutSink>());
}

}  // namespace weir
