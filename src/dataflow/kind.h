// A kind of step: the one interface every source, step and sink kind implements, and all that
// the rest of the engine (the graph, the plan, the task, the fingerprint a restart must match)
// knows of it.
//
// A kind is one unit in its own files (src/dataflow/kinds/, a connector, src/nexmark/): a
// definition class deriving from StepDefinition (its options, their validation, its
// fingerprint, what the plan needs of it, its operator or source), its YAML form
// (kind_registry.h) and, if it has one, its method of the C++ API. One line in a registry adds
// it (builtin_kinds.cc for the engine's own). The dataflow README says how to add one.
//
// Contract: a definition is immutable once built and shared by every task of every run of its
// application (a shared_ptr<const>); what a run needs to make once for all its tasks (a
// generator's model) the definition makes on first use, thread-safely.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "weir/key.h"
#include "weir/status.h"
#include "weir/types.h"
#include "weir/value.h"

namespace weir::log {
class LogStore;
}

namespace weir::dataflow {

class Operator;
class Source;
class TaskContext;

enum class Role { kSource, kStep, kSink };

// A partition count of a kind's options against the one limit (weir/types.h kMaxPartitions):
// `least` is 1 where a count is required, 0 where 0 means the default. `what` names the option
// in the refusal ("GroupBy partitions").
inline Status CheckPartitions(int32_t partitions, int32_t least, std::string_view what) {
  if (partitions >= least && partitions <= kMaxPartitions) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " must be " + std::to_string(least) + " to " +
                                 std::to_string(kMaxPartitions) +
                                 (least == 0 ? " (0: the default)" : "") + ", got " +
                                 std::to_string(partitions));
}

// The options of one step as a restart sees them. Each option is declared where the kind
// describes itself, as one of:
//   Fixed:     the step's state or outputs depend on it; a restart with another value is refused
//              (the user resets the pipeline or gives it another name).
//   MayChange: a restart may change it (pacing, a grace, a timeout); the kind says why beside
//              the declaration. Recorded with the checkpoint, so the manifest shows what ran.
// Values are JSON (strings, integers, doubles, booleans, durations as integer ms).
class Fingerprint {
 public:
  template <typename T>
  Fingerprint& Fixed(std::string_view name, const T& value) {
    fixed_.Set(name, ToValue(value));
    return *this;
  }
  template <typename T>
  Fingerprint& MayChange(std::string_view name, const T& value) {
    may_change_.Set(name, ToValue(value));
    return *this;
  }
  const Value& fixed() const { return fixed_; }
  const Value& may_change() const { return may_change_; }

 private:
  template <typename T>
  static Value ToValue(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      return Value(value);
    } else if constexpr (std::is_same_v<T, KeySerde>) {
      return Value(std::string(KeySerdeName(value)));
    } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
      return Value(static_cast<int64_t>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      return Value(static_cast<double>(value));
    } else if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
      return Value(static_cast<int64_t>(value.count()));
    } else if constexpr (std::is_same_v<T, Value>) {
      return value;
    } else {
      return Value(std::string(value));
    }
  }
  Value fixed_ = Value(Value::Object());
  Value may_change_ = Value(Value::Object());
};

// How a step uses a topic it writes.
enum class TopicUse {
  kSink,        // results: counted in RunSummary::records_out
  kSideOutput,  // late events and the like
};

// What the plan learns of the topics and files a step writes (app/plan.cc implements it).
class OutputDeclarations {
 public:
  virtual ~OutputDeclarations() = default;
  // A topic the step writes. Created if missing, with `partitions` (0: as many as the step's
  // sub-topology has tasks).
  virtual void Topic(std::string_view topic, int32_t partitions, TopicUse use) = 0;
  // A file of JSON lines the step writes (transactional: cut back to the checkpoint on
  // recovery).
  virtual void File(std::string_view path) = 0;
  // The application's name, which names default topics ("<application>.late").
  virtual std::string_view application() const = 0;
};

