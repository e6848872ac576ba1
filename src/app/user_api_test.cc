// The C++ API as a user meets it: functions that fail on bad records, the operations on whole
// records (MapRecord, FilterRecord, SelectKey, WithTimestamp, ForEach), GroupBy by a field's own
// type, a topic source's start, and reading a topic back with TopicConsumer. Real engine, real
// log and RocksDB on disk.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "app/testing.h"
#include "weir/weir.h"

namespace weir {
namespace {

using testing::ReadLines;
using testing::TempDir;
using testing::TestOptions;
using testing::UserFile;
using testing::WriteLines;

// Every record of a topic, read back as a user would.
std::vector<ConsumedRecord> Consume(const TempDir& dir, const std::string& topic,
                                    TopicStart start = TopicStart::kEarliest) {
  auto consumer = TopicConsumer::Open({.data_dir = dir / "data", .topic = topic, .start = start});
  EXPECT_TRUE(consumer.ok()) << consumer.status().ToString();
  std::vector<ConsumedRecord> all;
  if (!consumer.ok()) return all;
  while (true) {
    auto batch = (*consumer)->Poll(7);
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok() || batch->empty()) break;
    for (ConsumedRecord& r : *batch) all.push_back(std::move(r));
  }
  return all;
}

// Amounts 1..10 for ann and bob; records 4 and 8 carry the amount as a string.
void WriteAmounts(const TempDir& dir) {
  std::vector<std::string> lines;
  for (int i = 1; i <= 10; ++i) {
    std::string amount = i % 4 == 0 ? "\"" + std::to_string(i) + "\"" : std::to_string(i);
    lines.push_back(R"({"user":")" + std::string(i % 2 ? "ann" : "bob") + R"(","ts":)" +
                    std::to_string(i * 1000) + R"(,"amount":)" + amount + "}");
  }
  WriteLines(dir / "in.jsonl", lines);
}

// The values of the records a file sink wrote, as JSON text, in order.
std::vector<std::string> ValuesWritten(const std::filesystem::path& file) {
  std::vector<std::string> out;
  for (const std::string& line : ReadLines(file)) {
    Result<Value> parsed = Value::Parse(line);
    EXPECT_TRUE(parsed.ok()) << line;
    if (parsed.ok()) out.push_back(parsed->Find("value")->ToJson());
  }
  return out;
}

std::vector<std::string> Reasons(const TempDir& dir) {
  std::vector<std::string> reasons;
  for (const ConsumedRecord& d : Consume(dir, "app.dlq")) {
    reasons.emplace_back(d.record.value.Find("reason")->as_string());
  }
  return reasons;
}

TEST(UserFunctions, AFieldReadAsTheWrongTypeDeadLettersTheRecordAndTheRunGoesOn) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Map([](const Value& v) { return Value(v.Find("amount")->as_int() * 2); }, "double")
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->completed);
  EXPECT_EQ(summary->user_function_failures, 2);
  EXPECT_EQ(summary->dead_letters, 2);
  EXPECT_EQ(ReadLines(dir / "out.jsonl").size(), 8u);
  std::vector<ConsumedRecord> dead = Consume(dir, "app.dlq");
  ASSERT_EQ(dead.size(), 2u);
  EXPECT_EQ(dead[0].record.value.Find("reason")->as_string(),
            R"(step 'double' failed: read as integer, but holds string "4")");
  EXPECT_EQ(dead[0].record.value.FindPath("position.line")->as_int(), 4);
  EXPECT_NE(dead[1].record.value.Find("raw")->as_string().find(R"("amount":"8")"),
            std::string::npos);

  // The restart resumes after the failed records: nothing more fails, nothing is written twice.
  Application again(TestOptions(dir));
  again.FromFile(UserFile(dir / "in.jsonl"))
      .Map([](const Value& v) { return Value(v.Find("amount")->as_int() * 2); }, "double")
      .ToFile(dir / "out.jsonl");
  auto resumed = again.Run();
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->user_function_failures, 0);
  EXPECT_EQ(ReadLines(dir / "out.jsonl").size(), 8u);
}

