// The window step: per event, one state lookup (the key's windows live in one value, see
// window/key_windows.h), the window rules, and what they emit.
//
// Closing by partition needs every key's windows in close order: an in-memory index of
// (end, key, start) over all open windows, kept as windows are created and removed and rebuilt
// from the store when the task opens. A sweep looks at the index's first entry (O(1) when
// nothing is due) and removes what is due, so expiry never scans open windows. The index keeps
// a bucket of entries per slot of ends (see DueIndex): adding a window allocates nothing once the
// buckets' memory has grown (a tree set made a node per window).
#include "dataflow/window_operator.h"

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "dataflow/due_index.h"
#include "dataflow/late_output.h"
#include "dataflow/user_function.h"
#include "state/key_encoding.h"
#include "window/aggregations.h"
#include "window/key_windows.h"

namespace weir::dataflow {
namespace {

using window::AddOutcome;
using window::Bounds;
using window::KeyState;
using window::KeyWindows;
using window::WindowValue;

// The state key of the partition's bounds: a 1-byte key cannot be an encoded message key
// (those start with a 4-byte length).
const std::string kPartitionKey = "\xff";

class WindowOperator : public Operator {
 public:
  WindowOperator(const WindowOptions& spec, TaskContext& ctx, std::string_view step_name)
      : spec_(spec),
        ctx_(ctx),
        user_(ctx, step_name),
        store_(ctx.Store(step_name)),
        aggregations_(spec_.aggregations, spec_.single_unnamed),
        windows_(spec_.definition, aggregations_, !spec_.final, spec_.trigger),
        partition_mode_(spec_.closing == Closing::kPartition && !spec_.definition.is_count()),
        late_(ctx, spec_.late_topic, spec_.late_file),
        runs_user_code_(aggregations_.runs_user_code() || spec_.trigger != nullptr),
        index_(spec_.definition.kind() == WindowKind::kSession ||
                       spec_.definition.kind() == WindowKind::kSliding
                   ? DueIndex::kSpreadSlotBits
                   : 0) {}

  // Reads what the store holds: the partition's bounds and, closing by partition, the index.
  // Every value read from the store from now on is checked as it is read (a key's windows
  // against the step's layout, KeyState::Open; the partition's bounds), so that an event views
  // its key's windows without a check of each (KeyWindows::View).
  Status Restore() {
    store_.CheckLoadedWith([layout = windows_.layout()](std::string_view key, Value& stored) {
      if (key == kPartitionKey) return window::DecodePartitionBounds(stored).status();
      return KeyState::Open(stored, layout).status();
    });
    WEIR_ASSIGN_OR_RETURN(const Value* partition, store_.Get(kPartitionKey));
    if (partition != nullptr) {
      WEIR_ASSIGN_OR_RETURN(partition_bounds_, window::DecodePartitionBounds(*partition));
    }
    if (!partition_mode_) return Status::OK();
    return store_.Scan("", "", false, [&](std::string_view key, const Value& state) {
      if (key == kPartitionKey) return true;
      Value copy = state;  // KeyState views a mutable value
      const KeyState windows_of_key = windows_.View(copy);
      for (size_t i = 0; i < windows_of_key.windows(); ++i) {
        index_.Add({windows_of_key.end(i), key, windows_of_key.start(i)});
      }
      return true;
    });
  }

