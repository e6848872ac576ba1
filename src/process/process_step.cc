// The process step's operator: activations gathered into calls of distinct keys, results
// validated whole and applied in activation order, timers in a store index ordered by
// (time, key, name), all of it in the task's stores so it commits with the checkpoint.
//
// Store layout (key_encoding.h). The step's store, named after it:
//   message key | "s" | name   -> a state value
//   message key | "t" | name   -> a pending timer's time (the key's side of the index)
//   0xfd                       -> the step's sequences and totals
// (message keys start with a 4-byte length, so none begins with 0xfd); and "<step>.timers":
//   0xfe | time | key bytes | name (both order-preserving escaped) -> the key's serde
#include "process/process_step.h"

#include <deque>
#include <set>
#include <span>
#include <thread>
#include <tuple>
#include <unordered_set>

#include "dataflow/graph.h"
#include "dataflow/operators.h"
#include "process/limits.h"
#include "process/validate.h"
#include "state/key_encoding.h"

namespace weir::process {
namespace {

const std::string kMetaKey = "\xfd";
// The suffix of the store of the timer index ("<step>.timers").
constexpr std::string_view kTimerStore = "timers";
const std::string kIndexFrom = "\xfe";
const std::string kIndexTo = "\xff";

// Byte strings that sort as their contents and delimit themselves: 0x00 is written 0x00 0xff,
// and the end is 0x00 0x01.
void AppendOrdered(std::string& out, std::string_view bytes) {
  for (char c : bytes) {
    out.push_back(c);
    if (c == '\0') out.push_back('\xff');
  }
  out.append("\0\x01", 2);
}

std::optional<std::string> ReadOrdered(std::string_view& in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\0') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 1 >= in.size()) return std::nullopt;
    if (in[i + 1] == '\x01') {
      in.remove_prefix(i + 2);
      return out;
    }
    if (in[i + 1] != '\xff') return std::nullopt;
    out.push_back('\0');
    ++i;
  }
  return std::nullopt;
}

// A pending timer as the index orders it: by time, then key bytes, then name.
struct TimerEntry {
  int64_t at;
  std::string key;  // the message key's bytes
  std::string name;
  KeySerde serde = KeySerde::kNull;
  friend bool operator<(const TimerEntry& a, const TimerEntry& b) {
    return std::tie(a.at, a.key, a.name) < std::tie(b.at, b.key, b.name);
  }
};

// How many index entries a refill of the earliest timers reads, and how many of them the step
// keeps in memory at most.
constexpr size_t kTimersPerRefill = 1024;
constexpr size_t kMaxTimersLoaded = 8 * kTimersPerRefill;

// The operator keeps the exact sequential semantics of the README (each activation sees what
// every activation before it did; timers fire right after the input that moved the watermark)
// while handing many activations to the handler in one call. A call is cut when a key comes
// again or the call is full, and once results are back the step applies them in activation
// order up to the first point where a timer a result set would have come due: there the rest
// of the call is taken back (its inputs return to the queue, its timers to the index) and the
// round of that watermark runs first. Common calls, whose timers lie beyond the call's
// watermarks, are applied whole.
class ProcessOperator : public dataflow::Operator {
 public:
  ProcessOperator(const ProcessOptions& options, std::unique_ptr<Invoker> invoker,
                  const dataflow::StepContext& context)
      : options_(options),
        invoker_(std::move(invoker)),
        ctx_(context.task),
        step_name_(context.step_name),
        store_(context.task.Store(context.step_name)),
        timer_index_(
            context.task.Store(std::string(context.step_name) + "." + std::string(kTimerStore))),
        max_per_call_(std::max<int64_t>(
            1, std::min(options.limits.max_activations_per_call, options.limits.max_input_rows))) {}

  // Reads the step's sequences and totals, and where the first pending timer is.
  Status Restore() {
    WEIR_ASSIGN_OR_RETURN(const Value* meta, store_.Get(kMetaKey));
    if (meta != nullptr) {
      next_activation_ = meta->GetInt("next_activation").value_or(1);
      next_call_ = meta->GetInt("next_call").value_or(1);
      totals_.keys = meta->GetInt("keys").value_or(0);
      totals_.timers = meta->GetInt("timers").value_or(0);
      totals_.state_bytes = meta->GetInt("state_bytes").value_or(0);
    }
    // With timers pending, the first round reads the earliest; without, every timer set is
    // among the earliest until there are too many.
    loaded_until_ = totals_.timers > 0 ? Watermark::Min().value() : Watermark::Max().value();
    return Status::OK();
  }

