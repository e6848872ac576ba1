// A brute-force model of window semantics, written from the specification in
// include/weir/window.h alone, for property tests that run the real engine and compare.
//
// It is meant to be obviously correct, not fast: every admitted event of a key is kept for the
// whole run, a window's aggregates are recomputed from those events whenever it is emitted,
// sessions are re-derived from scratch from the open events after every event, and after every
// record every open window of every key is checked against the closing rule.
//
// Input: one partition's records in arrival order, then the end of the input. Output: per key,
// the Final and Current results grouped by the record whose processing emitted them, and the
// late events. Within a group the specification fixes the order (Current: ascending start;
// Final: ascending end, then start); across keys it does not, so results are kept per key.
//
// Thread safety: none; a model is used by one test thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weir/window_definition.h"

namespace weir::window::testing {

// The kinds are the specification's own (weir/window_definition.h); nothing else is shared.
using ModelKind = WindowKind;

struct ModelDefinition {
  ModelKind kind = ModelKind::kTumbling;
  int64_t size = 1;  // ms (time windows), the gap (sessions), events (count windows)
  int64_t step = 1;  // hopping; the size for tumbling; 1 for count sliding
  int64_t grace = 0;
  bool partition_closing = false;  // Closing::kPartition; else Closing::kKey

  bool is_count() const {
    return kind == ModelKind::kCountTumbling || kind == ModelKind::kCountHopping ||
           kind == ModelKind::kCountSliding;
  }
  std::string Describe() const {
    auto n = [](int64_t v) { return std::to_string(v); };
    std::string s;
    switch (kind) {
      case ModelKind::kTumbling:
        s = "tumbling(size=" + n(size) + "ms";
        break;
      case ModelKind::kHopping:
        s = "hopping(size=" + n(size) + "ms, step=" + n(step) + "ms";
        break;
      case ModelKind::kSliding:
        s = "sliding(size=" + n(size) + "ms";
        break;
      case ModelKind::kSession:
        s = "session(gap=" + n(size) + "ms";
        break;
      case ModelKind::kCountTumbling:
        return "count_tumbling(n=" + n(size) + ")";
      case ModelKind::kCountHopping:
        return "count_hopping(n=" + n(size) + ", step=" + n(step) + ")";
      case ModelKind::kCountSliding:
        return "count_sliding(n=" + n(size) + ")";
    }
    return s + ", grace=" + n(grace) + "ms) closing " + (partition_closing ? "partition" : "key");
  }
};

// One record read from the partition.
struct ModelEvent {
  enum class Fate {
    kWindow,  // reaches the window
    // An aggregation cannot take it (its "v" is a string): it goes to the dead-letter topic and
    // "nothing else happens" to its key, but it is a record read, which the partition watermark
    // counts ("every record read counts"). window.h leaves this reading implicit.
    kDeadLetter,
    kFiltered,  // dropped by a filter before the window: only the partition watermark sees it
  };
  std::string key;
  int64_t ts = 0;
  std::optional<int64_t> value;  // the field "v"; nullopt: missing
  int64_t id = 0;                // unique, ascending in arrival order
  Fate fate = Fate::kWindow;
};

// A window as emitted, with Count(), Sum("v"), Min("v"), Max("v") and Collect("id").
struct ModelResult {
  int64_t start = 0;
  int64_t end = 0;
  int64_t count = 0;
  int64_t sum = 0;
  std::optional<int64_t> min;
  std::optional<int64_t> max;
  std::vector<int64_t> ids;  // its events' ids in event-time order, ties in arrival order

