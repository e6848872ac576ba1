#include "connectors/nats/jetstream_source.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataflow/json_records.h"

namespace weir::nats {
namespace {

using dataflow::PollResult;
using dataflow::Resolution;
using dataflow::SourceBatch;
using dataflow::TaskContext;
using Clock = std::chrono::steady_clock;

// libnats objects, each destroyed with its own function.
template <auto Destroy>
struct Destroyer {
  template <typename T>
  void operator()(T* object) const {
    Destroy(object);
  }
};
using ConnectionPtr = std::unique_ptr<natsConnection, Destroyer<natsConnection_Destroy>>;
using JetStreamPtr = std::unique_ptr<jsCtx, Destroyer<jsCtx_Destroy>>;
using SubscriptionPtr = std::unique_ptr<natsSubscription, Destroyer<natsSubscription_Destroy>>;
using MsgPtr = std::unique_ptr<natsMsg, Destroyer<natsMsg_Destroy>>;
using MetaDataPtr = std::unique_ptr<jsMsgMetaData, Destroyer<jsMsgMetaData_Destroy>>;
using StreamInfoPtr = std::unique_ptr<jsStreamInfo, Destroyer<jsStreamInfo_Destroy>>;
using ConsumerInfoPtr = std::unique_ptr<jsConsumerInfo, Destroyer<jsConsumerInfo_Destroy>>;

// How long one Poll may wait for messages: Poll never blocks the task for long.
constexpr int64_t kFetchWaitMs = 100;
constexpr size_t kMaxFetch = 1024;
// Deliveries JetStream lets this consumer have unacknowledged. Acks wait for checkpoints, so
// this bounds what a task reads between two checkpoints (JetStream's default is 1000).
constexpr int64_t kMaxAckPending = 1 << 16;

// The status's text, with libnats' detail when it says more.
std::string NatsText(natsStatus status) {
  std::string text = natsStatus_GetText(status);
  natsStatus last = NATS_OK;
  const char* last_error = nats_GetLastError(&last);
  if (last != status || last_error == nullptr) return text;
  std::string_view detail = last_error;
  if (size_t origin = detail.find("): "); origin != std::string_view::npos) {
    detail.remove_prefix(origin + 3);  // "(file.c:123): "
  }
  if (!detail.empty() && detail != text) text += " (" + std::string(detail) + ")";
  return text;
}

int64_t Nanos(std::chrono::milliseconds duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

Status ValidateOptions(const JetStreamSourceOptions& options) {
  if (options.stream.empty()) {
    return Status::InvalidArgument("jetstream source: 'stream' is required");
  }
  if (options.durable.empty() || options.durable.find_first_of(". *>\t\r\n") != std::string::npos) {
    return Status::InvalidArgument("jetstream source of stream " + options.stream +
                                   ": 'durable' must be a name without '.', '*', '>' or spaces, "
                                   "found '" +
                                   options.durable + "'");
  }
  if (options.max_deliver < 1) {
    return Status::InvalidArgument("jetstream source of stream " + options.stream +
                                   ": 'max_deliver' must be at least 1");
  }
  if (options.ack_wait <= std::chrono::milliseconds(0)) {
    return Status::InvalidArgument("jetstream source of stream " + options.stream +
                                   ": 'ack_wait' must be positive");
  }
  return Status::OK();
}

// A consumer JetStream refused (it answered with an error code) is a bad configuration; any
// other failure is the connection's.
Status ConsumerChangeFailed(natsStatus status, jsErrCode error_code, const std::string& what) {
  if (error_code != 0) {
    return Status::InvalidArgument(what + ": JetStream refused it: " + NatsText(status));
  }
  return Status::Unavailable(what + ": " + NatsText(status));
}

// Creates the durable pull consumer, or checks the existing one and brings its ack wait,
// max deliver and max ack pending to what this source needs.
Status EnsureConsumer(jsCtx* js, const JetStreamSourceOptions& options, const std::string& where) {
  const std::string name =
      "durable consumer " + options.durable + " of stream " + options.stream + " at " + where;
  jsConsumerConfig wanted;
  jsConsumerConfig_Init(&wanted);
  wanted.Durable = options.durable.c_str();
  wanted.DeliverPolicy = js_DeliverAll;
  wanted.AckPolicy = js_AckExplicit;
  wanted.ReplayPolicy = js_ReplayInstant;
  wanted.AckWait = Nanos(options.ack_wait);
  wanted.MaxDeliver = -1;  // Weir counts deliveries itself, to dead-letter
  wanted.MaxAckPending = kMaxAckPending;
  if (!options.subject.empty()) wanted.FilterSubject = options.subject.c_str();

  jsConsumerInfo* raw_info = nullptr;
  jsErrCode error_code = static_cast<jsErrCode>(0);
  natsStatus status = js_GetConsumerInfo(&raw_info, js, options.stream.c_str(),
                                         options.durable.c_str(), nullptr, &error_code);
  if (status == NATS_NOT_FOUND) {
    status = js_AddConsumer(&raw_info, js, options.stream.c_str(), &wanted, nullptr, &error_code);
    ConsumerInfoPtr created(raw_info);
    if (status != NATS_OK) return ConsumerChangeFailed(status, error_code, "creating " + name);
    return Status::OK();
  }
  ConsumerInfoPtr info(raw_info);
  if (status != NATS_OK) return Status::Unavailable("reading " + name + ": " + NatsText(status));

  const jsConsumerConfig& have = *info->Config;
  const std::string remedy = ": delete it or name another durable";
  if (have.DeliverSubject != nullptr && *have.DeliverSubject != '\0') {
    return Status::FailedPrecondition(name + " is a push consumer, Weir pulls" + remedy);
  }
  if (have.AckPolicy != js_AckExplicit) {
    return Status::FailedPrecondition(name + " does not take explicit acks" + remedy);
  }
  std::string_view have_filter = have.FilterSubject != nullptr ? have.FilterSubject : "";
  if (have_filter != options.subject) {
    return Status::FailedPrecondition(name + " filters subject '" + std::string(have_filter) +
                                      "', the source asks for '" + options.subject + "'" + remedy);
  }
  if (have.AckWait == wanted.AckWait && have.MaxDeliver == wanted.MaxDeliver &&
      have.MaxAckPending == wanted.MaxAckPending) {
    return Status::OK();
  }
  jsConsumerConfig updated = have;
  updated.AckWait = wanted.AckWait;
  updated.MaxDeliver = wanted.MaxDeliver;
  updated.MaxAckPending = wanted.MaxAckPending;
  jsConsumerInfo* raw_updated = nullptr;
  status =
      js_UpdateConsumer(&raw_updated, js, options.stream.c_str(), &updated, nullptr, &error_code);
  ConsumerInfoPtr updated_info(raw_updated);
  if (status != NATS_OK) return ConsumerChangeFailed(status, error_code, "updating " + name);
  return Status::OK();
}

class JetStreamSource : public dataflow::Source {
 public:
  JetStreamSource(JetStreamSourceOptions options, ConnectionPtr connection, JetStreamPtr js,
                  SubscriptionPtr subscription, uint64_t last_sequence)
      : options_(std::move(options)),
        dead_letter_subject_(options_.dead_letter_subject.empty() ? options_.stream + ".dlq"
                                                                  : options_.dead_letter_subject),
        ack_wait_(options_.ack_wait),
        last_sequence_(last_sequence),
        connection_(std::move(connection)),
        js_(std::move(js)),
        subscription_(std::move(subscription)) {
    extraction_.key = options_.key;
    extraction_.timestamp_field = options_.timestamp_field;
  }

  Result<PollResult> Poll(size_t max, SourceBatch& batch, TaskContext& ctx) override {
    released_.clear();  // the batch that viewed them has been processed
    KeepSettledAlive();
    if (ended_) return PollResult::kEnd;
    natsMsgList list{};
    jsErrCode error_code = static_cast<jsErrCode>(0);
    int want = static_cast<int>(std::clamp<size_t>(max, 1, kMaxFetch));
    natsStatus status =
        natsSubscription_Fetch(&list, subscription_.get(), want, kFetchWaitMs, &error_code);
    if (status == NATS_TIMEOUT) return IdleOrEnd();
    if (status != NATS_OK) {
      if (natsConnection_Status(connection_.get()) == NATS_CONN_STATUS_RECONNECTING) {
        return PollResult::kIdle;
      }
      return Status::Unavailable(Describe() + ": fetching from " + options_.url + ": " +
                                 NatsText(status));
    }
    // Each message leaves the list, so that destroying the list frees only its array.
    std::vector<MsgPtr> messages;
    for (int i = 0; i < list.Count; ++i) {
      messages.emplace_back(list.Msgs[i]);
      list.Msgs[i] = nullptr;
    }
    natsMsgList_Destroy(&list);

    bool delivered = false;
    for (MsgPtr& message : messages) {
      jsMsgMetaData* raw_meta = nullptr;
      status = natsMsg_GetMetaData(&raw_meta, message.get());
      if (status != NATS_OK) {
        return Status::Internal(Describe() +
                                ": a message without JetStream metadata: " + NatsText(status));
      }
      MetaDataPtr meta(raw_meta);
      const int64_t sequence = static_cast<int64_t>(meta->Sequence.Stream);
      if (options_.bounded && meta->Sequence.Stream > last_sequence_) {
        past_bound_.emplace_back(sequence, std::move(message));
        continue;
      }
      delivered = true;
      Admit(std::move(message), sequence, static_cast<int64_t>(meta->NumDelivered),
            EventTime(meta->Timestamp / 1'000'000), batch, ctx);
    }
    return delivered ? PollResult::kRecords : IdleOrEnd();
  }

  std::string SavePosition() const override { return ""; }

  Status RestorePosition(std::string_view saved) override {
    if (saved.empty()) return Status::OK();
    return Status::Corruption(Describe() +
                              ": a saved position must be empty (the durable consumer keeps the "
                              "position), found '" +
                              std::string(saved) + "'");
  }

  std::string Describe() const override {
    return "jetstream stream " + options_.stream + " consumer " + options_.durable;
  }

  Value PositionValue(int64_t position) const override {
    auto it = deliveries_.find(position);
    if (it == deliveries_.end()) {
      return Value::MakeObject({{"stream", Value(options_.stream)}, {"position", Value(position)}});
    }
    return Value::MakeObject({{"stream", Value(options_.stream)},
                              {"sequence", Value(it->second.sequence)},
                              {"delivery", Value(it->second.delivery_count)}});
  }

  bool RedeliversItself() const override { return true; }

  void Resolve(int64_t position, Resolution resolution) override {
    auto it = deliveries_.find(position);
    WEIR_CHECK(it != deliveries_.end() && it->second.fate == Fate::kUnresolved,
               Describe() + ": delivery " + std::to_string(position) +
                   " resolved twice, or never delivered");
    --unresolved_;
    HeldDelivery& delivery = it->second;
    switch (resolution) {
      case Resolution::kAck:
        delivery.fate = Fate::kAckAtCheckpoint;
        if (delivery.expires - Clock::now() < ack_wait_ / 2) Touch(delivery);
        return;
      case Resolution::kNak:
        // Should the nak not get out, JetStream redelivers after ack_wait all the same.
        (void)natsMsg_Nak(delivery.message.get(), nullptr);
        Release(it);
        return;
      case Resolution::kTerm:
        if (natsMsg_Term(delivery.message.get(), nullptr) == NATS_OK) {
          Release(it);
        } else {
          delivery.fate = Fate::kTermAtCheckpoint;  // tried again with the next acks
        }
        return;
    }
  }

  Status OnCheckpointCommitted() override {
    int64_t failed = 0;
    natsStatus first_failure = NATS_OK;
    for (auto it = deliveries_.begin(); it != deliveries_.end();) {
      HeldDelivery& delivery = it->second;
      if (delivery.fate == Fate::kUnresolved) {
        ++it;
        continue;
      }
      natsStatus status = delivery.fate == Fate::kAckAtCheckpoint
                              ? natsMsg_Ack(delivery.message.get(), nullptr)
                              : natsMsg_Term(delivery.message.get(), nullptr);
      if (status == NATS_OK) {
        it = deliveries_.erase(it);
        continue;
      }
      if (failed++ == 0) first_failure = status;
      ++it;
    }
    if (failed == 0) return Status::OK();
    return Status::Unavailable(Describe() + ": " + std::to_string(failed) +
                               " acknowledgements could not be sent to " + options_.url +
                               " (kept for the next checkpoint): " + NatsText(first_failure));
  }

 private:
  enum class Fate { kUnresolved, kAckAtCheckpoint, kTermAtCheckpoint };

  struct HeldDelivery {
    MsgPtr message;
    int64_t sequence;        // in the stream
    int64_t delivery_count;  // JetStream's, from 1
    Fate fate = Fate::kUnresolved;
    // When JetStream redelivers the message unless told it is in progress (reckoned from its
    // arrival here, a little after JetStream started counting).
    Clock::time_point expires;
  };

  // Forgets a delivery resolved during a record's processing (a step that held the record naks or
  // terminates it), keeping its message until the next Poll: the record's JSON text
  // (SourceBatch::json) is a view of the message's data, which a sink after that step may still
  // write. (Acks are erased at a checkpoint, which never falls within a record's processing.)
  void Release(std::map<int64_t, HeldDelivery>::iterator it) {
    released_.push_back(std::move(it->second.message));
    deliveries_.erase(it);
  }

  // Turns one delivery into a record, or into a dead letter.
  void Admit(MsgPtr message, int64_t sequence, int64_t delivery_count, EventTime stored_at,
             SourceBatch& batch, TaskContext& ctx) {
    const int64_t position = ++last_position_;
    std::string_view raw(natsMsg_GetData(message.get()),
                         static_cast<size_t>(natsMsg_GetDataLength(message.get())));
    auto it = deliveries_
                  .emplace(position, HeldDelivery{std::move(message), sequence, delivery_count,
                                                  Fate::kUnresolved, Clock::now() + ack_wait_})
                  .first;
    HeldDelivery& delivery = it->second;
    if (delivery_count > options_.max_deliver) {
      std::string reason = "delivered " + std::to_string(delivery_count) +
                           " times, more than max_deliver " + std::to_string(options_.max_deliver);
      if (!PublishDeadLetter(delivery, reason, raw)) {
        // The connection is failing (the next fetch says so): JetStream delivers the message
        // again after ack_wait, and it is dead-lettered then.
        deliveries_.erase(it);
        return;
      }
      ctx.RawDeadLetter(reason, PositionValue(position), raw);
      delivery.fate = Fate::kTermAtCheckpoint;
      return;
    }
    Record& record = batch.records.Add();
    record.timestamp = stored_at;
    Status decoded = dataflow::DecodeJsonRecordInto(raw, extraction_, record);
    if (!decoded.ok()) {
      batch.records.pop_back();
      ctx.RawDeadLetter(decoded.message(), PositionValue(position), raw);
      delivery.fate = Fate::kAckAtCheckpoint;
      return;
    }
    ++unresolved_;
    batch.positions.push_back(position);
    batch.identities.push_back(sequence);
    // The message lives in deliveries_ until the record is resolved, then in released_ until the
    // next Poll (Release), or, acked, until a checkpoint: the view lasts the record's processing.
    batch.json.push_back(raw);
  }

  // The raw bytes to the dead-letter subject, with what happened in headers. Ordered before the
  // message's term on the same connection, so no flush: a crash before either is sent
  // redelivers the message, which is dead-lettered again.
  bool PublishDeadLetter(const HeldDelivery& delivery, const std::string& reason,
                         std::string_view raw) {
    natsMsg* raw_letter = nullptr;
    if (natsMsg_Create(&raw_letter, dead_letter_subject_.c_str(), nullptr, raw.data(),
                       static_cast<int>(raw.size())) != NATS_OK) {
      return false;
    }
    MsgPtr letter(raw_letter);
    const std::pair<const char*, std::string> headers[] = {
        {"Weir-Reason", reason},
        {"Weir-Stream", options_.stream},
        {"Weir-Subject", natsMsg_GetSubject(delivery.message.get())},
        {"Weir-Sequence", std::to_string(delivery.sequence)},
        {"Weir-Deliveries", std::to_string(delivery.delivery_count)},
        {"Weir-Consumer", options_.durable},
    };
    for (const auto& [name, value] : headers) {
      if (natsMsgHeader_Set(letter.get(), name, value.c_str()) != NATS_OK) return false;
    }
    return natsConnection_PublishMsg(connection_.get(), letter.get()) == NATS_OK;
  }

  // Tells JetStream that deliveries waiting for a checkpoint are in progress before their ack
  // wait runs out, so that they are not redelivered while their acks wait.
  void KeepSettledAlive() {
    Clock::time_point now = Clock::now();
    if (now < next_keep_alive_) return;
    next_keep_alive_ = now + ack_wait_ / 4;
    for (auto& [position, delivery] : deliveries_) {
      if (delivery.fate != Fate::kUnresolved && delivery.expires - now < ack_wait_ / 2) {
        Touch(delivery);
      }
    }
  }

  void Touch(HeldDelivery& delivery) {
    if (natsMsg_InProgress(delivery.message.get(), nullptr) == NATS_OK) {
      delivery.expires = Clock::now() + ack_wait_;
    }
  }

  // Nothing was fetched. A bounded source ends once nothing is unresolved here and JetStream
  // has delivered everything up to the bound and waits for no ack but the ones queued here.
  Result<PollResult> IdleOrEnd() {
    if (!options_.bounded || unresolved_ > 0) return PollResult::kIdle;
    jsConsumerInfo* raw_info = nullptr;
    jsErrCode error_code = static_cast<jsErrCode>(0);
    natsStatus status = js_GetConsumerInfo(&raw_info, js_.get(), options_.stream.c_str(),
                                           options_.durable.c_str(), nullptr, &error_code);
    ConsumerInfoPtr info(raw_info);
    if (status != NATS_OK) {
      return Status::Unavailable(Describe() + ": reading the consumer at " + options_.url + ": " +
                                 NatsText(status));
    }
    std::set<int64_t> held;  // sequences, once each: JetStream counts messages, not deliveries
    for (const auto& [position, delivery] : deliveries_) held.insert(delivery.sequence);
    for (const auto& [sequence, message] : past_bound_) held.insert(sequence);
    bool all_delivered = info->NumPending == 0 || info->Delivered.Stream >= last_sequence_;
    if (!all_delivered || info->NumAckPending != static_cast<int64_t>(held.size())) {
      return PollResult::kIdle;
    }
    ended_ = true;
    // Not this run's: another consumer run may have them at once.
    for (auto& [sequence, message] : past_bound_) (void)natsMsg_Nak(message.get(), nullptr);
    past_bound_.clear();
    return PollResult::kEnd;
  }

  const JetStreamSourceOptions options_;
  const std::string dead_letter_subject_;
  const std::chrono::milliseconds ack_wait_;
  const uint64_t last_sequence_;  // of the stream at open; used when bounded
  dataflow::RecordExtraction extraction_;
  // Declared before the messages, so destroyed after them: a message is acknowledged through
  // its subscription's connection.
  ConnectionPtr connection_;
  JetStreamPtr js_;
  SubscriptionPtr subscription_;
  // By position: unresolved, or resolved and waiting for a checkpoint.
  std::map<int64_t, HeldDelivery> deliveries_;
  int64_t unresolved_ = 0;
  // Messages of deliveries resolved since the last Poll (Release).
  std::vector<MsgPtr> released_;
  // Bounded: deliveries past the bound, neither records nor acknowledged.
  std::vector<std::pair<int64_t, MsgPtr>> past_bound_;
  int64_t last_position_ = 0;
  Clock::time_point next_keep_alive_;
  bool ended_ = false;
};

}  // namespace

Result<std::unique_ptr<dataflow::Source>> OpenJetStreamSource(
    const JetStreamSourceOptions& options) {
  WEIR_RETURN_IF_ERROR(ValidateOptions(options));
  const std::string where = "NATS " + options.url;

  natsConnection* raw_connection = nullptr;
  natsStatus status = natsConnection_ConnectTo(&raw_connection, options.url.c_str());
  ConnectionPtr connection(raw_connection);
  if (status != NATS_OK) {
    return Status::Unavailable("connecting to " + where + ": " + NatsText(status));
  }

  jsCtx* raw_js = nullptr;
  status = natsConnection_JetStream(&raw_js, connection.get(), nullptr);
  JetStreamPtr js(raw_js);
  if (status != NATS_OK) {
    return Status::Internal("a JetStream context for " + where + ": " + NatsText(status));
  }

  jsStreamInfo* raw_stream = nullptr;
  jsErrCode error_code = static_cast<jsErrCode>(0);
  status = js_GetStreamInfo(&raw_stream, js.get(), options.stream.c_str(), nullptr, &error_code);
  StreamInfoPtr stream(raw_stream);
  if (status == NATS_NOT_FOUND) {
    return Status::NotFound("JetStream stream " + options.stream + " does not exist at " + where);
  }
  if (status == NATS_NO_RESPONDERS) {
    return Status::Unavailable("JetStream is not enabled at " + where + " (stream " +
                               options.stream + ")");
  }
  if (status != NATS_OK) {
    return Status::Unavailable("reading JetStream stream " + options.stream + " at " + where +
                               ": " + NatsText(status));
  }
  const uint64_t last_sequence = stream->State.LastSeq;

  WEIR_RETURN_IF_ERROR(EnsureConsumer(js.get(), options, where));

  jsSubOptions subscribe_options;
  jsSubOptions_Init(&subscribe_options);
  subscribe_options.Stream = options.stream.c_str();
  subscribe_options.Consumer = options.durable.c_str();
  subscribe_options.ManualAck = true;
  natsSubscription* raw_subscription = nullptr;
  status = js_PullSubscribe(&raw_subscription, js.get(), nullptr, nullptr, nullptr,
                            &subscribe_options, &error_code);
  SubscriptionPtr subscription(raw_subscription);
  if (status != NATS_OK) {
    return Status::Unavailable("subscribing to durable consumer " + options.durable +
                               " of stream " + options.stream + " at " + where + ": " +
                               NatsText(status));
  }
  return std::unique_ptr<dataflow::Source>(new JetStreamSource(
      options, std::move(connection), std::move(js), std::move(subscription), last_sequence));
}

}  // namespace weir::nats
