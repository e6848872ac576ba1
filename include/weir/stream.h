// The Stream API: a fluent description of a dataflow (docs/architecture.md §4, §12).
//
//   weir::Application app({.name = "purchases", .data_dir = "./weir-data"});
//   app.FromFile({.path = "events.jsonl", .key = {"user"}, .timestamp_field = "ts"})
//       .Filter([](const weir::Value& v) { return v.GetString("action") == "buy"; })
//       .GroupBy("page")
//       .Aggregate({{"sales", weir::agg::Count()}, {"revenue", weir::agg::Sum("amount")}})
//       .ToTopic("sales-by-page");
//   weir::Result<weir::RunSummary> summary = app.Run();
//
// A Stream is a cheap handle on a node of the application's graph; every method adds a step
// after it and returns the new stream, so a stream can branch (two steps after one node). The
// graph is compiled when the application runs: it is cut at every GroupBy into sub-topologies,
// each instantiated once per input partition as a task (as Kafka Streams does).
//
// Functions given to steps run on a task's thread, one record at a time, and may be called
// again for the same record after a crash (the engine replays from the last checkpoint), so
// they must not have side effects outside the State they are given.
//
// When a function fails: a function that throws (a field read as the wrong type throws
// weir::ValueTypeError, weir/value.h; or an exception of its own) fails only the record it was
// called with. That record goes to the dead-letter topic with the step's name, the reason and
// the record's value and input position; the State writes the call made are discarded (an
// Apply, Update or Reduce changes nothing); the failure is counted (RunSummary::dead_letters
// and ::user_function_failures); and the pipeline goes on with the next record. A restart does
// not meet the record again. (Update changes the value in place: the dead letter holds the value
// as the function left it.)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weir/aggregator.h"
#include "weir/join.h"
#include "weir/key.h"
#include "weir/process.h"
#include "weir/record.h"
#include "weir/status.h"
#include "weir/value.h"

namespace weir {

namespace dataflow {
struct Graph;
struct GraphAccess;
class StepState;
}  // namespace dataflow

class WindowDefinition;  // weir/window.h
class WindowedStream;

// The state of the current record's key in one stateful step: named values, durable at the
// next checkpoint, restored after a crash. Only valid during the call it is passed to.
class State {
 public:
  // The value stored under `name`, or nullptr.
  const Value* Get(std::string_view name);
  void Set(std::string_view name, Value value);
  void Delete(std::string_view name);

