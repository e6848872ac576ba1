#include "join/assembler.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace weir::join {

namespace {

constexpr std::chrono::milliseconds kDefaultCollectRetention{30'000};

// Whether `clock` is at least `d` past `t` (clock Max: always).
bool Past(EventTime clock, EventTime t, std::chrono::milliseconds d) {
  if (clock == EventTime::Max()) return true;
  if (clock == EventTime::Min()) return false;
  return clock >= t + d;
}

// An identity key for "this message of this input" (supersede lookups).
uint64_t MessageKey(const Delivery& d) {
  return (static_cast<uint64_t>(d.input) << 56) ^ static_cast<uint64_t>(d.identity);
}

std::string Names(const std::vector<std::string>& inputs, const std::vector<bool>& present,
                  bool want) {
  std::string out = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (present[i] != want) continue;
    if (out.size() > 1) out += ", ";
    out += inputs[i];
  }
  return out + "]";
}

// What both modes share: the inputs, the options, the resolver and the staged groups.
class AssemblerBase : public Assembler {
 protected:
  AssemblerBase(const JoinOptions& options, std::vector<std::string> inputs, Resolver& resolver)
      : options_(options), inputs_(std::move(inputs)), resolver_(resolver) {}

  // The clock only moves forward; at the end of input every call drains again (members
  // delivered again after a nak included).
  void Advance(EventTime clock) final {
    if (clock <= clock_ && clock != EventTime::Max()) return;
    clock_ = clock;
    Sweep();
  }

  std::optional<ReadyGroup> PopReady() override {
    if (ready_.empty()) return std::nullopt;
    ReadyGroup group = std::move(ready_.front());
    ready_.pop_front();
    return group;
  }

  // Settles, times out and expires what the clock has reached.
  virtual void Sweep() = 0;

  // Whether a staged group, or one of `groups` (pending), holds a message of `input`.
  template <typename Groups>
  bool Holds(const Groups& groups, int input) const {
    for (const ReadyGroup& g : ready_) {
      if (g.members[input].has_value() || !g.samples[input].empty()) return true;
    }
    for (const auto& [id, g] : groups) {
      if (g.members[input].has_value()) return true;
    }
    return false;
  }

  ReadyGroup EmptyGroup() const {
    ReadyGroup g;
    g.members.resize(inputs_.size());
    g.samples.resize(inputs_.size());
    return g;
  }

  const JoinOptions options_;
  const std::vector<std::string> inputs_;
  Resolver& resolver_;
  std::deque<ReadyGroup> ready_;
  EventTime clock_ = EventTime::Min();  // the largest time seen (Max: the end of input)
};

// ---------------------------------------------------------------------------------------------
// Trace mode: groups by correlation id.

class TraceAssembler final : public AssemblerBase {
 public:
  TraceAssembler(const JoinOptions& options, std::vector<std::string> inputs, Resolver& resolver)
      : AssemblerBase(options, std::move(inputs), resolver) {}

  void Add(int input, Member member, std::string_view trace_id) override {
    auto [it, created] = groups_.try_emplace(std::string(trace_id));
    Group& g = it->second;
    if (created) {
      g.members.resize(inputs_.size());
      g.created = next_created_++;
      g.time = member.time;
      by_creation_.emplace(g.created, it->first);
      by_time_.emplace(g.time, g.created);
    }
    std::optional<Member>& slot = g.members[input];
    if (slot.has_value()) {
      if (slot->delivery.identity == member.delivery.identity) {
        // A redelivery of the message we hold: keep the fresh delivery, end the stale one.
        resolver_.Supersede(slot->delivery);
        slot = std::move(member);
      } else {
        resolver_.Reject(std::move(member), "join: a second message of input '" + inputs_[input] +
                                                "' for trace id '" + it->first + "'");
      }
      return;
    }
    if (member.time < g.time) {
      by_time_.erase(by_time_.find({g.time, g.created}));
      g.time = member.time;
      by_time_.emplace(g.time, g.created);
    }
    slot = std::move(member);
    if (++g.count == static_cast<int>(inputs_.size())) {
      Stage(it);
    } else {
      EnforceMaxPending();
    }
  }

  void Sweep() override {
    if (options_.timeout.count() <= 0 && clock_ != EventTime::Max()) return;
    while (!by_time_.empty()) {
      auto [time, created] = *by_time_.begin();
      if (!Past(clock_, time, options_.timeout)) break;
      Evict(groups_.find(by_creation_.at(created)), options_.missing,
            clock_ == EventTime::Max() ? "join: end of input" : "join timeout");
    }
  }

  void InputEnded(int input) override {
    std::vector<int64_t> doomed;
    for (const auto& [created, id] : by_creation_) {
      if (!groups_.at(id).members[input].has_value()) doomed.push_back(created);
    }
    for (int64_t created : doomed) {
      Evict(groups_.find(by_creation_.at(created)), options_.missing,
            "join: input '" + inputs_[input] + "' ended");
    }
  }