  void Process(Record&& r) override {
    Status accepted = aggregations_.Accepts(r.value);
    if (!accepted.ok()) return ctx_.DeadLetter(accepted.message(), r);
    const Watermark watermark = ctx_.watermark();
    if (watermark.IsEndOfInput()) {
      outcome_.reason = kInputEndedReason;
      outcome_.late_by_ms = 0;
      return Late(std::move(r));
    }
    if (partition_mode_) {
      // Records this step did not see (a filter before it dropped them) may have moved the
      // watermark: what they closed closes first, so the event meets the windows as they are.
      // The bounds are written to the store by OnWatermark, which the task calls at the end of
      // every batch in which its watermark moved, before a checkpoint can be taken: they move
      // only with the watermark, and only a restart reads them.
      partition_bounds_.Advance(spec_.definition, watermark);
      Sweep();
    }
    state_key_.clear();
    state::AppendMessageKey(state_key_, r.key.bytes());
    auto stored = store_.Mutate(state_key_);
    if (!stored.ok()) return Fail(stored.status());
    KeyState key = windows_.View(**stored, r.key.serde());

    Bounds bounds = partition_bounds_;
    if (!partition_mode_) {
      // The key's watermark, capped by the task's: after a repartition a key's events come from
      // several producers in whatever order they ran, and the cap (the slowest producer's mark)
      // keeps one running ahead from closing the key's windows under the others. Reading a
      // source partition the task's watermark is never below the key's: no effect there.
      key.set_watermark(key.watermark().Advance(r.timestamp));
      bounds = key.bounds();
      bounds.Advance(spec_.definition, std::min(key.watermark(), watermark));
      key.set_bounds(bounds);
    }
    if (runs_user_code_) {
      // A reducer, merger or trigger that throws must leave the key's windows as they were.
      undo_ = **stored;
      if (!user_.Call(r, [&] { windows_.Add(key, bounds, r.value, r.timestamp, outcome_); })) {
        **stored = std::move(undo_);
        return;
      }
    } else {
      windows_.Add(key, bounds, r.value, r.timestamp, outcome_);
    }
    if (outcome_.late) return Late(std::move(r));

    for (const WindowValue& w : outcome_.current) Emit(r.key, w);
    // Windows complete now (full count windows, fired triggers) are final results; .Current()
    // already reported the update that completed them.
    if (spec_.final) {
      for (const WindowValue& w : outcome_.ready) Emit(r.key, w);
    }
    if (partition_mode_) {
      // The index is lazy (see Sweep): a window gets an entry when its start is new; a session
      // that only grew to the right keeps its entry, with the end it had then.
      for (const window::WindowSpan& c : outcome_.created) {
        bool start_known =
            std::any_of(outcome_.removed.begin(), outcome_.removed.end(),
                        [&](const window::WindowSpan& r) { return r.start == c.start; });
        if (!start_known) index_.Add({c.end, state_key_, c.start});
      }
      if (key.empty()) store_.Delete(state_key_);  // the partition's bounds cover its lateness
      Sweep();  // windows this event made and that are closed already (sliding)
      return;
    }
    closed_.clear();
    windows_.Expire(key, bounds, closed_);
    // The closed windows and the first open one, if any.
    ctx_.CountExpiryVisits(static_cast<int64_t>(closed_.size()) + (key.empty() ? 0 : 1));
    for (WindowValue& w : closed_) EmitClosed(r.key, w);
  }

  void Prefetch(const Record& upcoming, int stage) override {
    store_.PrefetchMessageKey(upcoming.key.bytes(), &upcoming, stage);
  }
  void CollectPrefetching(std::vector<Operator*>& out) override { out.push_back(this); }

  void OnWatermark(Watermark watermark) override {
    if (partition_mode_) {
      // An idle tick or the end of input: windows close without new events.
      partition_bounds_.Advance(spec_.definition, watermark);
      SaveBounds();
      Sweep();
    } else if (watermark.IsEndOfInput()) {
      CloseEveryKey();
    }
    Operator::OnWatermark(watermark);
  }

 private:
  void SaveBounds() {
    if (partition_bounds_.close == saved_bounds_.close &&
        partition_bounds_.late == saved_bounds_.late) {
      return;
    }
    store_.Put(kPartitionKey, window::EncodePartitionBounds(partition_bounds_));
    saved_bounds_ = partition_bounds_;
  }

  // Closes every due window of every key, key by key in the order of their first due window.
  //
  // The index is lazy: an entry (end, key, start) says that window `start` of `key` ends at
  // `end` or later. Every open window has one (made when its start first appeared; a session
  // that grows keeps it), so a window cannot be due without an entry being due first; an entry
  // whose window grew is put back with its end, and one whose window is gone (merged away,
  // re-keyed, closed with an earlier entry) is dropped. So an event updates the index only when
  // it makes a window, not each time it extends one.
  void Sweep() {
    ctx_.CountExpiryVisits(1);  // the index's first entry: due or not
    while (!index_.empty() && partition_bounds_.Closes(index_.first_end())) {
      // The keys this sweep takes next, announced as a batch's records are (Task::ProcessInputs).
      for (int stage = 0; stage < kPrefetchStages; ++stage) {
        if (const IndexEntry* upcoming = index_.Upcoming(kPrefetchAhead[stage])) {
          store_.PrefetchKey(upcoming->key.view(), upcoming, stage);
        }
      }
      IndexEntry due = index_.TakeFirst();
      ctx_.CountExpiryVisits(1);
      // One lookup: Mutate, then Delete when the key turns out to have no windows left (Mutate
      // gave a null value, which must not be written at the checkpoint).
      auto state = store_.Mutate(due.key.view());
      if (!state.ok()) return Fail(state.status());
      if ((*state)->is_null()) {
        store_.Delete(due.key.view());
        continue;
      }
      KeyState key = windows_.View(**state);
      size_t i = key.LowerBound(due.start);
      if (i == key.windows() || key.start(i) != due.start) continue;  // gone
      if (!partition_bounds_.Closes(key.end(i))) {
        due.end = key.end(i);  // grew: not due yet
        index_.Add(std::move(due));
        continue;
      }
      closed_.clear();
      windows_.Expire(key, partition_bounds_, closed_);
      auto message_key = MessageKey(due.key.view(), key.serde());
      if (!message_key.ok()) return Fail(message_key.status());
      ctx_.CountExpiryVisits(static_cast<int64_t>(closed_.size()));
      for (WindowValue& w : closed_) EmitClosed(*message_key, w);
      if (key.empty()) store_.Delete(due.key.view());
    }
  }

