// The generator source kind: the deterministic clickstream of clickstream.h, one task per
// partition (Application::FromGenerator; YAML `source: {generator: {partitions, events, users,
// start_time_ms, events_per_second, seed, max_out_of_order_ms, active_fraction}, rate}`). The
// position is the partition's sequence number, so a restart resumes exactly.
#include "dataflow/builtin_kinds.h"
#include "dataflow/clickstream.h"
#include "dataflow/graph.h"
#include "dataflow/kind_registry.h"
#include "dataflow/sources.h"
#include "weir/application.h"

namespace weir::dataflow {
namespace {

class GeneratorSource : public CountingSource {
 public:
  GeneratorSource(std::shared_ptr<const ClickstreamModel> model, PartitionId partition,
                  double max_rate)
      : model_(std::move(model)),
        partition_(partition),
        end_(model_->EventsIn(partition)),
        limiter_(max_rate) {}

  Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext&) override {
    if (end_ >= 0 && next_ >= end_) return PollResult::kEnd;
    size_t n = limiter_.Allow(end_ >= 0 ? std::min<int64_t>(max, end_ - next_) : max);
    if (n == 0) return PollResult::kIdle;
    for (size_t i = 0; i < n; ++i, ++next_) {
      model_->WriteEventAt(partition_, next_, batch.records.Add());
      batch.positions.push_back(next_);
    }
    return PollResult::kRecords;
  }

  Result<Record> Reread(int64_t sequence, int64_t) override {
    return model_->EventAt(partition_, sequence);
  }

  std::string Describe() const override {
    return "generator partition " + std::to_string(partition_.value());
  }

  Value PositionValue(int64_t sequence) const override {
    return Value::MakeObject(
        {{"partition", Value(partition_.value())}, {"sequence", Value(sequence)}});
  }

 private:
  std::shared_ptr<const ClickstreamModel> model_;
  PartitionId partition_;
  int64_t end_;
  RateLimiter limiter_;
};

class GeneratorSourceDefinition : public SourceDefinition {
 public:
  explicit GeneratorSourceDefinition(GeneratorOptions options) : options_(std::move(options)) {}
  std::string_view kind() const override { return "generator"; }
  Status Validate() const override {
    WEIR_RETURN_IF_ERROR(CheckPartitions(options_.partitions, 1, "generator partitions"));
    if (options_.users < 1 || options_.users > INT32_MAX) {
      return Status::InvalidArgument("generator users must be from 1 to " +
                                     std::to_string(INT32_MAX));
    }
    if (!(options_.events_per_second > 0)) {
      return Status::InvalidArgument("generator events_per_second must be > 0");
    }
    if (options_.max_out_of_order_ms < 0) {
      return Status::InvalidArgument("generator max_out_of_order_ms must be >= 0");
    }
    if (!(options_.active_fraction > 0 && options_.active_fraction <= 1)) {
      return Status::InvalidArgument("generator active_fraction must be in (0, 1]");
    }
    return Status::OK();
  }
  void Describe(Fingerprint& fingerprint) const override {
    // Every event is a function of these and its position.
    fingerprint.Fixed("partitions", options_.partitions)
        .Fixed("users", options_.users)
        .Fixed("seed", options_.seed)
        .Fixed("events_per_second", options_.events_per_second)
        .Fixed("active_fraction", options_.active_fraction)
        .Fixed("max_out_of_order_ms", options_.max_out_of_order_ms)
        .Fixed("start_time_ms", options_.start_time_ms);
    // How many events, and how fast: a restart may go further or slower along the same stream.
    fingerprint.MayChange("events", options_.events).MayChange("rate", options_.max_rate);
  }
  Result<int32_t> Partitions(log::LogStore&) const override { return options_.partitions; }
  Result<std::unique_ptr<Source>> Open(log::LogStore&, PartitionId partition) const override {
    auto model = model_.Get([&] { return std::make_shared<const ClickstreamModel>(options_); });
    return std::unique_ptr<Source>(new GeneratorSource(model, partition, options_.max_rate));
  }

 private:
  GeneratorOptions options_;
  MadeOnce<ClickstreamModel> model_;  // when the first task opens
};

Result<std::shared_ptr<const SourceDefinition>> ParseGeneratorSource(const SourceYaml& yaml) {
  if (yaml.Has("key") || yaml.Has("timestamp")) {
    return yaml.source().Error(
        "a generator keys its events by user and stamps them itself; remove key/timestamp");
  }
  WEIR_ASSIGN_OR_RETURN(CommonSourceOptions common, yaml.Common());
  GeneratorOptions o;
  o.max_rate = common.rate;
  const ConfigNode& g = yaml.body();
  if (!g.IsMap() && !g.IsNull()) return g.Expected("a map of generator options (or {})");
  if (g.IsMap()) {
    WEIR_RETURN_IF_ERROR(
        g.OnlyKeys({"partitions", "events", "users", "start_time_ms", "events_per_second", "seed",
                    "max_out_of_order_ms", "active_fraction"}));
    if (auto v = g.Get("partitions")) {
      WEIR_ASSIGN_OR_RETURN(o.partitions, v->Int(1, kMaxPartitions));
    }
    if (auto v = g.Get("events")) {
      WEIR_ASSIGN_OR_RETURN(o.events, v->Int(-1, INT64_MAX));
    }
    if (auto v = g.Get("users")) {
      WEIR_ASSIGN_OR_RETURN(o.users, v->Int(1, 1'000'000'000));
    }
    if (auto v = g.Get("start_time_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.start_time_ms, v->Int(0, INT64_MAX / 2));
    }
    if (auto v = g.Get("events_per_second")) {
      WEIR_ASSIGN_OR_RETURN(o.events_per_second, v->Number(1e-3));
    }
    if (auto v = g.Get("seed")) {
      WEIR_ASSIGN_OR_RETURN(int64_t seed, v->Int(0, INT64_MAX));
      o.seed = static_cast<uint64_t>(seed);
    }
    if (auto v = g.Get("active_fraction")) {
      WEIR_ASSIGN_OR_RETURN(o.active_fraction, v->Number(1e-9));
      if (o.active_fraction > 1) {
        return v->Error("expected a fraction in (0, 1], found " + v->Scalar());
      }
    }
    if (auto v = g.Get("max_out_of_order_ms")) {
      WEIR_ASSIGN_OR_RETURN(o.max_out_of_order_ms, v->Int(0, INT64_MAX / 2));
    }
  }
  return std::make_shared<GeneratorSourceDefinition>(std::move(o));
}

}  // namespace

void RegisterGeneratorSource(KindRegistry& kinds) {
  kinds.Add(SourceKind{"generator", {"rate"}, ParseGeneratorSource});
}

}  // namespace weir::dataflow

namespace weir {

Stream Application::FromGenerator(GeneratorOptions options) {
  return dataflow::GraphAccess::AddSource(
      *this, std::make_shared<dataflow::GeneratorSourceDefinition>(std::move(options)));
}

}  // namespace weir
