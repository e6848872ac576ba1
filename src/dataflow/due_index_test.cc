#include "dataflow/due_index.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace weir::dataflow {
namespace {

using ModelEntry = std::tuple<int64_t, std::string, int64_t>;  // end, key, start

// Keys whose order the 16-byte heads alone cannot tell: equal heads and different tails,
// lengths that differ only by trailing zero bytes, bytes above 0x7f (ordered unsigned); keys
// kept inline in the entry (up to 31 bytes) and on the heap, with the same first 31 bytes.
std::vector<std::string> Keys() {
  const std::string head(16, 'h');
  return {"",
          "a",
          "b",
          std::string("a\0", 2),
          std::string("a\0\0", 3),
          "\x80",
          "\xff\xfe",
          head,
          head + "a",
          head + "b",
          head + std::string("\0", 1),
          head + "\x90 tail",
          std::string(15, 'h') + "\x01",
          std::string(31, 'k'),
          std::string(31, 'k') + "a",
          std::string(31, 'k') + std::string("\0", 1),
          std::string(40, 'k')};
}

// The index against a set of (end, key, start): adds and takes interleaved at random, with
// more ends in play at once than the index keeps at hand, entries added twice, and entries
// added to the end being taken.
// Odd seeds slot ends by the second and spread them over the milliseconds, as sessions do.
TEST(DueIndex, TakesEntriesInTheOrderOfASetOfThem) {
  const std::vector<std::string> keys = Keys();
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    // Up to 600 ends: more slots than the index keeps at hand, so a slot gets a second bucket.
    const int64_t ends = 1 + static_cast<int64_t>(rng() % (seed % 4 < 2 ? 24 : 600));
    const bool spread = seed % 2 == 1;
    DueIndex index(spread ? DueIndex::kSpreadSlotBits : 0);
    std::set<ModelEntry> model;
    for (int step = 0; step < 400; ++step) {
      if (rng() % 3 != 0 || model.empty()) {
        const int64_t end = static_cast<int64_t>(rng() % ends) * 1000 +
                            (spread ? static_cast<int64_t>(rng() % 1000) - 500 : 0);
        const ModelEntry e{end, keys[rng() % keys.size()], static_cast<int64_t>(rng() % 3)};
        index.Add({std::get<0>(e), std::get<1>(e), std::get<2>(e)});
        model.insert(e);
        continue;
      }
      ASSERT_FALSE(index.empty());
      ASSERT_EQ(index.first_end(), std::get<0>(*model.begin())) << "seed " << seed;
      const IndexEntry taken = index.TakeFirst();
      ASSERT_EQ(ModelEntry(taken.end, std::string(taken.key.view()), taken.start), *model.begin())
          << "seed " << seed << " step " << step;
      model.erase(model.begin());
    }
    while (!model.empty()) {
      const IndexEntry taken = index.TakeFirst();
      ASSERT_EQ(ModelEntry(taken.end, std::string(taken.key.view()), taken.start), *model.begin())
          << "seed " << seed;
      model.erase(model.begin());
    }
    EXPECT_TRUE(index.empty());
  }
}

// Windows made as event time moves on: every key's window of each end, ends rising, each end
// taken whole once it is due, while later ones fill.
TEST(DueIndex, HandsOutEachEndKeyByKeyWhileLaterEndsFill) {
  for (int slot_bits : {0, DueIndex::kSpreadSlotBits}) {
    DueIndex index(slot_bits);
    std::set<ModelEntry> model;
    const std::vector<std::string> keys = Keys();
    int64_t taken_count = 0, upcoming_seen = 0;
    for (int64_t end = 0; end < 50; ++end) {
      for (const std::string& key : keys) {
        for (int64_t step = 0; step < 5; ++step) {  // a hopping window's five ends
          index.Add({end + step, key, end});
          model.insert({end + step, key, end});
        }
      }
      while (!index.empty() && index.first_end() <= end) {
        // What a sweep prefetches: the entries it will take next, as they will come.
        for (size_t n : {0, 1, 4, 8, 12}) {
          const IndexEntry* upcoming = index.Upcoming(n);
          if (upcoming == nullptr) continue;
          ASSERT_LT(n, model.size());
          ASSERT_EQ(ModelEntry(upcoming->end, std::string(upcoming->key.view()), upcoming->start),
                    *std::next(model.begin(), static_cast<std::ptrdiff_t>(n)));
          ++upcoming_seen;
        }
        const IndexEntry taken = index.TakeFirst();
        ASSERT_EQ(ModelEntry(taken.end, std::string(taken.key.view()), taken.start),
                  *model.begin());
        model.erase(model.begin());
        ++taken_count;
      }
    }
    EXPECT_EQ(taken_count + static_cast<int64_t>(model.size()),
              50 * static_cast<int64_t>(Keys().size()) * 5);
    EXPECT_GT(upcoming_seen, taken_count);  // announced within a sorted end, not only after it
  }
}

// Sessions and sliding windows add entries to the slot being taken from (a window a little
// later than the close bound, a session put back with the end it grew to): they are handed out
// in order, and the slot is not sorted again for each (an entry is moved by a sort or merge a
// few times, not once per take).
TEST(DueIndex, EntriesAddedToTheSlotBeingTakenFromNeitherReorderNorResortIt) {
  const std::vector<std::string> keys = Keys();
  DueIndex index(DueIndex::kSpreadSlotBits);
  std::set<ModelEntry> model;
  int64_t added = 0;
  for (int64_t now = 0; now < 3000; ++now) {
    for (int64_t j = 0; j < 5; ++j) {
      const ModelEntry e{now + 1 + j * 97 % 300, keys[(now + j) % keys.size()], now};
      index.Add({std::get<0>(e), std::get<1>(e), std::get<2>(e)});
      model.insert(e);
      ++added;
    }
    while (!index.empty() && index.first_end() <= now - 200) {
      ASSERT_EQ(index.first_end(), std::get<0>(*model.begin()));
      if (const IndexEntry* upcoming = index.Upcoming(3)) {
        ASSERT_EQ(ModelEntry(upcoming->end, std::string(upcoming->key.view()), upcoming->start),
                  *std::next(model.begin(), 3));
      }
      const IndexEntry taken = index.TakeFirst();
      ASSERT_EQ(ModelEntry(taken.end, std::string(taken.key.view()), taken.start), *model.begin())
          << "now " << now;
      model.erase(model.begin());
    }
  }
  EXPECT_LE(index.sorted_entries(), 8 * added);
}

}  // namespace
}  // namespace weir::dataflow
