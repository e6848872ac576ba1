#include "state/node_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace weir::state {
namespace {

TEST(NodeMap, MatchesAStdMapOverRandomInsertsLookupsAndErases) {
  std::mt19937 rng(5);
  NodeMap<int> map;
  std::map<std::string, int> model;
  std::map<std::string, NodeMap<int>::Node*> nodes;  // nodes never move while they live
  for (int step = 0; step < 200000; ++step) {
    std::string key = "k" + std::to_string(rng() % 3000);
    switch (rng() % 4) {
      case 0:
      case 1:
        if (!model.count(key)) {
          nodes[key] = map.emplace(key, step);
          model[key] = step;
        }
        break;
      case 2:
        if (model.count(key)) {
          ASSERT_EQ(map.find(key), nodes[key]);
          map.erase(nodes[key]);
          nodes.erase(key);
          model.erase(key);
        }
        break;
      default: {
        auto* found = map.find(key);
        ASSERT_EQ(found != nullptr, model.count(key) == 1) << key;
        if (found != nullptr) {
          EXPECT_EQ(found->second, model[key]);
        }
      }
    }
    ASSERT_EQ(map.size(), model.size());
  }
  for (const auto& [key, value] : model) {
    ASSERT_NE(map.find(key), nullptr);
    EXPECT_EQ(map.find(key)->second, value);
    EXPECT_EQ(map.find(key), nodes[key]);
  }
}

TEST(NodeMap, EraseIfRemovesExactlyTheMatchingNodes) {
  NodeMap<int> map;
  for (int i = 0; i < 1000; ++i) map.emplace("k" + std::to_string(i), i);
  map.erase_if([](const NodeMap<int>::Node& n) { return n.second % 3 == 0; });
  EXPECT_EQ(map.size(), 666u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(map.find("k" + std::to_string(i)) != nullptr, i % 3 != 0) << i;
  }
}

}  // namespace
}  // namespace weir::state