  friend bool operator==(const ModelResult&, const ModelResult&) = default;
  friend auto operator<=>(const ModelResult&, const ModelResult&) = default;
  std::string ToString() const {
    auto opt = [](const std::optional<int64_t>& v) {
      return v ? std::to_string(*v) : std::string("null");
    };
    std::string s = "[" + std::to_string(start) + ", " + std::to_string(end) +
                    ") count=" + std::to_string(count) + " sum=" + std::to_string(sum) +
                    " min=" + opt(min) + " max=" + opt(max) + " ids=";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s;
  }
};

struct ModelLate {
  std::string key;
  int64_t ts = 0;
  int64_t late_by_ms = 0;
  int64_t id = 0;
  friend auto operator<=>(const ModelLate&, const ModelLate&) = default;
};

struct ModelOutput {
  // Per key, each processing step's results for that key, in the order of the steps. Steps that
  // emitted nothing for a key are absent.
  std::map<std::string, std::vector<std::vector<ModelResult>>> final_results;
  std::map<std::string, std::vector<std::vector<ModelResult>>> current_results;
  // Keys some of whose windows a filtered or dead-letter record closed: whether the engine emits
  // those at that record or with the next event the window sees is not specified, so only the
  // multiset of their Final results is comparable.
  std::set<std::string> final_order_open;
  std::vector<ModelLate> late;  // in arrival order
  // The closing watermark each event was judged by (after step 2), by event id: for repros.
  std::map<int64_t, int64_t> watermark_of;
  // How often the situations a test means to reach came up ("session merge": 12, ...).
  std::map<std::string, int64_t> coverage;
};

class WindowModel {
 public:
  static constexpr int64_t kNoWatermark = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kEndOfInput = std::numeric_limits<int64_t>::max();

  explicit WindowModel(ModelDefinition definition) : def_(definition) {
    if (def_.kind == ModelKind::kTumbling || def_.kind == ModelKind::kCountTumbling) {
      def_.step = def_.size;
    }
    if (def_.kind == ModelKind::kCountSliding) def_.step = 1;
  }

  // Processes one record, steps (1) to (4) of the specification.
  void Add(const ModelEvent& e) {
    if (e.fate == ModelEvent::Fate::kDeadLetter) ++out_.coverage["dead letter"];
    if (e.ts == 0) ++out_.coverage["timestamp 0"];
    if (def_.is_count()) {
      if (e.fate == ModelEvent::Fate::kWindow) AddCount(e);
      return;
    }
    partition_watermark_ = std::max(partition_watermark_, e.ts);
    if (e.fate != ModelEvent::Fate::kWindow) {
      // Windows closed by a record the window does not take: whether they are emitted with it
      // or with the next event is not specified (the Final order of their keys is left open).
      CloseWindows(/*filtered=*/true, {}, &e.key);
      return;
    }
    KeyState& k = keys_[e.key];
    k.watermark = std::max(k.watermark, e.ts);  // (2)
    out_.watermark_of[e.id] = def_.partition_closing ? partition_watermark_ : k.watermark;
    int64_t bound = Bound(k);
    std::optional<Window> at_once;  // (sliding) its own window, closed before it came
    switch (def_.kind) {
      case ModelKind::kTumbling:
      case ModelKind::kHopping:
        AddToFixedWindows(e, k, bound);
        break;
      case ModelKind::kSliding:
        at_once = AddToSlidingWindows(e, k, bound);
        break;
      case ModelKind::kSession:
        AddToSession(e, k, bound);
        break;
      default:
        break;
    }
    CloseWindows(
        /*filtered=*/false,
        at_once ? std::optional<std::pair<std::string, Window>>(std::make_pair(e.key, *at_once))
                : std::nullopt,
        &e.key);  // (4)
  }

  // The end of a bounded input: the watermark becomes +infinity and every window closes; count
  // windows short of n events are dropped.
  void End() {
    if (def_.is_count()) return;
    partition_watermark_ = kEndOfInput;
    for (auto& [key, k] : keys_) k.watermark = kEndOfInput;
    CloseWindows(false, std::nullopt, nullptr);
  }

