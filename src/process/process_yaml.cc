// The YAML form of a process step, a remote worker in any language:
//   - process:
//       id: cart-abandon          # the function's name (required)
//       version: 1
//       worker: [python3, cart_abandon.py]   # or connect: unix:PATH | 127.0.0.1:PORT
//       files: [cart_abandon.py]  # what the implementation digest covers; default: the
//                                 # worker's arguments that are files
//       state: [cart]
//       timers: [abandon]
//       limits: {max_keys: 1000000, ...}     # weir/process.h ProcessLimits, by name
//       deadline_ms: 5000
//       start_deadline_ms: 10000
//       retries: 2
//       restart_budget: 5
//       max_frame_bytes: 67108864
#include <filesystem>

#include "process/limits.h"
#include "process/process_step.h"
#include "core/sha256.h"
#include "process/worker.h"

namespace weir::process {
namespace {

Result<std::vector<std::string>> Strings(const ConfigNode& node, std::string_view what) {
  if (!node.IsSequence()) return node.Expected(what);
  std::vector<std::string> out;
  for (const ConfigNode& item : node.Items()) {
    WEIR_ASSIGN_OR_RETURN(std::string s, item.String());
    if (s.empty()) return item.Error("must not be empty");
    out.push_back(std::move(s));
  }
  return out;
}

Status ParseLimits(const ConfigNode& node, ProcessLimits& limits) {
  std::vector<std::string_view> names;
  for (const LimitField& field : kLimitFields) names.push_back(field.name);
  WEIR_RETURN_IF_ERROR(node.OnlyKeys(names));
  for (const LimitField& field : kLimitFields) {
    if (auto value = node.Get(field.name)) {
      WEIR_ASSIGN_OR_RETURN(limits.*field.member, value->Int(1, INT64_MAX));
    }
  }
  return Status::OK();
}

// The worker's arguments that name files under `base` (its script), as the digest's default.
std::vector<std::string> ScriptFiles(const std::vector<std::string>& command,
                                     const std::filesystem::path& base) {
  std::vector<std::string> files;
  std::error_code ec;
  for (size_t i = 1; i < command.size(); ++i) {
    if (std::filesystem::is_regular_file(base / command[i], ec)) files.push_back(command[i]);
  }
  return files;
}

Result<std::shared_ptr<const dataflow::StepDefinition>> ParseProcess(
    const dataflow::StepYaml& yaml) {
  const ConfigNode& body = yaml.body;
  if (!body.IsMap()) return body.Expected("a map {id, worker or connect, state, timers, ...}");
  WEIR_RETURN_IF_ERROR(body.OnlyKeys({"id", "version", "worker", "connect", "files", "state",
                                      "timers", "limits", "deadline_ms", "start_deadline_ms",
                                      "retries", "restart_budget", "max_frame_bytes"}));
  ProcessOptions options;
  RemoteWorkerOptions worker;
  WEIR_ASSIGN_OR_RETURN(ConfigNode id, body.Require("id", "the function's name"));
  WEIR_ASSIGN_OR_RETURN(options.id, id.String());
  if (auto v = body.Get("version")) {
    WEIR_ASSIGN_OR_RETURN(options.version, v->Int(1, INT64_MAX));
  }
  if (auto v = body.Get("state")) {
    WEIR_ASSIGN_OR_RETURN(options.state, Strings(*v, "a list of names"));
  }
  if (auto v = body.Get("timers")) {
    WEIR_ASSIGN_OR_RETURN(options.timers, Strings(*v, "a list of names"));
  }
  if (auto v = body.Get("limits")) {
    WEIR_RETURN_IF_ERROR(ParseLimits(*v, options.limits));
  }
  if (auto v = body.Get("retries")) {
    WEIR_ASSIGN_OR_RETURN(int64_t retries, v->Int(0, 100));
    options.retries = static_cast<int32_t>(retries);
  }
  const std::optional<ConfigNode> command = body.Get("worker");
  const std::optional<ConfigNode> connect = body.Get("connect");
  if (command.has_value() == connect.has_value()) {
    return body.Error("needs exactly one of worker: [COMMAND, ARGS...] and connect: ADDRESS");
  }
  worker.working_dir = yaml.context.base_dir.empty() ? "." : yaml.context.base_dir;
  if (command) {
    WEIR_ASSIGN_OR_RETURN(worker.command, Strings(*command, "a command: [program, args...]"));
    if (worker.command.empty()) return command->Error("is an empty command");
  } else {
    WEIR_ASSIGN_OR_RETURN(worker.connect, connect->String());
  }
  if (auto v = body.Get("deadline_ms")) {
    WEIR_ASSIGN_OR_RETURN(worker.deadline, v->Millis());
  }
  if (auto v = body.Get("start_deadline_ms")) {
    WEIR_ASSIGN_OR_RETURN(worker.start_deadline, v->Millis());
  }
  if (auto v = body.Get("restart_budget")) {
    WEIR_ASSIGN_OR_RETURN(int64_t budget, v->Int(0, 1000));
    worker.restart_budget = static_cast<int32_t>(budget);
  }
  if (auto v = body.Get("max_frame_bytes")) {
    WEIR_ASSIGN_OR_RETURN(int64_t bytes, v->Int(1024, INT64_MAX));
    worker.max_frame_bytes = static_cast<size_t>(bytes);
  }
  std::vector<std::string> files = ScriptFiles(worker.command, worker.working_dir);
  if (auto v = body.Get("files")) {
    WEIR_ASSIGN_OR_RETURN(files, Strings(*v, "a list of files"));
  }
  if (!files.empty()) {
    Result<std::string> digest = DigestFiles(worker.working_dir, files);
    if (!digest.ok()) return body.Error(digest.status().message());
    options.implementation_digest = "sha256:" + *digest;
  }
  worker.process = options;

  auto make_invoker = [worker](std::string_view step) -> Result<std::unique_ptr<Invoker>> {
    RemoteWorkerOptions for_task = worker;
    for_task.step = std::string(step);
    return StartRemoteInvoker(for_task);
  };
  // How the worker is reached and paced may change across a restart; what it computes is the
  // descriptor's (id, version, digest).
  auto describe = [worker](dataflow::Fingerprint& f) {
    Value command = Value(Value::Array());
    for (const std::string& arg : worker.command) command.as_array().emplace_back(arg);
    f.MayChange("worker", command)
        .MayChange("connect", worker.connect)
        .MayChange("deadline_ms", worker.deadline)
        .MayChange("restart_budget", worker.restart_budget);
  };
  return MakeProcessStep(std::move(options), std::move(make_invoker), std::move(describe));
}

}  // namespace

void RegisterProcessStep(dataflow::KindRegistry& kinds) {
  kinds.Add(dataflow::StepKind{"process", {}, ParseProcess});
}

}  // namespace weir::process
