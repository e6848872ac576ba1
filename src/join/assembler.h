// Input-group assembly for a join step (docs/architecture.md §7; the rules are stated in
// weir/join.h).
//
// An Assembler is pure logic: it is fed members (a record, the input it came by, its delivery
// handle), told when the join's clock moves, and hands out ready groups. It never acknowledges
// anything itself: what it discards it gives to its Resolver (evicted members, superseded
// copies, unclaimed or overflowing collect samples); what it emits travels in the ReadyGroup,
// unresolved, for the join step to resolve once the group has been processed.
//
// Threads: one assembler per task, used on the task's thread only.
// Cost: trace mode O(1) per member (hash map); time mode O(log n + k) per member, k the groups
// within the tolerance of its time; collect claims O(log n + claimed).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/delivery.h"
#include "weir/join.h"
#include "weir/record.h"
#include "weir/status.h"

namespace weir::join {

// Definition-time checks: at least two inputs with distinct non-empty names; time mode needs a
// tolerance > 0, a synchronized input, a quorum no larger than the synchronized inputs, and
// collect inputs that are inputs; trace mode takes none of the time options; caps are > 0.
// Errors are kInvalidArgument, naming the join and the option.
Status Validate(const JoinOptions& options, const std::vector<std::string>& inputs);

// One buffered message.
struct Member {
  Record record;
  Delivery delivery;
  EventTime time;  // the join's time for it (time_field, else the record timestamp)
};

struct ReadyGroup {
  std::string id;   // the trace id, or "tw-<time>-<input>-<identity>" of its earliest member
  int64_t seq = 0;  // deterministic: the smallest identity (trace), the earliest's (time)
  EventTime time;   // the smallest member time
  // Per input: the member (synchronized inputs; empty when missing from a quorum emission) ...
  std::vector<std::optional<Member>> members;
  // ... or, for a collect input, its samples within the window, oldest first.
  std::vector<std::vector<Member>> samples;
};

// Where discarded members go. Called from inside the assembler's methods.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // A member of an evicted group (`reason` says why), to be dealt with by `policy`.
  virtual void Evict(Member member, std::string_view reason, MissingPolicy policy) = 0;
  // A member that is not needed: a collect sample no group claimed, or one dropped beyond the
  // cap. It is acknowledged.
  virtual void Release(Member member) = 0;
  // A copy of a message that a redelivery replaced: never deliver it again.
  virtual void Supersede(const Delivery& stale) = 0;
  // A message that cannot join (a second message of one input for one trace id).
  virtual void Reject(Member member, std::string_view reason) = 0;
};

class Assembler {
 public:
  virtual ~Assembler() = default;
  // REQUIRES: Validate(options, inputs) is OK; `resolver` outlives the assembler.
  static std::unique_ptr<Assembler> Make(const JoinOptions& options,
                                         std::vector<std::string> inputs, Resolver& resolver);

  // A member of `input`; `trace_id` is its correlation id (trace mode; ignored in time mode).
  virtual void Add(int input, Member member, std::string_view trace_id) = 0;
  // The join's clock: the largest event time seen (EventTime::Max() at the end of input); an
  // earlier time leaves it where it is. Settles complete groups, times out old ones, drops stale
  // collect samples; at Max, drains everything, each time it is called.
  virtual void Advance(EventTime clock) = 0;
  // `input` has ended: groups still missing it can never complete, so they are treated as
  // timed out now (quorum emission or eviction).
  virtual void InputEnded(int input) = 0;
  // The next group ready to emit, in the order they became ready.
  virtual std::optional<ReadyGroup> PopReady() = 0;
  // Whether anything buffered (pending, staged for emission, collect samples) holds a message
  // of `input`.
  virtual bool HasPendingFrom(int input) const = 0;
  virtual size_t pending_groups() const = 0;
};

}  // namespace weir::join