  void Process(Record&& record) override {
    Event event;
    event.watermark = ctx_.watermark().value();
    event.delivery = ctx_.CurrentDelivery();
    event.record = std::move(record);
    event.is_input = true;
    queue_.push_back(std::move(event));
    Settle(false);
  }

  void OnWatermark(Watermark watermark) override {
    queue_.push_back(Event{.watermark = watermark.value()});
    Settle(true);
    Operator::OnWatermark(watermark);
  }

  void OnBatchEnd() override {
    Settle(true);
    Operator::OnBatchEnd();
  }

 private:
  // What the step still has to do, in order: an input to activate (then the round of timers its
  // watermark makes due), or a round alone (a watermark that moved without an input).
  struct Event {
    int64_t watermark = 0;
    bool is_input = false;
    Record record;
    dataflow::Delivery delivery;
  };
  // An activation of the call under way. Its view (ProcessActivation) is made at the call.
  struct Pending {
    int64_t id = 0;
    Event event;        // an input's; a timer's holds its key and watermark only
    std::string timer;  // empty for an input
    Value state;        // the key's present declared values
    KeyFootprint footprint;
    bool is_timer() const { return !timer.empty(); }
    const Key& key() const { return event.record.key; }
    // The activation's time: the input's event time, or the timer's (its record's timestamp).
    int64_t time() const { return event.record.timestamp.value(); }
  };
  // What became of one activation of a call: its result, or why it failed alone. Results are
  // swapped in from the invoker's buffer, so their vectors' memory goes round from call to call.
  struct Outcome {
    bool has_result = false;
    ProcessResult result;
    std::string failure;
    StepTotals totals_after;
  };

  // ---- store keys
  const std::string& KeyOf(std::string_view message_key, char kind, std::string_view name) {
    scratch_key_.clear();
    state::AppendMessageKey(scratch_key_, message_key);
    state::AppendStringField(scratch_key_, std::string_view(&kind, 1));
    state::AppendStringField(scratch_key_, name);
    return scratch_key_;
  }
  const std::string& IndexKey(int64_t at, std::string_view message_key, std::string_view name) {
    scratch_key_ = kIndexFrom;
    state::AppendInt64Field(scratch_key_, at);
    AppendOrdered(scratch_key_, message_key);
    AppendOrdered(scratch_key_, name);
    return scratch_key_;
  }
  void PutTimer(const Key& key, std::string_view name, int64_t at) {
    timer_index_.Put(IndexKey(at, key.bytes(), name), Value(static_cast<int64_t>(key.serde())));
    store_.Put(KeyOf(key.bytes(), 't', name), Value(at));
    if (at > loaded_until_) return;
    earliest_.insert({at, std::string(key.bytes()), std::string(name), key.serde()});
    while (earliest_.size() > kMaxTimersLoaded) {
      // Forget the latest time loaded: what is left is still every timer up to the one before.
      const int64_t latest = std::prev(earliest_.end())->at;
      while (!earliest_.empty() && std::prev(earliest_.end())->at == latest) {
        earliest_.erase(std::prev(earliest_.end()));
      }
      loaded_until_ = latest - 1;
    }
  }
  void DeleteTimer(const Key& key, std::string_view name, int64_t at) {
    timer_index_.Delete(IndexKey(at, key.bytes(), name));
    store_.Delete(KeyOf(key.bytes(), 't', name));
    if (at <= loaded_until_) earliest_.erase({at, std::string(key.bytes()), std::string(name), key.serde()});
  }

  // Works through the queue; with `flush`, calls the handler with what is left too, so that
  // nothing is pending when it returns.
  void Settle(bool flush) {
    while (!fatal_) {
      if (!queue_.empty()) {
        Event event = std::move(queue_.front());
        queue_.pop_front();
        if (event.is_input) {
          AddInput(std::move(event));
        } else {
          RunWatermarkRound(std::move(event));
        }
      } else if (flush && !pending_.empty()) {
        Dispatch();
      } else {
        break;
      }
    }
    if (fatal_) {
      queue_.clear();
      pending_.clear();
      busy_.clear();
    }
  }