TEST(UserFunctions, ExceptionsOfFiltersFlatMapsAndForEachAreDeadLettersToo) {
  TempDir dir;
  WriteAmounts(dir);
  int64_t seen = 0;
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Filter(
          [](const Value& v) {
            if (v.GetInt("amount") == 3) throw std::runtime_error("three is not allowed");
            return true;
          },
          "no-threes")
      .FlatMap(
          [](const Value& v) {
            if (v.GetInt("amount") == 5) throw 5;  // not a std::exception
            return std::vector<Value>{v, v};
          },
          "twice")
      .ForEach(
          [&](const Record& r) {
            if (r.value.GetInt("amount") == 7) throw std::runtime_error("seven");
            ++seen;
          },
          "count");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  // 10 records: 3 fails in the filter, 5 in the flat map, and both copies of 7 in the callback.
  EXPECT_EQ(summary->user_function_failures, 4);
  EXPECT_EQ(seen, 2 * 7);
  EXPECT_EQ(Reasons(dir), (std::vector<std::string>{
                              "step 'no-threes' failed: three is not allowed",
                              "step 'twice' failed: an exception that is not a std::exception",
                              "step 'count' failed: seven", "step 'count' failed: seven"}));
}

TEST(UserFunctions, AnApplyThatThrowsChangesNoState) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Apply(
          [](const Value& v, State& state) -> std::optional<Value> {
            const Value* total = state.Get("total");
            int64_t sum = (total ? total->as_int() : 0);
            // The write comes first: the throw must undo it.
            state.Set("total", Value(sum + v.GetInt("amount").value_or(1000)));
            sum += v.Find("amount")->as_int();  // throws on the string amounts
            return Value(sum);
          },
          "running-total")
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->user_function_failures, 2);
  std::map<std::string, int64_t> last;
  for (const std::string& line : ReadLines(dir / "out.jsonl")) {
    Value v = *Value::Parse(line);
    last[std::string(v.Find("key")->as_string())] = v.Find("value")->as_int();
  }
  // ann: 1+3+5+7+9; bob: 2+6+10 (4 and 8 failed and left no trace).
  EXPECT_EQ(last["ann"], 25);
  EXPECT_EQ(last["bob"], 18);
}

// Sums the amounts of WriteAmounts' records per user in one window with `sum`, which throws on
// the two string amounts: the sums are those of the other records, as if the two never came.
void ExpectAThrowingSumLeavesNoTrace(const AggregatorPtr& sum) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Window(WindowDefinition::Tumbling(std::chrono::seconds(100)))
      .Agg({{"sum", sum}})
      .Final()
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->user_function_failures, 2);
  std::map<std::string, int64_t> sums;
  for (const std::string& line : ReadLines(dir / "out.jsonl")) {
    Value v = *Value::Parse(line);
    sums[std::string(v.Find("key")->as_string())] = *v.GetInt("value.sum");
  }
  EXPECT_EQ(sums, (std::map<std::string, int64_t>{{"ann", 25}, {"bob", 18}}));
}

Value FirstAmount(const Value& first) { return Value(first.Find("amount")->as_int()); }

TEST(UserFunctions, AReduceThatThrowsLeavesTheWindowAsItWas) {
  ExpectAThrowingSumLeavesNoTrace(
      agg::Reduce([](const Value& acc,
                     const Value& v) { return Value(acc.as_int() + v.Find("amount")->as_int()); },
                  FirstAmount));
}

TEST(UserFunctions, AReduceInPlaceThatThrowsAfterChangingTheAccumulatorLeavesTheWindowAsItWas) {
  ExpectAThrowingSumLeavesNoTrace(agg::ReduceInPlace(
      [](Value& acc, const Value& v) {
        acc = Value(acc.as_int() + 1000);  // changed, then the string amount throws
        acc = Value(acc.as_int() - 1000 + v.Find("amount")->as_int());
      },
      FirstAmount));
}