 private:
  friend class dataflow::StepState;
  explicit State(dataflow::StepState* impl) : impl_(impl) {}
  dataflow::StepState* impl_;
};

// Where a record's key comes from when a source parses JSON: a field of the value, of a type.
struct KeySpec {
  std::string field{};  // dotted path; empty: the source's own key (topics)
  KeySerde type = KeySerde::kString;
};

struct FileSourceOptions {
  std::string path{};               // JSON lines
  KeySpec key{};                    // REQUIRED field for files
  std::string timestamp_field{};    // integer ms; empty: the time the line is read
  std::string dead_letter_topic{};  // empty: "<application>.dlq"
  double max_rate = 0;              // records/s; 0: as fast as possible
};

// Where a topic source starts reading a partition the application has no checkpoint for. Once a
// checkpoint holds its position (the committed offset), a run resumes there, whatever `start`.
enum class TopicStart {
  kEarliest,  // the first record the topic keeps
  kLatest,    // the end the partition has when the run starts: only records appended after
  kOffset,    // TopicSourceOptions::start_offset (clamped to what the partition keeps)
};

struct TopicSourceOptions {
  std::string topic{};
  KeySpec key{};                    // empty field: keep the stored key
  std::string timestamp_field{};    // empty: keep the stored timestamp
  std::string dead_letter_topic{};  // empty: "<application>.dlq"
  // Read up to the end the topic had when the run started, then finish (like a file);
  // otherwise follow it until stopped.
  bool bounded = false;
  TopicStart start = TopicStart::kEarliest;
  int64_t start_offset = 0;  // with TopicStart::kOffset: in every partition
  double max_rate = 0;
  // Idle close: once no record has come for this long (wall clock), the partition's watermark
  // moves forward with the wall clock, so windows closing by partition close without new input.
  // 0: off (the watermark waits for events, as event time should).
  std::chrono::milliseconds idle_timeout{0};
};

// A deterministic clickstream: users browse pages in sessions of activity separated by quiet
// spells; views, clicks, cart adds and purchases (with amounts). Keyed by "user" (string), so
// partition p holds only users that murmur2 puts on partition p. The same options always give
// the same events, and a restart resumes exactly where the last checkpoint left it.
struct GeneratorOptions {
  int32_t partitions = 1;
  int64_t events = -1;  // in all; -1: unbounded
  int64_t users = 10'000;
  int64_t start_time_ms = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
  double events_per_second = 1000;            // event-time rate the timestamps follow
  double max_rate = 0;                        // wall-clock throttle, records/s; 0: unthrottled
  uint64_t seed = 42;
  // Event-time disorder: up to this many ms of lateness on some events (0: in order).
  int64_t max_out_of_order_ms = 2000;
  // The share of users active at any moment (0-1]. Below 1, users have sessions separated by
  // quiet spells; at 1 every event picks any user (a uniform key distribution, for benchmarks).
  double active_fraction = 0.2;
};

// A durable pull consumer of a NATS JetStream stream (one partition). Messages are acknowledged
// only once what the pipeline made of them is checkpointed (a join holds its members until their
// group is processed); a message JetStream has delivered `max_deliver` times is published to
// `dead_letter_subject` with its reason and terminated.
struct JetStreamSourceOptions {
  std::string url = "nats://127.0.0.1:4222";
  std::string stream{};               // REQUIRED: the JetStream stream
  std::string subject{};              // the consumer's filter subject; empty: the whole stream
  std::string durable{};              // REQUIRED: the durable consumer's name (created if missing)
  KeySpec key{};                      // empty field: the null key
  std::string timestamp_field{};      // empty: the time JetStream stored the message
  std::string dead_letter_topic{};    // empty: "<application>.dlq"
  std::string dead_letter_subject{};  // empty: "<stream>.dlq"
  int max_deliver = 5;
  std::chrono::milliseconds ack_wait{30'000};
  // Read up to the stream's last message at the time the run started, then finish.
  bool bounded = false;
};

struct TopicSinkOptions {
  std::string topic{};
  int32_t partitions = 0;  // for a new topic; 0: the producing step's task count
};

class Stream {
 public:
  // value -> new value.
  Stream Map(std::function<Value(const Value&)> fn, std::string name = "");
  // The whole record (key, value, timestamp, headers) -> new value; key and timestamp stay.
  Stream MapRecord(std::function<Value(const Record&)> fn, std::string name = "");
  // The value becomes an object of these fields of it (dotted paths: "address.city"), in this
  // order, each named by its path as given; fields the value lacks are left out. A projection
  // without copying: the fields are swapped out of the record, not copied (YAML `select:`).
  Stream Select(std::vector<std::string> fields, std::string name = "");
  // Keeps the records for which `pred` is true.
  Stream Filter(std::function<bool(const Value&)> pred, std::string name = "");
  Stream FilterRecord(std::function<bool(const Record&)> pred, std::string name = "");
  // value -> zero or more values, each a record with the same key and timestamp.
  Stream FlatMap(std::function<std::vector<Value>(const Value&)> fn, std::string name = "");
  // A stateful transformation: the new value, or nullopt to drop the record. The State is the
  // record key's state in this step (durable, exactly once).
  Stream Apply(std::function<std::optional<Value>(const Value&, State&)> fn, std::string name = "");
  // Changes the value in place, with the key's state; the record goes on.
  Stream Update(std::function<void(Value&, State&)> fn, std::string name = "");
  // Changes the value in place, without state: a Map that changes some fields, without building
  // a new value (after a Select, say). A function that throws sends the record, as it left it,
  // to the dead-letter topic.
  Stream Update(std::function<void(Value&)> fn, std::string name = "");
  // A keyed process function (weir/process.h): per record key, engine-owned state and
  // event-time timers, results validated before they are applied, exactly once. Link
  // weir::process (part of weir::weir).
  Stream Process(ProcessOptions options, std::shared_ptr<ProcessFunction> function,
                 std::string name = "");
  // Re-keys every record by a field of its value, through a repartition topic, so that what
  // follows sees all records of a key in one task. Without a type, the key has the field's own
  // type: a string key for a string, an integer key for an integer, the JSON text (kJson) for
  // any other value. With a type, a field of another type is refused. A missing or null field,
  // or a refused one, sends the record to the dead-letter topic.
  Stream GroupBy(std::string field, std::optional<KeySerde> type = std::nullopt,
                 int32_t partitions = 0);
  // Re-keys every record by a function of it (Kafka Streams' selectKey), through a repartition
  // topic as GroupBy does.
  Stream SelectKey(std::function<Key(const Record&)> fn, std::string name = "",
                   int32_t partitions = 0);
  // Gives every record a new event time. The watermark stays the input's (it is not moved back):
  // a record moved behind it is late for the windows and joins after this step (window.h).
  Stream WithTimestamp(std::function<EventTime(const Record&)> fn, std::string name = "");
  // A running aggregation per key: each record updates the key's aggregates and emits them,
  // {"<name>": <result>, ...}.
  Stream Aggregate(std::vector<std::pair<std::string, AggregatorPtr>> aggregations,
                   std::string name = "");

