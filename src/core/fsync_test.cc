#include "weir/fsync.h"

#include <gtest/gtest.h>

namespace weir {
namespace {

TEST(FsyncPolicy, EveryPolicyReadsBackFromItsName) {
  for (const auto& [policy, name] : kFsyncPolicies) {
    EXPECT_EQ(FsyncPolicyName(policy), name);
    EXPECT_EQ(*ParseFsyncPolicy(name), policy);
  }
}

TEST(FsyncPolicy, AnUnknownNameListsTheChoices) {
  EXPECT_EQ(FsyncPolicyChoices(), "group, always or never");
  auto bad = ParseFsyncPolicy("Always");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "unknown fsync policy 'Always' (expected group, always or never)");
}

}  // namespace
}  // namespace weir