// A user aggregator whose Result throws for a count of 3: a window step's result that cannot be
// computed is a dead letter naming the window, and every other window is emitted.
class ThrowingCount : public Aggregator {
 public:
  std::string Describe() const override { return "throwing count"; }
  Value Initial() const override { return Value(0); }
  Status Accepts(const Value&) const override { return Status::OK(); }
  void Add(Value& acc, const Value&, EventTime) const override {
    acc = (acc.is_int() ? acc.as_int() : 0) + 1;
  }
  Value Merge(const Value& a, const Value& b) const override {
    return Value(a.as_int() + b.as_int());
  }
  Value Result(const Value& acc) const override {
    if (acc.is_int() && acc.as_int() == 3) throw std::runtime_error("three is refused");
    return acc;
  }
};

TEST(UserFunctions, AWindowResultAUserAggregatorCannotGiveIsADeadLetterAndTheRunGoesOn) {
  TempDir dir;
  WriteAmounts(dir);  // ann at 1, 3, 5, 7, 9 s; bob at 2, 4, 6, 8, 10 s
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .Window(WindowDefinition::Tumbling(std::chrono::seconds(6)))
      .Agg({{"n", std::make_shared<ThrowingCount>()}})
      .Final()
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  // [0, 6 s): ann 3 (refused), bob 2; [6 s, 12 s): ann 2, bob 3 (refused).
  std::vector<std::string> emitted;
  for (const std::string& line : ReadLines(dir / "out.jsonl")) {
    const Value v = *Value::Parse(line);
    emitted.push_back(std::string(v.Find("key")->as_string()) + " " + v.Find("value")->ToJson());
  }
  std::sort(emitted.begin(), emitted.end());
  EXPECT_EQ(emitted, (std::vector<std::string>{R"(ann {"start":6000,"end":12000,"n":2})",
                                               R"(bob {"start":0,"end":6000,"n":2})"}));
  EXPECT_EQ(summary->user_function_failures, 2);
  const std::vector<std::string> reasons = Reasons(dir);
  ASSERT_EQ(reasons.size(), 2u);
  for (const std::string& reason : reasons) {
    EXPECT_NE(reason.find("three is refused"), std::string::npos) << reason;
  }
  std::vector<std::string> refused;
  for (const ConsumedRecord& d : Consume(dir, "app.dlq")) {
    refused.push_back(d.record.value.ToJson());
  }
  ASSERT_EQ(refused.size(), 2u);
  for (const std::string& r : refused) {
    EXPECT_NE(r.find("start"), std::string::npos) << "the dead letter names the window: " << r;
  }
}

TEST(RecordOperations, MapRecordFilterRecordAndWithTimestampSeeTheWholeRecord) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .FilterRecord([](const Record& r) { return r.key == Key::String("ann"); })
      .WithTimestamp([](const Record& r) { return EventTime(r.timestamp.value() + 5); })
      .MapRecord([](const Record& r) {
        return Value::MakeObject({{"user", r.key.ToValue()}, {"at", Value(r.timestamp.value())}});
      })
      .ToFile(dir / "out.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::vector<std::string> out = ReadLines(dir / "out.jsonl");
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0], R"({"key":"ann","timestamp":1005,"value":{"user":"ann","at":1005}})");
}

// One stream read by several branches: a filter and a map that are handed the record the
// others still read (Operator::ProcessShared) copy only what they forward, and no branch sees
// another's result or a record another has taken.
TEST(RecordOperations, BranchesOfOneStreamEachSeeTheWholeUnchangedRecord) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  Stream in = app.FromFile(UserFile(dir / "in.jsonl"));
  in.Filter([](const Value& v) {
      return v.GetInt("amount").value_or(0) > 5;
    }).ToFile(dir / "big.jsonl");
  in.Map([](const Value& v) {
      return Value::MakeObject({{"user", v.Find("user") ? *v.Find("user") : Value()},
                                {"twice", Value(v.GetInt("amount").value_or(0) * 2)}});
    }).ToFile(dir / "twice.jsonl");
  in.Filter([](const Value& v) { return v.GetString("user") == "bob"; })
      .Map([](const Value& v) {
        return Value::MakeObject({{"bob", *v.Find("amount")}});
      })
      .ToFile(dir / "bob.jsonl");
  in.ToFile(dir / "all.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  auto values = [&](const char* file) { return ValuesWritten(dir / file); };
  std::vector<std::string> all = values("all.jsonl");
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all[3], R"({"user":"bob","ts":4000,"amount":"4"})");
  EXPECT_EQ(all[9], R"({"user":"bob","ts":10000,"amount":10})");
  EXPECT_EQ(
      values("big.jsonl"),
      (std::vector<std::string>{
          R"({"user":"bob","ts":6000,"amount":6})", R"({"user":"ann","ts":7000,"amount":7})",
          R"({"user":"ann","ts":9000,"amount":9})", R"({"user":"bob","ts":10000,"amount":10})"}));
  std::vector<std::string> twice = values("twice.jsonl");
  ASSERT_EQ(twice.size(), 10u);
  EXPECT_EQ(twice[0], R"({"user":"ann","twice":2})");
  EXPECT_EQ(twice[3], R"({"user":"bob","twice":0})");
  EXPECT_EQ(values("bob.jsonl"),
            (std::vector<std::string>{R"({"bob":2})", R"({"bob":"4"})", R"({"bob":6})",
                                      R"({"bob":"8"})", R"({"bob":10})"}));
}

