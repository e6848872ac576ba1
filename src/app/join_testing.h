// Test support for the interval and as-of joins: two JSON-lines inputs, one join, its results
// to a file and its late events to a topic, all through a real Application in a temp dir; the
// outputs are read back in the terms of the models (join/time_join_model.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "app/testing.h"
#include "dataflow/keyed_time_join.h"
#include "join/time_join_model.h"
#include "state/task_store.h"
#include "weir/weir.h"

namespace weir::testing {

using join::testing::ModelEvent;
using join::testing::ModelJoined;
using join::testing::ModelLate;

// Builds the join of `left` with `right` (the step under test).
using JoinBuilder = std::function<Stream(Stream left, Stream right)>;

struct JoinRun {
  Status status;
  RunSummary summary;
  std::vector<ModelJoined> joined;  // in output order
  std::vector<ModelLate> late;      // in topic order
  std::vector<std::string> errors;  // output lines not in the promised form
};

inline std::string JoinEventJson(const ModelEvent& e) {
  std::string s = "{\"key\":";
  AppendJsonString(s, e.key);
  return s + ",\"ts\":" + std::to_string(e.ts) + ",\"id\":" + std::to_string(e.id) + "}";
}

inline void WriteJoinEvents(const std::string& path, const std::vector<ModelEvent>& events) {
  std::vector<std::string> lines;
  for (const ModelEvent& e : events) lines.push_back(JoinEventJson(e));
  WriteLines(path, lines);
}

// The application of a join test: inputs `dir`/left.jsonl and right.jsonl (read at `max_rate`
// records/s each, 0: unthrottled), results to `dir`/out.jsonl.
inline void BuildJoinPipeline(Application& app, const TempDir& dir, const JoinBuilder& join,
                              double max_rate = 0) {
  auto from = [&](const std::string& file) {
    return app.FromFile(
        {.path = dir / file, .key = {"key"}, .timestamp_field = "ts", .max_rate = max_rate});
  };
  join(from("left.jsonl"), from("right.jsonl")).ToFile(dir / "out.jsonl");
}

// No crash here: durability is not what these tests are about (fsync never).
inline ApplicationOptions JoinAppOptions(const TempDir& dir) {
  return {.name = "joins",
          .data_dir = dir / "data",
          .checkpoint_interval = std::chrono::milliseconds(20),
          .fsync = FsyncPolicy::kNever};
}

// {"key", "timestamp", "value": {"left": {"id", ...}, "right": {"id", ...} | null}} per line.
inline void ReadJoined(const std::string& path, JoinRun& run) {
  for (const std::string& line : ReadLines(path)) {
    auto v = Value::Parse(line);
    const Value* key = v.ok() ? v->Find("key") : nullptr;
    const Value* ts = v.ok() ? v->Find("timestamp") : nullptr;
    const Value* left = v.ok() ? v->FindPath("value.left.id") : nullptr;
    const Value* right = v.ok() ? v->FindPath("value.right") : nullptr;
    const Value* right_id = right != nullptr && right->is_object() ? right->Find("id") : nullptr;
    if (key == nullptr || !key->is_string() || ts == nullptr || !ts->is_int() || left == nullptr ||
        !left->is_int() || right == nullptr ||
        !(right->is_null() || (right_id != nullptr && right_id->is_int()))) {
      run.errors.push_back("unexpected output line: " + line);
      continue;
    }
    run.joined.push_back({std::string(key->as_string()), ts->as_int(), left->as_int(),
                          right_id ? std::optional<int64_t>(right_id->as_int()) : std::nullopt});
  }
}

// {"reason", "late_by_ms", "value": <the event>} under the event's key and time.
inline void ReadJoinLate(const std::string& data_dir, const std::string& topic, JoinRun& run) {
  for (const TopicRecord& r : ReadTopic(data_dir, topic)) {
    auto key = Value::Parse(r.key_json);
    const Value* reason = r.value.Find("reason");
    const Value* late_by = r.value.Find("late_by_ms");
    const Value* id = r.value.FindPath("value.id");
    const Value* ts = r.value.FindPath("value.ts");
    if (!key.ok() || !key->is_string() || reason == nullptr || !reason->is_string() ||
        reason->as_string().find("watermark") == std::string::npos || late_by == nullptr ||
        !late_by->is_int() || id == nullptr || !id->is_int() || ts == nullptr || !ts->is_int() ||
        ts->as_int() != r.timestamp) {
      run.errors.push_back("unexpected late record: key " + r.key_json + " value " +
                           r.value.ToJson());
      continue;
    }
    run.late.push_back(
        {std::string(key->as_string()), r.timestamp, late_by->as_int(), id->as_int()});
  }
}

// One run of the join application in `dir` (inputs written). With `stop_after` >= 0 it stops
// at its first checkpoint past that many records read; `max_rate` throttles each input so that
// checkpoints fall mid-input.
inline Result<RunSummary> RunJoinApp(const TempDir& dir, const JoinBuilder& join,
                                     int64_t stop_after = -1, double max_rate = 0) {
  ApplicationOptions options = JoinAppOptions(dir);
  Application* running = nullptr;
  if (stop_after >= 0) {
    options.checkpoint_interval = std::chrono::milliseconds(10);
    options.on_checkpoint = [&running, stop_after](int64_t, int64_t in) {
      if (in > stop_after) running->Stop();
    };
  }
  Application app(options);
  running = &app;
  BuildJoinPipeline(app, dir, join, max_rate);
  return app.Run();
}

// Runs the join over `left` and `right` to the end of the input, after `stops` runs that each
// stop at a checkpoint once `stop_after` more records are read; reads its results and the late
// topic `late_topic`.
inline JoinRun RunJoin(const std::vector<ModelEvent>& left, const std::vector<ModelEvent>& right,
                       const JoinBuilder& join, const std::string& late_topic = "joins.late",
                       int stops = 0, int64_t stop_after = 0) {
  TempDir dir;
  WriteJoinEvents(dir / "left.jsonl", left);
  WriteJoinEvents(dir / "right.jsonl", right);
  JoinRun run;
  // Records/s per input when stopping: slow enough that a poll rarely brings more than a task's
  // batch (2048 records) of both inputs together.
  constexpr double kRate = 2000;
  for (int i = 0; i <= stops; ++i) {
    const bool last = i == stops;
    auto summary = RunJoinApp(dir, join, last ? -1 : stop_after, stops > 0 ? kRate : 0);
    run.status = summary.status();
    if (!summary.ok()) return run;
    run.summary = *summary;
    if (summary->completed != last || (i > 0 && summary->restored_checkpoint == 0)) {
      run.errors.push_back("run " + std::to_string(i) + " completed " +
                           std::to_string(summary->completed) + " from checkpoint " +
                           std::to_string(summary->restored_checkpoint));
    }
  }
  ReadJoined(dir / "out.jsonl", run);
  ReadJoinLate(dir / "data", late_topic, run);
  return run;
}

// The grace of the joins of RestartInputs: wide, so that the order in which throttled inputs are
// read (in event-time order only as closely as their throttled polls allow) cannot make an
// event late in one run and not in another. Still, a key's state then spans hundreds of events
// across each restart.
inline constexpr int64_t kRestartGrace = 5000;

// Inputs for a run with restarts: 7 keys, one event per 10 ms on each input, out of order by up
// to 15 ms, with equal times across inputs; every 97th event of each input also has a late twin,
// 100 s behind, late in any reading order.
inline void RestartInputs(std::vector<ModelEvent>& left, std::vector<ModelEvent>& right) {
  for (int i = 0; i < 1500; ++i) {
    const int64_t t = 10 * i;
    const std::string key = "k" + std::to_string(i % 7);
    left.push_back({key, t - (i % 3 == 0 ? 15 : 0), i});
    right.push_back({key, t + (i % 2 == 0 ? 0 : 5) - (i % 5), 10000 + i});
    if (i % 97 == 0 && i > 0) {
      left.push_back({key, t - 100'000, 20000 + i});
      right.push_back({key, t - 100'000, 30000 + i});
    }
  }
}

// "key@ts left L right R|null" per result, in output order; the run must have gone well.
inline std::vector<std::string> Results(const JoinRun& run) {
  EXPECT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_TRUE(run.errors.empty()) << run.errors.front();
  std::vector<std::string> out;
  for (const ModelJoined& j : run.joined) out.push_back(j.ToString());
  return out;
}

// Where two lists of results first differ, and what is in one and not the other ("" if equal).
inline std::string ResultsDifference(const std::vector<std::string>& want,
                                     const std::vector<std::string>& got) {
  if (want == got) return "";
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  std::string s = "first difference at result " + std::to_string(i) + " of " +
                  std::to_string(want.size()) + " wanted, " + std::to_string(got.size()) + " got";
  std::vector<std::string> a = want, b = got, only;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only));
  for (size_t k = 0; k < only.size() && k < 10; ++k) s += "\n  missing " + only[k];
  only.clear();
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only));
  for (size_t k = 0; k < only.size() && k < 10; ++k) s += "\n  unexpected " + only[k];
  return s;
}

// The ids of the late events, in topic order or sorted.
inline std::vector<int64_t> LateIds(const JoinRun& run, bool sorted = false) {
  std::vector<int64_t> ids;
  for (const ModelLate& l : run.late) ids.push_back(l.id);
  if (sorted) std::sort(ids.begin(), ids.end());
  return ids;
}

struct StoredJoinState {
  Status status;
  int64_t records_in = 0;
  size_t keys = 0;
  size_t events = 0;  // left and right entries
};

// Runs the join over one event per ms per input, 10 keys, in `dir`, and stops it at a checkpoint
// once more than `events` records are read. Returns the run's summary and the directory of its
// task's store.
inline Result<std::pair<RunSummary, std::filesystem::path>> StopALongRun(const TempDir& dir,
                                                                         const JoinBuilder& join,
                                                                         int events) {
  std::vector<ModelEvent> left, right;
  for (int i = 0; i < 2 * events; ++i) {
    left.push_back({"k" + std::to_string(i % 10), i, i});
    right.push_back({"k" + std::to_string(i % 10), i, 2 * events + i});
  }
  WriteJoinEvents(dir / "left.jsonl", left);
  WriteJoinEvents(dir / "right.jsonl", right);
  WEIR_ASSIGN_OR_RETURN(RunSummary summary, RunJoinApp(dir, join, events, 20000));
  if (summary.completed) return Status::Internal("the run did not stop");
  std::filesystem::path task = std::filesystem::path(dir / "data") / "apps" / "joins" / "tasks";
  for (const auto& entry : std::filesystem::directory_iterator(task)) task = entry.path();
  return std::pair(summary, task);
}

// StopALongRun, then counts what the step named `step` holds. `left_flags`: the join's
// (dataflow::JoinKeyState).
inline StoredJoinState StateAfterALongRun(const JoinBuilder& join, const std::string& step,
                                          int events, bool left_flags) {
  TempDir dir;
  StoredJoinState stored;
  auto stopped = StopALongRun(dir, join, events);
  if (!stopped.ok()) {
    stored.status = stopped.status();
    return stored;
  }
  stored.records_in = stopped->first.records_in;
  auto store = state::TaskStore::Open(stopped->second, {step});
  if (!store.ok()) {
    stored.status = store.status();
    return stored;
  }
  Status layout;
  stored.status = (*store)->store(step).Scan("", "", false, [&](std::string_view, const Value& v) {
    ++stored.keys;
    Value copy = v;
    layout = dataflow::JoinKeyState::CheckEntries(copy, left_flags);
    if (!layout.ok()) return false;
    dataflow::JoinKeyState state(copy, left_flags);
    stored.events +=
        state.side(dataflow::kLeftInput).size() + state.side(dataflow::kRightInput).size();
    return true;
  });
  if (stored.status.ok()) stored.status = layout;
  return stored;
}

// StopALongRun, then replaces every value the step named `step` holds with `rewrite` of it (a
// state another build wrote), commits that, and runs the join again from there: what that run
// returns.
inline Result<RunSummary> ResumeFromRewrittenState(
    const JoinBuilder& join, const std::string& step,
    const std::function<Value(const Value&)>& rewrite) {
  TempDir dir;
  WEIR_ASSIGN_OR_RETURN(auto stopped, StopALongRun(dir, join, 2000));
  {
    WEIR_ASSIGN_OR_RETURN(auto store, state::TaskStore::Open(stopped.second, {step}));
    std::vector<std::pair<std::string, Value>> rewritten;
    WEIR_RETURN_IF_ERROR(
        store->store(step).Scan("", "", false, [&](std::string_view key, const Value& v) {
          rewritten.emplace_back(std::string(key), rewrite(v));
          return true;
        }));
    if (rewritten.empty()) return Status::Internal("the step holds no state to rewrite");
    for (auto& [key, value] : rewritten) store->store(step).Put(key, std::move(value));
    WEIR_RETURN_IF_ERROR(store->Prepare("rewritten"));
    WEIR_RETURN_IF_ERROR(store->Commit());
  }
  return RunJoinApp(dir, join);
}

}  // namespace weir::testing