  bool Busy(std::string_view key_bytes) const { return busy_.count(key_bytes) != 0; }
  // Whether the call under way has no room for one more input of `bytes`.
  bool CallFull(int64_t bytes) const {
    return static_cast<int64_t>(pending_.size()) >= max_per_call_ ||
           (!pending_.empty() && call_input_bytes_ + bytes > options_.limits.max_input_bytes);
  }
  // No call holds more than 4096 inputs of 64 MiB (Value::kMaxJsonBytes), so a limit at or above
  // this is never reached and inputs need not be measured.
  static constexpr int64_t kInputBytesAlwaysFit = int64_t{4096} << 26;

  // Dispatches the call under way if `event`'s activation cannot join it; false if that took
  // back part of the call, in which case `event` went back to the queue after what was taken
  // back.
  bool MakeRoomFor(std::string_view key_bytes, int64_t bytes, Event& event) {
    if (!Busy(key_bytes) && !CallFull(bytes)) return true;
    const size_t returned = Dispatch();
    if (returned == 0) return true;
    queue_.insert(queue_.begin() + static_cast<ptrdiff_t>(returned), std::move(event));
    return false;
  }

  void AddInput(Event&& event) {
    const int64_t bytes =
        options_.limits.max_input_bytes < kInputBytesAlwaysFit ? JsonBytes(event.record.value) : 0;
    if (!MakeRoomFor(event.record.key.bytes(), bytes, event)) return;
    const int64_t watermark = event.watermark;
    if (NewPending(std::move(event)) == nullptr) return;
    call_input_bytes_ += bytes;
    RunRound(Event{.watermark = watermark});
  }

  // A new activation of `event`'s key with the next id, the key's state and footprint; nullptr
  // after a storage error (recorded).
  Pending* NewPending(Event&& event) {
    Pending& p = pending_.emplace_back();
    p.id = next_activation_++;
    p.event = std::move(event);
    const Key& key = p.key();
    p.state = Value(Value::Object());
    p.footprint.state_bytes.resize(options_.state.size());
    p.footprint.timers.resize(options_.timers.size());
    for (size_t i = 0; i < options_.state.size(); ++i) {
      Result<const Value*> v = store_.Get(KeyOf(key.bytes(), 's', options_.state[i]));
      if (!v.ok()) return StorageError(v.status());
      if (*v == nullptr) continue;
      p.footprint.state_bytes[i] = JsonBytes(**v);
      p.state.Set(options_.state[i], **v);
    }
    for (size_t i = 0; i < options_.timers.size(); ++i) {
      Result<const Value*> v = store_.Get(KeyOf(key.bytes(), 't', options_.timers[i]));
      if (!v.ok()) return StorageError(v.status());
      if (*v != nullptr) p.footprint.timers[i] = (*v)->as_int();
    }
    busy_.insert(key.bytes());
    return &p;
  }

  Pending* StorageError(Status status) {
    Fail(std::move(status));
    fatal_ = true;
    return nullptr;
  }

  // A round of a watermark that moved without an input: the call under way is dispatched
  // first, as its results may set timers that this watermark makes due.
  void RunWatermarkRound(Event&& round) {
    if (!pending_.empty() && pending_.back().event.watermark < round.watermark) {
      if (const size_t returned = Dispatch(); returned > 0) {
        queue_.insert(queue_.begin() + static_cast<ptrdiff_t>(returned), std::move(round));
        return;
      }
    }
    RunRound(std::move(round));
  }