// Update without state changes the value in place: after a Select (the record it is handed is
// its own), and on a fan-out's record, which it copies first so that the other branch sees the
// record unchanged. A function that throws dead-letters its record and the run goes on.
TEST(RecordOperations, UpdateWithoutStateChangesTheValueInPlaceAndOtherBranchesSeeItUnchanged) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  Stream in = app.FromFile(UserFile(dir / "in.jsonl"));
  auto times_ten = [](Value& v) {
    Value& amount = *v.Find("amount");
    amount = amount.as_int() * 10;  // records 4 and 8 hold a string: ValueTypeError
  };
  in.Select({"amount", "user"}).Update(times_ten).ToFile(dir / "selected.jsonl");
  in.Update(times_ten).ToFile(dir / "shared.jsonl");
  in.ToFile(dir / "all.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  auto values = [&](const char* file) { return ValuesWritten(dir / file); };
  const std::vector<std::string> selected = values("selected.jsonl");
  ASSERT_EQ(selected.size(), 8u);
  EXPECT_EQ(selected[0], R"({"amount":10,"user":"ann"})");
  EXPECT_EQ(selected[7], R"({"amount":100,"user":"bob"})");
  const std::vector<std::string> shared = values("shared.jsonl");
  ASSERT_EQ(shared.size(), 8u);
  EXPECT_EQ(shared[2], R"({"user":"ann","ts":3000,"amount":30})");
  const std::vector<std::string> all = values("all.jsonl");
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all[2], R"({"user":"ann","ts":3000,"amount":3})");
  EXPECT_EQ(all[3], R"({"user":"bob","ts":4000,"amount":"4"})");
  EXPECT_EQ(Reasons(dir).size(), 4u);  // records 4 and 8, in each of the two branches
}

