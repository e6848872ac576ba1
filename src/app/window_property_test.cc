// Property tests of windows: random streams run through a real weir::Application (file source,
// window, file sinks, late topic on the embedded log) and through the brute-force model of
// window/window_model.h, which was written from include/weir/window.h alone. Every key of every
// stream is a case; a mismatch is shrunk to a small stream and printed as JSON lines.
//
// Where the specification fixes an order, it is checked: a key's Current results per event in
// ascending start, its Final results per closing step in ascending end then start. Across keys
// nothing is ordered, and late events are compared as a set.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/testing.h"
#include "weir/weir.h"
#include "window/window_model.h"

namespace weir {
namespace {

// Scratch directories (the runs' logs and state) on tmpfs when the machine has one and TMPDIR
// does not say otherwise: these tests are about window semantics, not disks, and a run on a busy
// shared disk is several times slower.
[[maybe_unused]] const bool kScratchOnTmpfs = [] {
  if (std::getenv("TMPDIR") == nullptr && std::filesystem::is_directory("/dev/shm")) {
    setenv("TMPDIR", "/dev/shm", 0);
  }
  return true;
}();

using window::testing::ModelDefinition;
using window::testing::ModelEvent;
using window::testing::ModelKind;
using window::testing::ModelLate;
using window::testing::ModelOutput;
using window::testing::ModelResult;
using window::testing::RunWindowModel;
using Groups = std::vector<std::vector<ModelResult>>;

struct StreamCase {
  ModelDefinition def;
  std::vector<ModelEvent> events;
  bool filter = false;  // a Filter before the window drops the records marked "drop"
};

// ---------------------------------------------------------------------------------------------
// Random streams.

struct StreamShape {
  int min_keys = 20;
  int max_keys = 80;
  int events_per_key = 14;
  bool dead_letters = false;  // some records have a string "v" (Sum, Min, Max refuse them)
  bool filtered = false;      // some records are dropped by a filter before the window
};

int64_t Uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool Chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }

ModelDefinition RandomDefinition(std::mt19937_64& rng, ModelKind kind, bool partition) {
  ModelDefinition d;
  d.kind = kind;
  d.partition_closing = partition;
  if (d.is_count()) {
    d.size = Uniform(rng, 1, 6);
    d.step = kind == ModelKind::kCountHopping   ? Uniform(rng, 1, d.size)
             : kind == ModelKind::kCountSliding ? 1
                                                : d.size;
    return d;
  }
  d.size = kind == ModelKind::kSession ? Uniform(rng, 1, 30) : Uniform(rng, 1, 40);
  d.step = kind == ModelKind::kHopping ? Uniform(rng, 1, d.size) : d.size;
  d.grace = Chance(rng, 0.5) ? 0 : Uniform(rng, 0, 2 * d.size);
  return d;
}

// Keys that are prefixes of one another and carry separators, so that an engine that encodes
// keys into state prefixes ambiguously mixes their windows.
std::string KeyName(int i) {
  static const char* const kSpecial[] = {"k1|", "k1\x01", "k1/0", "k1 ", "k\"1", "k1.0", "ü1"};
  if (i % 11 == 10) return kSpecial[(i / 11) % 7];
  return "k" + std::to_string(i);
}

// Mostly increasing time with jitter, equal timestamps, bursts of one key, far-back events,
// timestamp 0; either one clock for the partition or one per key (keys that lag each other).
std::vector<ModelEvent> RandomEvents(std::mt19937_64& rng, const ModelDefinition& def,
                                     const StreamShape& shape) {
  int keys = static_cast<int>(Uniform(rng, shape.min_keys, shape.max_keys));
  int64_t n = keys * shape.events_per_key;
  int64_t unit = def.is_count() ? 10 : std::max<int64_t>(def.size, 2);
  bool per_key_clocks = Chance(rng, 0.4);
  double far_back = Chance(rng, 0.5) ? 0.03 : 0.12;
  std::vector<int64_t> clocks(keys, Chance(rng, 0.5) ? 0 : Uniform(rng, 0, 3 * unit));
  int64_t global_clock = clocks[0];
  std::vector<ModelEvent> events;
  int key = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!Chance(rng, 0.35)) {  // else a burst: the same key again
      // A skewed pick: some keys are much busier than others.
      key = Chance(rng, 0.5) ? static_cast<int>(Uniform(rng, 0, std::min(keys - 1, 4)))
                             : static_cast<int>(Uniform(rng, 0, keys - 1));
    }
    int64_t& clock = per_key_clocks ? clocks[key] : global_clock;
    double r = std::uniform_real_distribution<double>(0, 1)(rng);
    if (r < 0.25) {
      // the same time again
    } else if (r < 0.9) {
      clock += Uniform(rng, 1, std::max<int64_t>(1, unit / 2));
    } else {
      clock += Uniform(rng, unit, 4 * unit);  // a quiet spell
    }
    int64_t ts = clock;
    double j = std::uniform_real_distribution<double>(0, 1)(rng);
    if (j < far_back) {
      ts -= Uniform(rng, unit, 6 * unit);
    } else if (j < 0.4) {
      ts -= Uniform(rng, 0, unit + def.grace);
    }
    if (Chance(rng, 0.01)) ts = 0;
    ts = std::max<int64_t>(ts, 0);
    ModelEvent e;
    e.key = KeyName(key);
    e.ts = ts;
    e.id = i;
    double v = std::uniform_real_distribution<double>(0, 1)(rng);
    if (v >= 0.06) e.value = Uniform(rng, -50, 50);  // else missing or null
    if (shape.dead_letters && Chance(rng, 0.03)) e.fate = ModelEvent::Fate::kDeadLetter;
    if (shape.filtered && Chance(rng, 0.06)) {
      e.fate = ModelEvent::Fate::kFiltered;
      e.ts = std::max<int64_t>(0, clock + Uniform(rng, -unit, 2 * unit));  // may lead the rest
    }
    events.push_back(std::move(e));
  }
  return events;
}