  bool HasPendingFrom(int input) const override { return Holds(groups_, input); }

  size_t pending_groups() const override { return groups_.size(); }

 private:
  struct Group {
    std::vector<std::optional<Member>> members;
    int count = 0;
    int64_t created = 0;
    EventTime time;  // the smallest member time
  };
  using Groups = std::unordered_map<std::string, Group>;

  void Forget(Groups::iterator it) {
    by_creation_.erase(it->second.created);
    by_time_.erase(by_time_.find({it->second.time, it->second.created}));
    groups_.erase(it);
  }

  void Stage(Groups::iterator it) {
    ReadyGroup out = EmptyGroup();
    out.id = it->first;
    out.time = it->second.time;
    out.seq = INT64_MAX;
    for (auto& m : it->second.members) out.seq = std::min(out.seq, m->delivery.identity);
    out.members = std::move(it->second.members);
    Forget(it);
    ready_.push_back(std::move(out));
  }

  void Evict(Groups::iterator it, MissingPolicy policy, std::string_view why) {
    std::vector<bool> present;
    for (const auto& m : it->second.members) present.push_back(m.has_value());
    const std::string reason = std::string(why) + ": group '" + it->first + "' had " +
                               Names(inputs_, present, true) + ", missing " +
                               Names(inputs_, present, false);
    std::vector<std::optional<Member>> members = std::move(it->second.members);
    Forget(it);
    for (auto& m : members) {
      if (m.has_value()) resolver_.Evict(std::move(*m), reason, policy);
    }
  }

  void EnforceMaxPending() {
    while (static_cast<int64_t>(groups_.size()) > options_.max_pending) {
      Evict(groups_.find(by_creation_.begin()->second), MissingPolicy::kDrop,
            "join: max_pending (" + std::to_string(options_.max_pending) + ") exceeded");
    }
  }

  Groups groups_;
  std::map<int64_t, std::string> by_creation_;       // oldest first (max_pending)
  std::set<std::pair<EventTime, int64_t>> by_time_;  // earliest first (timeouts)
  int64_t next_created_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Time mode: groups by event time.

class TimeAssembler final : public AssemblerBase {
 public:
  TimeAssembler(const JoinOptions& options, std::vector<std::string> inputs, Resolver& resolver)
      : AssemblerBase(options, std::move(inputs), resolver),
        collect_window_(inputs_.size(), std::chrono::milliseconds(-1)),
        collected_(inputs_.size()) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      auto c = options_.collect.find(inputs_[i]);
      if (c == options_.collect.end()) {
        ++sync_count_;
        continue;
      }
      collect_window_[i] = c->second;
      settle_ = std::max(settle_, c->second);
    }
    quorum_ = options_.quorum > 0 ? options_.quorum : sync_count_;
    collect_cap_ = options_.collect_cap > 0 ? options_.collect_cap
                                            : std::max<int64_t>(1024, 16 * options_.max_pending);
    retention_ =
        (options_.timeout.count() > 0 ? options_.timeout : kDefaultCollectRetention) + settle_;
  }

  void Add(int input, Member member, std::string_view) override {
    if (is_collect(input)) {
      auto& buffer = collected_[input];
      buffer.emplace(member.time, std::move(member));
      if (static_cast<int64_t>(buffer.size()) > collect_cap_) {
        resolver_.Release(std::move(buffer.begin()->second));
        buffer.erase(buffer.begin());
      }
      return;
    }
    // A redelivery of a message still buffered replaces its copy.
    auto held = member_group_.find(MessageKey(member.delivery));
    if (held != member_group_.end()) {
      std::optional<Member>& slot = groups_.at(held->second).members[input];
      resolver_.Supersede(slot->delivery);
      slot = std::move(member);
      return;
    }
    const int64_t gid = Nearest(input, member.time);
    Group& g = gid >= 0 ? groups_.at(gid) : NewGroup(member.time);
    const int64_t id = gid >= 0 ? gid : g.id;
    member_group_[MessageKey(member.delivery)] = id;
    if (member.time < g.time) Retime(g, member.time);
    g.members[input] = std::move(member);
    if (++g.count == sync_count_) {
      incomplete_.erase({g.time, id});
      complete_.emplace(g.time, id);
    }
    EnforceMaxPending();
    if (settle_.count() == 0) SettleUpTo(clock_);
  }

  void Sweep() override {
    SettleUpTo(clock_);
    if (options_.timeout.count() > 0 || clock_ == EventTime::Max()) {
      while (!incomplete_.empty()) {
        auto [time, id] = *incomplete_.begin();
        if (!Past(clock_, time, options_.timeout)) break;
        TimeOut(id, clock_ == EventTime::Max() ? "join: end of input" : "join timeout");
      }
    }
    DropStaleSamples();
  }