// An aggregate and a window step write each result into the members of the one before it, which
// the steps after them may have changed in place (Update adding a member and changing a type,
// Select swapping fields out): every result is still exactly its own.
TEST(RecordOperations, AStepThatChangesAnAggregateOrWindowResultInPlaceDoesNotChangeTheNext) {
  TempDir dir;
  WriteAmounts(dir);  // ann at 1, 3, 5, 7, 9 s; bob at 2, 4, 6, 8, 10 s
  Application app(TestOptions(dir));
  Stream in = app.FromFile(UserFile(dir / "in.jsonl"));
  auto mark_ones = [](Value& v) {
    Value& n = *v.Find("n");
    const int64_t count = n.as_int();
    n = Value(std::to_string(count));  // the next result's "n" is then a string first
    if (count == 1) v.as_object().emplace_back("one", true);
  };
  auto counts_of = [&in] {
    return in.Window(WindowDefinition::Tumbling(std::chrono::seconds(4)))
        .Agg({{"n", agg::Count()}})
        .Final();
  };
  in.Aggregate({{"n", agg::Count()}}).Update(mark_ones).ToFile(dir / "counts.jsonl");
  counts_of().Update(mark_ones).ToFile(dir / "windows.jsonl");
  counts_of().Select({"end", "n"}).ToFile(dir / "selected.jsonl");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();

  const std::vector<std::string> counts = ValuesWritten(dir / "counts.jsonl");
  ASSERT_EQ(counts.size(), 10u);
  for (size_t i = 0; i < counts.size(); ++i) {
    const std::string n = std::to_string(i / 2 + 1);  // ann and bob take turns
    EXPECT_EQ(counts[i], i < 2 ? R"({"n":")" + n + R"(","one":true})" : R"({"n":")" + n + "\"}")
        << i;
  }
  // Per key, [0, 4 s): ann 2, bob 1; [4 s, 8 s): 2 and 2; [8 s, 12 s): ann 1, bob 2.
  std::vector<std::string> windows;
  for (const std::string& w : ValuesWritten(dir / "windows.jsonl")) {
    const Value v = *Value::Parse(w);
    windows.push_back(v.Find("end")->ToJson() + ":" + std::string(v.Find("n")->as_string()) +
                      (v.Find("one") != nullptr ? " one" : "") + " of " +
                      std::to_string(v.as_object().size()));
  }
  std::sort(windows.begin(), windows.end());
  EXPECT_EQ(windows,
            (std::vector<std::string>{"12000:1 one of 4", "12000:2 of 3", "4000:1 one of 4",
                                      "4000:2 of 3", "8000:2 of 3", "8000:2 of 3"}));
  std::vector<std::string> selected = ValuesWritten(dir / "selected.jsonl");
  std::sort(selected.begin(), selected.end());
  EXPECT_EQ(selected, (std::vector<std::string>{R"({"end":12000,"n":1})", R"({"end":12000,"n":2})",
                                                R"({"end":4000,"n":1})", R"({"end":4000,"n":2})",
                                                R"({"end":8000,"n":2})", R"({"end":8000,"n":2})"}));
}

