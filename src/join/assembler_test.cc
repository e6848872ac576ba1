// One named test per assembly rule of weir/join.h, on the assembler alone: what it emits, and
// what it gives its resolver (evictions, releases, supersedes, rejections).
#include "join/assembler.h"

#include <gtest/gtest.h>

#include <map>

namespace weir::join {
namespace {

using std::chrono::milliseconds;

// Records what the assembler discards, as "<what> <input>:<identity>".
class RecordingResolver : public Resolver {
 public:
  void Evict(Member m, std::string_view reason, MissingPolicy policy) override {
    log.push_back(std::string(policy == MissingPolicy::kDrop ? "drop " : "nak ") + Id(m.delivery));
    reasons.emplace_back(reason);
  }
  void Release(Member m) override { log.push_back("release " + Id(m.delivery)); }
  void Supersede(const Delivery& stale) override {
    log.push_back("term " + Id(stale) + "#" + std::to_string(stale.position.value()));
  }
  void Reject(Member m, std::string_view reason) override {
    log.push_back("reject " + Id(m.delivery));
    reasons.emplace_back(reason);
  }
  static std::string Id(const Delivery& d) {
    return std::to_string(d.input) + ":" + std::to_string(d.identity);
  }
  std::vector<std::string> log;
  std::vector<std::string> reasons;
};

// A member of `input` at `time`, identity `identity` (position = identity unless given).
Member M(int input, int64_t time, int64_t identity, int64_t position = -1) {
  Member m;
  m.record.value = Value::MakeObject({{"t", Value(time)}, {"id", Value(identity)}});
  m.record.timestamp = EventTime(time);
  m.delivery = {input, SourcePosition(position < 0 ? identity : position), identity, 1};
  m.time = EventTime(time);
  return m;
}

// A ready group as text: "<id> @<time> a=<identity>|- c=[identities]".
std::string Describe(const ReadyGroup& g, const std::vector<std::string>& inputs) {
  std::string out = g.id + " @" + std::to_string(g.time.value());
  for (size_t i = 0; i < inputs.size(); ++i) {
    out += " " + inputs[i] + "=";
    if (g.members[i].has_value()) {
      out += std::to_string(g.members[i]->delivery.identity);
    } else if (!g.samples[i].empty()) {
      out += "[";
      for (const Member& s : g.samples[i]) out += std::to_string(s.delivery.identity) + ",";
      out.back() = ']';
    } else {
      out += "-";
    }
  }
  return out;
}

class AssemblerTest : public ::testing::Test {
 protected:
  void Make(JoinOptions options, std::vector<std::string> inputs) {
    ASSERT_TRUE(Validate(options, inputs).ok()) << Validate(options, inputs).message();
    inputs_ = inputs;
    assembler_ = Assembler::Make(options, std::move(inputs), resolver_);
  }
  std::vector<std::string> Ready() {
    std::vector<std::string> out;
    while (auto g = assembler_->PopReady()) out.push_back(Describe(*g, inputs_));
    return out;
  }
  using V = std::vector<std::string>;

