// ValidateCall rule by rule: what refuses a call, and the totals it leads to.
#include "process/validate.h"

#include <gtest/gtest.h>

#include <limits>

namespace weir::process {
namespace {

class ValidateCallTest : public ::testing::Test {
 protected:
  ValidateCallTest() {
    options_.id = "f";
    options_.state = {"n"};
    options_.timers = {"idle"};
    for (int64_t id : {1, 2}) {
      activations_.push_back({.id = id,
                              .key = Key::String(id == 1 ? "a" : "b"),
                              .time = 100,
                              .watermark = 100,
                              .input = &input_,
                              .state = &state_});
      footprints_.push_back({{std::nullopt}, {std::nullopt}});
    }
    results_ = {ProcessResult{.id = 1}, ProcessResult{.id = 2}};
  }

  std::string Refusal() {
    auto checked = ValidateCall(options_, activations_, Footprints(), results_, totals_);
    const auto* error = std::get_if<CallError>(&checked);
    return error ? error->reason : "";
  }
  StepTotals After() {
    auto checked = ValidateCall(options_, activations_, Footprints(), results_, totals_);
    const auto* valid = std::get_if<ValidatedCall>(&checked);
    EXPECT_NE(valid, nullptr) << std::get<CallError>(checked).reason;
    return valid ? valid->totals_after.back() : StepTotals{};
  }

  std::vector<const KeyFootprint*> Footprints() const {
    std::vector<const KeyFootprint*> all;
    for (const KeyFootprint& f : footprints_) all.push_back(&f);
    return all;
  }

  ProcessOptions options_;
  Value input_ = Value(1);
  Value state_ = Value(Value::Object());
  std::vector<ProcessActivation> activations_;
  std::vector<KeyFootprint> footprints_;
  std::vector<ProcessResult> results_;
  StepTotals totals_;
};

TEST_F(ValidateCallTest, ResultsInAnyOrderAreMatchedToTheirActivations) {
  std::swap(results_[0], results_[1]);
  auto checked = ValidateCall(options_, activations_, Footprints(), results_, totals_);
  ASSERT_TRUE(std::holds_alternative<ValidatedCall>(checked));
  EXPECT_EQ(std::get<ValidatedCall>(checked).result_of, (std::vector<size_t>{1, 0}));
}

TEST_F(ValidateCallTest, AMissingAnUnknownOrADuplicateIdIsRefused) {
  std::vector<ProcessResult> all = results_;
  results_.pop_back();
  EXPECT_EQ(Refusal(), "1 results for 2 activations");
  results_ = all;
  results_[1].id = 7;
  EXPECT_EQ(Refusal(), "a result for activation 7, which is not in the call");
  results_[1].id = 1;
  EXPECT_EQ(Refusal(), "two results for activation 1");
}

TEST_F(ValidateCallTest, NamesMustBeDeclaredAndChangedOnce) {
  results_[1].Set("m", Value(1));
  EXPECT_EQ(Refusal(), "result for activation 2: state 'm' is not declared");
  results_[1] = {.id = 2};
  results_[1].SetTimer("ttl", 500);
  EXPECT_EQ(Refusal(), "result for activation 2: timer 'ttl' is not declared");
  results_[1] = {.id = 2};
  results_[1].SetTimer("idle", 500);
  results_[1].CancelTimer("idle");
  EXPECT_EQ(Refusal(), "result for activation 2: timer 'idle' is changed twice");
}

TEST_F(ValidateCallTest, ATimerMustBeAfterTheWatermarkAndAnOutputNotBeforeItsActivation) {
  results_[0].SetTimer("idle", 100);
  EXPECT_EQ(Refusal(),
            "result for activation 1: timer 'idle' at 100 is not after the watermark 100");
  results_[0] = {.id = 1};
  results_[0].Emit(Value(1), 99);
  EXPECT_EQ(Refusal(),
            "result for activation 1: an output at 99 is before the activation's time 100");
}

TEST_F(ValidateCallTest, AtTheEndOfInputATimerSetIsDroppedNotRefused) {
  for (ProcessActivation& a : activations_) a.watermark = std::numeric_limits<int64_t>::max();
  results_[0].SetTimer("idle", 5);
  EXPECT_EQ(After().timers, 0);
}

TEST_F(ValidateCallTest, EachLimitRefusesTheCallThatWouldPassIt) {
  results_[0].Set("n", Value(std::string(40, 'x')));  // 42 bytes of JSON
  results_[0].SetTimer("idle", 200);
  results_[1].SetTimer("idle", 300);
  results_[1].Emit(Value("out"), 100);
  EXPECT_EQ(After(), (StepTotals{.keys = 2, .timers = 2, .state_bytes = 42}));

  options_.limits.max_keys = 1;
  EXPECT_EQ(Refusal(),
            "result for activation 2: keys with state or timers would be 2, over the "
            "limit 1");
  options_.limits = {};
  options_.limits.max_timers = 1;
  EXPECT_EQ(Refusal(), "result for activation 2: pending timers would be 2, over the limit 1");
  options_.limits = {};
  options_.limits.max_state_bytes = 41;
  EXPECT_EQ(Refusal(), "result for activation 1: state bytes would be 42, over the limit 41");
  options_.limits = {};
  options_.limits.max_output_rows = 0;
  EXPECT_EQ(Refusal(), "outputs in the call would be 1, over the limit 0");
  options_.limits = {};
  options_.limits.max_output_bytes = 4;
  EXPECT_EQ(Refusal(), "output bytes in the call would be 5, over the limit 4");
}

TEST_F(ValidateCallTest, ClearingWhatAKeyHeldGivesBackItsKeyTimerAndBytes) {
  footprints_[0] = {{10}, {900}};
  totals_ = {.keys = 1, .timers = 1, .state_bytes = 10};
  results_[0].Clear("n");
  results_[0].CancelTimer("idle");
  EXPECT_EQ(After(), (StepTotals{}));
}

}  // namespace
}  // namespace weir::process
