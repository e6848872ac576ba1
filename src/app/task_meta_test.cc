#include "app/task_meta.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <random>

#include "app/testing.h"
#include "state/task_store.h"
#include "weir/application.h"

namespace weir::app {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::vector<SavedDelivery> SomeDeliveries() {
  return {{0, 0, 0, DeliveryState::kReadNotMerged, 0},
          {0, 17, 17, DeliveryState::kHeld, 1},
          {1, kMax, -5, DeliveryState::kHeld, std::numeric_limits<int32_t>::max()},
          {3, 1LL << 60, kMin, DeliveryState::kReadNotMerged, 0}};
}

std::vector<SavedMark> SomeMarks() {
  return {{0, 12, 0, Watermark::Min()}, {2, kMax, 7, Watermark(1'700'000'000'000)}};
}

std::vector<SavedInputWatermark> SomeInputWatermarks() {
  return {{false, Watermark(42), {}},
          {true, Watermark::Min(), {Watermark::Min(), Watermark(3), Watermark::Max()}},
          {true, Watermark::Min(), {}},
          {false, Watermark::Max(), {}}};
}

// Every encoding of the test's values, to cut and mangle.
std::vector<std::string> AllEncodings() {
  return {EncodeCheckpointNumber(12), EncodeTaskWatermark(Watermark(-3)),
          EncodeInputWatermarks(SomeInputWatermarks()), EncodeSavedDeliveries(SomeDeliveries()),
          EncodePendingMarks(SomeMarks())};
}

// Runs every decoder on `bytes`; returns how many accepted them.
int DecodeWithEach(std::string_view bytes) {
  return DecodeCheckpointNumber(bytes).ok() + DecodeTaskWatermark(bytes).ok() +
         DecodeInputWatermarks(bytes).ok() + DecodeSavedDeliveries(bytes).ok() +
         DecodePendingMarks(bytes).ok();
}

TEST(TaskMeta, CheckpointAndWatermarkRoundTrip) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, kMin, kMax}) {
    auto checkpoint = DecodeCheckpointNumber(EncodeCheckpointNumber(v));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
    EXPECT_EQ(*checkpoint, v);
    auto watermark = DecodeTaskWatermark(EncodeTaskWatermark(Watermark(v)));
    ASSERT_TRUE(watermark.ok()) << watermark.status().ToString();
    EXPECT_EQ(*watermark, Watermark(v));
  }
}

