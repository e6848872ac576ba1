// Property tests of the interval and as-of joins: random pairs of streams run through a real
// weir::Application (two file sources, both joins as branches of one application, file sinks,
// late topics on the embedded log) and through the brute-force models of join/interval_model.h
// and join/asof_model.h, which were written from include/weir/join.h alone. The results and the
// late events are compared as multisets; the as-of join's results of each key must also come in
// time order.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "app/join_testing.h"
#include "join/asof_model.h"
#include "join/interval_model.h"

namespace weir {
namespace {

using join::testing::AsOfModelOptions;
using join::testing::IntervalModelOptions;
using join::testing::ModelEvent;
using join::testing::ModelJoined;
using join::testing::ModelJoinOutput;
using join::testing::ModelLate;
using std::chrono::milliseconds;

struct JoinCase {
  std::vector<ModelEvent> left, right;
  IntervalModelOptions interval;
  AsOfModelOptions asof;

  std::string Describe() const {
    return "interval(lower=" + std::to_string(interval.lower) +
           ", upper=" + std::to_string(interval.upper) +
           ", grace=" + std::to_string(interval.grace) +
           (interval.left_outer ? ", left_outer" : "") +
           ") asof(lookback=" + std::to_string(asof.lookback) +
           ", grace=" + std::to_string(asof.grace) + ")";
  }
};

struct Shape {
  int min_keys = 1;
  int max_keys = 12;
  int min_events = 20;   // per input
  int max_events = 250;  // per input; at most one poll of a file source (2048)
  double late = 0.05;    // the share of events far behind the clock
};

int64_t Uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool Chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// Keys that are prefixes of one another and carry separators, so that an engine that encodes
// keys into state ambiguously mixes them.
std::string KeyName(int i) {
  static const char* const kSpecial[] = {"k1|", "k1\x01", "k1/0", "", "k\"1", "ü1"};
  if (i % 7 == 6) return kSpecial[(i / 7) % 6];
  return "k" + std::to_string(i);
}

// One input: a clock that moves by small steps (often not at all: equal times), events up to
// `disorder` behind it, and now and then one far behind (late, unless the watermark has not
// got there yet).
std::vector<ModelEvent> RandomInput(std::mt19937_64& rng, int keys, int64_t start, int64_t disorder,
                                    const Shape& shape, int64_t first_id) {
  std::vector<ModelEvent> events;
  int64_t clock = start;
  int64_t n = Uniform(rng, shape.min_events, shape.max_events);
  int64_t step = Uniform(rng, 1, 8);
  for (int64_t i = 0; i < n; ++i) {
    if (!Chance(rng, 0.3)) clock += Uniform(rng, 0, step);
    int64_t ts = clock;
    if (Chance(rng, shape.late)) {
      ts -= Uniform(rng, disorder + 1, disorder + 80);
    } else if (Chance(rng, 0.4)) {
      ts -= Uniform(rng, 0, disorder);
    }
    events.push_back({KeyName(static_cast<int>(Uniform(rng, 0, keys - 1))), ts, first_id + i});
  }
  return events;
}

JoinCase RandomCase(std::mt19937_64& rng, const Shape& shape) {
  JoinCase c;
  c.interval.lower = Chance(rng, 0.2) ? 0 : Uniform(rng, 0, 40);
  c.interval.upper = Chance(rng, 0.2) ? 0 : Uniform(rng, 0, 40);
  c.interval.grace = Chance(rng, 0.25) ? 0 : Uniform(rng, 0, 30);
  c.interval.left_outer = Chance(rng, 0.5);
  c.asof.grace = c.interval.grace;
  c.asof.lookback = Chance(rng, 0.4) ? 0 : Uniform(rng, 1, 40);
  int keys = static_cast<int>(Uniform(rng, shape.min_keys, shape.max_keys));
  // Mostly within grace out of order; sometimes more (a share of those events are late too).
  int64_t disorder = Chance(rng, 0.7) ? c.interval.grace : c.interval.grace + Uniform(rng, 1, 20);
  // The inputs may start apart: the earlier one is then read alone for a while.
  int64_t offset = Chance(rng, 0.3) ? Uniform(rng, -100, 100) : 0;
  c.left = RandomInput(rng, keys, 1000, disorder, shape, 0);
  c.right = RandomInput(rng, keys, 1000 + offset, disorder, shape, 100000);
  return c;
}

struct EngineOutput {
  testing::JoinRun interval;
  testing::JoinRun asof;
  std::vector<std::string> errors;
};

EngineOutput RunEngine(const JoinCase& c) {
  testing::TempDir dir;
  testing::WriteJoinEvents(dir / "left.jsonl", c.left);
  testing::WriteJoinEvents(dir / "right.jsonl", c.right);
  Application app(testing::JoinAppOptions(dir));
  auto from = [&](const std::string& file) {
    return app.FromFile({.path = dir / file, .key = {"key"}, .timestamp_field = "ts"});
  };
  Stream left = from("left.jsonl"), right = from("right.jsonl");
  left.IntervalJoin(right, {.name = "ij",
                            .lower = milliseconds(c.interval.lower),
                            .upper = milliseconds(c.interval.upper),
                            .left_outer = c.interval.left_outer,
                            .grace = milliseconds(c.interval.grace),
                            .late_topic = "ij-late"})
      .ToFile(dir / "interval.jsonl");
  left.AsOfJoin(right, {.name = "asof",
                        .lookback = milliseconds(c.asof.lookback),
                        .grace = milliseconds(c.asof.grace),
                        .late_topic = "asof-late"})
      .ToFile(dir / "asof.jsonl");
  EngineOutput out;
  auto summary = app.Run();
  if (!summary.ok()) {
    out.errors.push_back("Run() failed: " + summary.status().ToString());
    return out;
  }
  if (!summary->completed) out.errors.push_back("the run did not complete");
  testing::ReadJoined(dir / "interval.jsonl", out.interval);
  testing::ReadJoinLate(dir / "data", "ij-late", out.interval);
  testing::ReadJoined(dir / "asof.jsonl", out.asof);
  testing::ReadJoinLate(dir / "data", "asof-late", out.asof);
  const int64_t late = static_cast<int64_t>(out.interval.late.size() + out.asof.late.size());
  if (summary->late != late) {
    out.errors.push_back("RunSummary::late is " + std::to_string(summary->late) + ", the late " +
                         "topics hold " + std::to_string(late));
  }
  for (const testing::JoinRun* run : {&out.interval, &out.asof}) {
    out.errors.insert(out.errors.end(), run->errors.begin(), run->errors.end());
  }
  return out;
}

// What `got` has that `want` has not, and the other way round (multisets, both sorted).
template <typename T>
std::string Difference(const std::vector<T>& want, std::vector<T> got,
                       std::string (*show)(const T&)) {
  std::sort(got.begin(), got.end());
  std::vector<T> missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::string s;
  for (size_t i = 0; i < missing.size() && i < 5; ++i)
    s += "    missing " + show(missing[i]) + "\n";
  for (size_t i = 0; i < extra.size() && i < 5; ++i) s += "    unexpected " + show(extra[i]) + "\n";
  if (missing.size() + extra.size() > 10) {
    s += "    (" + std::to_string(missing.size()) + " missing, " + std::to_string(extra.size()) +
         " unexpected in all)\n";
  }
  return s;
}

std::string ShowJoined(const ModelJoined& j) { return j.ToString(); }
std::string ShowLate(const ModelLate& l) {
  return l.key + "@" + std::to_string(l.ts) + " id " + std::to_string(l.id) + " late by " +
         std::to_string(l.late_by_ms);
}

// The results and late events of one join against its model; empty if they agree.
std::string Compare(const ModelJoinOutput& model, const testing::JoinRun& got) {
  return Difference(model.joined, got.joined, &ShowJoined) +
         Difference(model.late, got.late, &ShowLate);
}

// The as-of join emits each key's lefts in time order.
std::string AsOfOrder(const testing::JoinRun& got) {
  std::map<std::string, int64_t> last;
  for (const ModelJoined& j : got.joined) {
    auto [it, first] = last.emplace(j.key, j.ts);
    if (!first && j.ts < it->second) {
      return "    key " + j.key + ": " + j.ToString() + " after a result at " +
             std::to_string(it->second) + "\n";
    }
    it->second = j.ts;
  }
  return "";
}

std::string CaseJson(const JoinCase& c) {
  std::string s = "  left:\n";
  for (const ModelEvent& e : c.left) s += "    " + testing::JoinEventJson(e) + "\n";
  s += "  right:\n";
  for (const ModelEvent& e : c.right) s += "    " + testing::JoinEventJson(e) + "\n";
  return s;
}

// What the models produced over all cases of a check, so that a check whose cases never
// exercise a rule fails instead of passing vacuously.
struct Coverage {
  int64_t pairs = 0;
  int64_t nulls = 0;  // left-outer and as-of results without a right
  int64_t late = 0;
  void Add(const ModelJoinOutput& model) {
    for (const ModelJoined& j : model.joined) ++(j.right_id ? pairs : nulls);
    late += static_cast<int64_t>(model.late.size());
  }
};

// Runs `cases` random cases from `seed`; reports each case that disagrees with the models.
void Check(uint64_t seed, int cases, const Shape& shape) {
  std::mt19937_64 rng(seed);
  int failures = 0;
  Coverage coverage;
  for (int i = 0; i < cases && failures < 3; ++i) {
    JoinCase c = RandomCase(rng, shape);
    EngineOutput got = RunEngine(c);
    std::string problems;
    for (const std::string& e : got.errors) problems += "    " + e + "\n";
    if (got.errors.empty()) {
      ModelJoinOutput interval_model = RunIntervalModel(c.left, c.right, c.interval);
      ModelJoinOutput asof_model = RunAsOfModel(c.left, c.right, c.asof);
      coverage.Add(interval_model);
      coverage.Add(asof_model);
      std::string interval = Compare(interval_model, got.interval);
      std::string asof = Compare(asof_model, got.asof) + AsOfOrder(got.asof);
      if (!interval.empty()) problems += "  interval join:\n" + interval;
      if (!asof.empty()) problems += "  as-of join:\n" + asof;
    }
    if (problems.empty()) continue;
    ++failures;
    ADD_FAILURE() << "seed " << seed << " case " << i << ": " << c.Describe() << "\n"
                  << problems << (c.left.size() + c.right.size() <= 80 ? CaseJson(c) : "");
  }
  EXPECT_GT(coverage.pairs, 0);
  EXPECT_GT(coverage.nulls, 0);
  EXPECT_GT(coverage.late, 0);
}

TEST(JoinProperty, RandomStreamsMatchTheModels) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) Check(seed, 10, {});
}

TEST(JoinProperty, SmallStreamsMatchTheModels) {
  // Small enough to be printed whole when they disagree.
  Check(11, 60, {.min_keys = 1, .max_keys = 3, .min_events = 1, .max_events = 12, .late = 0.1});
}

TEST(JoinProperty, OneBusyKeyMatchesTheModels) {
  Check(21, 20, {.min_keys = 1, .max_keys = 1, .min_events = 200, .max_events = 600});
}

TEST(JoinProperty, ManyLateEventsMatchTheModels) {
  Check(31, 25, {.min_keys = 2, .max_keys = 6, .late = 0.3});
}

TEST(JoinProperty, ManyKeysMatchTheModels) {
  Check(41, 12, {.min_keys = 60, .max_keys = 200, .min_events = 400, .max_events = 1500});
}

}  // namespace
}  // namespace weir
