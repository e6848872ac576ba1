#include "weir/value.h"

#include <gtest/gtest.h>

#include <random>

namespace weir {
namespace {

TEST(Value, ParsesEveryJsonType) {
  auto v = Value::Parse(
      R"({"n":null,"t":true,"f":false,"i":-42,"d":1.5,"s":"x","a":[1,"b"],"o":{"k":1}})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->Find("n")->is_null());
  EXPECT_TRUE(v->Find("t")->as_bool());
  EXPECT_FALSE(v->Find("f")->as_bool());
  EXPECT_EQ(v->Find("i")->as_int(), -42);
  EXPECT_DOUBLE_EQ(v->Find("d")->as_double(), 1.5);
  EXPECT_EQ(v->Find("s")->as_string(), "x");
  EXPECT_EQ(v->Find("a")->as_array().size(), 2u);
  EXPECT_EQ(v->FindPath("o.k")->as_int(), 1);
  EXPECT_EQ(v->FindPath("o.missing"), nullptr);
  EXPECT_EQ(v->FindPath("s.deeper"), nullptr);
}

TEST(Value, KeepsMemberOrderWhenWritten) {
  const std::string json = R"({"z":1,"a":[true,null,"q\"uote"],"m":{"y":2.25,"b":"\u00e9"}})";
  auto v = Value::Parse(json);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ToJson(), R"({"z":1,"a":[true,null,"q\"uote"],"m":{"y":2.25,"b":"é"}})");
}

TEST(Value, RejectsMalformedJsonWithAReason) {
  for (std::string_view bad : {"{", "{\"a\":}", "[1,2", "nul", "{\"a\":1} x", "", "\"\\x\""}) {
    auto v = Value::Parse(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find("malformed JSON"), std::string::npos);
  }
}

TEST(Value, EscapesControlCharactersAndQuotes) {
  Value v(std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(v.ToJson(), R"("a\"b\\c\n\u0001")");
  auto back = Value::Parse(v.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
}

TEST(Value, NumbersRoundTripExactly) {
  for (double d : {0.1, 1e300, -2.5e-300, 123456.789, 1.0 / 3}) {
    auto back = Value::Parse(Value(d).ToJson());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->as_double(), d);
  }
  auto big = Value::Parse("9223372036854775807");
  EXPECT_EQ(big->as_int(), INT64_MAX);
  auto beyond = Value::Parse("18446744073709551615");
  EXPECT_TRUE(beyond->is_double());
  EXPECT_EQ(Value(std::numeric_limits<double>::infinity()).ToJson(), "null");
}

TEST(Value, SetReplacesOrAppendsMembers) {
  Value v;
  v.Set("a", 1);
  v.Set("b", "x");
  v.Set("a", 2);
  EXPECT_EQ(v.ToJson(), R"({"a":2,"b":"x"})");
}

Value RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 3 ? 5 : 7)) {
    case 0:
      return Value();
    case 1:
      return Value(rng() % 2 == 0);
    case 2:
      return Value(static_cast<int64_t>(rng()));
    case 3:
      return Value(
          std::ldexp(static_cast<double>(rng() % 1000000), static_cast<int>(rng() % 40) - 20));
    case 4: {
      std::string s;
      for (size_t n = rng() % 12; n > 0; --n) s.push_back(static_cast<char>(rng() % 128));
      return Value(s);
    }
    case 5: {
      Value::Array a;
      for (size_t n = rng() % 4; n > 0; --n) a.push_back(RandomValue(rng, depth + 1));
      return Value(std::move(a));
    }
    default: {
      Value::Object o;
      for (size_t n = rng() % 4; n > 0; --n) {
        o.emplace_back("k" + std::to_string(rng() % 100), RandomValue(rng, depth + 1));
      }
      return Value(std::move(o));
    }
  }
}

TEST(Value, RandomValuesRoundTripThroughJsonAndBinary) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    Value v = RandomValue(rng, 0);
    auto from_json = Value::Parse(v.ToJson());
    ASSERT_TRUE(from_json.ok()) << v.ToJson();
    EXPECT_EQ(*from_json, v) << v.ToJson();
    std::string bin;
    v.AppendBinary(bin);
    std::string_view in = bin;
    auto from_binary = Value::ReadBinary(in);
    ASSERT_TRUE(from_binary.ok());
    EXPECT_EQ(*from_binary, v);
    EXPECT_TRUE(in.empty());
  }
}

TEST(Value, TruncatedBinaryIsCorruptionNotACrash) {
  Value v = Value::MakeObject({{"a", Value::Array{1, "two", 3.0}}, {"b", "text"}});
  std::string bin;
  v.AppendBinary(bin);
  for (size_t cut = 0; cut < bin.size(); ++cut) {
    std::string_view in(bin.data(), cut);
    EXPECT_FALSE(Value::ReadBinary(in).ok()) << cut;
  }
}

}  // namespace
}  // namespace weir