// ---------------------------------------------------------------------------------------------
// Running the engine.

WindowDefinition ToEngine(const ModelDefinition& d) {
  using ms = std::chrono::milliseconds;
  switch (d.kind) {
    case ModelKind::kTumbling:
      return WindowDefinition::Tumbling(ms(d.size)).Grace(ms(d.grace));
    case ModelKind::kHopping:
      return WindowDefinition::Hopping(ms(d.size), ms(d.step)).Grace(ms(d.grace));
    case ModelKind::kSliding:
      return WindowDefinition::Sliding(ms(d.size)).Grace(ms(d.grace));
    case ModelKind::kSession:
      return WindowDefinition::Session(ms(d.size)).Grace(ms(d.grace));
    case ModelKind::kCountTumbling:
      return WindowDefinition::CountTumbling(d.size);
    case ModelKind::kCountHopping:
      return WindowDefinition::CountHopping(d.size, d.step);
    case ModelKind::kCountSliding:
      return WindowDefinition::CountSliding(d.size);
  }
  return WindowDefinition::CountTumbling(1);
}

std::string EventJson(const ModelEvent& e) {
  std::string s = "{\"key\":";
  AppendJsonString(s, e.key);
  s += ",\"ts\":" + std::to_string(e.ts);
  if (e.fate == ModelEvent::Fate::kDeadLetter) {
    s += ",\"v\":\"x\"";
  } else if (e.value) {
    s += ",\"v\":" + std::to_string(*e.value);
  } else if (e.id % 2 == 0) {
    s += ",\"v\":null";
  }
  s += ",\"id\":" + std::to_string(e.id);
  if (e.fate == ModelEvent::Fate::kFiltered) s += ",\"drop\":true";
  return s + "}";
}

struct EngineOutput {
  std::map<std::string, std::vector<ModelResult>> final_results;
  std::map<std::string, std::vector<ModelResult>> current_results;
  std::vector<ModelLate> late_final;    // from the late topic of the Final branch
  std::vector<ModelLate> late_current;  // and of the Current branch
  std::vector<ModelLate> on_late;       // what the Final branch's OnLate was given
  bool on_late_set = false;             // (runs with stops do not set OnLate)
  std::vector<std::string> errors;      // a run that failed, or output not in the promised form
};

std::optional<int64_t> IntOrNull(const Value* v, const char* what, std::string& error) {
  if (v == nullptr) {
    error = std::string("no field ") + what;
    return std::nullopt;
  }
  if (v->is_null()) return std::nullopt;
  if (!v->is_int()) error = std::string("field ") + what + " is not an integer: " + v->ToJson();
  return v->is_int() ? std::optional<int64_t>(v->as_int()) : std::nullopt;
}

// {"key": K, "timestamp": E - 1, "value": {"start", "end", "count", "sum", "min", "max", "ids"}}.
void ParseResults(const std::string& path, std::map<std::string, std::vector<ModelResult>>& out,
                  std::vector<std::string>& errors) {
  for (const std::string& line : weir::testing::ReadLines(path)) {
    auto parsed = Value::Parse(line);
    std::string error;
    const Value* key = parsed.ok() ? parsed->Find("key") : nullptr;
    const Value* ts = parsed.ok() ? parsed->Find("timestamp") : nullptr;
    const Value* v = parsed.ok() ? parsed->Find("value") : nullptr;
    if (key == nullptr || !key->is_string() || ts == nullptr || !ts->is_int() || v == nullptr) {
      errors.push_back("unexpected output line: " + line);
      continue;
    }
    ModelResult r;
    std::optional<int64_t> start = IntOrNull(v->Find("start"), "start", error);
    std::optional<int64_t> end = IntOrNull(v->Find("end"), "end", error);
    std::optional<int64_t> count = IntOrNull(v->Find("count"), "count", error);
    std::optional<int64_t> sum = IntOrNull(v->Find("sum"), "sum", error);
    r.min = IntOrNull(v->Find("min"), "min", error);
    r.max = IntOrNull(v->Find("max"), "max", error);
    const Value* ids = v->Find("ids");
    if (ids == nullptr || !ids->is_array()) {
      error = "no array ids";
    } else {
      for (const Value& id : ids->as_array()) r.ids.push_back(id.is_int() ? id.as_int() : -1);
    }
    if (!start || !end || !count || !sum) error = "a null start, end, count or sum";
    if (error.empty() && ts->as_int() != *end - 1) {
      error = "timestamp " + std::to_string(ts->as_int()) + " is not end - 1";
    }
    if (!error.empty()) {
      errors.push_back(error + ": " + line);
      continue;
    }
    r.start = *start;
    r.end = *end;
    r.count = *count;
    r.sum = *sum;
    out[std::string(key->as_string())].push_back(std::move(r));
  }
}