  // A restart of the application with another grace. The bound below which events are late
  // never moves back: each closing scope keeps the bound it had reached.
  void Restart(int64_t new_grace) {
    for (auto& [key, k] : keys_) k.cursor = Bound(k.watermark, k.cursor);
    partition_cursor_ = Bound(partition_watermark_, partition_cursor_);
    def_.grace = new_grace;
    // A lower grace makes windows due at the restart itself: they close before the next record,
    // which must not join them (CloseWindows aggregates what a window admitted when it closes).
    // When they are emitted relative to other keys' results is left open, as for windows a
    // filtered record closes.
    if (!def_.is_count()) CloseWindows(/*filtered=*/true, {}, nullptr);
  }

  const ModelOutput& output() const { return out_; }

 private:
  // [start, end): the window's identity and range (a session's is [first, last + 1)).
  using Window = std::pair<int64_t, int64_t>;

  struct KeyState {
    int64_t watermark = kNoWatermark;
    int64_t cursor = kNoWatermark;           // the bound reached before the last restart
    std::vector<ModelEvent> admitted;        // every admitted event, in arrival order
    std::set<Window> open;                   // time windows holding events, not yet closed
    std::vector<ModelEvent> session_events;  // sessions: the events of open sessions
    std::vector<ModelEvent> count_events;    // count windows: the key's events, arrival order
  };

  static int64_t FloorDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }

  // Closing and lateness compare times with one bound per closing scope (the key under
  // Closing::kKey, the partition under kPartition): wm - grace for time windows, wm - gap - grace
  // for sessions. Since wm never moves back, neither does the bound while the grace is the same;
  // across a restart that changes the grace, the bound reached before is kept (Restart).
  int64_t Bound(int64_t wm, int64_t cursor) const {
    if (wm == kEndOfInput) return kEndOfInput;
    if (wm == kNoWatermark) return cursor;
    int64_t bound = wm - def_.grace - (def_.kind == ModelKind::kSession ? def_.size : 0);
    return std::max(bound, cursor);
  }
  int64_t Bound(const KeyState& k) const {
    return def_.partition_closing ? Bound(partition_watermark_, partition_cursor_)
                                  : Bound(k.watermark, k.cursor);
  }

  // Time windows close when wm >= end + grace, i.e. end <= bound; sessions once
  // wm > last + 2*gap + grace, i.e. last + gap < bound.
  bool IsClosed(const Window& w, int64_t bound) const {
    if (bound == kNoWatermark) return false;
    if (bound == kEndOfInput) return true;
    if (def_.kind == ModelKind::kSession) return (w.second - 1) + def_.size < bound;
    return w.second <= bound;
  }

  // The aggregates of `events` (any order; ids give arrival order).
  static ModelResult Aggregate(Window w, std::vector<ModelEvent> events) {
    std::stable_sort(events.begin(), events.end(), [](const ModelEvent& a, const ModelEvent& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.id < b.id;
    });
    ModelResult r;
    r.start = w.first;
    r.end = w.second;
    for (const ModelEvent& e : events) {
      ++r.count;
      r.ids.push_back(e.id);
      if (!e.value) continue;
      r.sum += *e.value;
      r.min = r.min ? std::min(*r.min, *e.value) : *e.value;
      r.max = r.max ? std::max(*r.max, *e.value) : *e.value;
    }
    return r;
  }

  // A time window's content: every admitted event of the key with a time in it.
  static ModelResult Contents(const KeyState& k, Window w) {
    std::vector<ModelEvent> in;
    for (const ModelEvent& e : k.admitted) {
      if (e.ts >= w.first && e.ts < w.second) in.push_back(e);
    }
    return Aggregate(w, std::move(in));
  }

  void Late(const ModelEvent& e, int64_t late_by) {
    out_.late.push_back({e.key, e.ts, late_by, e.id});
    ++out_.coverage["late event"];
  }

  void EmitCurrent(const std::string& key, std::vector<ModelResult> group) {
    if (group.empty()) return;
    std::stable_sort(group.begin(), group.end(),
                     [](const ModelResult& a, const ModelResult& b) { return a.start < b.start; });
    out_.current_results[key].push_back(std::move(group));
  }