// Select swaps a record's fields out to the steps after it instead of copying them, and the
// record (a source's slot, rewritten batch after batch) keeps the values swapped in. Over records
// of changing shapes (fields missing, in another order, of other types, values that are not
// objects, names twice), more than a batch of them so that slots are reused, every selection is
// what copying the fields gives: the fields present, in the order listed, named by their paths
// (the first member of a name, as Find gives).
TEST(RecordOperations, SelectGivesWhatCopyingTheFieldsGivesOverRecordsOfChangingShapes) {
  std::vector<std::string> lines;
  for (int i = 0; i < 1500; ++i) {
    const std::string user = R"("user":"u)" + std::to_string(i % 7) + "\"";
    const std::string amount = i % 11 == 0  ? ""
                               : i % 5 == 0 ? R"(,"amount":")" + std::to_string(i) + "\""
                                            : R"(,"amount":)" + std::to_string(i);
    const std::string address =
        i % 4 == 0 ? "" : R"(,"address":{"city":"c)" + std::to_string(i % 3) + R"(","zip":1})";
    const std::string pad = R"("pad":")" + std::string(static_cast<size_t>(i % 40), 'p') + "\"";
    // Names twice in some records (JSON allows it; the parser keeps both): the first counts.
    const std::string twice = i % 13 == 0 ? R"(,"amount":"again","user":"again")" : "";
    lines.push_back(
        "{" + (i % 3 ? user + amount + address + "," + pad : pad + address + amount + "," + user) +
        twice + "}");
  }
  // Shapes that share names, some twice, before and at the places a selection of [b, a] finds
  // its fields in the record before: the first member of a name is taken whatever came before.
  for (int i = 0; i < 200; ++i) {
    for (const char* members :
         {R"("x":0,"a":1,"b":2)", R"("x":0,"a":1,"b":2)", R"("a":10,"a":11,"b":12)",
          R"("a":10,"a":11,"b":12)", R"("a":20,"b":21,"a":22)", R"("a":30,"b":31)",
          R"("b":40,"a":41,"a":42)", R"("b":50)", R"("b":60,"a":61)"}) {
      lines.push_back("{" + std::string(members) + R"(,"user":"s","pad":""})");
    }
  }
  std::vector<Value> inputs;
  for (const std::string& line : lines) inputs.push_back(*Value::Parse(line));
  auto copied = [](const Value& v, const std::vector<std::string>& fields) {
    Value out = Value(Value::Object());
    for (const std::string& f : fields) {
      if (const Value* field = v.FindPath(f)) out.Set(f, *field);
    }
    return out;
  };
  // The values written by an application of its own: the lines -> steps(stream) -> a file.
  auto run = [&](const std::function<Stream(Stream)>& steps) {
    TempDir dir;
    WriteLines(dir / "in.jsonl", lines);
    Application app(TestOptions(dir));
    FileSourceOptions file;
    file.path = dir / "in.jsonl";
    file.key = {"user", KeySerde::kString};
    steps(app.FromFile(file)).ToFile(dir / "out.jsonl");
    auto summary = app.Run();
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
    std::vector<Value> out;
    for (const std::string& line : ReadLines(dir / "out.jsonl")) {
      Result<Value> parsed = Value::Parse(line);
      EXPECT_TRUE(parsed.ok()) << line;
      if (parsed.ok()) out.push_back(*parsed->Find("value"));
    }
    return out;
  };

  const std::vector<std::vector<std::string>> selections = {
      {"user", "amount"},                 // amount missing from every eleventh record
      {"amount", "address.city", "pad"},  // a path, missing from every fourth record
      {"address", "address.zip"},         // overlapping: copied
      {"user", "user"},                   // listed twice: copied
      {"nowhere"},
      {"b", "a"},  // the shapes that share names
  };
  for (const std::vector<std::string>& fields : selections) {
    std::vector<Value> got = run([&](Stream s) { return s.Select(fields); });
    ASSERT_EQ(got.size(), inputs.size()) << fields[0];
    for (size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_EQ(got[i].ToJson(), copied(inputs[i], fields).ToJson()) << fields[0] << ", line " << i;
    }
  }

  // After a map that makes some values numbers, a selection of a selection: the second lends
  // out the first's object, which lends out the map's result.
  auto mapped = [](const Value& v) { return v.FindPath("address.zip") ? v : Value(5); };
  std::vector<Value> chained = run([&](Stream s) {
    return s.Map(mapped).Select({"pad", "address", "user"}).Select({"user", "address.city"});
  });
  std::vector<Value> expected;
  for (const Value& v : inputs) {
    expected.push_back(
        copied(copied(mapped(v), {"pad", "address", "user"}), {"user", "address.city"}));
  }
  EXPECT_EQ(chained, expected);
  EXPECT_EQ(chained[0].ToJson(), "{}");
  EXPECT_EQ(chained[1].ToJson(), R"({"user":"u1","address.city":"c1"})");
  // One stream read by a selection and then by a filter (a fan-out): the selection, handed the
  // record the filter still reads, copies, and the filter sees every record whole.
  std::atomic<int> whole{0};
  std::vector<Value> selected = run([&](Stream s) {
    Stream selection = s.Select({"user", "amount"});
    s.Filter([&](const Value& v) {
       whole += v.Find("pad") != nullptr && v.Find("user") != nullptr;
       return false;
     }).ToDiscard();
    return selection;
  });
  EXPECT_EQ(whole, static_cast<int>(inputs.size()));
  ASSERT_EQ(selected.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(selected[i].ToJson(), copied(inputs[i], {"user", "amount"}).ToJson()) << i;
  }
}

TEST(RecordOperations, SelectKeyRekeysThroughARepartitionTopic) {
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .SelectKey([](const Record& r) { return Key::Int(r.value.GetInt("amount").value_or(0) % 3); },
                 "by-remainder")
      .Aggregate({{"n", agg::Count()}})
      .ToTopic("counts");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  std::map<int64_t, int64_t> counts;
  for (const ConsumedRecord& r : Consume(dir, "counts")) {
    counts[r.record.key.AsInt()] = *r.record.value.GetInt("n");
  }
  // 3, 6, 9 -> 0 (and the strings "4", "8" -> 0); 1, 7, 10 -> 1; 2, 5 -> 2.
  EXPECT_EQ(counts, (std::map<int64_t, int64_t>{{0, 5}, {1, 3}, {2, 2}}));
}