// {"reason", "late_by_ms", "value": <the record's value>} under the record's key and time.
void ParseLate(const std::string& data_dir, const std::string& topic, std::vector<ModelLate>& out,
               std::vector<std::string>& errors) {
  for (const weir::testing::TopicRecord& r : weir::testing::ReadTopic(data_dir, topic)) {
    auto key = Value::Parse(r.key_json);
    const Value* reason = r.value.Find("reason");
    const Value* late_by = r.value.Find("late_by_ms");
    const Value* value = r.value.Find("value");
    const Value* id = value ? value->Find("id") : nullptr;
    const Value* ts = value ? value->Find("ts") : nullptr;
    if (!key.ok() || !key->is_string() || reason == nullptr || !reason->is_string() ||
        reason->as_string().empty() || late_by == nullptr || !late_by->is_int() || id == nullptr ||
        !id->is_int() || ts == nullptr || !ts->is_int() || ts->as_int() != r.timestamp) {
      errors.push_back("unexpected late record: key " + r.key_json + " timestamp " +
                       std::to_string(r.timestamp) + " value " + r.value.ToJson());
      continue;
    }
    out.push_back({std::string(key->as_string()), r.timestamp, late_by->as_int(), id->as_int()});
  }
}

// The pipeline under test: one Final branch and one Current branch of the same windows, each
// with its own late topic, read from the stream's JSON lines file in `dir`.
void BuildPipeline(Application& app, const StreamCase& c, const weir::testing::TempDir& dir,
                   double max_rate = 0, std::vector<ModelLate>* on_late = nullptr) {
  Stream source = app.FromFile(
      {.path = dir / "in.jsonl", .key = {"key"}, .timestamp_field = "ts", .max_rate = max_rate});
  if (c.filter) {
    source = source.Filter([](const Value& v) { return v.Find("drop") == nullptr; });
  }
  auto aggregations = [] {
    return std::vector<std::pair<std::string, AggregatorPtr>>{{"count", agg::Count()},
                                                              {"sum", agg::Sum("v")},
                                                              {"min", agg::Min("v")},
                                                              {"max", agg::Max("v")},
                                                              {"ids", agg::Collect("id")}};
  };
  for (bool final : {true, false}) {
    WindowedStream w = source.Window(ToEngine(c.def));
    w.Agg(aggregations()).LateTopic(final ? "late-final" : "late-current");
    if (!c.def.is_count()) {
      w.Closing(c.def.partition_closing ? Closing::kPartition : Closing::kKey);
    }
    if (final && on_late != nullptr) {
      // One task (one source partition): called on its thread alone, before Run() returns.
      w.OnLate([on_late](const LateRecord& late) {
        const Value* id = late.record.value.Find("id");
        on_late->push_back({std::string(late.record.key.bytes()), late.record.timestamp.value(), late.late_by_ms,
                            id != nullptr && id->is_int() ? id->as_int() : -1});
      });
    }
    (final ? w.Final() : w.Current()).ToFile(dir / (final ? "final.jsonl" : "current.jsonl"));
  }
}

void WriteInput(const StreamCase& c, const weir::testing::TempDir& dir) {
  std::vector<std::string> lines;
  for (const ModelEvent& e : c.events) lines.push_back(EventJson(e));
  weir::testing::WriteLines(dir / "in.jsonl", lines);
}

ApplicationOptions Options(const weir::testing::TempDir& dir) {
  ApplicationOptions options;
  options.name = "windows";
  options.data_dir = dir / "data";
  options.checkpoint_interval = std::chrono::milliseconds(20);
  // No crash here: durability is not what these tests are about.
  options.fsync = FsyncPolicy::kNever;
  return options;
}

// What the runs in `dir` wrote. REQUIRES: no run holds the data directory.
void ReadOutputs(const StreamCase& c, const weir::testing::TempDir& dir, EngineOutput& out) {
  ParseResults(dir / "final.jsonl", out.final_results, out.errors);
  ParseResults(dir / "current.jsonl", out.current_results, out.errors);
  if (!c.def.is_count()) {
    ParseLate(dir / "data", "late-final", out.late_final, out.errors);
    ParseLate(dir / "data", "late-current", out.late_current, out.errors);
  }
}