  // Fires every timer due at the round's watermark, in (time, key, name) order, at most
  // max_timer_callbacks_per_step to a call.
  void RunRound(Event&& round) {
    const int64_t watermark = round.watermark;
    const size_t limit = static_cast<size_t>(options_.limits.max_timer_callbacks_per_step);
    while (!fatal_) {
      if (earliest_.empty() || earliest_.begin()->at > watermark) {
        if (loaded_until_ >= watermark) return;  // every timer due is loaded: none is left
        if (!LoadEarliest()) return;
        continue;
      }
      due_.clear();
      for (auto it = earliest_.begin();
           it != earliest_.end() && it->at <= watermark && due_.size() < limit; ++it) {
        due_.push_back(*it);
      }
      size_t fired = 0;
      for (TimerEntry& due : due_) {
        if (!MakeRoomFor(due.key, 0, round)) return;
        // An activation before it may have cancelled or moved it.
        Result<const Value*> pending_at = store_.Get(KeyOf(due.key, 't', due.name));
        if (!pending_at.ok()) return (void)StorageError(pending_at.status());
        if (*pending_at == nullptr || (*pending_at)->as_int() != due.at) continue;
        Result<Key> key = Key::FromBytes(due.serde, due.key);
        if (!key.ok()) return (void)StorageError(key.status());
        DeleteTimer(*key, due.name, due.at);
        --totals_.timers;
        Pending* p =
            NewPending(Event{.watermark = watermark,
                             .record = Record{std::move(*key), Value(), EventTime(due.at), {}}});
        if (p == nullptr) return;
        // The key's totals count it out until its result is applied (its footprint agrees).
        if (!p->footprint.holds_anything()) --totals_.keys;
        p->timer = std::move(due.name);
        ++fired;
      }
      // A full round ends its call: the next round is another step.
      if (due_.size() == limit && fired > 0) {
        if (const size_t returned = Dispatch(); returned > 0) {
          queue_.insert(queue_.begin() + static_cast<ptrdiff_t>(returned), std::move(round));
          return;
        }
      }
    }
  }

  // Reads the next timers of the index, after loaded_until_, into earliest_: about
  // kTimersPerRefill of them, every one of the last time read. False after a storage error.
  bool LoadEarliest() {
    std::string from = kIndexFrom;
    if (loaded_until_ != Watermark::Min().value()) {
      state::AppendInt64Field(from, loaded_until_ + 1);
    }
    size_t read = 0;
    std::optional<int64_t> stopped_at;
    Status decoded;
    Status scanned =
        timer_index_.Scan(from, kIndexTo, false, [&](std::string_view key, const Value& serde) {
          std::string_view in = key.substr(1);
          std::optional<int64_t> at = state::ReadInt64Field(in);
          std::optional<std::string> bytes = ReadOrdered(in);
          std::optional<std::string> name = ReadOrdered(in);
          if (!at || !bytes || !name || !serde.is_int()) {
            decoded = Status::Corruption("process step '" + step_name_ +
                                         "': a malformed timer index entry");
            return false;
          }
          if (read >= kTimersPerRefill && *at != earliest_.rbegin()->at) {
            stopped_at = *at;
            return false;
          }
          earliest_.insert(
              {*at, std::move(*bytes), std::move(*name), static_cast<KeySerde>(serde.as_int())});
          ++read;
          return true;
        });
    if (scanned.ok()) scanned = decoded;
    if (!scanned.ok()) return StorageError(scanned) != nullptr;
    loaded_until_ = stopped_at ? *stopped_at - 1 : Watermark::Max().value();
    return true;
  }

  // Calls the handler with the call under way and applies its results up to the first timer
  // that would have come due inside it. Returns how many events it put back at the front of the
  // queue (the rest of the call: the round of that watermark, then the inputs and rounds after).
  size_t Dispatch() {
    if (pending_.empty() || fatal_) return 0;
    std::vector<Pending*> items;
    items.reserve(pending_.size());
    for (Pending& p : pending_) items.push_back(&p);
    std::vector<Outcome>& outcomes = outcomes_;
    outcomes.resize(items.size());
    for (Outcome& o : outcomes) o.has_result = false;
    StepTotals running = totals_;
    Run(items, outcomes, running, 1 + options_.retries);
    size_t returned = 0;
    if (!fatal_) {
      const auto [applied, round] = FirstTimerDue(items, outcomes);
      for (size_t i = 0; i < applied; ++i) Apply(*items[i], outcomes[i]);
      if (applied > 0) totals_ = outcomes[applied - 1].totals_after;
      returned = TakeBack(std::span(items).subspan(applied), round);
      ++ctx_.process_counters().calls;
    }
    pending_.clear();
    busy_.clear();
    call_input_bytes_ = 0;
    SaveMeta();
    return returned;
  }

