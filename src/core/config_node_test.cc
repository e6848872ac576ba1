#include "core/config_node.h"

#include <gtest/gtest.h>

namespace weir {
namespace {

ConfigNode Parse(std::string_view text) {
  auto node = ConfigNode::Parse(text, "p.yaml");
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return *node;
}

TEST(ConfigNode, MalformedYamlIsAnErrorWithTheLine) {
  auto node = ConfigNode::Parse("a: [1, 2\nb: 3\n", "p.yaml");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(node.status().message().find("p.yaml: not valid YAML"), std::string::npos);
  EXPECT_NE(node.status().message().find("(line "), std::string::npos);
}

TEST(ConfigNode, TextThatIsNotUtf8IsRefusedWithItsPlace) {
  for (std::string bad : {"a: 1\nb: x\xff\n", "a: 1\nb: x\xc0\xaf\n", "a: 1\nb: x\xed\xa0\x80\n",
                          "a: 1\nb: x\xe2\x82\n"}) {
    auto node = ConfigNode::Parse(bad, "p.yaml");
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.status().message(), "p.yaml: not valid YAML: not UTF-8 text (line 2, column 5)");
  }
  EXPECT_TRUE(
      ConfigNode::Parse("name: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n", "p.yaml").ok());
}

TEST(ConfigNode, AKeyThatIsAListIsAnErrorAtThatKeyNotAnException) {
  ConfigNode top = Parse("source: x\n? [a, b]\n: 1\n");
  auto members = top.Members();
  ASSERT_FALSE(members.ok());
  EXPECT_NE(members.status().message().find("expected a key name, found a list (line 2"),
            std::string::npos)
      << members.status().message();
  EXPECT_FALSE(top.OnlyKeys({"source"}).ok());
  // Lookups by name still work and never throw.
  ASSERT_TRUE(top.Get("source").has_value());
  EXPECT_FALSE(top.Get("a").has_value());
}

TEST(ConfigNode, AKeyThatIsAMapIsAnErrorToo) {
  ConfigNode top = Parse("steps:\n  - ? {a: 1}\n    : 2\n");
  ConfigNode step = top.Get("steps")->Items().at(0);
  auto members = step.Members();
  ASSERT_FALSE(members.ok());
  EXPECT_NE(members.status().message().find("steps[0]: expected a key name, found a map"),
            std::string::npos)
      << members.status().message();
}

TEST(ConfigNode, ErrorsNameFilePathAndPosition) {
  ConfigNode top = Parse("checkpoint:\n  interval_ms: soon\n");
  auto interval = top.Get("checkpoint")->Get("interval_ms")->Int(1, 10);
  ASSERT_FALSE(interval.ok());
  EXPECT_EQ(
      interval.status().message(),
      "p.yaml: checkpoint.interval_ms: expected an integer, found 'soon' (line 2, column 16)");
}

TEST(ConfigNode, UnknownKeysListTheChoicesOnce) {
  ConfigNode top = Parse("{a: 1, c: 2}");
  Status s = top.OnlyKeys({"b", "a", "b"});
  EXPECT_EQ(s.message(), "p.yaml: c: unknown key 'c' (expected one of: a, b) (line 1, column 11)");
}

TEST(ConfigNode, IntegersAreReadWhollyAndInRange) {
  ConfigNode top = Parse("{a: 12, b: 12x, c: -1, d: 99999999999999999999, e: [1]}");
  EXPECT_EQ(*top.Get("a")->Int(0, 100), 12);
  EXPECT_FALSE(top.Get("b")->Int(0, 100).ok());
  EXPECT_NE(top.Get("c")->Int(0, 100).status().message().find("from 0 to 100, found -1"),
            std::string::npos);
  EXPECT_FALSE(top.Get("d")->Int(INT64_MIN, INT64_MAX).ok());
  EXPECT_FALSE(top.Get("e")->Int(0, 100).ok());
}

TEST(ConfigNode, NumbersRefuseNotANumber) {
  ConfigNode top = Parse("{a: 0.5, b: nan, c: -1}");
  EXPECT_EQ(*top.Get("a")->Number(0), 0.5);
  EXPECT_FALSE(top.Get("b")->Number(0).ok());
  EXPECT_FALSE(top.Get("c")->Number(0).ok());
}

TEST(ConfigNode, LiteralsReadAsJsonUnlessQuoted) {
  ConfigNode top = Parse("{a: 3, b: 2.5, c: true, d: null, e: text, f: '3', g: \"true\"}");
  EXPECT_EQ(*top.Get("a")->Literal(), Value(int64_t{3}));
  EXPECT_EQ(*top.Get("b")->Literal(), Value(2.5));
  EXPECT_EQ(*top.Get("c")->Literal(), Value(true));
  EXPECT_EQ(*top.Get("d")->Literal(), Value());
  EXPECT_EQ(*top.Get("e")->Literal(), Value("text"));
  EXPECT_EQ(*top.Get("f")->Literal(), Value("3"));
  EXPECT_EQ(*top.Get("g")->Literal(), Value("true"));
}

TEST(ConfigNode, OnlyMemberWantsAMapOfOne) {
  ConfigNode top = Parse("{one: {sum: x}, two: {sum: x, max: y}, list: [1]}");
  auto one = top.Get("one")->OnlyMember("one aggregation");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->first, "sum");
  EXPECT_EQ(one->second.path(), "one.sum");
  EXPECT_NE(top.Get("two")
                ->OnlyMember("one aggregation")
                .status()
                .message()
                .find("expected one aggregation, found a map"),
            std::string::npos);
  EXPECT_FALSE(top.Get("list")->OnlyMember("one aggregation").ok());
}

TEST(ConfigNode, AnEmptyDocumentIsNothing) {
  ConfigNode top = Parse("");
  EXPECT_TRUE(top.IsNull());
  EXPECT_EQ(top.Expected("a map").message(), "p.yaml: (top level): expected a map, found nothing");
  EXPECT_FALSE(top.Get("a").has_value());
  EXPECT_TRUE(top.Items().empty());
}

}  // namespace
}  // namespace weir