// Runs the stream through a real application, to the end of its input.
EngineOutput RunEngine(const StreamCase& c) {
  weir::testing::TempDir dir;
  WriteInput(c, dir);
  Application app(Options(dir));
  EngineOutput out;
  out.on_late_set = true;
  BuildPipeline(app, c, dir, 0, &out.on_late);
  auto summary = app.Run();
  if (!summary.ok()) {
    out.errors.push_back("Run() failed: " + summary.status().ToString());
    return out;
  }
  if (!summary->completed) out.errors.push_back("the run did not complete");
  ReadOutputs(c, dir, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Comparing.

std::string Show(const std::vector<ModelResult>& rs) {
  std::string s;
  for (const ModelResult& r : rs) s += "      " + r.ToString() + "\n";
  return s.empty() ? "      (none)\n" : s;
}

std::string ShowGroups(const Groups& gs) {
  std::string s;
  for (size_t i = 0; i < gs.size(); ++i) {
    s += "    step " + std::to_string(i) + ":\n" + Show(gs[i]);
  }
  return s.empty() ? "      (none)\n" : s;
}

// A key's results against the model's groups: each group in turn, as a multiset, in the order
// the specification gives within a step (`order`: the projection that must be ascending).
// Returns an empty string if they agree, else what differs.
std::string CompareGroups(
    const Groups& want, const std::vector<ModelResult>& got, bool order_is_open,
    const std::function<std::pair<int64_t, int64_t>(const ModelResult&)>& order) {
  std::vector<ModelResult> flat;
  for (const auto& g : want) flat.insert(flat.end(), g.begin(), g.end());
  if (flat.size() != got.size()) {
    return "expected " + std::to_string(flat.size()) + " results, got " +
           std::to_string(got.size());
  }
  if (order_is_open) {
    std::vector<ModelResult> a = flat, b = got;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b ? "" : "the results differ (compared as a set)";
  }
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<ModelResult> a = want[i];
    std::vector<ModelResult> b(got.begin() + at, got.begin() + at + a.size());
    for (size_t j = 0; j < a.size(); ++j) {
      if (order(a[j]) != order(b[j])) {
        std::vector<ModelResult> sa = a, sb = b;
        std::sort(sa.begin(), sa.end());
        std::sort(sb.begin(), sb.end());
        return std::string(sa == sb ? "the order differs" : "the results differ") + " at step " +
               std::to_string(i) + " (results #" + std::to_string(at) + "..)";
      }
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) {
      return "the results differ at step " + std::to_string(i) + " (results #" +
             std::to_string(at) + "..)";
    }
    at += a.size();
  }
  return "";
}

struct Mismatch {
  std::string key;
  std::string what;
};

// Every key's mismatches (the first line of each), and the run's errors.
std::vector<Mismatch> Compare(const StreamCase& c, const ModelOutput& model,
                              const EngineOutput& got) {
  std::vector<Mismatch> out;
  for (const std::string& e : got.errors) out.push_back({"", e});
  std::set<std::string> keys;
  for (const auto& [k, _] : model.final_results) keys.insert(k);
  for (const auto& [k, _] : model.current_results) keys.insert(k);
  for (const auto& [k, _] : got.final_results) keys.insert(k);
  for (const auto& [k, _] : got.current_results) keys.insert(k);
  for (const ModelLate& l : model.late) keys.insert(l.key);
  for (const ModelLate& l : got.late_final) keys.insert(l.key);
  for (const ModelLate& l : got.late_current) keys.insert(l.key);
  static const Groups kNoGroups;
  static const std::vector<ModelResult> kNoResults;
  auto groups = [](const std::map<std::string, Groups>& m, const std::string& k) -> const Groups& {
    auto it = m.find(k);
    return it == m.end() ? kNoGroups : it->second;
  };
  auto results = [](const std::map<std::string, std::vector<ModelResult>>& m,
                    const std::string& k) -> const std::vector<ModelResult>& {
    auto it = m.find(k);
    return it == m.end() ? kNoResults : it->second;
  };
  auto late_of = [](const std::vector<ModelLate>& all, const std::string& k) {
    std::vector<ModelLate> v;
    for (const ModelLate& l : all) {
      if (l.key == k) v.push_back(l);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  for (const std::string& k : keys) {
    std::string f = CompareGroups(groups(model.final_results, k), results(got.final_results, k),
                                  model.final_order_open.count(k) > 0,
                                  [](const ModelResult& r) { return std::pair(r.end, r.start); });
    if (!f.empty()) out.push_back({k, "Final: " + f});
    std::string cur =
        CompareGroups(groups(model.current_results, k), results(got.current_results, k), false,
                      [](const ModelResult& r) { return std::pair(r.start, int64_t{0}); });
    if (!cur.empty()) out.push_back({k, "Current: " + cur});
    if (!c.def.is_count()) {
      std::vector<ModelLate> want = late_of(model.late, k);
      if (late_of(got.late_final, k) != want) out.push_back({k, "late events (Final branch)"});
      if (late_of(got.late_current, k) != want) out.push_back({k, "late events (Current branch)"});
      if (got.on_late_set && late_of(got.on_late, k) != want) {
        out.push_back({k, "late events given to OnLate"});
      }
    }
  }
  return out;
}

std::string ShowLate(std::vector<ModelLate> late, const std::string& key) {
  std::sort(late.begin(), late.end());
  std::string s;
  for (const ModelLate& l : late) {
    if (l.key != key) continue;
    s += "      id " + std::to_string(l.id) + " ts " + std::to_string(l.ts) + " late_by_ms " +
         std::to_string(l.late_by_ms) + "\n";
  }
  return s.empty() ? "      (none)\n" : s;
}

// The whole story of one key: its events (JSON lines, annotated with the closing watermark the
// model judged each by), and expected against got.
std::string Report(const StreamCase& c, const ModelOutput& model, const EngineOutput& got,
                   const std::string& key) {
  std::ostringstream s;
  s << "  definition: " << c.def.Describe() << (c.filter ? ", a filter before the window" : "")
    << "\n";
  s << "  input (JSON lines, arrival order; the key's events"
    << (c.def.partition_closing ? ", and the records of other keys" : "") << "):\n";
  for (const ModelEvent& e : c.events) {
    if (!c.def.partition_closing && e.key != key) continue;
    s << "    " << EventJson(e);
    auto wm = model.watermark_of.find(e.id);
    if (wm != model.watermark_of.end()) s << "    <- watermark " << wm->second;
    s << "\n";
  }
  auto groups = [&](const std::map<std::string, Groups>& m) {
    auto it = m.find(key);
    return it == m.end() ? Groups{} : it->second;
  };
  auto results = [&](const std::map<std::string, std::vector<ModelResult>>& m) {
    auto it = m.find(key);
    return it == m.end() ? std::vector<ModelResult>{} : it->second;
  };
  s << "  key " << key << "\n";
  s << "  expected Final:\n" << ShowGroups(groups(model.final_results));
  s << "  got Final:\n" << Show(results(got.final_results));
  s << "  expected Current:\n" << ShowGroups(groups(model.current_results));
  s << "  got Current:\n" << Show(results(got.current_results));
  if (!c.def.is_count()) {
    s << "  expected late:\n" << ShowLate(model.late, key);
    s << "  got late (Final branch):\n" << ShowLate(got.late_final, key);
    s << "  got late (Current branch):\n" << ShowLate(got.late_current, key);
  }
  return s.str();
}

bool Fails(const StreamCase& c) {
  if (c.events.empty()) return false;
  return !Compare(c, RunWindowModel(c.def, c.events), RunEngine(c)).empty();
}

// A smaller stream that still fails: first the failing key alone (its windows do not depend on
// other keys unless the partition closes them), then chunks of events removed while it still
// fails, within a budget of engine runs.
StreamCase Shrink(StreamCase c, const std::string& key) {
  int budget = 60;
  if (!c.def.partition_closing && !key.empty()) {
    StreamCase alone = c;
    alone.events.clear();
    for (const ModelEvent& e : c.events) {
      if (e.key == key) alone.events.push_back(e);
    }
    --budget;
    if (Fails(alone)) c = alone;
  }
  for (size_t chunk = std::max<size_t>(1, c.events.size() / 2); chunk >= 1 && budget > 0;) {
    bool removed = false;
    for (size_t at = 0; at < c.events.size() && budget > 0;) {
      StreamCase smaller = c;
      smaller.events.erase(smaller.events.begin() + at,
                           smaller.events.begin() + std::min(c.events.size(), at + chunk));
      --budget;
      if (Fails(smaller)) {
        c = smaller;
        removed = true;
      } else {
        at += chunk;
      }
    }
    if (!removed) {
      if (chunk == 1) break;
      chunk /= 2;
    }
  }
  return c;
}

// Runs `streams` random streams of one window kind and closing; returns the number of key cases.
// One hand-written stream against the model, with a report of every key that differs.
void ExpectMatchesModel(const StreamCase& c) {
  ModelOutput model = RunWindowModel(c.def, c.events);
  EngineOutput got = RunEngine(c);
  std::vector<Mismatch> mismatches = Compare(c, model, got);
  std::set<std::string> reported;
  for (const Mismatch& m : mismatches) {
    if (!reported.insert(m.key).second) continue;
    ADD_FAILURE() << m.what << "\n" << Report(c, model, got, m.key);
  }
}

// `coverage` sums the model's counts of the situations the streams reached.
int64_t CheckRandomStreams(ModelKind kind, bool partition, uint64_t seed, int streams,
                           const StreamShape& shape, std::map<std::string, int64_t>& coverage) {
  std::mt19937_64 rng(seed);
  int64_t cases = 0;
  for (int i = 0; i < streams; ++i) {
    StreamCase c;
    c.def = RandomDefinition(rng, kind, partition);
    c.events = RandomEvents(rng, c.def, shape);
    c.filter = shape.filtered;
    ModelOutput model = RunWindowModel(c.def, c.events);
    for (const auto& [what, n] : model.coverage) coverage[what] += n;
    EngineOutput got = RunEngine(c);
    std::vector<Mismatch> mismatches = Compare(c, model, got);
    std::set<std::string> keys;
    for (const ModelEvent& e : c.events) keys.insert(e.key);
    cases += static_cast<int64_t>(keys.size());
    if (mismatches.empty()) continue;
    std::set<std::string> failing;
    std::string summary;
    for (const Mismatch& m : mismatches) {
      failing.insert(m.key);
      if (summary.size() < 2000) summary += "  key " + m.key + ": " + m.what + "\n";
    }
    ADD_FAILURE() << "seed " << seed << " stream " << i << " (" << c.def.Describe()
                  << "): " << failing.size() << " of " << keys.size() << " keys differ\n"
                  << summary;
    const std::string& key = mismatches.front().key;
    if (!got.errors.empty() && key.empty()) return cases;  // the run itself failed
    StreamCase small = Shrink(c, key);
    ModelOutput small_model = RunWindowModel(small.def, small.events);
    EngineOutput small_got = RunEngine(small);
    std::vector<Mismatch> small_mismatches = Compare(small, small_model, small_got);
    std::string small_key = small_mismatches.empty() ? key : small_mismatches.front().key;
    ADD_FAILURE() << "smallest failing stream found (" << small.events.size() << " events):\n"
                  << (small_mismatches.empty() ? "  (it no longer fails)\n"
                                               : "  " + small_mismatches.front().what + "\n")
                  << Report(small, small_model, small_got, small_key);
    return cases;  // one reproduction per test is enough
  }
  return cases;
}

void Check(ModelKind kind, bool partition, uint64_t seed, int streams, StreamShape shape) {
  std::map<std::string, int64_t> coverage;
  int64_t cases = CheckRandomStreams(kind, partition, seed, streams, shape, coverage);
  std::cout << "  " << streams << " streams, " << cases << " key cases;";
  for (const auto& [what, n] : coverage) std::cout << " " << what << ": " << n << ";";
  std::cout << "\n";
  ::testing::Test::RecordProperty("key_cases", static_cast<int>(cases));
}

// An admissible event at the time of a sliding window that already closed and was emitted: its
// own window is that one, emitted again at once with every stored event in it (window.h:
// "its own window is emitted at once (Final) with every stored event in it").
TEST(WindowProperty, SlidingEventAtTheTimeOfAnEmittedWindow) {
  for (bool partition : {false, true}) {
    StreamCase c;
    c.def = {.kind = ModelKind::kSliding,
             .size = 26,
             .step = 26,
             .grace = 32,
             .partition_closing = partition};
    c.events = {{"k", 351, 9, 0}, {"k", 396, 1, 1}, {"k", 351, -14, 2}};
    ExpectMatchesModel(c);
  }
  // The same when the key has no other window when its event comes: the partition watermark
  // closed its only one.
  StreamCase c;
  c.def = {
      .kind = ModelKind::kSliding, .size = 26, .step = 26, .grace = 32, .partition_closing = true};
  c.events = {{"k", 351, 9, 0}, {"other", 396, 1, 1}, {"k", 351, -14, 2}};
  ExpectMatchesModel(c);
  // And when the record that moved the partition watermark was dropped by a filter.
  c.filter = true;
  c.events[1].fate = ModelEvent::Fate::kFiltered;
  ExpectMatchesModel(c);
}

StreamShape KeyShape() { return {.dead_letters = true}; }
// Under partition closing every key's windows depend on every other key's events: fewer keys,
// so the partition watermark moves with each of them; some dead letters and records a filter
// drops, which move it too.
StreamShape PartitionShape() {
  return {
      .min_keys = 3, .max_keys = 25, .events_per_key = 20, .dead_letters = true, .filtered = true};
}

TEST(WindowProperty, TumblingKeyClosing) {
  Check(ModelKind::kTumbling, false, 101, 48, KeyShape());
}
TEST(WindowProperty, TumblingPartitionClosing) {
  Check(ModelKind::kTumbling, true, 102, 60, PartitionShape());
}
TEST(WindowProperty, HoppingKeyClosing) { Check(ModelKind::kHopping, false, 201, 48, KeyShape()); }
TEST(WindowProperty, HoppingPartitionClosing) {
  Check(ModelKind::kHopping, true, 202, 60, PartitionShape());
}
TEST(WindowProperty, SlidingKeyClosing) { Check(ModelKind::kSliding, false, 301, 48, KeyShape()); }
TEST(WindowProperty, SlidingPartitionClosing) {
  Check(ModelKind::kSliding, true, 302, 60, PartitionShape());
}
TEST(WindowProperty, SessionKeyClosing) { Check(ModelKind::kSession, false, 401, 48, KeyShape()); }
TEST(WindowProperty, SessionPartitionClosing) {
  Check(ModelKind::kSession, true, 402, 60, PartitionShape());
}
TEST(WindowProperty, CountTumbling) {
  Check(ModelKind::kCountTumbling, false, 501, 32, KeyShape());
}
TEST(WindowProperty, CountHopping) { Check(ModelKind::kCountHopping, false, 601, 32, KeyShape()); }
TEST(WindowProperty, CountSliding) { Check(ModelKind::kCountSliding, false, 701, 32, KeyShape()); }

// Runs the stream of `dir` once per entry of `runs` (the definition each run uses), stopping
// every run but the last at its first checkpoint past `stop_after` records read, so that it
// resumes mid-input with windows open. Returns each run's records read, or nothing on failure.
std::vector<int64_t> RunWithStops(const std::vector<StreamCase>& runs,
                                  const weir::testing::TempDir& dir, int64_t stop_after,
                                  const std::function<void(size_t run)>& after_run = nullptr) {
  constexpr double kRate = 10000;  // records/s, so that checkpoints fall mid-input
  std::vector<int64_t> records_in;
  for (size_t run = 0; run < runs.size(); ++run) {
    bool last = run + 1 == runs.size();
    Application* running = nullptr;
    ApplicationOptions options = Options(dir);
    options.checkpoint_interval = std::chrono::milliseconds(10);
    if (!last) {
      options.on_checkpoint = [&running, stop_after](int64_t, int64_t in) {
        if (in > stop_after) running->Stop();
      };
    }
    Application app(options);
    running = &app;
    BuildPipeline(app, runs[run], dir, kRate);
    auto summary = app.Run();
    if (!summary.ok()) {
      ADD_FAILURE() << "run " << run << " (" << runs[run].def.Describe()
                    << "): " << summary.status().ToString();
      return {};
    }
    EXPECT_EQ(summary->completed, last) << "run " << run;
    if (run > 0) {
      EXPECT_GT(summary->restored_checkpoint, 0) << "run " << run;
    }
    records_in.push_back(summary->records_in);
    if (after_run) after_run(run);
  }
  return records_in;
}

void ExpectModelOutputs(const StreamCase& c, const ModelOutput& model, const EngineOutput& got,
                        const std::string& what) {
  std::vector<Mismatch> mismatches = Compare(c, model, got);
  if (mismatches.empty()) return;
  std::string summary;
  for (const Mismatch& m : mismatches) {
    if (summary.size() < 2000) summary += "  key " + m.key + ": " + m.what + "\n";
  }
  ADD_FAILURE() << mismatches.size() << " mismatches " << what << "\n"
                << summary << Report(c, model, got, mismatches.front().key);
}

// Stops the application twice at a checkpoint while sessions are open (many keys, a gap longer
// than the time between a key's events), resumes, and compares the outputs with the model: a
// restart must give the outputs of a run that never stopped.
void CheckStopsAndRestarts(bool partition, uint64_t seed) {
  std::mt19937_64 rng(seed);
  StreamCase c;
  c.def = {.kind = ModelKind::kSession,
           .size = 25,
           .step = 25,
           .grace = 5,
           .partition_closing = partition};
  c.events = RandomEvents(rng, c.def, {.min_keys = 150, .max_keys = 150, .events_per_key = 25});
  weir::testing::TempDir dir;
  WriteInput(c, dir);
  if (RunWithStops({c, c, c}, dir, 1200).empty()) return;
  EngineOutput got;
  ReadOutputs(c, dir, got);
  ExpectModelOutputs(c, RunWindowModel(c.def, c.events), got, "after stops and restarts");
}

TEST(WindowProperty, SessionsSurviveStopsAndRestartsKeyClosing) {
  for (uint64_t seed : {801, 803, 805}) CheckStopsAndRestarts(false, seed);
}
TEST(WindowProperty, SessionsSurviveStopsAndRestartsPartitionClosing) {
  for (uint64_t seed : {802, 804, 806}) CheckStopsAndRestarts(true, seed);
}

// A restart that changes the grace (window.h: grace may change across a restart): the bound
// below which events are late never moves back, so an emitted window is never emitted again,
// and a window open at the restart still closes by the new grace. When an open window closes
// relative to the restart is not compared (Final as a set per key), nor late_by_ms.
void CheckGraceChange(ModelKind kind, bool partition, int64_t size, int64_t grace_before,
                      int64_t grace_after, uint64_t seed) {
  std::mt19937_64 rng(seed);
  StreamCase before;
  before.def = {.kind = kind,
                .size = size,
                .step = size,
                .grace = grace_before,
                .partition_closing = partition};
  if (kind == ModelKind::kHopping) before.def.step = std::max<int64_t>(1, size / 3);
  before.events =
      RandomEvents(rng, before.def, {.min_keys = 100, .max_keys = 100, .events_per_key = 25});
  StreamCase after = before;
  after.def.grace = grace_after;
  weir::testing::TempDir dir;
  WriteInput(before, dir);
  std::vector<int64_t> records_in = RunWithStops({before, after}, dir, 1000);
  if (records_in.empty()) return;
  // The second run read from its checkpoint to the end.
  size_t restart_at = before.events.size() - static_cast<size_t>(records_in[1]);
  EngineOutput got;
  ReadOutputs(after, dir, got);
  ModelOutput model = RunWindowModel(before.def, before.events, restart_at, grace_after);
  for (const auto& [key, _] : model.final_results) model.final_order_open.insert(key);
  for (auto* late : {&model.late, &got.late_final, &got.late_current}) {
    for (ModelLate& l : *late) l.late_by_ms = 0;
  }
  ExpectModelOutputs(after, model, got,
                     "after a restart at record " + std::to_string(restart_at) +
                         " that changed the grace from " + std::to_string(grace_before) + " to " +
                         std::to_string(grace_after));
}

TEST(WindowProperty, SessionGraceChangesAcrossARestart) {
  CheckGraceChange(ModelKind::kSession, false, 20, 0, 40, 901);
  CheckGraceChange(ModelKind::kSession, false, 20, 30, 5, 902);
  CheckGraceChange(ModelKind::kSession, true, 20, 30, 0, 903);
  CheckGraceChange(ModelKind::kSession, true, 20, 0, 35, 904);
}
TEST(WindowProperty, TimeWindowGraceChangesAcrossARestart) {
  CheckGraceChange(ModelKind::kTumbling, true, 25, 0, 30, 911);
  CheckGraceChange(ModelKind::kHopping, false, 30, 0, 25, 912);
  CheckGraceChange(ModelKind::kHopping, true, 30, 20, 0, 913);
  CheckGraceChange(ModelKind::kSliding, false, 20, 0, 20, 914);
  CheckGraceChange(ModelKind::kSliding, true, 20, 15, 0, 915);
}

// A restart that changes a session gap. The model does not follow the sessions stored under the
// old gap, so this checks what must hold whatever the gap: what the first run committed is what
// the model emits for the records before the restart; every event is in exactly one emitted
// session or late (Collect gives each session's events); a key's sessions are disjoint, none is
// emitted twice, and each spans its events.
void CheckGapChange(bool partition, int64_t gap_before, int64_t gap_after, uint64_t seed) {
  std::mt19937_64 rng(seed);
  StreamCase before;
  before.def = {.kind = ModelKind::kSession,
                .size = gap_before,
                .step = gap_before,
                .grace = 5,
                .partition_closing = partition};
  before.events =
      RandomEvents(rng, before.def, {.min_keys = 100, .max_keys = 100, .events_per_key = 25});
  StreamCase after = before;
  after.def.size = after.def.step = gap_after;
  weir::testing::TempDir dir;
  WriteInput(before, dir);
  EngineOutput first_run;
  std::vector<int64_t> records_in = RunWithStops({before, after}, dir, 1000, [&](size_t run) {
    if (run == 0) ReadOutputs(before, dir, first_run);
  });
  if (records_in.empty()) return;
  size_t restart_at = before.events.size() - static_cast<size_t>(records_in[1]);
  std::string what = "a restart at record " + std::to_string(restart_at) +
                     " that changed the gap from " + std::to_string(gap_before) + " to " +
                     std::to_string(gap_after);

  // Up to the restart: what the first run committed is the model of the records before it,
  // without an end of input. Its output files may also hold lines written after its last
  // checkpoint (the next run drops them), so each key's results there are cut to the model's.
  window::testing::WindowModel prefix(before.def);
  for (size_t i = 0; i < restart_at; ++i) prefix.Add(before.events[i]);
  StreamCase first_part = before;
  first_part.events.resize(restart_at);
  auto cut = [](std::map<std::string, std::vector<ModelResult>>& got,
                const std::map<std::string, Groups>& want) {
    for (auto& [key, results] : got) {
      size_t n = 0;
      if (auto it = want.find(key); it != want.end()) {
        for (const auto& g : it->second) n += g.size();
      }
      if (results.size() > n) results.resize(n);
    }
  };
  cut(first_run.final_results, prefix.output().final_results);
  cut(first_run.current_results, prefix.output().current_results);
  for (const Mismatch& m : Compare(first_part, prefix.output(), first_run)) {
    ADD_FAILURE() << "before " << what << ": " << m.what << "\n"
                  << Report(first_part, prefix.output(), first_run, m.key);
    break;
  }

  // After it: invariants.
  EngineOutput got;
  ReadOutputs(after, dir, got);
  std::map<int64_t, const ModelEvent*> by_id;
  for (const ModelEvent& e : before.events) by_id[e.id] = &e;
  std::map<int64_t, int> seen;
  for (const ModelLate& l : got.late_final) ++seen[l.id];
  for (const auto& [key, results] : got.final_results) {
    std::set<std::pair<int64_t, int64_t>> spans;
    for (const ModelResult& r : results) {
      EXPECT_TRUE(spans.insert({r.start, r.end}).second)
          << what << ": key " << key << " session " << r.ToString() << " emitted twice";
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
      for (int64_t id : r.ids) {
        ++seen[id];
        auto e = by_id.find(id);
        if (e == by_id.end() || e->second->key != key) {
          ADD_FAILURE() << what << ": key " << key << " session holds unknown event " << id;
          continue;
        }
        lo = std::min(lo, e->second->ts);
        hi = std::max(hi, e->second->ts);
      }
      EXPECT_EQ(r.count, static_cast<int64_t>(r.ids.size())) << what << ": " << r.ToString();
      EXPECT_TRUE(r.start == lo && r.end == hi + 1)
          << what << ": key " << key << " session " << r.ToString() << " does not span its events";
    }
    for (auto a = spans.begin(); a != spans.end(); ++a) {
      auto b = std::next(a);
      if (b != spans.end()) {
        EXPECT_LE(a->second, b->first)
            << what << ": key " << key << " sessions [" << a->first << ", " << a->second
            << ") and [" << b->first << ", " << b->second << ") overlap";
      }
    }
  }
  int missing = 0, twice = 0;
  for (const ModelEvent& e : before.events) {
    if (e.fate != ModelEvent::Fate::kWindow) continue;
    int n = seen[e.id];
    if (n == 0 && ++missing <= 3) {
      ADD_FAILURE() << what << ": event " << EventJson(e) << " is in no session and not late";
    }
    if (n > 1 && ++twice <= 3) {
      ADD_FAILURE() << what << ": event " << EventJson(e) << " is counted " << n << " times";
    }
  }
  EXPECT_EQ(missing, 0) << what;
  EXPECT_EQ(twice, 0) << what;
}

TEST(WindowProperty, SessionGapChangesAcrossARestart) {
  CheckGapChange(false, 15, 30, 921);
  CheckGapChange(false, 30, 10, 922);
  CheckGapChange(true, 15, 30, 923);
  CheckGapChange(true, 30, 10, 924);
}

}  // namespace
}  // namespace weir