TEST(RecordOperations, GroupByWithoutATypeKeysByTheFieldsOwnType) {
  TempDir dir;
  WriteLines(dir / "in.jsonl",
             {R"({"user":"a","ts":1,"bidder":7})", R"({"user":"b","ts":2,"bidder":7})",
              R"({"user":"c","ts":3,"bidder":"x"})", R"({"user":"d","ts":4,"bidder":null})"});
  Application app(TestOptions(dir));
  app.FromFile(UserFile(dir / "in.jsonl"))
      .GroupBy("bidder")
      .Aggregate({{"n", agg::Count()}})
      .ToTopic("counts");
  auto summary = app.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->dead_letters, 1);  // the null bidder
  std::map<std::string, int64_t> counts;
  for (const ConsumedRecord& r : Consume(dir, "counts")) {
    std::string key;
    r.record.key.AppendJson(key);
    counts[key] = *r.record.value.GetInt("n");
  }
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"7", 2}, {"\"x\"", 1}}));
  EXPECT_EQ(Reasons(dir),
            (std::vector<std::string>{"group_by field 'bidder' is null, which cannot be a key"}));
}

TEST(TopicStartAndConsumer, AFirstRunStartsWhereAskedAndAResumeAtItsCheckpoint) {
  TempDir dir;
  WriteAmounts(dir);
  {
    Application load(TestOptions(dir, "load"));
    load.FromFile(UserFile(dir / "in.jsonl"))
        .ToTopic(TopicSinkOptions{.topic = "in", .partitions = 1});
    ASSERT_TRUE(load.Run().ok());
  }
  auto run = [&](TopicStart start, int64_t offset) {
    Application app(TestOptions(dir, "reader"));
    app.FromTopic({.topic = "in", .bounded = true, .start = start, .start_offset = offset})
        .ToTopic("out");
    auto summary = app.Run();
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
    return summary.ok() ? summary->records_in : -1;
  };
  EXPECT_EQ(run(TopicStart::kOffset, 6), 4);    // offsets 6-9
  EXPECT_EQ(run(TopicStart::kEarliest, 0), 0);  // resumes at its checkpoint: nothing new
  std::vector<ConsumedRecord> out = Consume(dir, "out");
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].record.value.GetInt("amount"), 7);
  EXPECT_EQ(out[0].record.key, Key::String("ann"));
  EXPECT_EQ(out[0].record.timestamp, EventTime(7000));
  EXPECT_TRUE(Consume(dir, "out", TopicStart::kLatest).empty());

  Application latest(TestOptions(dir, "latest-reader"));
  latest.FromTopic({.topic = "in", .bounded = true, .start = TopicStart::kLatest}).ToTopic("out2");
  auto summary = latest.Run();
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->records_in, 0);

  auto beyond = TopicConsumer::Open(
      {.data_dir = dir / "data", .topic = "in", .start = TopicStart::kOffset, .start_offset = 11});
  EXPECT_EQ(beyond.status().code(), StatusCode::kOutOfRange);
  auto unknown = TopicConsumer::Open({.data_dir = dir / "data", .topic = "nope"});
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
}

TEST(IntervalJoinBounds, BetweenReadsAsFlinksAndRefusesAWindowWithoutTheLeftTime) {
  IntervalJoinOptions o =
      IntervalJoinOptions::Between(std::chrono::seconds(-10), std::chrono::seconds(30));
  EXPECT_EQ(o.lower, std::chrono::seconds(10));
  EXPECT_EQ(o.upper, std::chrono::seconds(30));
  TempDir dir;
  WriteAmounts(dir);
  Application app(TestOptions(dir));
  Stream left = app.FromFile(UserFile(dir / "in.jsonl"));
  Stream right = app.FromFile(UserFile(dir / "in.jsonl"));
  left.IntervalJoin(right,
                    IntervalJoinOptions::Between(std::chrono::seconds(2), std::chrono::seconds(5)))
      .ToDiscard();
  auto summary = app.Run();
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("Between(from, to) needs from <= 0 <= to"),
            std::string::npos)
      << summary.status().ToString();
}

}  // namespace
}  // namespace weir
