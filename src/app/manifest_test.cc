#include "app/manifest.h"

#include <gtest/gtest.h>

#include "app/testing.h"
#include "core/files.h"

namespace weir::app {
namespace {

TEST(Manifest, SavesAndLoadsEveryField) {
  weir::testing::TempDir dir;
  CheckpointManifest m;
  m.checkpoint = 17;
  m.definition = "source x\nsteps y\n";
  m.topic_ends["out"] = {Offset(5), Offset(0), Offset(12)};
  m.file_lengths["/tmp/o.jsonl"] = 4096;
  ASSERT_TRUE(SaveManifest(dir.path(), m).ok());
  auto loaded = LoadManifest(dir.path());
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->checkpoint, 17);
  EXPECT_EQ((*loaded)->definition, m.definition);
  EXPECT_EQ((*loaded)->topic_ends, m.topic_ends);
  EXPECT_EQ((*loaded)->file_lengths, m.file_lengths);
}

TEST(Manifest, NoManifestMeansAFreshApplication) {
  weir::testing::TempDir dir;
  auto loaded = LoadManifest(dir.path());
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded->has_value());
}

TEST(Manifest, ADamagedManifestIsCorruptionNamingTheFile) {
  weir::testing::TempDir dir;
  ASSERT_TRUE(ReplaceFileAtomically(dir.path() / "manifest.json", R"({"checkpoint": "x"})").ok());
  auto loaded = LoadManifest(dir.path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kCorruption);
  EXPECT_NE(loaded.status().message().find("manifest.json"), std::string::npos);
}

}  // namespace
}  // namespace weir::app