  // How many activations of the call to apply, and the watermark of the round to run right
  // after them if a timer a result set comes due inside the call (nullopt: none does): the first
  // activation q after a result that sets a timer at or before q's watermark decides. An input q
  // is applied (its round comes after it); a timer q is not (it belongs to that round).
  std::pair<size_t, std::optional<int64_t>> FirstTimerDue(
      const std::vector<Pending*>& items, const std::vector<Outcome>& outcomes) const {
    size_t applied = items.size();
    std::optional<int64_t> round;
    for (size_t i = 0; i + 1 < items.size() && i < applied; ++i) {
      if (!outcomes[i].has_result) continue;
      for (const ProcessTimerChange& change : outcomes[i].result.timers) {
        if (!change.at || *change.at <= items[i]->event.watermark) continue;
        // Watermarks never go down along a call: the first that reaches the timer.
        auto q =
            std::partition_point(items.begin() + static_cast<ptrdiff_t>(i) + 1, items.end(),
                                 [&](const Pending* p) { return p->event.watermark < *change.at; });
        if (q == items.end()) continue;
        const size_t at = static_cast<size_t>(q - items.begin());
        const size_t cut = (*q)->is_timer() ? at : at + 1;
        if (cut < applied || !round) {
          applied = cut;
          round = (*q)->event.watermark;
        }
      }
    }
    return {applied, round};
  }

  // Puts the activations of a call that were not applied back: timers into the index, inputs
  // into the queue, in order, each followed by its round; the round of `round` first (also when
  // every activation was applied but a timer came due at the last one). nullopt: nothing to do.
  // Returns how many events went into the queue.
  size_t TakeBack(std::span<Pending*> rest, std::optional<int64_t> round) {
    if (!round) return 0;  // the whole call was applied
    std::vector<Event> events;
    std::optional<int64_t> last_round;
    if (rest.empty() || !rest.front()->is_timer()) {
      events.push_back(Event{.watermark = *round});
      last_round = round;
    }
    if (!rest.empty()) next_activation_ = rest.front()->id;
    for (Pending* p : rest) {
      if (p->is_timer()) {
        if (!p->footprint.holds_anything()) ++totals_.keys;
        ++totals_.timers;
        PutTimer(p->key(), p->timer, p->time());
        if (last_round != p->event.watermark) {
          events.push_back(Event{.watermark = p->event.watermark});
        }
      } else {
        events.push_back(std::move(p->event));
      }
      last_round = events.back().watermark;
    }
    queue_.insert(queue_.begin(), std::make_move_iterator(events.begin()),
                  std::make_move_iterator(events.end()));
    return events.size();
  }

  // Tries `items` as one call up to `attempts` times; then splits it in two, down to the
  // activations that fail alone. Fills `outcomes` (parallel to `items`); `running` follows the
  // totals from one result to the next.
  void Run(std::span<Pending*> items, std::span<Outcome> outcomes, StepTotals& running,
           int attempts) {
    ProcessCounters& counters = ctx_.process_counters();
    Call call;
    call.call = next_call_++;
    call.watermark = items.front()->event.watermark;
    std::vector<const KeyFootprint*> footprints;
    footprints.reserve(items.size());
    for (Pending* p : items) {
      call.activations.push_back(ActivationOf(*p));
      footprints.push_back(&p->footprint);
    }
    std::string reason;
    for (int attempt = 1; attempt <= attempts; ++attempt) {
      call.attempt = attempt;
      if (attempt > 1) {
        ++counters.retries;
        std::this_thread::sleep_for(invoker_->RetryDelay(attempt));
      }
      std::optional<InvokeError> failed = invoker_->Invoke(call, results_);
      if (failed && failed->failure == InvokeFailure::kFatal) {
        Fail(Status::Unavailable("process step '" + step_name_ + "': " + failed->reason));
        fatal_ = true;
        return;
      }
      if (!failed) {
        auto checked = ValidateCall(options_, call.activations, footprints, results_, running);
        if (auto* valid = std::get_if<ValidatedCall>(&checked)) {
          for (size_t i = 0; i < items.size(); ++i) {
            std::swap(outcomes[i].result, results_[valid->result_of[i]]);
            outcomes[i].has_result = true;
            outcomes[i].totals_after = valid->totals_after[i];
          }
          running = valid->totals_after.back();
          return;
        }
        reason = std::get<CallError>(checked).reason;
      } else {
        reason = failed->reason;
      }
      ++counters.refused;
    }
    if (items.size() == 1) {
      outcomes.front().failure = reason;
      outcomes.front().totals_after = running;
      return;
    }
    ++counters.splits;
    const size_t half = items.size() / 2;
    Run(items.first(half), outcomes.first(half), running, 1);
    if (!fatal_) Run(items.subspan(half), outcomes.subspan(half), running, 1);
  }

