#include <gtest/gtest.h>

#include <random>

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

TEST(KeyState, AStoredKeyOpensWithItsHeaderAndWindows) {
  Value state;
  KeyState created = KeyState::Create(state, kTumbling, KeySerde::kString);
  created.set_watermark(Watermark(42));
  created.set_bounds({EventTime(7), EventTime(3)});
  created.Insert(0, 0, 10);
  created.accumulators(0)[1] = Value(int64_t{5});
  Value stored = state;
  auto opened = KeyState::Open(stored, kTumbling);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(opened->serde(), KeySerde::kString);
  EXPECT_EQ(opened->watermark(), Watermark(42));
  EXPECT_EQ(opened->bounds().close, EventTime(7));
  EXPECT_EQ(opened->bounds().late, EventTime(3));
  ASSERT_EQ(opened->windows(), 1u);
  EXPECT_EQ(opened->end(0), 10);
  EXPECT_EQ(opened->accumulators(0)[1], Value(int64_t{5}));
}

TEST(KeyState, CountAndSlidingWindowsKeepTheirOwnNamedState) {
  Value count_state;
  KeyState counted = KeyState::Create(count_state, kCount, KeySerde::kString);
  EXPECT_EQ(counted.next_event_index(), 0);
  counted.set_next_event_index(3);
  ASSERT_TRUE(KeyState::Open(count_state, kCount).ok());
  EXPECT_EQ(KeyState::Open(count_state, kCount)->next_event_index(), 3);

  Value sliding_state;
  KeyState sliding = KeyState::Create(sliding_state, kSliding, KeySerde::kString);
  EXPECT_TRUE(sliding.empty());
  sliding.kept_events().push_back(Value(Value::Array{Value(int64_t{1}), Value("x")}));
  EXPECT_FALSE(sliding.empty());
  // An event index is not a sliding window's kept events, nor the reverse.
  EXPECT_FALSE(KeyState::Open(count_state, kSliding).ok());
  EXPECT_FALSE(KeyState::Open(sliding_state, kCount).ok());
}

TEST(KeyState, AnotherFormatVersionIsRefusedNamingIt) {
  Value state;
  KeyState::Create(state, kTumbling, KeySerde::kString);
  state.as_array()[0] = Value(kWindowStateVersion + 1);
  auto opened = KeyState::Open(state, kTumbling);
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Mentions(opened.status(), "format version 2")) << opened.status().message();
  // The layout before versions: [serde, key_watermark, close, late, extra, windows...].
  Value unversioned(
      Value::Array{Value(int64_t{0}), Value(kNoBound), Value(kNoBound), Value(kNoBound), Value()});
  EXPECT_EQ(KeyState::Open(unversioned, kTumbling).status().code(), StatusCode::kCorruption);
}

TEST(KeyState, WindowsOfAnotherStrideAreRefused) {
  Value state;
  KeyState created = KeyState::Create(state, kSliding, KeySerde::kString);
  created.Insert(0, 0, 10);                        // 3 fields + 1 accumulator
  auto opened = KeyState::Open(state, kTumbling);  // 3 fields + 2 accumulators
  EXPECT_EQ(opened.status().code(), StatusCode::kCorruption);
  EXPECT_TRUE(Mentions(opened.status(), "whole number of windows")) << opened.status().message();
}

TEST(KeyState, AMistypedHeaderFieldIsRefusedByName) {
  Value state;
  KeyState::Create(state, kTumbling, KeySerde::kString);
  state.as_array()[3] = Value("soon");
  auto opened = KeyState::Open(state, kTumbling);
  EXPECT_TRUE(Mentions(opened.status(), "close bound")) << opened.status().message();
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
  EXPECT_TRUE(Mentions(DecodePartitionBounds(other_version).status(), "format version 2"));
}

TEST(KeyState, RandomValuesAreRefusedOrReadAsTheyAreNeverACrash) {
  std::mt19937_64 rng(13);
  auto random_slot = [&]() -> Value {
    switch (rng() % 5) {
      case 0:
        return Value();
      case 1:
        return Value(static_cast<int64_t>(rng() % 3));
      case 2:
        return Value(rng() % 2 == 0);
      case 3:
        return Value("s");
      default:
        return Value(Value::Array{Value(int64_t{1})});
    }
  };
  int opened_states = 0;
  for (int round = 0; round < 5000; ++round) {
    Value::Array slots;
    for (size_t n = rng() % 14; n > 0; --n) slots.push_back(random_slot());
    if (round % 2 == 0 && slots.size() >= 6) {  // a well-formed header, random windows
      slots[0] = Value(kWindowStateVersion);
      for (size_t i = 1; i < 5; ++i) slots[i] = Value(static_cast<int64_t>(rng() % 3));
      slots[5] = Value();
      for (size_t i = 6; i < slots.size(); ++i) {
        if (rng() % 4 != 0) slots[i] = Value(static_cast<int64_t>(rng() % 3));
      }
      if (slots.size() > 8) slots[8] = Value(true);
    }
    Value state = round % 7 == 0 ? random_slot() : Value(std::move(slots));
    for (const WindowStateLayout& layout : {kTumbling, kSliding, kCount}) {
      Value copy = state;
      auto opened = KeyState::Open(copy, layout);
      if (!opened.ok()) continue;
      ++opened_states;
      // What opens reads as a key's windows.
      for (size_t i = 0; i < opened->windows(); ++i) {
        EXPECT_EQ(opened->start(i), copy.as_array()[6 + i * layout.stride()].as_int());
        EXPECT_EQ(opened->fired(i), copy.as_array()[8 + i * layout.stride()].as_bool());
      }
      EXPECT_EQ(opened->bounds().close, EventTime(copy.as_array()[3].as_int()));
    }
  }
  EXPECT_GT(opened_states, 0);
}

}  // namespace
}  // namespace weir::window
