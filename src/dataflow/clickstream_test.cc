#include "dataflow/clickstream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "log/log.h"

namespace weir::dataflow {
namespace {

GeneratorOptions Options(int32_t partitions) {
  GeneratorOptions o;
  o.partitions = partitions;
  o.users = 500;
  o.events = 20000;
  o.events_per_second = 100;
  return o;
}

TEST(Clickstream, EveryEventIsAPureFunctionOfItsPosition) {
  ClickstreamModel a(Options(3)), b(Options(3));
  for (int64_t i : {0, 1, 17, 5000}) {
    EXPECT_EQ(a.EventAt(PartitionId(1), i), b.EventAt(PartitionId(1), i));
  }
  EXPECT_NE(a.EventAt(PartitionId(1), 3), a.EventAt(PartitionId(1), 4));
}

TEST(Clickstream, PartitionsHoldOnlyTheirOwnKeysByKafkaHash) {
  ClickstreamModel m(Options(4));
  for (int32_t p = 0; p < 4; ++p) {
    for (int64_t i = 0; i < 500; ++i) {
      Record r = m.EventAt(PartitionId(p), i);
      EXPECT_EQ(log::KafkaPartition(r.key.bytes(), 4), PartitionId(p));
      EXPECT_EQ(r.value.Find("user")->as_string(), r.key.bytes());
    }
  }
}

TEST(Clickstream, EventCountsSplitAcrossPartitions) {
  GeneratorOptions o = Options(3);
  o.events = 10;
  ClickstreamModel m(o);
  EXPECT_EQ(m.EventsIn(PartitionId(0)) + m.EventsIn(PartitionId(1)) + m.EventsIn(PartitionId(2)),
            10);
  EXPECT_EQ(m.EventsIn(PartitionId(0)), 4);
}

TEST(Clickstream, UsersHaveSessionsSeparatedByQuietSpells) {
  GeneratorOptions o = Options(1);
  o.events_per_second = 20;  // 40000 events: 33 minutes of event time
  ClickstreamModel m(o);
  std::map<std::string, std::vector<int64_t>> times;
  for (int64_t i = 0; i < 40000; ++i) {
    Record r = m.EventAt(PartitionId(0), i);
    times[std::string(r.key.bytes())].push_back(r.timestamp.value());
  }
  // Users must be seen, go quiet for over ten minutes, and come back.
  int users_with_gaps = 0;
  for (auto& [user, ts] : times) {
    std::sort(ts.begin(), ts.end());
    for (size_t i = 1; i < ts.size(); ++i) {
      if (ts[i] - ts[i - 1] > 600'000) {
        ++users_with_gaps;
        break;
      }
    }
  }
  EXPECT_GT(users_with_gaps, 10);
}

TEST(Clickstream, UniformAccessReachesEveryUser) {
  GeneratorOptions o = Options(3);
  o.active_fraction = 1;
  ClickstreamModel m(o);
  std::set<std::string> users;
  for (int32_t p = 0; p < 3; ++p) {
    for (int64_t i = 0; i < 6000; ++i) users.emplace(m.EventAt(PartitionId(p), i).key.bytes());
  }
  EXPECT_EQ(users.size(), 500u);
}

TEST(Clickstream, PurchasesHaveAmountsAndOthersDoNot) {
  ClickstreamModel m(Options(1));
  std::set<std::string> actions;
  for (int64_t i = 0; i < 2000; ++i) {
    Record r = m.EventAt(PartitionId(0), i);
    const std::string action(r.value.Find("action")->as_string());
    actions.insert(action);
    EXPECT_EQ(r.value.Find("amount") != nullptr, action == "purchase");
    EXPECT_EQ(r.value.Find("ts")->as_int(), r.timestamp.value());
  }
  EXPECT_EQ(actions, (std::set<std::string>{"add_to_cart", "click", "purchase", "view"}));
}

}  // namespace
}  // namespace weir::dataflow
