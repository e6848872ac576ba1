// A value no step has changed since its source read it as JSON text is written to a JSON topic
// as that text (dataflow/operators.h, UnchangedInput); any other value is encoded. Through the
// real log and the real task: topics in, topics out, the stored bytes compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "app/testing.h"
#include "log/log.h"
#include "log/record_format.h"
#include "weir/application.h"

namespace weir {
namespace {

using testing::ReadTopic;
using testing::TempDir;
using testing::TestOptions;

// Not as Weir writes JSON: spaces, a number as written, an escape where none is needed.
const std::vector<std::string> kInput = {
    R"({ "user" : "a", "n" : 1.50, "s" : "\u0041b" })",
    R"({"user":"b",  "n":0})",
    R"({"user":"c","n":  2e0, "tags": [ 1, 2 ]})",
};

// A topic "in" of one partition holding `values` as they are (stored as text).
void WriteInput(const TempDir& dir, const std::vector<std::string>& values = kInput) {
  auto log = log::LogStore::Open({.dir = std::filesystem::path(dir / "data") / "log"});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  auto topic = (*log)->CreateTopic("in", {.partitions = 1});
  ASSERT_TRUE(topic.ok()) << topic.status().ToString();
  log::RecordBatchBuilder batch;
  for (size_t i = 0; i < values.size(); ++i) {
    batch.AddRaw(EventTime(static_cast<int64_t>(i)), KeySerde::kNull, "", values[i]);
  }
  ASSERT_TRUE((*topic)->partition(PartitionId(0)).Append(batch, log::Durability::kNoWait).ok());
  ASSERT_TRUE((*log)->FlushAll().ok());
}

std::vector<std::string> Stored(const TempDir& dir, const std::string& topic) {
  std::vector<std::string> out;
  for (const testing::TopicRecord& r : ReadTopic(dir / "data", topic)) out.push_back(r.stored);
  return out;
}

// How Weir writes a value.
std::string Encoded(const std::string& json) {
  auto value = Value::Parse(json);
  return value.ok() ? value->ToJson() : "not JSON: " + json;
}

bool Positive(const Value& v) { return v.Find("n")->as_number() > 0; }

TopicSourceOptions In() { return {.topic = "in", .bounded = true}; }

TEST(UnchangedJson, ARecordPassedThroughFiltersIsWrittenAsTheTextItWasReadFrom) {
  TempDir dir;
  WriteInput(dir);
  Application app(TestOptions(dir));
  app.FromTopic(In()).Filter(Positive).Filter([](const Value&) { return true; }).ToTopic("out");
  app.FromTopic(In()).ToTopic("copy");  // no step at all
  ASSERT_TRUE(app.Run().ok());
  EXPECT_EQ(Stored(dir, "out"), (std::vector<std::string>{kInput[0], kInput[2]}));
  EXPECT_EQ(Stored(dir, "copy"), kInput);
}

TEST(UnchangedJson, AValueAStepChangedIsEncodedEvenIfAFilterFollows) {
  TempDir dir;
  WriteInput(dir);
  Application app(TestOptions(dir));
  // Changed in place, then filtered: the filter passes on a changed value.
  app.FromTopic(In())
      .Update([](Value& v) { v.Set("seen", true); })
      .Filter(Positive)
      .ToTopic("updated");
  // A new value, then filtered.
  app.FromTopic(In()).Map([](const Value& v) { return v; }).Filter(Positive).ToTopic("mapped");
  ASSERT_TRUE(app.Run().ok());
  std::vector<std::string> updated;
  for (size_t i : {0, 2}) {
    Value v = *Value::Parse(kInput[i]);
    v.Set("seen", true);
    updated.push_back(v.ToJson());
  }
  EXPECT_EQ(Stored(dir, "updated"), updated);
  EXPECT_EQ(Stored(dir, "mapped"),
            (std::vector<std::string>{Encoded(kInput[0]), Encoded(kInput[2])}));
}

// A fan-out: the branches see one record, in the order they were defined, each but the last by
// reference. A branch that changes the record works on a copy unless it is last, and its forward
// makes the branches after it encode. A filter's branch passes a copy of what it keeps: encoded.
// A sink handed the record itself before any change writes the text.
TEST(UnchangedJson, EachBranchOfAFanOutIsWrittenAsItsOwnStepsLeftIt) {
  for (bool changing_branch_first : {true, false}) {
    TempDir dir;
    WriteInput(dir);
    Application app(TestOptions(dir));
    Stream in = app.FromTopic(In());
    auto changing = [&] { in.Update([](Value& v) { v.Set("n", 7); }).ToTopic("changed"); };
    if (changing_branch_first) changing();
    in.Filter(Positive).ToTopic("kept");
    in.ToTopic("all");
    if (!changing_branch_first) changing();
    ASSERT_TRUE(app.Run().ok());
    std::vector<std::string> changed;
    for (const std::string& json : kInput) {
      Value v = *Value::Parse(json);
      v.Set("n", 7);
      changed.push_back(v.ToJson());
    }
    EXPECT_EQ(Stored(dir, "changed"), changed) << changing_branch_first;
    EXPECT_EQ(Stored(dir, "kept"),
              (std::vector<std::string>{Encoded(kInput[0]), Encoded(kInput[2])}));
    std::vector<std::string> all = kInput;
    if (changing_branch_first) {
      for (std::string& json : all) json = Encoded(json);
    }
    EXPECT_EQ(Stored(dir, "all"), all) << changing_branch_first;
  }
}

// After a repartition the value comes back from the binary form: there is no text to write.
TEST(UnchangedJson, AValueReadBackFromARepartitionIsEncoded) {
  TempDir dir;
  WriteInput(dir);
  Application app(TestOptions(dir));
  app.FromTopic(In()).GroupBy("user").Filter(Positive).ToTopic("out");
  ASSERT_TRUE(app.Run().ok());
  std::vector<std::string> out = Stored(dir, "out");
  std::sort(out.begin(), out.end());
  std::vector<std::string> want = {Encoded(kInput[0]), Encoded(kInput[2])};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(out, want);
}

// A file of JSON lines takes the text too, unless it spans lines.
TEST(UnchangedJson, AFileSinkWritesTheTextUnlessItSpansLines) {
  TempDir dir;
  const std::string two_lines = "{\"user\":\"d\",\n\"n\":3}";
  WriteInput(dir, {kInput[0], two_lines});
  Application app(TestOptions(dir));
  app.FromTopic(In()).Filter(Positive).ToFile(dir / "out.jsonl");
  ASSERT_TRUE(app.Run().ok());
  EXPECT_EQ(testing::ReadLines(dir / "out.jsonl"),
            (std::vector<std::string>{
                R"({"key":null,"timestamp":0,"value":)" + kInput[0] + "}",
                R"({"key":null,"timestamp":1,"value":)" + Encoded(two_lines) + "}"}));
}

// A file's lines too, through to a topic and to a file; a line ending "\r\n" loses its "\r".
TEST(UnchangedJson, AFileSourceHandsOnItsLines) {
  TempDir dir;
  testing::WriteLines(dir / "in.jsonl", {kInput[0], kInput[1], kInput[2] + "\r"});
  Application app(TestOptions(dir));
  FileSourceOptions file;
  file.path = dir / "in.jsonl";
  file.key = {"user", KeySerde::kString};
  Stream in = app.FromFile(file).Filter(Positive);
  in.ToTopic("out");
  in.ToFile(dir / "out.jsonl");
  auto run = app.Run();
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(Stored(dir, "out"), (std::vector<std::string>{kInput[0], kInput[2]}));
  std::vector<std::string> lines = testing::ReadLines(dir / "out.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& text = i == 0 ? kInput[0] : kInput[2];
    EXPECT_NE(lines[i].find(R"(,"value":)" + text + "}"), std::string::npos) << lines[i];
  }
}

}  // namespace
}  // namespace weir