TEST(TaskMeta, SavedDeliveriesRoundTripWithTheirState) {
  auto decoded = DecodeSavedDeliveries(EncodeSavedDeliveries(SomeDeliveries()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, SomeDeliveries());
  auto none = DecodeSavedDeliveries(EncodeSavedDeliveries({}));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(TaskMeta, PendingMarksRoundTrip) {
  auto decoded = DecodePendingMarks(EncodePendingMarks(SomeMarks()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, SomeMarks());
}

TEST(TaskMeta, InputWatermarksRoundTripPerKindOfInput) {
  auto decoded = DecodeInputWatermarks(EncodeInputWatermarks(SomeInputWatermarks()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, SomeInputWatermarks());
}

TEST(TaskMeta, AnUnknownVersionIsRefusedNamingIt) {
  for (std::string bytes : AllEncodings()) {
    bytes[0] = static_cast<char>(kTaskMetaVersion + 1);
    EXPECT_EQ(DecodeWithEach(bytes), 0);
    auto held = DecodeSavedDeliveries(bytes);
    EXPECT_EQ(held.status().code(), StatusCode::kCorruption);
    EXPECT_NE(held.status().message().find("unknown format version 2"), std::string::npos)
        << held.status().message();
  }
}

TEST(TaskMeta, TheFormerTextFormatIsRefused) {
  auto held = DecodeSavedDeliveries("0:17:17:1,1:4:4:0");
  EXPECT_EQ(held.status().code(), StatusCode::kCorruption);
  EXPECT_NE(held.status().message().find("held deliveries"), std::string::npos);
  EXPECT_FALSE(DecodeCheckpointNumber("12").ok());
  EXPECT_FALSE(DecodeTaskWatermark("").ok());
}

TEST(TaskMeta, AValueOfAnotherKindIsRefused) {
  auto held = DecodeSavedDeliveries(EncodePendingMarks(SomeMarks()));
  EXPECT_EQ(held.status().code(), StatusCode::kCorruption);
  EXPECT_NE(held.status().message().find("another kind"), std::string::npos);
  EXPECT_FALSE(DecodeCheckpointNumber(EncodeTaskWatermark(Watermark(3))).ok());
}

TEST(TaskMeta, EveryTruncationAndEveryExtraByteIsRefused) {
  for (const std::string& bytes : AllEncodings()) {
    ASSERT_EQ(DecodeWithEach(bytes), 1);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_EQ(DecodeWithEach(bytes.substr(0, n)), 0) << n << " of " << bytes.size();
    }
    EXPECT_EQ(DecodeWithEach(bytes + '\0'), 0);
  }
}

TEST(TaskMeta, ADeliveryStateThatContradictsItsCountIsRefused) {
  std::vector<SavedDelivery> merged_but_never_delivered = {{0, 1, 1, DeliveryState::kHeld, 0}};
  auto held = DecodeSavedDeliveries(EncodeSavedDeliveries(merged_but_never_delivered));
  EXPECT_EQ(held.status().code(), StatusCode::kCorruption);
  std::vector<SavedDelivery> unmerged_but_delivered = {{0, 1, 1, DeliveryState::kReadNotMerged, 2}};
  EXPECT_FALSE(DecodeSavedDeliveries(EncodeSavedDeliveries(unmerged_but_delivered)).ok());
}

TEST(TaskMeta, RandomBytesAndMutationsNeverCrashTheDecoders) {
  std::mt19937_64 rng(13);
  const std::vector<std::string> valid = AllEncodings();
  for (int round = 0; round < 20000; ++round) {
    std::string bytes;
    if (round % 2 == 0) {
      bytes.resize(rng() % 40);
      for (char& c : bytes) c = static_cast<char>(rng());
      if (!bytes.empty()) bytes[0] = static_cast<char>(kTaskMetaVersion);
    } else {
      bytes = valid[rng() % valid.size()];
      for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
    }
    EXPECT_LE(DecodeWithEach(bytes), 1);
  }
}

// A data directory whose task state is of the former text format (deliveries == 0 meaning "read
// but not merged") is refused when the task opens, with a Status naming the value: never
// read as something else, never a crash.
TEST(TaskMetaInAnApplication, StateOfTheFormerFormatIsRefusedNamingTheValue) {
  testing::TempDir dir;
  testing::WriteLines(dir / "in.jsonl", {R"({"user":"ann","ts":1})", R"({"user":"bob","ts":2})"});
  auto run = [&]() {
    ApplicationOptions options;
    options.name = "app";
    options.data_dir = dir / "data";
    Application app(options);
    FileSourceOptions file;
    file.path = dir / "in.jsonl";
    file.key = {"user", KeySerde::kString};
    file.timestamp_field = "ts";
    app.FromFile(file).ToFile(dir / "out.jsonl");
    return app.Run();
  };
  auto first = run();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::filesystem::path tasks =
      std::filesystem::path(dir / "data") / "apps" / "app" / "tasks";
  ASSERT_TRUE(std::filesystem::is_directory(tasks));
  for (const auto& task_dir : std::filesystem::directory_iterator(tasks)) {
    auto store = state::TaskStore::Open(task_dir.path(), {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    (*store)->PutMeta("held_deliveries", "0:1:1:0");
    ASSERT_TRUE((*store)->Prepare("rewrite").ok());
    ASSERT_TRUE((*store)->Commit().ok());
  }
  auto again = run();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kCorruption);
  EXPECT_NE(again.status().message().find("task meta 'held deliveries': unknown format version"),
            std::string::npos)
      << again.status().message();
}

}  // namespace
}  // namespace weir::app