  RecordingResolver resolver_;
  std::vector<std::string> inputs_;
  std::unique_ptr<Assembler> assembler_;
};

JoinOptions Trace(milliseconds timeout = milliseconds(0)) {
  JoinOptions o;
  o.mode = JoinMode::kTrace;
  o.timeout = timeout;
  return o;
}

JoinOptions Time(milliseconds tolerance, milliseconds timeout = milliseconds(0)) {
  JoinOptions o;
  o.mode = JoinMode::kTime;
  o.tolerance = tolerance;
  o.timeout = timeout;
  return o;
}

// --- trace mode --------------------------------------------------------------------------------

TEST_F(AssemblerTest, TraceGroupIsReadyWhenEveryParentHasArrived) {
  Make(Trace(), {"a", "b", "c"});
  assembler_->Add(0, M(0, 100, 7), "t1");
  assembler_->Add(2, M(2, 90, 5), "t1");
  EXPECT_EQ(Ready(), V{});
  assembler_->Add(1, M(1, 120, 9), "t1");
  // The id is the trace id; the seq the smallest identity; the time the smallest member time.
  auto g = Ready();
  EXPECT_EQ(g, V{"t1 @90 a=7 b=9 c=5"});
  EXPECT_TRUE(resolver_.log.empty());
  EXPECT_EQ(assembler_->pending_groups(), 0u);
}

TEST_F(AssemblerTest, TraceGroupSeqIsTheSmallestMemberIdentity) {
  Make(Trace(), {"a", "b"});
  assembler_->Add(0, M(0, 100, 42), "x");
  assembler_->Add(1, M(1, 100, 17), "x");
  auto g = assembler_->PopReady();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->seq, 17);
}

TEST_F(AssemblerTest, TraceIdsNeverMix) {
  Make(Trace(), {"a", "b"});
  assembler_->Add(0, M(0, 1, 1), "x");
  assembler_->Add(1, M(1, 2, 2), "y");
  assembler_->Add(1, M(1, 3, 3), "x");
  assembler_->Add(0, M(0, 4, 4), "y");
  EXPECT_EQ(Ready(), (V{"x @1 a=1 b=3", "y @2 a=4 b=2"}));
}

TEST_F(AssemblerTest, TraceTimeoutEvictsTheIncompleteGroupByTheDropPolicy) {
  Make(Trace(milliseconds(1000)), {"a", "b"});
  assembler_->Add(0, M(0, 100, 1), "x");
  assembler_->Advance(EventTime(1099));
  EXPECT_TRUE(resolver_.log.empty());
  assembler_->Advance(EventTime(1100));  // 1000 ms after the group's time
  EXPECT_EQ(resolver_.log, V{"drop 0:1"});
  EXPECT_NE(resolver_.reasons[0].find("missing [b]"), std::string::npos) << resolver_.reasons[0];
  EXPECT_EQ(Ready(), V{});
}

TEST_F(AssemblerTest, TraceTimeoutWithTheErrorPolicyNaksForRedelivery) {
  JoinOptions o = Trace(milliseconds(10));
  o.missing = MissingPolicy::kError;
  Make(o, {"a", "b"});
  assembler_->Add(1, M(1, 100, 1), "x");
  assembler_->Advance(EventTime(200));
  EXPECT_EQ(resolver_.log, V{"nak 1:1"});
}

TEST_F(AssemblerTest, TraceRedeliverySupersedesTheBufferedCopy) {
  Make(Trace(), {"a", "b"});
  assembler_->Add(0, M(0, 100, 1, /*position=*/10), "x");
  assembler_->Add(0, M(0, 100, 1, /*position=*/11), "x");  // the same message, delivered again
  EXPECT_EQ(resolver_.log, V{"term 0:1#10"});
  assembler_->Add(1, M(1, 100, 2), "x");
  auto g = assembler_->PopReady();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->members[0]->delivery.position, SourcePosition(11));  // the fresh one travels on
}

TEST_F(AssemblerTest, TraceSecondMessageOfOneParentForOneIdIsRejectedNotSwallowed) {
  Make(Trace(), {"a", "b"});
  assembler_->Add(0, M(0, 100, 1), "x");
  assembler_->Add(0, M(0, 100, 2), "x");  // a different message with the same trace id
  EXPECT_EQ(resolver_.log, V{"reject 0:2"});
  assembler_->Add(1, M(1, 100, 3), "x");
  EXPECT_EQ(Ready(), V{"x @100 a=1 b=3"});
}

TEST_F(AssemblerTest, TraceMaxPendingEvictsTheOldestGroupAsDrop) {
  JoinOptions o = Trace();
  o.max_pending = 2;
  o.missing = MissingPolicy::kError;  // max_pending evicts as drop whatever the policy
  Make(o, {"a", "b"});
  assembler_->Add(0, M(0, 300, 1), "x");
  assembler_->Add(0, M(0, 100, 2), "y");
  assembler_->Add(0, M(0, 200, 3), "z");
  EXPECT_EQ(resolver_.log, V{"drop 0:1"});  // the oldest created, not the earliest in time
  EXPECT_NE(resolver_.reasons[0].find("max_pending"), std::string::npos);
  EXPECT_EQ(assembler_->pending_groups(), 2u);
}

TEST_F(AssemblerTest, TraceInputThatEndedEvictsGroupsStillMissingIt) {
  Make(Trace(), {"a", "b"});
  assembler_->Add(0, M(0, 100, 1), "x");
  assembler_->Add(1, M(1, 100, 2), "y");
  assembler_->InputEnded(1);
  EXPECT_EQ(resolver_.log, V{"drop 0:1"});  // x waited for b, which has ended; y has b's data
  EXPECT_TRUE(assembler_->HasPendingFrom(1));
}

