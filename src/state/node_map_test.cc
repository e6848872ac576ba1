#include "state/node_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

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

TEST(NodeMap, PrefetchContentsHandsTheKeysNodeToTouchAndChangesNothing) {
  NodeMap<int> map;
  // Long keys: their bytes are outside the node, which the hint touches too.
  auto key = [](int i) { return "a key longer than a short string " + std::to_string(i); };
  for (int i = 0; i < 5000; ++i) map.emplace(key(i), i);
  for (int i = 0; i < 6000; ++i) {
    const NodeMap<int>::Node* touched = nullptr;
    int touches = 0;
    map.PrefetchContents(NodeMap<int>::Hash(key(i)), [&](const NodeMap<int>::Node& node) {
      touched = &node;
      ++touches;
    });
    map.PrefetchSlot(NodeMap<int>::Hash(key(i)));
    map.PrefetchNode(NodeMap<int>::Hash(key(i)));
    if (i < 5000) {
      ASSERT_EQ(touches, 1) << i;
      ASSERT_EQ(touched, map.find(key(i))) << i;
    } else {
      ASSERT_EQ(touches, 0) << i;  // absent: nothing to touch (a 64-bit hash collision aside)
    }
  }
  ASSERT_EQ(map.size(), 5000u);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(map.find(key(i))->second, i);
}

// The table masks the hash's low bits: keys that differ anywhere (state keys of numbered users,
// keys differing in one byte at any position, of every length up to 40) must spread over them.
TEST(NodeMap, HashSpreadsKeysThatDifferInAnyByteOverTheLowBits) {
  std::vector<std::string> keys;
  for (int user = 0; user < 200000; ++user) {
    const std::string name = "user-" + std::to_string(user);
    keys.push_back(std::string("\0\0\0", 3) + static_cast<char>(name.size()) + name);
  }
  for (size_t length = 1; length <= 40; ++length) {
    for (size_t at = 0; at < length; ++at) {
      for (int byte = 1; byte < 256; byte += 7) {
        std::string key(length, 'k');
        key[at] = static_cast<char>(byte);
        keys.push_back(std::move(key));
      }
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<uint64_t> hashes;
  for (const std::string& key : keys) hashes.push_back(NodeMap<int>::Hash(key));
  std::sort(hashes.begin(), hashes.end());
  EXPECT_EQ(std::adjacent_find(hashes.begin(), hashes.end()), hashes.end()) << "a collision";
  // About 1.7 keys per bucket: a fair hash's fullest bucket holds about 10.
  constexpr uint64_t kBuckets = 1 << 18;
  std::vector<int> per_bucket(kBuckets);
  for (uint64_t h : hashes) ++per_bucket[h & (kBuckets - 1)];
  EXPECT_LE(*std::max_element(per_bucket.begin(), per_bucket.end()), 16);
}

}  // namespace
}  // namespace weir::state