  void InputEnded(int input) override {
    if (is_collect(input)) return;  // collect inputs never make a group incomplete
    std::vector<int64_t> doomed;
    for (const auto& [time, id] : incomplete_) {
      if (!groups_.at(id).members[input].has_value()) doomed.push_back(id);
    }
    for (int64_t id : doomed) TimeOut(id, "join: input '" + inputs_[input] + "' ended");
  }

  bool HasPendingFrom(int input) const override {
    if (is_collect(input) && !collected_[input].empty()) return true;
    return Holds(groups_, input);
  }

  size_t pending_groups() const override { return groups_.size(); }

 private:
  struct Group {
    int64_t id = 0;
    EventTime time;  // the smallest member time
    std::vector<std::optional<Member>> members;
    int count = 0;  // synchronized members
  };

  bool is_collect(int input) const { return collect_window_[input].count() >= 0; }

  Group& NewGroup(EventTime time) {
    Group& g = groups_[next_id_];
    g.id = next_id_++;
    g.time = time;
    g.members.resize(inputs_.size());
    by_time_.emplace(time, g.id);
    incomplete_.emplace(time, g.id);
    return g;
  }

  // The pending group nearest `time` within the tolerance that lacks `input` (ties: the older
  // group); -1 if none.
  int64_t Nearest(int input, EventTime time) const {
    int64_t best = -1;
    std::chrono::milliseconds best_diff{0};
    auto it = by_time_.lower_bound({time - options_.tolerance, INT64_MIN});
    for (; it != by_time_.end() && it->first <= time + options_.tolerance; ++it) {
      const Group& g = groups_.at(it->second);
      if (g.members[input].has_value()) continue;
      std::chrono::milliseconds diff{time > g.time ? time.value() - g.time.value()
                                                   : g.time.value() - time.value()};
      if (best < 0 || diff < best_diff || (diff == best_diff && g.id < best)) {
        best = g.id;
        best_diff = diff;
      }
    }
    return best;
  }

  void Retime(Group& g, EventTime time) {
    const bool complete = g.count == sync_count_;
    by_time_.erase({g.time, g.id});
    (complete ? complete_ : incomplete_).erase({g.time, g.id});
    g.time = time;
    by_time_.emplace(g.time, g.id);
    (complete ? complete_ : incomplete_).emplace(g.time, g.id);
  }

  // Emits the complete groups whose settle time has passed, earliest first.
  void SettleUpTo(EventTime clock) {
    while (!complete_.empty()) {
      auto [time, id] = *complete_.begin();
      if (settle_.count() > 0 && !Past(clock, time, settle_)) break;
      Stage(id);
    }
  }

  void TimeOut(int64_t id, std::string_view why) {
    Group& g = groups_.at(id);
    if (g.count >= quorum_) {
      Stage(id);
      return;
    }
    // The synchronized inputs it had, and those it lacked.
    std::vector<bool> present(inputs_.size()), missing(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const bool sync = !is_collect(static_cast<int>(i));
      present[i] = sync && g.members[i].has_value();
      missing[i] = sync && !g.members[i].has_value();
    }
    const std::string reason = std::string(why) + ", below quorum " + std::to_string(quorum_) +
                               ": group at " + std::to_string(g.time.value()) + " had " +
                               Names(inputs_, present, true) + ", missing " +
                               Names(inputs_, missing, true);
    Evict(id, options_.missing, reason);
  }

  void Evict(int64_t id, MissingPolicy policy, const std::string& reason) {
    std::vector<std::optional<Member>> members = Forget(id);
    for (auto& m : members) {
      if (m.has_value()) resolver_.Evict(std::move(*m), reason, policy);
    }
  }

  std::vector<std::optional<Member>> Forget(int64_t id) {
    auto it = groups_.find(id);
    Group& g = it->second;
    by_time_.erase({g.time, id});
    incomplete_.erase({g.time, id});
    complete_.erase({g.time, id});
    for (const auto& m : g.members) {
      if (m.has_value()) member_group_.erase(MessageKey(m->delivery));
    }
    std::vector<std::optional<Member>> members = std::move(g.members);
    groups_.erase(it);
    return members;
  }

