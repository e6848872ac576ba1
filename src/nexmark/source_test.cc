#include "nexmark/source.h"

#include <gtest/gtest.h>

#include "dataflow/builtin_kinds.h"
#include "testing/kind_yaml.h"

namespace weir::nexmark {
namespace {

std::string ErrorOf(std::string_view yaml) {
  static const dataflow::KindRegistry kinds = [] {
    dataflow::KindRegistry k = dataflow::BuiltinKinds();
    RegisterNexmarkSource(k);
    return k;
  }();
  return testing::SourceYamlError(kinds, yaml);
}

TEST(NexmarkSourceYaml, ErrorsNameTheirPath) {
  EXPECT_NE(ErrorOf("source: {nexmark: {partitions: 0}}")
                .find("source.nexmark.partitions: expected an integer from 1 to 10000"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf("source: {nexmark: {speed: 3}}").find("source.nexmark.speed: unknown key 'speed'"),
      std::string::npos);
  EXPECT_NE(ErrorOf("source: {nexmark: {}, key: bidder}")
                .find("a nexmark source stamps its events itself"),
            std::string::npos);
  EXPECT_NE(ErrorOf("source: {nexmark: {events_per_second: -1}}")
                .find("source.nexmark.events_per_second"),
            std::string::npos);
}

TEST(NexmarkSourceYaml, AnEmptyMapTakesTheReferenceDefaults) {
  EXPECT_EQ(ErrorOf("source: {nexmark: {}}"), "");
  EXPECT_EQ(ErrorOf("source: {nexmark: }"), "");
}

}  // namespace
}  // namespace weir::nexmark
