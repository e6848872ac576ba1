// `weir bench lake` small: it checks its own answers (the views' count and price sum, each
// query's answer against the generator's) and exits non-zero when one differs. No timing is
// asserted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir {
namespace {

using testing::CommandResult;
using testing::RunCommand;
using testing::TempDir;

// 3000 bids: 125 an hour over the 24 hours, in spans of 50 ms.
CommandResult BenchLake(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(),
              {WEIR_BINARY, "bench", "lake", "--data-dir", (dir.path() / "data").string(), "--bids",
               "3000", "--span-ms", "50", "--query-runs", "1"});
  return RunCommand(args, dir.path().string());
}

void ExpectVerified(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\nlake rows=3000 verified=yes "), std::string::npos) << r.out;
}

TEST(BenchLake, AViewWithDeclaredColumnsHoldsEveryBidAndQueriesAgree) {
  TempDir dir;
  ExpectVerified(BenchLake(dir, {}));
}

// Batches of 1000 records: the COPY of the range reads three, refilled as it goes.
TEST(BenchLake, ASqlTransformAndARangeReadInSeveralBatchesHoldEveryBid) {
  TempDir dir;
  CommandResult r = BenchLake(dir, {"--sql", "--batch-records", "1000"});
  ExpectVerified(r);
  EXPECT_NE(r.out.find(" sql=yes "), std::string::npos) << r.out;
}

TEST(BenchLake, AViewRefreshedBesideAPipelineHoldsItsOutput) {
  TempDir dir;
  CommandResult r = BenchLake(dir, {"--pipeline-events", "20000"});
  ExpectVerified(r);
  EXPECT_EQ(r.out.find(" pipeline_lake_ratio=-"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace weir