  // Windows of each key's events (weir/window.h): add .Agg(...), then .Final() or .Current().
  WindowedStream Window(WindowDefinition definition);

  // Joins (weir/join.h) of this stream (left) with `right`, by key and event time. Input-group
  // assembly over several parents is Application::Join.
  Stream IntervalJoin(Stream right, IntervalJoinOptions options);
  Stream AsOfJoin(Stream right, AsOfJoinOptions options);

  // Sinks: every record that reaches them is written exactly once (topics, regular files),
  // printed (stdout: at least once, as it happens) or dropped (discard: to measure the engine
  // alone). A value read as JSON text (a topic's, a file's line, a JetStream message) that no
  // step has changed (it went through filters only) is written as that text, byte for byte, where
  // the engine still has it (not for a record the engine reads a second time, to redeliver it or
  // after a restart, nor where another branch of a fan-out changed the record first); to a file or
  // stdout only if the text is on one line.
  // Either way the value written is the same.
  void ToTopic(TopicSinkOptions options);
  void ToTopic(std::string topic) { ToTopic(TopicSinkOptions{.topic = std::move(topic)}); }
  // One JSON object per line: {"key": ..., "timestamp": ..., "value": ...}. Exactly once for a
  // regular file (cut back to the last checkpoint on recovery). A path that is not a regular
  // file (/dev/null, a character device, a FIFO: opening a FIFO waits for its reader) is
  // written as records come, at least once, as stdout is: nothing is synced or cut back.
  void ToFile(std::string path);
  void ToStdout();
  void ToDiscard();
  // Calls `fn` with every record that reaches it, on the task's thread. At least once: records
  // after the last checkpoint are passed again after a crash. A callback that throws sends its
  // record to the dead-letter topic, as a step's function does.
  void ForEach(std::function<void(const Record&)> fn, std::string name = "");

 private:
  friend class Application;
  friend class WindowedStream;
  friend struct dataflow::GraphAccess;
  Stream(dataflow::Graph* graph, int node) : graph_(graph), node_(node) {}
  dataflow::Graph* graph_;
  int node_;
};

}  // namespace weir