  // End of input closing by key: every key's windows close.
  void CloseEveryKey() {
    Status closed = store_.MutateEach([&](std::string_view key_bytes, Value& stored) -> Status {
      if (key_bytes == kPartitionKey) return Status::OK();
      KeyState key = windows_.View(stored);
      // Closed for good: a later run over more input finds these windows closed, as closing by
      // partition does with the partition's bounds.
      Bounds everything;
      everything.Advance(spec_.definition, Watermark::Max());
      key.set_bounds(everything);
      if (key.empty()) return Status::OK();
      WEIR_ASSIGN_OR_RETURN(Key message_key, MessageKey(key_bytes, key.serde()));
      closed_.clear();
      windows_.CloseAll(key, closed_);
      for (WindowValue& w : closed_) EmitClosed(message_key, w);
      return Status::OK();
    });
    if (!closed.ok()) Fail(closed);
  }

  // The message key a state key encodes, with the serde it was stored with: partition-mode
  // results carry the real key, never the store's encoding.
  static Result<Key> MessageKey(std::string_view state_key, KeySerde serde) {
    std::string_view in = state_key;
    std::optional<std::string_view> bytes = state::ReadMessageKey(in);
    if (!bytes) return Status::Corruption("window state key is not an encoded message key");
    return Key::FromBytes(serde, *bytes);
  }

  void EmitClosed(const Key& key, WindowValue& w) {
    if (spec_.final && !w.fired) Emit(key, w);
  }

  void Emit(const Key& key, const WindowValue& w) {
    // Into the record of the last emit: its members are reused unless a step after this one
    // took the value.
    emitted_.key = key;
    emitted_.timestamp = EventTime(w.end - 1);
    emitted_.headers.clear();
    auto write = [&] { windows_.WriteResult(w.start, w.end, w.accumulators, emitted_.value); };
    if (!runs_user_code_) {
      write();
    } else if (!user_.Call(emitted_, write)) {
      // A user aggregator's Result threw: the window's result is a dead letter (the record as
      // far as it was written: its start and end first), and the run goes on.
      return;
    }
    Forward(std::move(emitted_));
  }

  void Late(Record&& r) {
    late_.Write(r, outcome_.reason, outcome_.late_by_ms);
    if (!spec_.on_late) return;
    const LateRecord late{std::move(r), outcome_.reason, outcome_.late_by_ms};
    user_.Call(late.record, [&] { spec_.on_late(late); });
  }

  const WindowOptions& spec_;
  TaskContext& ctx_;
  UserFunctionCaller user_;
  state::KeyValueStore& store_;
  window::Aggregations aggregations_;
  KeyWindows windows_;
  const bool partition_mode_;
  LateOutput late_;
  const bool runs_user_code_;
  Value undo_;  // the key's windows before a record is added, when user code runs
  Bounds partition_bounds_;
  Bounds saved_bounds_;
  DueIndex index_;
  std::string state_key_;
  AddOutcome outcome_;
  std::vector<WindowValue> closed_;
  Record emitted_;  // the window result being forwarded (Emit)
};

}  // namespace

Result<std::unique_ptr<Operator>> MakeWindowOperator(const WindowOptions& options,
                                                     const StepContext& context) {
  auto op = std::make_unique<WindowOperator>(options, context.task, context.step_name);
  WEIR_RETURN_IF_ERROR(
      op->Restore().WithContext("restoring window step " + std::string(context.step_name)));
  return std::unique_ptr<Operator>(std::move(op));
}

}  // namespace weir::dataflow
