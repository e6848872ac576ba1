#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "testing/random_value.h"
#include "weir/aggregator.h"
#include "window/aggregations.h"
#include "window/key_windows.h"

namespace weir::window {
namespace {

using namespace std::chrono_literals;

const WindowStateLayout kTumbling(WindowDefinition::Tumbling(10s), 2);
const WindowStateLayout kSliding(WindowDefinition::Sliding(10s), 1);
const WindowStateLayout kCount(WindowDefinition::CountTumbling(5), 1);

bool Mentions(const Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

// A window's accumulators as Values (KeyState::LoadAccumulators), put back as they were.
Value::Array Accumulators(KeyState& key, size_t i, const WindowStateLayout& layout) {
  Value::Array accs(layout.aggregations());
  key.LoadAccumulators(i, accs);
  Value::Array copy = accs;
  key.StoreAccumulators(i, accs);
  return copy;
}

void Store(KeyState& key, size_t i, Value::Array accs) { key.StoreAccumulators(i, accs); }

// The state as a checkpoint writes and a restart reads it.
Value ThroughTheBinaryForm(const Value& state) {
  std::string bytes;
  state.AppendBinary(bytes);
  std::string_view in = bytes;
  auto read = Value::ReadBinary(in);
  EXPECT_TRUE(read.ok() && in.empty());
  return read.ok() ? std::move(*read) : Value();
}

TEST(KeyState, ANewKeyHasRoomForTheWindowsItHoldsAtOnce) {
  // 10 s windows every 2 s with 2 s of grace: 6 hold an event time or wait out their grace, the
  // next one opens before the oldest closes, and an event opens its newest before the windows
  // its watermark closes are expired.
  const WindowStateLayout hopping(WindowDefinition::Hopping(10s, 2s).Grace(2s), 2);
  EXPECT_EQ(hopping.expected_windows(), 8u);
  EXPECT_EQ(kTumbling.expected_windows(), 3u);  // no grace: the current one, the next, the newest
  EXPECT_EQ(WindowStateLayout(WindowDefinition::Hopping(60s, 1s), 1).expected_windows(), 8u);
  // A grace longer than the size counts as the size.
  EXPECT_EQ(WindowStateLayout(WindowDefinition::Tumbling(60s).Grace(3600s), 1).expected_windows(),
            4u);
  EXPECT_EQ(WindowStateLayout(WindowDefinition::Session(30s), 1).expected_windows(), 1u);
  EXPECT_EQ(kCount.expected_windows(), 1u);
  EXPECT_EQ(kSliding.expected_windows(), 1u);

  Value state;
  KeyState key = KeyState::Create(state, hopping, KeySerde::kInt);
  const char* bytes = state.as_string().data();
  for (size_t i = 0; i < hopping.expected_windows(); ++i) {
    key.Insert(i, static_cast<int64_t>(i) * 2'000, static_cast<int64_t>(i) * 2'000 + 10'000);
    Store(key, i, {Value(int64_t{1}), Value(int64_t{2})});
  }
  EXPECT_EQ(state.as_string().data(), bytes) << "the state grew window by window";
  EXPECT_EQ(key.windows(), hopping.expected_windows());

  // A sliding window's state is an array (the packed string, the kept events): the string keeps
  // its room there too.
  Value sliding_state;
  KeyState sliding = KeyState::Create(sliding_state, kSliding, KeySerde::kInt);
  const char* sliding_bytes = sliding_state.as_array()[0].as_string().data();
  sliding.Insert(0, 0, 10'000);
  EXPECT_EQ(sliding_state.as_array()[0].as_string().data(), sliding_bytes);
}

TEST(KeyState, AStoredKeyOpensWithItsHeaderAndWindows) {
  Value state;
  KeyState created = KeyState::Create(state, kTumbling, KeySerde::kString);
  created.set_watermark(Watermark(42));
  created.set_bounds({EventTime(7), EventTime(3)});
  created.Insert(0, 0, 10);
  Store(created, 0, {Value(), Value(int64_t{5})});
  created.Insert(1, 10, 20);
  created.set_fired(1);
  Store(created, 1, {Value(2.5), Value(true)});
  EXPECT_TRUE(state.is_string());  // nothing boxed: the packed string alone
  Value stored = ThroughTheBinaryForm(state);
  auto opened = KeyState::Open(stored, kTumbling);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->serde(), KeySerde::kString);
  EXPECT_EQ(opened->watermark(), Watermark(42));
  EXPECT_EQ(opened->bounds().close, EventTime(7));
  EXPECT_EQ(opened->bounds().late, EventTime(3));
  ASSERT_EQ(opened->windows(), 2u);
  EXPECT_EQ(opened->end(0), 10);
  EXPECT_FALSE(opened->fired(0));
  EXPECT_EQ(Accumulators(*opened, 0, kTumbling), (Value::Array{Value(), Value(int64_t{5})}));
  EXPECT_EQ(opened->start(1), 10);
  EXPECT_TRUE(opened->fired(1));
  EXPECT_EQ(Accumulators(*opened, 1, kTumbling), (Value::Array{Value(2.5), Value(true)}));
}

TEST(KeyState, CountAndSlidingWindowsKeepTheirOwnNamedState) {
  Value count_state;
  KeyState counted = KeyState::Create(count_state, kCount, KeySerde::kString);
  EXPECT_EQ(counted.next_event_index(), 0);
  counted.set_next_event_index(3);
  counted.Insert(0, 0, 5);
  counted.set_count_fields(0, 2, -4, 9);
  ASSERT_TRUE(KeyState::Open(count_state, kCount).ok());
  EXPECT_EQ(KeyState::Open(count_state, kCount)->next_event_index(), 3);
  EXPECT_EQ(KeyState::Open(count_state, kCount)->min_ts(0), -4);
  EXPECT_EQ(KeyState::Open(count_state, kCount)->max_ts(0), 9);

  Value sliding_state;
  KeyState sliding = KeyState::Create(sliding_state, kSliding, KeySerde::kString);
  EXPECT_TRUE(sliding.empty());
  sliding.kept_events().push_back(Value(Value::Array{Value(int64_t{1}), Value("x")}));
  EXPECT_FALSE(sliding.empty());
  sliding.Insert(0, 0, 10);
  Store(sliding, 0, {Value(Value::Array{Value("boxed")})});
  auto reopened = KeyState::Open(sliding_state, kSliding);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(reopened->kept_events().size(), 1u);
  EXPECT_EQ(Accumulators(*reopened, 0, kSliding)[0], Value(Value::Array{Value("boxed")}));
  // Count windows' state is not sliding windows', nor the reverse.
  EXPECT_FALSE(KeyState::Open(count_state, kSliding).ok());
  EXPECT_FALSE(KeyState::Open(sliding_state, kCount).ok());
}

TEST(KeyState, AnotherFormatVersionIsRefusedNamingIt) {
  Value state;
  KeyState::Create(state, kTumbling, KeySerde::kString);
  state.mutable_string()[0] = static_cast<char>(kWindowStateVersion + 1);
  auto opened = KeyState::Open(state, kTumbling);
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Mentions(opened.status(), "format version 3")) << opened.status().message();
  // Version 1 kept a Value per field: [1, serde, key_watermark, close, late, kind_state, ...].
  Value version_1(Value::Array{Value(int64_t{1}), Value(int64_t{1}), Value(kNoBound),
                               Value(kNoBound), Value(kNoBound), Value()});
  opened = KeyState::Open(version_1, kTumbling);
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Mentions(opened.status(), "format version 1 (this build reads 2"))
      << opened.status().message();
  // The layout before versions: [serde, key_watermark, close, late, extra, windows...].
  Value unversioned(
      Value::Array{Value(int64_t{0}), Value(kNoBound), Value(kNoBound), Value(kNoBound), Value()});
  EXPECT_EQ(KeyState::Open(unversioned, kTumbling).status().code(), StatusCode::kCorruption);
}

TEST(KeyState, WindowsOfAnotherStrideAreRefused) {
  Value state;
  KeyState created = KeyState::Create(state, kCount, KeySerde::kString);
  created.Insert(0, 0, 5);                         // 41 bytes of fields + 1 slot
  auto opened = KeyState::Open(state, kTumbling);  // 17 bytes of fields + 2 slots
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Mentions(opened.status(), "whole number of windows")) << opened.status().message();
}

TEST(KeyState, ASlotOrBoxThatDoesNotFitIsRefusedSayingWhich) {
  Value state;
  KeyState created = KeyState::Create(state, kTumbling, KeySerde::kString);
  created.Insert(0, 0, 10);
  Store(created, 0, {Value(Value::Array{}), Value(int64_t{1})});
  ASSERT_TRUE(state.is_array());  // [packed, box]
  ASSERT_TRUE(KeyState::Open(state, kTumbling).ok());

  Value unboxed = state;
  unboxed.as_array().pop_back();
  EXPECT_TRUE(Mentions(KeyState::Open(unboxed, kTumbling).status(), "1 boxed accumulators with 0"));
  Value unknown_tag = state;
  const size_t second_slot = 34 + 17 + 9;
  unknown_tag.as_array()[0].mutable_string()[second_slot] = 9;
  EXPECT_TRUE(Mentions(KeyState::Open(unknown_tag, kTumbling).status(), "unknown tag 9"));
  Value bad_mark = state;
  bad_mark.as_array()[0].mutable_string()[34 + 16] = 2;
  EXPECT_TRUE(Mentions(KeyState::Open(bad_mark, kTumbling).status(), "fired mark"));
  Value bad_serde = state;
  bad_serde.as_array()[0].mutable_string()[1] = 5;
  EXPECT_TRUE(Mentions(KeyState::Open(bad_serde, kTumbling).status(), "unknown key serde 5"));
  Value truncated = Value(std::string_view("\x02\x01", 2));
  EXPECT_TRUE(Mentions(KeyState::Open(truncated, kTumbling).status(), "truncated header"));
  Value backwards = state;  // a window whose end is not after its start
  std::memcpy(backwards.as_array()[0].mutable_string().data() + 34 + 8, &kNoBound, 8);
  EXPECT_TRUE(Mentions(KeyState::Open(backwards, kTumbling).status(), "does not end after"));

  Value sliding_state;
  KeyState::Create(sliding_state, kSliding, KeySerde::kString);
  for (Value kept :
       {Value::MakeArray({Value::MakeArray({5})}), Value::MakeArray({Value::MakeArray({"5", "x"})}),
        Value::MakeArray({Value::MakeArray({5, "x"}), Value::MakeArray({4, "y"})})}) {
    Value bad_kept = sliding_state;
    bad_kept.as_array()[1] = kept;
    EXPECT_TRUE(Mentions(KeyState::Open(bad_kept, kSliding).status(), "kept events"))
        << kept.ToJson();
  }
  Value count_state;
  KeyState::Create(count_state, kCount, KeySerde::kString).set_next_event_index(-1);
  EXPECT_TRUE(Mentions(KeyState::Open(count_state, kCount).status(), "event index"));
}

// Windows inserted, filled with accumulators of every kind, taken and erased at random, against a
// plain list of the same windows; after every step the state opens again (from its checkpointed
// form) and reads as the list.
TEST(KeyState, AccumulatorsOfEveryKindKeepTheirWindowAsWindowsComeAndGo) {
  std::mt19937_64 rng(29);
  struct ListedWindow {
    int64_t start;
    Value::Array accumulators;
  };
  for (const WindowStateLayout* layout : {&kTumbling, &kSliding}) {
    Value state;
    KeyState::Create(state, *layout, KeySerde::kString);
    std::vector<ListedWindow> listed;
    for (int step = 0; step < 3000; ++step) {
      state = ThroughTheBinaryForm(state);
      auto opened = KeyState::Open(state, *layout);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      KeyState& key = *opened;
      ASSERT_EQ(key.windows(), listed.size());
      for (size_t i = 0; i < listed.size(); ++i) {
        ASSERT_EQ(key.start(i), listed[i].start);
        ASSERT_EQ(Accumulators(key, i, *layout), listed[i].accumulators) << "step " << step;
      }
      const size_t op = rng() % 10;
      if (op < 3 || listed.empty()) {
        const int64_t start = static_cast<int64_t>(rng() % 1000);
        const size_t i = key.LowerBound(start);
        if (i < listed.size() && listed[i].start == start) continue;
        key.Insert(i, start, start + 10);
        listed.insert(listed.begin() + static_cast<std::ptrdiff_t>(i),
                      ListedWindow{start, Value::Array(layout->aggregations())});
      } else if (op < 8) {
        const size_t i = rng() % listed.size();
        Value::Array accs(layout->aggregations());
        for (Value& a : accs) a = testing::RandomValue(rng);
        listed[i].accumulators = accs;
        key.StoreAccumulators(i, accs);
      } else if (op == 8) {
        const size_t i = rng() % listed.size();
        WindowValue taken = key.Take(i);
        EXPECT_EQ(taken.accumulators, listed[i].accumulators);
        key.Erase(i);
        listed.erase(listed.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const size_t first = rng() % listed.size();
        const size_t count = rng() % (listed.size() - first + 1);
        key.Erase(first, count);
        listed.erase(listed.begin() + static_cast<std::ptrdiff_t>(first),
                     listed.begin() + static_cast<std::ptrdiff_t>(first + count));
      }
    }
  }
}

// KeyState::FoldInts against the fold through Values (LoadAccumulators, AddRead,
// StoreAccumulators), in time windows and count windows (whose slots follow more fields): keys of
// three windows that start with accumulators of every kind, and events whose field is an int
// (near the ends of the range too), a double, null or absent, each folded into one of the
// windows. Where FoldInts declines, it must leave the state as it was, and the fold through
// Values then gives the same; the other windows never change.
TEST(KeyState, AnIntFoldInPlaceGivesWhatTheFoldThroughValuesGives) {
  const Aggregations aggregations({{"n", agg::Count()},
                                   {"sum", agg::Sum("x")},
                                   {"min", agg::Min("x")},
                                   {"max", agg::Max("a.x")},
                                   {"count", agg::Count()}},
                                  false);
  ASSERT_TRUE(aggregations.folds_ints());
  std::mt19937_64 rng(31);
  auto random_int = [&]() -> int64_t {
    switch (rng() % 4) {
      case 0:
        return std::numeric_limits<int64_t>::max() - static_cast<int64_t>(rng() % 3);
      case 1:
        return std::numeric_limits<int64_t>::min() + static_cast<int64_t>(rng() % 3);
      default:
        return static_cast<int64_t>(rng() % 21) - 10;
    }
  };
  auto random_input = [&]() -> Value {
    switch (rng() % 8) {
      case 0:
        return Value();
      case 1:
        return Value(static_cast<double>(rng() % 9) / 2 - 2);
      default:
        return Value(random_int());
    }
  };
  constexpr size_t kWindows = 3;
  for (const WindowDefinition& definition :
       {WindowDefinition::Tumbling(10s), WindowDefinition::CountTumbling(5)}) {
    const WindowStateLayout layout(definition, aggregations.size());
    auto fold_through_values = [&](KeyState& key, size_t i, std::span<const Value* const> inputs,
                                   const Value& record) {
      Value::Array accs(aggregations.size());
      key.LoadAccumulators(i, accs);
      aggregations.AddRead(accs, inputs, record, EventTime(1));
      key.StoreAccumulators(i, accs);
    };
    std::vector<const Value*> inputs(aggregations.size());
    int folded = 0, declined = 0;
    for (int episode = 0; episode < 400; ++episode) {
      Value in_place_state, through_values_state;
      KeyState in_place = KeyState::Create(in_place_state, layout, KeySerde::kInt);
      KeyState through_values = KeyState::Create(through_values_state, layout, KeySerde::kInt);
      for (size_t i = 0; i < kWindows; ++i) {
        const int64_t start = static_cast<int64_t>(i) * 10'000;
        in_place.Insert(i, start, start + 10'000);
        through_values.Insert(i, start, start + 10'000);
        if (rng() % 2 == 0) continue;
        // Accumulators of every kind: null, bool, int, double, boxed.
        Value::Array accs(aggregations.size());
        for (Value& a : accs) {
          a = rng() % 2 == 0 ? Value(random_int()) : testing::RandomValue(rng);
        }
        Value::Array copy = accs;
        in_place.StoreAccumulators(i, accs);
        through_values.StoreAccumulators(i, copy);
      }
      for (int event = 0; event < 30; ++event) {
        Value::Object fields;
        if (rng() % 5 != 0) fields.emplace_back("x", random_input());
        if (rng() % 5 != 0) fields.emplace_back("a", Value::MakeObject({{"x", random_input()}}));
        const Value record(std::move(fields));
        const size_t window = rng() % kWindows;
        aggregations.Read(record, inputs);
        const Value before = in_place_state;
        if (in_place.FoldInts(window, aggregations.int_folds(), inputs)) {
          ++folded;
        } else {
          ++declined;
          ASSERT_EQ(in_place_state, before) << "a declined fold changed the state";
          fold_through_values(in_place, window, inputs, record);
        }
        fold_through_values(through_values, window, inputs, record);
        for (size_t i = 0; i < kWindows; ++i) {
          ASSERT_EQ(Accumulators(in_place, i, layout), Accumulators(through_values, i, layout))
              << "episode " << episode << " event " << event << " window " << i << " record "
              << record.ToJson();
        }
      }
    }
    EXPECT_GT(folded, 1000);
    EXPECT_GT(declined, 1000);
  }
}

TEST(KeyState, OnlyCountSumMinAndMaxFoldIntsInPlace) {
  EXPECT_EQ(IntFoldOf(*agg::Count()), IntFold::kCount);
  EXPECT_EQ(IntFoldOf(*agg::Sum("x")), IntFold::kSum);
  EXPECT_EQ(IntFoldOf(*agg::Min("x")), IntFold::kMin);
  EXPECT_EQ(IntFoldOf(*agg::Max("x")), IntFold::kMax);
  const AggregatorPtr keep_first =
      agg::Reduce([](const Value& accumulator, const Value&) { return accumulator; },
                  [](const Value& first) { return first; });
  for (const AggregatorPtr& other :
       {agg::Mean("x"), agg::First("x"), agg::Last("x"), agg::Collect("x"), keep_first}) {
    EXPECT_EQ(IntFoldOf(*other), IntFold::kNone) << other->Describe();
  }
  EXPECT_FALSE(Aggregations({{"n", agg::Count()}, {"m", agg::Mean("x")}}, false).folds_ints());
  EXPECT_FALSE(Aggregations({}, false).folds_ints());
}

TEST(KeyState, PartitionBoundsRoundTripAndTheUnversionedFormIsRefused) {
  auto bounds = DecodePartitionBounds(EncodePartitionBounds({EventTime(5), EventTime(-2)}));
  ASSERT_TRUE(bounds.ok()) << bounds.status().ToString();
  EXPECT_EQ(bounds->close, EventTime(5));
  EXPECT_EQ(bounds->late, EventTime(-2));
  Value unversioned(Value::Array{Value(int64_t{5}), Value(int64_t{-2})});
  EXPECT_EQ(DecodePartitionBounds(unversioned).status().code(), StatusCode::kCorruption);
  Value other_version(
      Value::Array{Value(kWindowStateVersion + 1), Value(int64_t{5}), Value(int64_t{-2})});
  EXPECT_TRUE(Mentions(DecodePartitionBounds(other_version).status(), "format version 3"));
}

// Stored states a little wrong at random are refused, or opened and then read, added to and
// expired by the window rules without a crash or a sanitizer report.
TEST(KeyState, RandomValuesAreRefusedOrReadAsTheyAreNeverACrash) {
  std::mt19937_64 rng(13);
  auto random_value = [&]() -> Value {
    switch (rng() % 6) {
      case 0:
        return Value();
      case 1:
        return Value(static_cast<int64_t>(rng() % 3));
      case 2:
        return Value(Value::Array{});
      case 3:
        return Value("s");
      case 4:
        return Value::MakeArray({Value::MakeArray({static_cast<int64_t>(rng() % 20), "e"})});
      default:
        return Value(Value::Array{Value(int64_t{1})});
    }
  };
  // A well-formed header and windows of one of the layouts, then a few bytes changed.
  auto random_packed = [&]() -> std::string {
    const size_t stride = std::vector<size_t>{35, 26, 50}[rng() % 3];
    std::string bytes(34 + (rng() % 4) * stride, '\0');
    bytes[0] = static_cast<char>(kWindowStateVersion);
    bytes[1] = static_cast<char>(rng() % 5);
    for (size_t at = 34; at < bytes.size(); at += stride) {
      const int64_t start = static_cast<int64_t>(rng() % 30), end = start + 1 + rng() % 10;
      std::memcpy(&bytes[at], &start, 8);
      std::memcpy(&bytes[at + 8], &end, 8);
      for (size_t slot = at + (stride == 50 ? 41 : 17); slot < at + stride; slot += 9) {
        bytes[slot] = static_cast<char>(rng() % 5);  // not boxed: the boxes are random below
      }
    }
    for (char& c : bytes) {
      if (rng() % 64 == 0) c = static_cast<char>(rng() % 7);
    }
    if (rng() % 16 == 0) bytes.resize(rng() % bytes.size());
    return bytes;
  };
  using std::chrono::milliseconds;
  const Aggregations two({{"n", agg::Count()}, {"s", agg::Sum("x")}}, false);
  const Aggregations one({{"n", agg::Mean("x")}}, false);
  const KeyWindows tumbling(WindowDefinition::Tumbling(milliseconds(10)), two, true, nullptr);
  const KeyWindows sliding(WindowDefinition::Sliding(milliseconds(10)), one, true, nullptr);
  const KeyWindows counting(WindowDefinition::CountTumbling(5), one, true, nullptr);
  int opened_states = 0;
  AddOutcome outcome;
  std::vector<WindowValue> closed;
  for (int round = 0; round < 20000; ++round) {
    const std::string packed = random_packed();
    Value state{std::string_view(packed)};
    if (round % 3 != 0) {
      Value::Array parts{std::move(state)};
      for (size_t n = rng() % 4; n > 0; --n) parts.push_back(random_value());
      state = Value(std::move(parts));
    }
    if (round % 11 == 0) state = random_value();
    for (const KeyWindows* windows : {&tumbling, &sliding, &counting}) {
      const WindowStateLayout& layout = windows->layout();
      Value copy = state;
      auto opened = KeyState::Open(copy, layout);
      if (!opened.ok()) continue;
      ++opened_states;
      // What opens reads as a key's windows, every accumulator included.
      for (size_t i = 0; i < opened->windows(); ++i) {
        int64_t start;
        std::memcpy(&start, packed.data() + 34 + i * layout.stride(), sizeof start);
        EXPECT_EQ(opened->start(i), start);
        EXPECT_EQ(Accumulators(*opened, i, layout).size(), layout.aggregations());
      }
      // And takes an event and closes windows as the rules say, whatever it held.
      const EventTime ts(static_cast<int64_t>(rng() % 40));
      windows->Add(*opened, Bounds{}, Value::MakeObject({{"x", 2}}), ts, outcome);
      closed.clear();
      windows->Expire(*opened, Bounds{EventTime(static_cast<int64_t>(rng() % 50)), EventTime()},
                      closed);
      windows->CloseAll(*opened, closed);
      EXPECT_EQ(opened->windows(), 0u);
      EXPECT_TRUE(KeyState::Open(copy, layout).ok());
    }
  }
  EXPECT_GT(opened_states, 1000);
}

}  // namespace
}  // namespace weir::window