  ProcessActivation ActivationOf(const Pending& p) const {
    ProcessActivation a;
    a.id = p.id;
    a.key = p.key();
    a.time = p.time();
    a.watermark = p.event.watermark;
    if (p.is_timer()) {
      a.timer = p.timer;
    } else {
      a.input = &p.event.record.value;
    }
    a.state = &p.state;
    return a;
  }

  void Apply(Pending& p, Outcome& outcome) {
    ProcessCounters& counters = ctx_.process_counters();
    if (!outcome.has_result) return DeadLetter(p, outcome.failure);
    ProcessResult& result = outcome.result;
    const Key& key = p.key();
    for (ProcessOutput& out : result.outputs) {
      Forward(Record{
          out.key ? std::move(*out.key) : key, std::move(out.value), EventTime(out.time), {}});
    }
    for (ProcessStateChange& change : result.state) {
      if (change.set) {
        store_.Put(KeyOf(key.bytes(), 's', change.name), std::move(*change.set));
      } else {
        store_.Delete(KeyOf(key.bytes(), 's', change.name));
      }
    }
    for (const ProcessTimerChange& change : result.timers) {
      const size_t n = static_cast<size_t>(
          std::find(options_.timers.begin(), options_.timers.end(), change.name) -
          options_.timers.begin());
      if (const std::optional<int64_t>& old = p.footprint.timers[n]) {
        DeleteTimer(key, change.name, *old);
      }
      if (change.at && *change.at > p.event.watermark) {
        PutTimer(key, change.name, *change.at);
      } else if (change.at) {
        ++counters.timers_dropped;  // set at the end of input: it could never fire
      }
    }
    ++counters.activations;
    if (p.is_timer()) ++counters.timers_fired;
  }

  void DeadLetter(Pending& p, const std::string& reason) {
    ++ctx_.process_counters().dead_lettered;
    ctx_.CountUserFunctionFailure();
    const std::string why = "process step '" + step_name_ + "' refused activation " +
                            std::to_string(p.id) + ": " + reason;
    if (!p.is_timer()) return ctx_.DeadLetterHeld(why, p.event.record, p.event.delivery);
    Value timer = Value::MakeObject(
        {{"timer", Value(p.timer)}, {"key", p.key().ToValue()}, {"at", Value(p.time())}});
    const std::string raw = timer.ToJson();
    ctx_.RawDeadLetter(why, std::move(timer), raw);
  }

  void SaveMeta() {
    store_.Put(kMetaKey, Value::MakeObject({{"next_activation", Value(next_activation_)},
                                            {"next_call", Value(next_call_)},
                                            {"keys", Value(totals_.keys)},
                                            {"timers", Value(totals_.timers)},
                                            {"state_bytes", Value(totals_.state_bytes)}}));
  }

  const ProcessOptions& options_;
  std::unique_ptr<Invoker> invoker_;
  dataflow::TaskContext& ctx_;
  std::string step_name_;
  state::KeyValueStore& store_;
  state::KeyValueStore& timer_index_;  // the index alone: its scans pay for nothing else
  const int64_t max_per_call_;

  int64_t next_activation_ = 1;
  int64_t next_call_ = 1;
  StepTotals totals_;
  // The earliest pending timers: every one at or before loaded_until_ (the index has them all).
  // A round fires from here; the index is read again only when a round needs more.
  std::set<TimerEntry> earliest_;
  int64_t loaded_until_ = Watermark::Max().value();

  std::deque<Event> queue_;
  std::deque<Pending> pending_;                // the call under way, in activation order
  std::unordered_set<std::string_view> busy_;  // its keys (views of pending_'s records)
  int64_t call_input_bytes_ = 0;
  std::vector<TimerEntry> due_;
  std::vector<ProcessResult> results_;
  std::vector<Outcome> outcomes_;  // parallel to the call being dispatched
  std::string scratch_key_;
  bool fatal_ = false;  // the handler is gone or the store failed: the task stops
};

// Names declared for state or timers: non-empty and distinct.
Status CheckNames(const std::vector<std::string>& names, std::string_view what) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) return Status::InvalidArgument(std::string(what) + " names are empty");
    for (size_t j = 0; j < i; ++j) {
      if (names[j] == names[i]) {
        return Status::InvalidArgument(std::string(what) + " '" + names[i] + "' is declared twice");
      }
    }
  }
  return Status::OK();
}

