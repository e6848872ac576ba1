// `weir bench catchup` small: it checks its replays (every offset once, in order, each value byte
// for byte, from the log and then from the archive) and exits non-zero when one differs. No
// timing is asserted.
#include <gtest/gtest.h>

#include <string>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace weir {
namespace {

TEST(BenchCatchup, ReplaysFromTheLogAndFromTheArchiveAreEveryOffsetInOrder) {
  testing::TempDir dir;
  testing::CommandResult r = testing::RunCommand(
      {WEIR_BINARY, "bench", "catchup", "--data-dir", (dir.path() / "data").string(), "--messages",
       "30000", "--chunk", "500", "--runs", "1"},
      dir.path().string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\ncatchup messages=30000 verified=yes "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace weir
