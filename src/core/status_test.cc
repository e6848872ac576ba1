#include "weir/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace weir {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  WEIR_ASSIGN_OR_RETURN(int h, Half(x));
  WEIR_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, ResultPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "Invalid argument: 3 is odd");
  EXPECT_TRUE(r.status().IsBadInput());
}

TEST(Status, DiskFullIsResourceExhausted) {
  Status s = Status::FromErrno(ENOSPC, "writing /d/x.log");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("disk full"), std::string::npos);
  EXPECT_NE(s.message().find("/d/x.log"), std::string::npos);
}

TEST(Status, CancelledIsNeitherBadInputNorRetryable) {
  Status s = Status::Cancelled("query interrupted");
  EXPECT_EQ(s.ToString(), "Cancelled: query interrupted");
  EXPECT_FALSE(s.IsBadInput());
  EXPECT_FALSE(s.IsRetryable());
}

TEST(Status, ContextPrefixesTheMessage) {
  Status s = Status::IOError("boom").WithContext("topic clicks");
  EXPECT_EQ(s.message(), "topic clicks: boom");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
}

}  // namespace
}  // namespace weir
