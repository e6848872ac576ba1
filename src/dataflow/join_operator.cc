#include "dataflow/join_operator.h"

#include "join/assembler.h"

namespace weir::dataflow {
namespace {

// Dedup entries: "g" + group id -> group time; a scan drops those older than the horizon.
constexpr std::string_view kDedupPrefix = "g";

class JoinOperator final : public MultiInputOperator, join::Resolver {
 public:
  JoinOperator(const JoinOptions& options, const std::vector<std::string>& inputs, TaskContext& ctx,
               std::string_view step_name)
      : options_(options),
        inputs_(inputs),
        ctx_(ctx),
        store_(ctx.Store(step_name)),
        assembler_(join::Assembler::Make(options_, inputs_, *this)),
        // Embedded sources never deliver an emitted group's members again: a crash rolls the
        // outputs back with the state. A broker may, after a crash between checkpoint and ack.
        dedup_(ctx.HasSelfRedeliveringInput() ? options_.dedup : std::chrono::milliseconds(0)) {}

  void ProcessInput(int input, Record&& record) override {
    std::string trace_id;
    if (options_.mode == JoinMode::kTrace && !TraceId(record, trace_id)) return;
    EventTime time = record.timestamp;
    if (!options_.time_field.empty()) {
      const Value* t = record.value.FindPath(options_.time_field);
      if (t != nullptr && t->is_int()) time = EventTime(t->as_int());
    }
    Delivery delivery = ctx_.HoldCurrent();
    assembler_->Add(input, join::Member{std::move(record), delivery, time}, trace_id);
    // The join's clock moves with the records that reach it, one at a time, so that what
    // times out does not depend on where batches end.
    assembler_->Advance(time);
    EmitReady();
  }

  void OnWatermark(Watermark watermark) override {
    const EventTime clock(watermark.value());
    assembler_->Advance(clock);
    EmitReady();
    if (dedup_.count() > 0 && watermark != Watermark::Max() &&
        (last_dedup_sweep_ == EventTime::Min() ||
         clock.value() - last_dedup_sweep_.value() >= dedup_.count() / 4)) {
      SweepDedup(clock);
    }
    Operator::OnWatermark(watermark);
  }

  void OnInputEnded(int input) override {
    assembler_->InputEnded(input);
    EmitReady();
  }

  // join::Resolver
  void Evict(join::Member member, std::string_view reason, MissingPolicy policy) override {
    ctx_.CountEvicted();
    if (policy == MissingPolicy::kError && member.delivery.deliveries < options_.max_deliver) {
      ctx_.Resolve(member.delivery, Resolution::kNak);
      return;
    }
    std::string why(reason);
    if (policy == MissingPolicy::kError) {
      why += " (evicted on each of " + std::to_string(member.delivery.deliveries) + " deliveries)";
    }
    Reject(std::move(member), why);
  }
  void Release(join::Member member) override { ctx_.Resolve(member.delivery, Resolution::kAck); }
  void Supersede(const Delivery& stale) override { ctx_.Resolve(stale, Resolution::kTerm); }
  void Reject(join::Member member, std::string_view reason) override {
    ctx_.DeadLetterHeld(reason, member.record, member.delivery);
    ctx_.Resolve(member.delivery, Resolution::kAck);
  }

 private:
  // The correlation id of a record, as a string; a dead letter if it has none.
  bool TraceId(const Record& record, std::string& out) {
    if (options_.trace_field.empty()) {
      if (record.key.is_null()) {
        ctx_.DeadLetter("join: the record has no key to correlate by", record);
        return false;
      }
      out = record.key.serde() == KeySerde::kString ? record.key.bytes() : [&] {
        std::string json;
        record.key.AppendJson(json);
        return json;
      }();
      return true;
    }
    const Value* v = record.value.FindPath(options_.trace_field);
    if (v != nullptr && v->is_string()) {
      out = v->as_string();
      return true;
    }
    if (v != nullptr && v->is_int()) {
      out = std::to_string(v->as_int());
      return true;
    }
    ctx_.DeadLetter("join: field '" + options_.trace_field +
                        (v == nullptr ? "' is missing" : "' is not a string or an integer"),
                    record);
    return false;
  }

  void EmitReady() {
    while (std::optional<join::ReadyGroup> group = assembler_->PopReady()) Emit(std::move(*group));
  }

  void Emit(join::ReadyGroup group) {
    std::vector<Delivery> deliveries;
    Value::Object out;
    out.reserve(inputs_.size() + 3);
    out.emplace_back(options_.mode == JoinMode::kTrace ? "trace_id" : "group_id", group.id);
    out.emplace_back("seq", group.seq);
    out.emplace_back("event_ts", group.time.value());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (options_.collect.count(inputs_[i])) {
        Value::Array samples;
        samples.reserve(group.samples[i].size());
        for (join::Member& m : group.samples[i]) {
          deliveries.push_back(m.delivery);
          samples.push_back(std::move(m.record.value));
        }
        out.emplace_back(inputs_[i], Value(std::move(samples)));
      } else if (group.members[i].has_value()) {
        deliveries.push_back(group.members[i]->delivery);
        out.emplace_back(inputs_[i], std::move(group.members[i]->record.value));
      } else {
        out.emplace_back(inputs_[i], Value());
      }
    }
    if (!AlreadyEmitted(group)) {
      Forward(Record{Key::String(group.id), Value(std::move(out)), group.time, {}});
    }
    // The steps after the join have processed the group: its members may now commit with the
    // next checkpoint (ack after process).
    for (const Delivery& d : deliveries) ctx_.Resolve(d, Resolution::kAck);
  }

  // Whether the group's id was emitted within the dedup horizon (and remembers it if not).
  bool AlreadyEmitted(const join::ReadyGroup& group) {
    if (dedup_.count() <= 0) return false;
    const std::string key = std::string(kDedupPrefix) + group.id;
    auto seen = store_.Get(key);
    if (!seen.ok()) {
      Fail(seen.status());
      return false;
    }
    if (*seen != nullptr) return true;
    store_.Put(key, Value(group.time.value()));
    return false;
  }

  void SweepDedup(EventTime clock) {
    last_dedup_sweep_ = clock;
    const int64_t horizon = clock.value() - dedup_.count();
    std::vector<std::string> expired;
    Status s = store_.Scan(kDedupPrefix, "h", false, [&](std::string_view key, const Value& v) {
      if (v.is_int() && v.as_int() < horizon) expired.emplace_back(key);
      return true;
    });
    if (!s.ok()) return Fail(s);
    for (const std::string& key : expired) store_.Delete(key);
  }

  const JoinOptions options_;
  const std::vector<std::string> inputs_;
  TaskContext& ctx_;
  state::KeyValueStore& store_;
  std::unique_ptr<join::Assembler> assembler_;
  const std::chrono::milliseconds dedup_;  // 0: no dedup
  EventTime last_dedup_sweep_ = EventTime::Min();
};

}  // namespace

Result<std::unique_ptr<Operator>> MakeJoinOperator(const JoinOptions& options,
                                                   const std::vector<std::string>& inputs,
                                                   const StepContext& context) {
  return std::unique_ptr<Operator>(
      new JoinOperator(options, inputs, context.task, context.step_name));
}

}  // namespace weir::dataflow