TEST_F(AssemblerTest, TraceEndOfInputEvictsEveryIncompleteGroup) {
  Make(Trace(), {"a", "b"});  // no timeout: groups wait for their parents or the end
  assembler_->Add(0, M(0, 100, 1), "x");
  assembler_->Advance(EventTime(1'000'000));
  EXPECT_TRUE(resolver_.log.empty());
  assembler_->Advance(EventTime::Max());
  EXPECT_EQ(resolver_.log, V{"drop 0:1"});
}

// --- time mode ---------------------------------------------------------------------------------

TEST_F(AssemblerTest, TimeMessageJoinsTheNearestPendingGroupWithinTolerance) {
  Make(Time(milliseconds(50)), {"a", "b", "c"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(0, M(0, 1080, 2), "");
  assembler_->Add(1, M(1, 1050, 3), "");  // 50 from the first, 30 from the second
  assembler_->Add(2, M(2, 1045, 4), "");  // 45 from the first, 5 from the second (now at 1050)
  EXPECT_EQ(Ready(), V{"tw-1045-c-4 @1045 a=2 b=3 c=4"});
}

TEST_F(AssemblerTest, TimeMessageOutsideToleranceSeedsANewGroup) {
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(1, M(1, 1051, 2), "");
  EXPECT_EQ(assembler_->pending_groups(), 2u);
  assembler_->Add(1, M(1, 1050, 3), "");  // exactly at the tolerance: joins
  EXPECT_EQ(Ready(), V{"tw-1000-a-1 @1000 a=1 b=3"});
}

TEST_F(AssemblerTest, TimeSkipsGroupsThatAlreadyHoldTheParent) {
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(0, M(0, 1010, 2), "");  // the first group holds a: a second group
  EXPECT_EQ(assembler_->pending_groups(), 2u);
  assembler_->Add(1, M(1, 1010, 3), "");
  EXPECT_EQ(Ready(), V{"tw-1010-a-2 @1010 a=2 b=3"});
}

TEST_F(AssemblerTest, TimeTieGoesToTheOlderGroup) {
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(0, M(0, 1020, 1), "");
  assembler_->Add(0, M(0, 1000, 2), "");
  assembler_->Add(1, M(1, 1010, 3), "");  // 10 from each
  EXPECT_EQ(Ready(), V{"tw-1010-b-3 @1010 a=1 b=3"});
}

TEST_F(AssemblerTest, TimeGroupTimeIsTheSmallestMemberTime) {
  Make(Time(milliseconds(50)), {"a", "b", "c"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(1, M(1, 980, 2), "");
  assembler_->Add(2, M(2, 1020, 3), "");
  EXPECT_EQ(Ready(), V{"tw-980-b-2 @980 a=1 b=2 c=3"});
}

TEST_F(AssemblerTest, TimeGroupIdDependsOnTheMembersNotOnTheirArrivalOrder) {
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(1, M(1, 1000, 2), "");
  auto first = Ready();
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(1, M(1, 1000, 2), "");
  assembler_->Add(0, M(0, 1000, 1), "");
  EXPECT_EQ(Ready(), first);  // equal times: the first input's member anchors the id
  EXPECT_EQ(first, V{"tw-1000-a-1 @1000 a=1 b=2"});
}

TEST_F(AssemblerTest, TimeCollectAttachesSamplesWithinTheWindowOldestFirstBoundsIncluded) {
  JoinOptions o = Time(milliseconds(50));
  o.collect = {{"imu", milliseconds(20)}};
  Make(o, {"cam", "imu"});
  for (int64_t t : {975, 980, 1015, 990, 1000, 1020, 1021}) {
    assembler_->Add(1, M(1, t, t), "");
  }
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Advance(EventTime(1020));  // settle: the largest collect window
  EXPECT_EQ(Ready(), V{"tw-1000-cam-1 @1000 cam=1 imu=[980,990,1000,1015,1020]"});
}

TEST_F(AssemblerTest, TimeCollectSampleGoesToOneGroupAtMost) {
  JoinOptions o = Time(milliseconds(5));
  o.collect = {{"imu", milliseconds(30)}};
  Make(o, {"cam", "imu"});
  assembler_->Add(1, M(1, 1010, 50), "");
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(0, M(0, 1020, 2), "");
  assembler_->Advance(EventTime(1100));
  EXPECT_EQ(Ready(), (V{"tw-1000-cam-1 @1000 cam=1 imu=[50]", "tw-1020-cam-2 @1020 cam=2 imu=-"}));
}

TEST_F(AssemblerTest, TimeSettleHoldsACompleteGroupForTheLargestCollectWindow) {
  JoinOptions o = Time(milliseconds(50));
  o.collect = {{"imu", milliseconds(20)}, {"gps", milliseconds(100)}};
  Make(o, {"cam", "imu", "gps"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Advance(EventTime(1099));
  EXPECT_EQ(Ready(), V{});                // complete, but gps samples up to 1100 may come
  assembler_->Add(2, M(2, 1100, 9), "");  // a trailing sample, still claimed
  assembler_->Advance(EventTime(1100));
  EXPECT_EQ(Ready(), V{"tw-1000-cam-1 @1000 cam=1 imu=- gps=[9]"});
}

TEST_F(AssemblerTest, TimeWithoutCollectParentsEmitsACompleteGroupAtOnce) {
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(1, M(1, 1000, 2), "");
  EXPECT_EQ(Ready().size(), 1u);  // no Advance needed: nothing to settle
}

TEST_F(AssemblerTest, TimeQuorumEmitsAtTimeoutWithTheMissingParentNull) {
  JoinOptions o = Time(milliseconds(50), milliseconds(500));
  o.quorum = 2;
  Make(o, {"a", "b", "c"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(2, M(2, 1010, 2), "");
  assembler_->Advance(EventTime(1499));
  EXPECT_EQ(Ready(), V{});
  assembler_->Advance(EventTime(1500));
  EXPECT_EQ(Ready(), V{"tw-1000-a-1 @1000 a=1 b=- c=2"});
  EXPECT_TRUE(resolver_.log.empty());
}

TEST_F(AssemblerTest, TimeBelowQuorumAtTimeoutIsEvictedByTheMissingPolicy) {
  JoinOptions o = Time(milliseconds(50), milliseconds(500));
  o.quorum = 2;
  o.missing = MissingPolicy::kError;
  Make(o, {"a", "b", "c"});
  assembler_->Add(1, M(1, 1000, 1), "");
  assembler_->Advance(EventTime(1500));
  EXPECT_EQ(Ready(), V{});
  EXPECT_EQ(resolver_.log, V{"nak 1:1"});
  EXPECT_NE(resolver_.reasons[0].find("below quorum 2"), std::string::npos) << resolver_.reasons[0];
  EXPECT_NE(resolver_.reasons[0].find("missing [a, c]"), std::string::npos) << resolver_.reasons[0];
}

TEST_F(AssemblerTest, TimeQuorumDefaultsToEverySynchronizedParent) {
  JoinOptions o = Time(milliseconds(50), milliseconds(100));
  o.collect = {{"imu", milliseconds(10)}};
  Make(o, {"a", "b", "imu"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(2, M(2, 1000, 2), "");
  assembler_->Advance(EventTime(1100));
  EXPECT_EQ(Ready(), V{});
  EXPECT_EQ(resolver_.log, V{"drop 0:1"});
}

TEST_F(AssemblerTest, TimeCollectBufferBeyondItsCapDropsTheOldestSample) {
  JoinOptions o = Time(milliseconds(50));
  o.collect = {{"imu", milliseconds(10)}};
  o.collect_cap = 3;
  Make(o, {"a", "imu"});
  for (int64_t t : {1000, 1001, 1002, 999}) assembler_->Add(1, M(1, t, t), "");
  EXPECT_EQ(resolver_.log, V{"release 1:999"});  // the oldest in time, acknowledged
}

TEST_F(AssemblerTest, TimeUnclaimedSamplesAreReleasedOnceNoGroupCanClaimThem) {
  JoinOptions o = Time(milliseconds(50), milliseconds(100));
  o.collect = {{"imu", milliseconds(10)}};
  Make(o, {"a", "imu"});
  assembler_->Add(1, M(1, 1000, 1), "");
  // Claimable by groups from 990 to 1010; groups older than clock - timeout - settle time out.
  assembler_->Advance(EventTime(1000 + 10 + 110));
  EXPECT_TRUE(resolver_.log.empty());
  assembler_->Advance(EventTime(1000 + 10 + 111));
  EXPECT_EQ(resolver_.log, V{"release 1:1"});
  EXPECT_FALSE(assembler_->HasPendingFrom(1));
}

TEST_F(AssemblerTest, TimeRedeliverySupersedesTheBufferedCopy) {
  Make(Time(milliseconds(50)), {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1, 10), "");
  assembler_->Add(0, M(0, 1000, 1, 11), "");
  EXPECT_EQ(resolver_.log, V{"term 0:1#10"});
  EXPECT_EQ(assembler_->pending_groups(), 1u);  // not a second group
  assembler_->Add(1, M(1, 1000, 2), "");
  auto g = assembler_->PopReady();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->members[0]->delivery.position, SourcePosition(11));
}

TEST_F(AssemblerTest, TimeMaxPendingEvictsTheOldestGroupAsDrop) {
  JoinOptions o = Time(milliseconds(5));
  o.max_pending = 2;
  Make(o, {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Add(0, M(0, 2000, 2), "");
  assembler_->Add(0, M(0, 3000, 3), "");
  EXPECT_EQ(resolver_.log, V{"drop 0:1"});
}

TEST_F(AssemblerTest, TimeInputThatEndedTimesOutGroupsStillMissingIt) {
  JoinOptions o = Time(milliseconds(50), milliseconds(10'000));
  o.quorum = 1;
  Make(o, {"a", "b"});
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->InputEnded(1);
  EXPECT_EQ(Ready(), V{"tw-1000-a-1 @1000 a=1 b=-"});  // at quorum: emitted now, not at timeout
}

TEST_F(AssemblerTest, EndOfInputDrainKeepsTheParentPendingWhileAStagedGroupHoldsItsData) {
  JoinOptions o = Time(milliseconds(50), milliseconds(500));
  o.quorum = 1;
  Make(o, {"a", "b"});
  assembler_->Add(1, M(1, 1000, 1), "");
  assembler_->Advance(EventTime::Max());  // the drain stages the group for quorum emission
  // The staged group still holds b's data: b is not finished until it has been emitted.
  EXPECT_TRUE(assembler_->HasPendingFrom(1));
  EXPECT_FALSE(assembler_->HasPendingFrom(0));
  EXPECT_EQ(Ready(), V{"tw-1000-b-1 @1000 a=- b=1"});
  EXPECT_FALSE(assembler_->HasPendingFrom(1));
}

TEST_F(AssemblerTest, EndOfInputSettlesCompleteGroupsAndReleasesSamples) {
  JoinOptions o = Time(milliseconds(50));
  o.collect = {{"imu", milliseconds(1000)}};
  Make(o, {"a", "imu"});
  assembler_->Add(1, M(1, 500, 7), "");
  assembler_->Add(1, M(1, 9000, 8), "");
  assembler_->Add(0, M(0, 1000, 1), "");
  assembler_->Advance(EventTime::Max());
  EXPECT_EQ(Ready(), V{"tw-1000-a-1 @1000 a=1 imu=[7]"});
  EXPECT_EQ(resolver_.log, V{"release 1:8"});
}

// --- definition errors -------------------------------------------------------------------------

TEST(JoinValidate, RefusesWhatCannotWorkNamingTheOption) {
  auto error = [](JoinOptions o, std::vector<std::string> inputs) {
    return Validate(o, inputs).message();
  };
  JoinOptions time = Time(milliseconds(10));
  EXPECT_NE(error(Trace(), {"a"}).find("at least two parents"), std::string::npos);
  EXPECT_NE(error(Trace(), {"a", "a"}).find("two parents are named 'a'"), std::string::npos);
  EXPECT_NE(error(Trace(), {"a", "seq"}).find("'seq'"), std::string::npos);
  JoinOptions unknown = time;
  unknown.collect = {{"imu", milliseconds(5)}};
  EXPECT_NE(error(unknown, {"a", "b"}).find("collect parent 'imu' is not a parent"),
            std::string::npos);
  JoinOptions all_collected = time;
  all_collected.collect = {{"a", milliseconds(5)}, {"b", milliseconds(5)}};
  EXPECT_NE(error(all_collected, {"a", "b"}).find("at least one parent must be synchronized"),
            std::string::npos);
  JoinOptions quorum = time;
  quorum.quorum = 3;
  quorum.collect = {{"c", milliseconds(5)}};
  EXPECT_NE(error(quorum, {"a", "b", "c"}).find("quorum 3 exceeds the 2 synchronized parents"),
            std::string::npos);
  EXPECT_NE(error(Time(milliseconds(0)), {"a", "b"}).find("tolerance_ms > 0"), std::string::npos);
  JoinOptions trace_with_time = Trace();
  trace_with_time.quorum = 1;
  EXPECT_NE(error(trace_with_time, {"a", "b"}).find("belong to time mode"), std::string::npos);
  JoinOptions pending = Trace();
  pending.max_pending = 0;
  EXPECT_NE(error(pending, {"a", "b"}).find("max_pending"), std::string::npos);
  EXPECT_TRUE(Validate(time, {"a", "b"}).ok());
}

}  // namespace
}  // namespace weir::join