  void Stage(int64_t id) {
    const EventTime time = groups_.at(id).time;
    ReadyGroup out = EmptyGroup();
    out.time = time;
    out.members = Forget(id);
    // The identity is the earliest member's (ties: the first input): the same members always
    // give the same id.
    for (size_t i = 0; i < out.members.size(); ++i) {
      const auto& m = out.members[i];
      if (m.has_value() && m->time == time) {
        out.seq = m->delivery.identity;
        out.id =
            "tw-" + std::to_string(time.value()) + "-" + inputs_[i] + "-" + std::to_string(out.seq);
        break;
      }
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!is_collect(static_cast<int>(i))) continue;
      auto& buffer = collected_[i];
      auto from = buffer.lower_bound(time - collect_window_[i]);
      auto to = buffer.upper_bound(time + collect_window_[i]);
      for (auto it = from; it != to; ++it) out.samples[i].push_back(std::move(it->second));
      buffer.erase(from, to);
    }
    ready_.push_back(std::move(out));
  }

  void EnforceMaxPending() {
    while (static_cast<int64_t>(groups_.size()) > options_.max_pending) {
      Evict(groups_.begin()->first, MissingPolicy::kDrop,
            "join: max_pending (" + std::to_string(options_.max_pending) + ") exceeded");
    }
  }

  // A sample no group claimed is dropped once no group can still claim it.
  void DropStaleSamples() {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!is_collect(static_cast<int>(i))) continue;
      auto& buffer = collected_[i];
      while (!buffer.empty() &&
             Past(clock_, buffer.begin()->first,
                  collect_window_[i] + retention_ + std::chrono::milliseconds(1))) {
        resolver_.Release(std::move(buffer.begin()->second));
        buffer.erase(buffer.begin());
      }
    }
  }

  std::vector<std::chrono::milliseconds> collect_window_;  // -1: synchronized input
  std::vector<std::multimap<EventTime, Member>> collected_;
  int sync_count_ = 0;
  int quorum_ = 0;
  int64_t collect_cap_ = 0;
  std::chrono::milliseconds settle_{0};
  std::chrono::milliseconds retention_{0};

  std::map<int64_t, Group> groups_;                     // by id: oldest first
  std::set<std::pair<EventTime, int64_t>> by_time_;     // every pending group
  std::set<std::pair<EventTime, int64_t>> incomplete_;  // waiting for members (timeouts)
  std::set<std::pair<EventTime, int64_t>> complete_;    // waiting to settle
  std::unordered_map<uint64_t, int64_t> member_group_;  // message -> group (supersede)
  int64_t next_id_ = 0;
};

}  // namespace

Status Validate(const JoinOptions& options, const std::vector<std::string>& inputs) {
  const std::string what = "join" + (options.name.empty() ? "" : " '" + options.name + "'");
  auto invalid = [&](const std::string& m) { return Status::InvalidArgument(what + ": " + m); };
  if (inputs.size() < 2) return invalid("needs at least two parents");
  std::set<std::string> names;
  for (const std::string& input : inputs) {
    if (input.empty()) return invalid("every parent needs a name");
    if (input == "trace_id" || input == "group_id" || input == "seq" || input == "event_ts") {
      return invalid("parent name '" + input + "' is a field of the join's output; rename it");
    }
    if (!names.insert(input).second) return invalid("two parents are named '" + input + "'");
  }
  if (options.max_pending < 1) return invalid("max_pending must be >= 1");
  if (options.max_deliver < 1) return invalid("max_deliver must be >= 1");
  if (options.timeout.count() < 0) return invalid("timeout_ms must be >= 0");
  if (options.dedup.count() < 0) return invalid("dedup_ms must be >= 0");
  if (options.mode == JoinMode::kTrace) {
    if (!options.collect.empty() || options.quorum != 0 || options.tolerance.count() != 0 ||
        !options.time_field.empty()) {
      return invalid("tolerance_ms, quorum, collect and time_field belong to time mode");
    }
    return Status::OK();
  }
  if (!options.trace_field.empty()) return invalid("trace_field belongs to trace mode");
  if (options.tolerance.count() <= 0) {
    return invalid("time mode needs a tolerance_ms > 0 (how far apart members may be)");
  }
  int sync = static_cast<int>(inputs.size());
  for (const auto& [input, window] : options.collect) {
    if (!names.count(input)) {
      return invalid("collect parent '" + input + "' is not a parent of this join");
    }
    if (window.count() < 0) return invalid("collect window of '" + input + "' must be >= 0 ms");
    --sync;
  }
  if (sync == 0) {
    return invalid("at least one parent must be synchronized (not collected) to anchor groups");
  }
  if (options.quorum < 0 || options.quorum > sync) {
    return invalid("quorum " + std::to_string(options.quorum) + " exceeds the " +
                   std::to_string(sync) + " synchronized parents");
  }
  if (options.collect_cap < 0) return invalid("collect_cap must be >= 0");
  return Status::OK();
}

std::unique_ptr<Assembler> Assembler::Make(const JoinOptions& options,
                                           std::vector<std::string> inputs, Resolver& resolver) {
  if (options.mode == JoinMode::kTrace) {
    return std::make_unique<TraceAssembler>(options, std::move(inputs), resolver);
  }
  return std::make_unique<TimeAssembler>(options, std::move(inputs), resolver);
}

}  // namespace weir::join
