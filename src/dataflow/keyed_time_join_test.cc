#include "dataflow/keyed_time_join.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace weir::dataflow {
namespace {

// What a side should hold: entries in time order, ties in the order they were inserted.
struct ModelEntry {
  int64_t ts;
  int64_t id;
  bool flagged = false;
};

// An entry's value: its id, and a string whose length varies with it (values of many sizes, so
// that an entry's bytes are found by its index, not by a fixed stride).
Value EntryValue(int64_t id) {
  return Value::MakeObject({{"id", id}, {"pad", std::string(static_cast<size_t>(id % 23), 'x')}});
}

void ExpectSideIs(const JoinSide& side, const std::vector<ModelEntry>& model, bool flags) {
  ASSERT_EQ(side.size(), model.size());
  for (size_t i = 0; i < model.size(); ++i) {
    EXPECT_EQ(side.time(i), model[i].ts) << "entry " << i;
    std::string_view bytes = side.encoded(i);
    Value value;
    ASSERT_TRUE(value.AssignBinary(bytes).ok()) << "entry " << i;
    EXPECT_TRUE(bytes.empty()) << "entry " << i << ": bytes after its value";
    EXPECT_EQ(value, EntryValue(model[i].id)) << "entry " << i;
    if (flags) {
      EXPECT_EQ(side.flagged(i), model[i].flagged) << "entry " << i;
    }
  }
}

// Random inserts (many ties, times below zero, values of many sizes), flags, searches and
// expiries on both sides of a key's state, checked after each step against a vector kept in order
// by hand; the state passes CheckEntries throughout.
TEST(JoinSide, KeepsTimeOrderAndArrivalOrderAmongTiesThroughInsertsFlagsAndExpiry) {
  std::mt19937_64 random(14);
  for (const bool left_flags : {true, false}) {
    Value stored = JoinKeyState::Empty(KeySerde::kString);
    ASSERT_TRUE(JoinKeyState::Check(stored, left_flags).ok());
    JoinKeyState state(stored, left_flags);
    std::vector<ModelEntry> model[2];
    int64_t next_id = 0;
    std::string scratch;
    for (int step = 0; step < 4000; ++step) {
      const int input = static_cast<int>(random() % 2);
      const bool flags = input == kLeftInput && left_flags;
      JoinSide side = state.side(input);
      std::vector<ModelEntry>& entries = model[input];
      const int64_t t = static_cast<int64_t>(random() % 40) - 10;
      switch (random() % 8) {
        case 0: {  // expire everything before t
          const size_t n = side.FirstAtOrAfter(t);
          side.EraseFirst(n);
          entries.erase(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(n));
          break;
        }
        case 1:
          if (flags && !entries.empty()) {
            const size_t i = random() % entries.size();
            side.Flag(i);
            entries[i].flagged = true;
          }
          break;
        default: {
          const size_t at = side.Insert(t, EntryValue(next_id), scratch);
          auto after = std::find_if(entries.begin(), entries.end(),
                                    [t](const ModelEntry& e) { return e.ts > t; });
          EXPECT_EQ(at, static_cast<size_t>(after - entries.begin()));
          entries.insert(after, {t, next_id++});
        }
      }
      const int64_t probe = static_cast<int64_t>(random() % 44) - 12;
      auto count_if = [&](auto before) {
        return static_cast<size_t>(std::count_if(entries.begin(), entries.end(), before));
      };
      EXPECT_EQ(side.FirstAtOrAfter(probe),
                count_if([probe](const ModelEntry& e) { return e.ts < probe; }));
      EXPECT_EQ(side.FirstAfter(probe),
                count_if([probe](const ModelEntry& e) { return e.ts <= probe; }));
      ExpectSideIs(side, entries, flags);
      ASSERT_TRUE(JoinKeyState::CheckEntries(stored, left_flags).ok()) << "step " << step;
      EXPECT_EQ(state.empty(), model[0].empty() && model[1].empty());
      if (HasFailure()) return;
    }
  }
}

// A stored state that passes Check (its shape, its last ends) but whose entries are wrong is
// refused by CheckEntries, saying which entry and why.
TEST(JoinKeyState, CheckEntriesRefusesEntriesOutOfOrderOrThatDoNotDecode) {
  Value good = JoinKeyState::Empty(KeySerde::kString);
  {
    JoinKeyState state(good, true);
    std::string scratch;
    for (int64_t id : {1, 2, 3}) state.side(kRightInput).Insert(10 * id, EntryValue(id), scratch);
  }
  ASSERT_TRUE(JoinKeyState::CheckEntries(good, true).ok());
  constexpr size_t kRightIndex = 5, kRightValues = 6;
  auto write_word = [](Value& stored, size_t entry, size_t word, int64_t w) {
    std::memcpy(stored.as_array()[kRightIndex].mutable_string().data() + entry * 16 + word * 8, &w,
                8);
  };
  auto read_end = [](const Value& stored, size_t entry) {
    int64_t end;
    std::memcpy(&end, stored.as_array()[kRightIndex].as_string().data() + entry * 16 + 8, 8);
    return end;
  };
  struct Case {
    std::string name;
    std::function<void(Value&)> change;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a time before the one ahead of it", [&](Value& v) { write_word(v, 1, 0, 5); },
       "right entry 1 is out of time order"},
      {"an end before the one ahead of it, within the values",
       [&](Value& v) { write_word(v, 1, 1, read_end(v, 0) - 1); },
       "right entry 1 ends outside its side's values"},
      {"an end past the values", [&](Value& v) { write_word(v, 0, 1, read_end(v, 2) + 1); },
       "right entry 0 ends outside its side's values"},
      {"a value cut short, the next one longer",
       [&](Value& v) { write_word(v, 0, 1, read_end(v, 0) - 1); },
       "right entry 0 is not one value in the binary form"},
      {"a value's tag byte unknown",
       [&](Value& v) {
         v.as_array()[kRightValues].mutable_string()[static_cast<size_t>(read_end(v, 0))] = '\x7f';
       },
       "right entry 1 is not one value in the binary form"}};
  for (const Case& c : cases) {
    Value broken = good;
    c.change(broken);
    EXPECT_TRUE(JoinKeyState::Check(broken, true).ok()) << c.name << ": the shape is right";
    Status checked = JoinKeyState::CheckEntries(broken, true);
    EXPECT_NE(checked.message().find(c.error), std::string::npos)
        << c.name << ": " << checked.ToString();
  }
}

TEST(JoinKeyState, AnEmptyStateKeepsItsSerde) {
  Value stored = JoinKeyState::Empty(KeySerde::kInt);
  ASSERT_TRUE(JoinKeyState::Check(stored, true).ok());
  JoinKeyState state(stored, true);
  EXPECT_EQ(state.serde(), KeySerde::kInt);
  EXPECT_TRUE(state.empty());
}

}  // namespace
}  // namespace weir::dataflow