  // Tumbling and hopping: [k*step, k*step + size) for every integer k.
  std::vector<Window> FixedWindowsOf(int64_t t) const {
    std::vector<Window> ws;
    for (int64_t k = FloorDiv(t, def_.step); k * def_.step + def_.size > t; --k) {
      ws.push_back({k * def_.step, k * def_.step + def_.size});
    }
    return ws;
  }

  // Late iff every window containing the event has closed, i.e. wm >= largest end + grace;
  // late_by_ms = wm - largest end - grace = bound - largest end.
  void AddToFixedWindows(const ModelEvent& e, KeyState& k, int64_t bound) {
    std::vector<Window> ws = FixedWindowsOf(e.ts);
    bool all_closed = true;
    int64_t largest_end = std::numeric_limits<int64_t>::min();
    for (const Window& w : ws) {
      all_closed = all_closed && IsClosed(w, bound);
      largest_end = std::max(largest_end, w.second);
    }
    if (all_closed) {
      Late(e, bound - largest_end);
      return;
    }
    k.admitted.push_back(e);
    std::vector<ModelResult> changed;
    for (const Window& w : ws) {
      if (IsClosed(w, bound)) {  // emitted and forgotten: never reopened
        ++out_.coverage["event in a closed and an open window"];
        continue;
      }
      k.open.insert(w);
      changed.push_back(Contents(k, w));
    }
    EmitCurrent(e.key, std::move(changed));
  }

  // Sliding: each event at t defines [t - size + 1, t + 1). Returns the event's own window if
  // it was closed already (it is then emitted at once).
  // Late iff wm >= t + size + grace, i.e. t + size <= bound.
  std::optional<Window> AddToSlidingWindows(const ModelEvent& e, KeyState& k, int64_t bound) {
    if (e.ts + def_.size <= bound) {
      Late(e, bound - (e.ts + def_.size));
      return std::nullopt;
    }
    k.admitted.push_back(e);
    Window own{e.ts - def_.size + 1, e.ts + 1};
    std::optional<Window> at_once;
    if (IsClosed(own, bound)) {
      at_once = own;
      ++out_.coverage["sliding window closed before its event"];
    } else {
      k.open.insert(own);
    }
    std::vector<ModelResult> changed;
    for (const Window& w : k.open) {
      if (e.ts >= w.first && e.ts < w.second) changed.push_back(Contents(k, w));
    }
    if (at_once) changed.push_back(Contents(k, *at_once));
    EmitCurrent(e.key, std::move(changed));
    return at_once;
  }

  // The sessions of a set of events, from scratch: sorted by time, a new session wherever two
  // consecutive events are more than one gap apart.
  std::vector<std::vector<ModelEvent>> Sessions(std::vector<ModelEvent> events) const {
    std::stable_sort(events.begin(), events.end(), [](const ModelEvent& a, const ModelEvent& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.id < b.id;
    });
    std::vector<std::vector<ModelEvent>> sessions;
    for (const ModelEvent& e : events) {
      if (sessions.empty() || e.ts - sessions.back().back().ts > def_.size) sessions.emplace_back();
      sessions.back().push_back(e);
    }
    return sessions;
  }

  static Window SessionWindow(const std::vector<ModelEvent>& s) {
    return {s.front().ts, s.back().ts + 1};
  }

  // Late iff t < wm - gap - grace = bound.
  void AddToSession(const ModelEvent& e, KeyState& k, int64_t bound) {
    if (e.ts < bound) {
      Late(e, bound - e.ts);
      return;
    }
    int joined = 0;
    for (const std::vector<ModelEvent>& s : Sessions(k.session_events)) {
      if (s.front().ts - def_.size <= e.ts && e.ts <= s.back().ts + def_.size) {
        ++joined;
        if (e.ts < s.front().ts) ++out_.coverage["session extended backwards"];
      }
    }
    if (joined > 1) ++out_.coverage["session merge"];
    k.admitted.push_back(e);
    k.session_events.push_back(e);
    for (const std::vector<ModelEvent>& s : Sessions(k.session_events)) {
      for (const ModelEvent& x : s) {
        if (x.id == e.id) EmitCurrent(e.key, {Aggregate(SessionWindow(s), s)});
      }
    }
  }

