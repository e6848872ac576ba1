#include "core/names.h"

#include <gtest/gtest.h>

#include <string>

namespace weir {
namespace {

TEST(CheckName, AcceptsLettersDigitsDotUnderscoreAndDashUpToTheLimit) {
  EXPECT_TRUE(CheckName("Ok.name_with-all-9", "topic name").ok());
  EXPECT_TRUE(CheckName(std::string(kMaxNameLength, 'a'), "topic name").ok());
  EXPECT_TRUE(CheckName("...", "topic name").ok());
}

TEST(CheckName, RefusesWhatCannotBeAFileNameSayingWhy) {
  EXPECT_EQ(CheckName("a b", "application name").message(),
            "invalid application name 'a b': only letters, digits, '.', '_' and '-' are allowed");
  EXPECT_EQ(CheckName("", "store name").message(),
            "invalid store name '': must be 1 to 200 characters");
  for (const std::string& bad :
       {std::string("."), std::string(".."), std::string("a/b"), std::string("caf\xc3\xa9"),
        std::string("x~y"), std::string(kMaxNameLength + 1, 'a')}) {
    Status s = CheckName(bad, "topic name");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace weir
