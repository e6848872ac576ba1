#include "nexmark/source.h"

#include <chrono>

#include "dataflow/graph.h"
#include "dataflow/sources.h"

namespace weir::nexmark {
namespace {

// Position k is the partition's k-th event, event number partition + k * partitions.
class NexmarkSource : public dataflow::CountingSource {
 public:
  NexmarkSource(std::shared_ptr<const NexmarkGenerator> model, const NexmarkSourceOptions& options,
                PartitionId partition)
      : model_(std::move(model)),
        partition_(partition),
        stride_(options.partitions),
        end_(options.events < 0 ? -1
                                : (options.events - partition.value() + stride_ - 1) / stride_),
        real_time_(options.real_time) {}

  Result<dataflow::PollResult> Poll(size_t max, dataflow::SourceBatch& batch,
                                    dataflow::TaskContext&) override {
    if (end_ >= 0 && next_ >= end_) return dataflow::PollResult::kEnd;
    const size_t n = end_ >= 0 ? std::min<int64_t>(max, end_ - next_) : max;
    const int64_t now_ms = real_time_ ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count()
                                      : INT64_MAX;
    size_t added = 0;
    // An event not yet due is not generated: its time alone is cheap to compute.
    for (; added < n && (!real_time_ || TimeAt(next_) <= now_ms); ++added, ++next_) {
      WriteRecordAt(next_, batch.records.Add());
      batch.positions.push_back(next_);
    }
    return added == 0 ? dataflow::PollResult::kIdle : dataflow::PollResult::kRecords;
  }

  Result<Record> Reread(int64_t position, int64_t) override {
    Record record;
    WriteRecordAt(position, record);
    return record;
  }

  std::string Describe() const override {
    return "nexmark partition " + std::to_string(partition_.value());
  }

  Value PositionValue(int64_t position) const override {
    return Value::MakeObject(
        {{"partition", Value(partition_.value())}, {"event", Value(EventNumber(position))}});
  }

 private:
  int64_t EventNumber(int64_t position) const { return partition_.value() + position * stride_; }

  int64_t TimeAt(int64_t position) const {
    return model_->TimestampForNumber(model_->EventIdAt(EventNumber(position))).value();
  }

  // Into `into`, reusing its memory (a RecordSlots slot) and the event's (event_).
  void WriteRecordAt(int64_t position, Record& into) {
    model_->EventAt(EventNumber(position), event_);
    into.timestamp = event_.timestamp;
    event_.WriteValue(into.value);
  }

  std::shared_ptr<const NexmarkGenerator> model_;
  Event event_;  // the last event made, whose strings' memory the next one reuses
  PartitionId partition_;
  int64_t stride_;
  int64_t end_;  // positions in this partition; -1: unbounded
  bool real_time_;
};

class NexmarkSourceDefinition : public dataflow::SourceDefinition {
 public:
  explicit NexmarkSourceDefinition(NexmarkSourceOptions options) : options_(std::move(options)) {}
  std::string_view kind() const override { return "nexmark"; }
  Status Validate() const override {
    WEIR_RETURN_IF_ERROR(dataflow::CheckPartitions(options_.partitions, 1, "nexmark partitions"));
    if (options_.events < -1) {
      return Status::InvalidArgument("nexmark events must be >= 0 (or -1: unbounded)");
    }
    Status config = NexmarkConfigOf(options_).Validate();
    if (!config.ok()) return Status::InvalidArgument("nexmark " + std::string(config.message()));
    return Status::OK();
  }
  void Describe(dataflow::Fingerprint& fingerprint) const override {
    // Every event is a function of these and its number.
    fingerprint.Fixed("partitions", options_.partitions)
        .Fixed("first_event_ms", options_.first_event_ms)
        .Fixed("events_per_second", options_.events_per_second)
        .Fixed("seed", options_.seed)
        .Fixed("out_of_order_group_size", options_.out_of_order_group_size);
    // How many events, and whether they are paced by the clock: the same stream either way.
    fingerprint.MayChange("events", options_.events).MayChange("real_time", options_.real_time);
  }
  Result<int32_t> Partitions(log::LogStore&) const override { return options_.partitions; }
  Result<std::unique_ptr<dataflow::Source>> Open(log::LogStore&,
                                                 PartitionId partition) const override {
    auto model = model_.Get(
        [&] { return std::make_shared<const NexmarkGenerator>(NexmarkConfigOf(options_)); });
    return std::unique_ptr<dataflow::Source>(new NexmarkSource(model, options_, partition));
  }

 private:
  NexmarkSourceOptions options_;
  dataflow::MadeOnce<NexmarkGenerator> model_;  // when the first task opens
};

// source: {nexmark: {partitions, events, events_per_second, first_event_ms, seed,
//                    out_of_order_group_size, real_time}}
Result<std::shared_ptr<const dataflow::SourceDefinition>> ParseNexmarkSource(
    const dataflow::SourceYaml& yaml) {
  if (yaml.Has("key") || yaml.Has("timestamp") || yaml.Has("rate")) {
    return yaml.source().Error(
        "a nexmark source stamps its events itself, with the null key, and paces itself "
        "(real_time); remove key/timestamp/rate");
  }
  WEIR_RETURN_IF_ERROR(yaml.Common().status());
  NexmarkSourceOptions o;
  const ConfigNode& n = yaml.body();
  if (!n.IsMap() && !n.IsNull()) return n.Expected("a map of nexmark options (or {})");
  if (n.IsMap()) {
    WEIR_RETURN_IF_ERROR(n.OnlyKeys({"partitions", "events", "events_per_second", "first_event_ms",
                                     "seed", "out_of_order_group_size", "real_time"}));
    if (auto v = n.Get("partitions")) {
      WEIR_ASSIGN_OR_RETURN(o.partitions, v->Int(1, kMaxPartitions));
    }
    if (auto v = n.Get("events")) {
      WEIR_ASSIGN_OR_RETURN(o.events, v->Int(-1, INT64_MAX));
    }
    if (auto v = n.Get("events_per_second")) {
      WEIR_ASSIGN_OR_RETURN(o.events_per_second, v->Number(1e-3));
    }
    if (auto v = n.Get("first_event_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.first_event_ms, v->Int(0, INT64_MAX / 2));
    }
    if (auto v = n.Get("seed")) {
      WEIR_ASSIGN_OR_RETURN(o.seed, v->Int(0, INT64_MAX));
    }
    if (auto v = n.Get("out_of_order_group_size")) {
      WEIR_ASSIGN_OR_RETURN(o.out_of_order_group_size, v->Int(1, INT32_MAX));
    }
    if (auto v = n.Get("real_time")) {
      WEIR_ASSIGN_OR_RETURN(o.real_time, v->Bool());
    }
  }
  return std::make_shared<NexmarkSourceDefinition>(std::move(o));
}

}  // namespace

NexmarkConfig NexmarkConfigOf(const NexmarkSourceOptions& options) {
  NexmarkConfig config;
  config.first_event_ms = options.first_event_ms;
  config.events_per_second = options.events_per_second;
  config.seed = options.seed;
  config.out_of_order_group_size = options.out_of_order_group_size;
  return config;
}

Stream FromNexmark(Application& app, NexmarkSourceOptions options) {
  return dataflow::GraphAccess::AddSource(
      app, std::make_shared<NexmarkSourceDefinition>(std::move(options)));
}

void RegisterNexmarkSource(dataflow::KindRegistry& kinds) {
  kinds.Add(dataflow::SourceKind{"nexmark", {}, ParseNexmarkSource});
}

}  // namespace weir::nexmark