  // (4): every window now closed, of every key, is emitted (Final) and forgotten.
  void CloseWindows(bool filtered, std::optional<std::pair<std::string, Window>> at_once,
                    const std::string* by_key) {
    for (auto& [key, k] : keys_) {
      int64_t bound = Bound(k);
      std::vector<ModelResult> closed;
      if (def_.kind == ModelKind::kSession) {
        std::vector<ModelEvent> still_open;
        for (const std::vector<ModelEvent>& s : Sessions(k.session_events)) {
          if (IsClosed(SessionWindow(s), bound)) {
            closed.push_back(Aggregate(SessionWindow(s), s));
          } else {
            still_open.insert(still_open.end(), s.begin(), s.end());
          }
        }
        k.session_events = std::move(still_open);
      } else {
        for (auto it = k.open.begin(); it != k.open.end();) {
          if (IsClosed(*it, bound)) {
            closed.push_back(Contents(k, *it));
            it = k.open.erase(it);
          } else {
            ++it;
          }
        }
      }
      if (at_once && at_once->first == key) closed.push_back(Contents(k, at_once->second));
      if (closed.empty()) continue;
      std::stable_sort(closed.begin(), closed.end(),
                       [](const ModelResult& a, const ModelResult& b) {
                         return a.end != b.end ? a.end < b.end : a.start < b.start;
                       });
      if (filtered) out_.final_order_open.insert(key);
      if (filtered || (by_key != nullptr && key != *by_key)) {
        ++out_.coverage["window closed by another key's record"];
      }
      out_.final_results[key].push_back(std::move(closed));
    }
  }

  // Count windows: the windows starting at every step-th event of the key; one closes when it
  // holds `size` events.
  void AddCount(const ModelEvent& e) {
    KeyState& k = keys_[e.key];
    k.count_events.push_back(e);
    int64_t i = static_cast<int64_t>(k.count_events.size()) - 1;
    auto window = [&](int64_t first) {
      std::vector<ModelEvent> in(k.count_events.begin() + first, k.count_events.end());
      int64_t lo = in.front().ts, hi = in.front().ts;
      for (const ModelEvent& x : in) {
        lo = std::min(lo, x.ts);
        hi = std::max(hi, x.ts);
      }
      return Aggregate({lo, hi + 1}, std::move(in));
    };
    std::vector<ModelResult> changed;
    for (int64_t first = 0; first <= i; first += def_.step) {
      if (i < first + def_.size) changed.push_back(window(first));
    }
    EmitCurrent(e.key, std::move(changed));
    int64_t first = i - def_.size + 1;
    if (first >= 0 && first % def_.step == 0) {
      out_.final_results[e.key].push_back({window(first)});
      ++out_.coverage["full count window"];
    }
  }

  ModelDefinition def_;
  int64_t partition_watermark_ = kNoWatermark;
  int64_t partition_cursor_ = kNoWatermark;
  std::map<std::string, KeyState> keys_;
  ModelOutput out_;
};

// Runs `events` (arrival order) then the end of the input through a model.
inline ModelOutput RunWindowModel(const ModelDefinition& definition,
                                  const std::vector<ModelEvent>& events) {
  WindowModel model(definition);
  for (const ModelEvent& e : events) model.Add(e);
  model.End();
  return model.output();
}

// The same with a restart before events[restart_at] that changes the grace to `new_grace`.
inline ModelOutput RunWindowModel(const ModelDefinition& definition,
                                  const std::vector<ModelEvent>& events, size_t restart_at,
                                  int64_t new_grace) {
  WindowModel model(definition);
  for (size_t i = 0; i < events.size(); ++i) {
    if (i == restart_at) model.Restart(new_grace);
    model.Add(events[i]);
  }
  if (restart_at >= events.size()) model.Restart(new_grace);
  model.End();
  return model.output();
}

}  // namespace weir::window::testing