Value NameList(const std::vector<std::string>& names) {
  Value list = Value(Value::Array());
  for (const std::string& name : names) list.as_array().emplace_back(name);
  return list;
}

class ProcessStep : public dataflow::StepDefinition {
 public:
  ProcessStep(ProcessOptions options, InvokerFactory make_invoker,
              std::function<void(dataflow::Fingerprint&)> describe_handler)
      : options_(std::move(options)),
        make_invoker_(std::move(make_invoker)),
        describe_handler_(std::move(describe_handler)) {}

  std::string_view kind() const override { return "process"; }
  Status Validate() const override {
    if (options_.id.empty()) return Status::InvalidArgument("a process step needs a function id");
    if (!make_invoker_) return Status::InvalidArgument("a process step needs a function");
    WEIR_RETURN_IF_ERROR(CheckNames(options_.state, "state"));
    WEIR_RETURN_IF_ERROR(CheckNames(options_.timers, "timer"));
    for (const LimitField& field : kLimitFields) {
      if (const int64_t value = options_.limits.*field.member; value < 1) {
        return Status::InvalidArgument("limit " + std::string(field.name) +
                                       " must be at least 1, got " + std::to_string(value));
      }
    }
    if (options_.retries < 0) {
      return Status::InvalidArgument("retries must be 0 or more, got " +
                                     std::to_string(options_.retries));
    }
    return Status::OK();
  }
  void Describe(dataflow::Fingerprint& f) const override {
    // The descriptor: state and timers written under one are not those of another.
    f.Fixed("function", options_.id)
        .Fixed("version", options_.version)
        .Fixed("state", NameList(options_.state))
        .Fixed("timers", NameList(options_.timers))
        .Fixed("implementation_digest", options_.implementation_digest);
    Value limits = Value(Value::Object());
    for (const LimitField& field : kLimitFields) {
      limits.Set(field.name, Value(options_.limits.*field.member));
    }
    f.Fixed("limits", limits);
    // Retrying more or less changes no result a deterministic handler gives.
    f.MayChange("retries", options_.retries);
    if (describe_handler_) describe_handler_(f);
  }
  bool stateful() const override { return true; }
  std::vector<std::string_view> more_stores() const override { return {kTimerStore}; }
  bool emits_from_state() const override { return true; }  // timers emit without an input
  Result<std::unique_ptr<dataflow::Operator>> MakeOperator(
      const dataflow::StepContext& context) const override {
    WEIR_ASSIGN_OR_RETURN(std::unique_ptr<Invoker> invoker, make_invoker_(context.step_name));
    auto op = std::make_unique<ProcessOperator>(options_, std::move(invoker), context);
    WEIR_RETURN_IF_ERROR(op->Restore());
    return std::unique_ptr<dataflow::Operator>(std::move(op));
  }

 private:
  ProcessOptions options_;
  InvokerFactory make_invoker_;
  std::function<void(dataflow::Fingerprint&)> describe_handler_;
};

}  // namespace

std::shared_ptr<const dataflow::StepDefinition> MakeProcessStep(
    ProcessOptions options, InvokerFactory make_invoker,
    std::function<void(dataflow::Fingerprint&)> describe_handler) {
  return std::make_shared<ProcessStep>(std::move(options), std::move(make_invoker),
                                       std::move(describe_handler));
}

}  // namespace weir::process

namespace weir {

Stream Stream::Process(ProcessOptions options, std::shared_ptr<ProcessFunction> function,
                       std::string name) {
  process::InvokerFactory make_invoker;
  if (function) {
    make_invoker = [function](std::string_view) -> Result<std::unique_ptr<process::Invoker>> {
      return std::unique_ptr<process::Invoker>(new process::NativeInvoker(function));
    };
  }
  return dataflow::GraphAccess::AddStep(
      *this, process::MakeProcessStep(std::move(options), std::move(make_invoker)),
      std::move(name));
}

}  // namespace weir
