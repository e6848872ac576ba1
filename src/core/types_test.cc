#include "weir/types.h"

#include <gtest/gtest.h>

#include <chrono>

namespace weir {
namespace {

using std::chrono::milliseconds;

TEST(EventTime, MovingByADurationIsPlainArithmeticInsideTheRange) {
  EXPECT_EQ(EventTime(1000) + milliseconds(500), EventTime(1500));
  EXPECT_EQ(EventTime(1000) - milliseconds(1500), EventTime(-500));
  EXPECT_EQ(EventTime(1000) + milliseconds(-1000), EventTime(0));
}

TEST(EventTime, MovingPastEitherEndStaysAtThatEnd) {
  EXPECT_EQ(EventTime::Max() + milliseconds(1), EventTime::Max());
  EXPECT_EQ(EventTime::Max() - milliseconds(-1), EventTime::Max());
  EXPECT_EQ(EventTime::Min() - milliseconds(1), EventTime::Min());
  EXPECT_EQ(EventTime::Min() + milliseconds(-1), EventTime::Min());
  EXPECT_EQ(EventTime(5) + milliseconds::max(), EventTime::Max());
  EXPECT_EQ(EventTime(-5) - milliseconds::max(), EventTime::Min());
  // The sentinels are not sticky: moving back from an end is ordinary arithmetic.
  EXPECT_EQ(EventTime::Max() - milliseconds(1), EventTime(INT64_MAX - 1));
  static_assert(EventTime::Max() + milliseconds(10) == EventTime::Max());
}

TEST(SaturatingArithmetic, RawMillisecondsSaturateTheSameWay) {
  EXPECT_EQ(AddSaturating(INT64_MAX - 1, 5), INT64_MAX);
  EXPECT_EQ(AddSaturating(INT64_MIN + 1, -5), INT64_MIN);
  EXPECT_EQ(SubtractSaturating(INT64_MIN, 1), INT64_MIN);
  EXPECT_EQ(SubtractSaturating(0, INT64_MIN), INT64_MAX);
  EXPECT_EQ(AddSaturating(2, 3), 5);
}

}  // namespace
}  // namespace weir