// What an operator is built with: the application and step it belongs to, and its task.
struct StepContext {
  std::string_view application;
  std::string_view step_name;
  TaskContext& task;
};

class StepDefinition {
 public:
  virtual ~StepDefinition() = default;

  // The kind's name ("filter", "window", "to-topic"): default step names are "<kind>-<index>",
  // and the fingerprint records it. Names state and topics: never rename a kind.
  virtual std::string_view kind() const = 0;
  virtual Role role() const { return Role::kStep; }
  // OK, or kInvalidArgument saying what is wrong, in the user's terms (Run() reports it before
  // anything runs; the YAML loader reports it at the step's path).
  virtual Status Validate() const { return Status::OK(); }
  // Declares every option, fixed or changeable across a restart (see Fingerprint).
  virtual void Describe(Fingerprint& fingerprint) const { (void)fingerprint; }

  // ---- What the plan needs.
  // Keeps per-key state in the task's store named after the step.
  virtual bool stateful() const { return false; }
  // Stores besides the step's own (REQUIRES stateful()), each named "<step>.<suffix>": data the
  // step scans in an order of its own (a process step's timer index), so that a scan of it does
  // not pay for the step's other writes. No other step may be named so.
  virtual std::vector<std::string_view> more_stores() const { return {}; }
  // Takes several parents, each an input of a MultiInputOperator (numbered in parent order).
  virtual bool multi_input() const { return false; }
  // Emits records made from its state rather than the record being processed (a window
  // closing, a pair): a step that holds source records cannot follow it without a topic.
  virtual bool emits_from_state() const { return false; }
  // Holds the source record being processed (the join's ack-after-process): what reaches it
  // must be source records, so no emits_from_state() step may come before it in its task.
  virtual bool holds_source_records() const { return false; }
  // Re-keys through a repartition topic (RepartitionTopicName): the steps after it run in the
  // sub-topology that reads the topic.
  virtual bool repartitions() const { return false; }
  // The repartition topic's partitions; 0: the application's default. REQUIRES repartitions().
  virtual int32_t repartition_partitions() const { return 0; }
  // How far behind the task's watermark the timestamps of what the step emits may be: a window
  // emits a window (timestamp end - 1) once the watermark is past end + grace. A task writing a
  // repartition topic marks it with its watermark less the sum of these over its steps.
  virtual std::chrono::milliseconds output_lag() const { return {}; }
  // The topics and files the step writes (besides dead letters, which every task may write).
  virtual void DeclareOutputs(OutputDeclarations& outputs) const { (void)outputs; }

  // ---- Running: one operator per task. Errors come from restoring the step's state.
  virtual Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const = 0;
};

// A source kind: where a sub-topology's records come from, one partition per task.
class SourceDefinition : public StepDefinition {
 public:
  Role role() const final { return Role::kSource; }
  // How many partitions (tasks) it has. kNotFound naming a topic that does not exist.
  virtual Result<int32_t> Partitions(log::LogStore& log) const = 0;
  // The reader of one partition. Errors: the input cannot be opened.
  virtual Result<std::unique_ptr<Source>> Open(log::LogStore& log, PartitionId partition) const = 0;
  // Where bad input goes; empty: "<application>.dlq".
  virtual std::string_view dead_letter_topic() const { return {}; }
  // The topic of the embedded log it reads, if any (an application may not also write it).
  virtual std::string_view log_topic() const { return {}; }
  // Idle close (TopicSourceOptions::idle_timeout); 0: off.
  virtual std::chrono::milliseconds idle_timeout() const { return {}; }
  // Sources have no operator: the task feeds their records to the steps after them.
  Result<std::unique_ptr<Operator>> MakeOperator(const StepContext& context) const final;
};

// A sink kind: a step that ends its stream.
class SinkDefinition : public StepDefinition {
 public:
  Role role() const final { return Role::kSink; }
};

// The name of the repartition topic a re-keying step of an application writes.
std::string RepartitionTopicName(std::string_view application, std::string_view step_name);

}  // namespace weir::dataflow
