#include "core/parse.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace weir {
namespace {

TEST(ParseInt64, TakesTheWholeTextAsOneInteger) {
  EXPECT_EQ(*ParseInt64("0", "n"), 0);
  EXPECT_EQ(*ParseInt64("-12", "n"), -12);
  EXPECT_EQ(*ParseInt64("9223372036854775807", "n"), INT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "12x", "1.0", "9223372036854775808", "--1"}) {
    auto r = ParseInt64(bad, "--from");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), std::string("--from must be an integer, found '") + bad + "'");
  }
}

TEST(ParseInt64, ABoundedIntegerOutsideItsRangeNamesTheRange) {
  EXPECT_EQ(*ParseInt64("5", "workers", 1, 5), 5);
  EXPECT_EQ(ParseInt64("6", "workers", 1, 5).status().message(),
            "workers must be an integer from 1 to 5, found '6'");
  EXPECT_FALSE(ParseInt64("0", "workers", 1, 5).ok());
}

TEST(ParseUnsigned, TakesDigitsOnlyUpToItsMaximum) {
  EXPECT_EQ(*ParseUnsigned("65535", "port", 65535), 65535u);
  EXPECT_EQ(*ParseUnsigned("18446744073709551615", "n"), UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", "65536", "1a"}) {
    auto r = ParseUnsigned(bad, "port", 65535);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("port must be a whole number from 0 to 65535"),
              std::string::npos);
  }
}

TEST(ParseDouble, TakesTheWholeTextAsOneNumber) {
  EXPECT_EQ(*ParseDouble("1.5", "rate"), 1.5);
  EXPECT_EQ(*ParseDouble("-2e3", "rate"), -2000.0);
  for (const char* bad : {"", "1.5s", "+1", " 1"}) EXPECT_FALSE(ParseDouble(bad, "rate").ok());
}

}  // namespace
}  // namespace weir
