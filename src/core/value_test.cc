#include "weir/value.h"

#include <gtest/gtest.h>

#include <random>

#include "core/binary_value.h"
#include "testing/random_value.h"

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

TEST(Value, MakeObjectMovesEachValueOutOfItsList) {
  Value text(std::string(100, 'x'));
  const char* text_bytes = text.as_string().data();
  Value::Array items;
  items.emplace_back(1);
  const Value kept("kept");
  const std::string name = "from a std::string";
  Value object = Value::MakeObject({{"text", std::move(text)},
                                    {"items", std::move(items)},
                                    {"kept", kept},
                                    {name, nullptr},
                                    {"n", 7},
                                    {"pi", 3.5},
                                    {"yes", true}});
  EXPECT_EQ(object.ToJson(), "{\"text\":\"" + std::string(100, 'x') +
                                 "\",\"items\":[1],\"kept\":\"kept\",\"from a std::string\":null,"
                                 "\"n\":7,\"pi\":3.5,\"yes\":true}");
  // The string was moved in and out, not copied: its bytes are where they were.
  EXPECT_EQ(object.Find("text")->as_string().data(), text_bytes);
  EXPECT_EQ(kept.as_string(), "kept");  // an lvalue is copied
}

TEST(Value, MakeArrayMovesEachElementOutOfItsList) {
  Value text(std::string(100, 'y'));
  const char* text_bytes = text.as_string().data();
  const Value kept("kept");
  Value array = Value::MakeArray({std::move(text), kept, 7, 2.5, nullptr, false});
  EXPECT_EQ(array.ToJson(), "[\"" + std::string(100, 'y') + "\",\"kept\",7,2.5,null,false]");
  EXPECT_EQ(array.as_array()[0].as_string().data(), text_bytes);  // moved, not copied
  EXPECT_EQ(kept.as_string(), "kept");
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

TEST(Value, RandomValuesRoundTripThroughJsonAndBinary) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    Value v = testing::RandomValue(rng);
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

// A number or a bool assigned in place gives what assigning a whole Value of it gives, over
// a value of every type (its old content dropped, or overwritten where the type is the same).
TEST(Value, AssigningAScalarInPlaceIsAssigningItsValue) {
  const std::vector<Value> olds = {Value(),
                                   Value(true),
                                   Value(7),
                                   Value(2.5),
                                   Value("text"),
                                   Value(Value::Array{1, 2}),
                                   Value::MakeObject({{"a", 1}})};
  for (const Value& old : olds) {
    Value v = old;
    v = 42;
    EXPECT_EQ(v, Value(42)) << old.ToJson();
    EXPECT_TRUE(v.is_int());
    v = old;
    v = int64_t{-3};
    EXPECT_EQ(v, Value(-3));
    v = old;
    v = UINT64_MAX;  // beyond int64: a double, as the constructor makes it
    EXPECT_TRUE(v.is_double()) << old.ToJson();
    EXPECT_EQ(v, Value(UINT64_MAX));
    v = old;
    v = 0.25;
    EXPECT_EQ(v, Value(0.25));
    v = old;
    v = false;
    EXPECT_EQ(v, Value(false));
    v = old;
    v = "a string, not a bool";  // must not convert the pointer to bool
    EXPECT_EQ(v, Value("a string, not a bool"));
  }
}

// swap exchanges any two values, of the same type (the fast cases: ints, strings) or not.
TEST(Value, SwapExchangesValuesOfAnyTypes) {
  const std::vector<Value> all = {Value(),
                                  Value(true),
                                  Value(7),
                                  Value(2.5),
                                  Value("short"),
                                  Value(std::string(100, 'x')),
                                  Value(Value::Array{1, "two"}),
                                  Value::MakeObject({{"a", 1}})};
  for (const Value& x : all) {
    for (const Value& y : all) {
      Value a = x, b = y;
      swap(a, b);
      EXPECT_EQ(a, y) << x.ToJson() << " " << y.ToJson();
      EXPECT_EQ(b, x) << x.ToJson() << " " << y.ToJson();
    }
  }
}

// Find compares names of every length, and a name differing from another in any one byte (the
// first, the last, or one between the two words a long name is compared as) is not it.
TEST(Value, FindTellsApartNamesDifferingInAnyByte) {
  for (size_t length = 0; length <= 24; ++length) {
    const std::string name(length, 'n');
    Value object = Value::MakeObject({});
    for (size_t i = 0; i < length; ++i) {
      std::string other = name;
      other[i] = 'x';
      object.Set(other, static_cast<int64_t>(i));
    }
    object.Set(name + "y", -2);
    EXPECT_EQ(object.Find(name), nullptr) << length;
    object.Set(name, -1);
    ASSERT_NE(object.Find(name), nullptr) << length;
    EXPECT_EQ(object.Find(name)->as_int(), -1) << length;
    for (size_t i = 0; i < length; ++i) {
      std::string other = name;
      other[i] = 'x';
      ASSERT_NE(object.Find(other), nullptr);
      EXPECT_EQ(object.Find(other)->as_int(), static_cast<int64_t>(i)) << length << " " << i;
    }
  }
}

// The binary form is on disk (checkpointed state, repartition topics): its bytes must not change
// from one build to the next.
TEST(Value, TheBinaryFormsBytesAreFixed) {
  using std::string_literals::operator""s;
  const Value v = Value::MakeObject(
      {{"a", -2}, {"s", "hé"}, {"l", Value::MakeArray({true, false, nullptr, 1.5, 300})}});
  std::string bin;
  v.AppendBinary(bin);
  // object of 3 members; "a": int, zigzag(-2) = 3; "s": a string of 3 bytes; "l": an array of 5:
  // true, false, null, 1.5 (its bits, little-endian), int zigzag(300) = 600 as a varint.
  const std::string want = "\x07\x03"s + "\x01" + "a" + "\x03\x03" + "\x01" + "s" + "\x05\x03" +
                           "h\xc3\xa9" + "\x01" + "l" + "\x06\x05" + "\x02" + "\x01" + "\x00"s +
                           "\x04" + "\x00\x00\x00\x00\x00\x00\xf8\x3f"s + "\x03" + "\xd8\x04";
  EXPECT_EQ(bin, want);
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

TEST(Value, AssignWholeBinaryTakesExactlyOneValueAndLeavesNullOtherwise) {
  const Value v = Value::MakeObject({{"a", Value::Array{1, "two", 3.0}}, {"b", "text"}});
  std::string bin;
  v.AppendBinary(bin);
  Value into("kept memory");
  ASSERT_TRUE(AssignWholeBinary(bin, into).ok());
  EXPECT_EQ(into, v);
  Status trailing = AssignWholeBinary(bin + "\x01", into);
  EXPECT_EQ(trailing.code(), StatusCode::kCorruption) << trailing.ToString();
  EXPECT_EQ(trailing.message(), "bytes after the value");
  EXPECT_TRUE(into.is_null());
  into = v;
  EXPECT_FALSE(AssignWholeBinary(std::string_view(bin).substr(0, bin.size() - 1), into).ok());
  EXPECT_TRUE(into.is_null());
}

TEST(Value, ReadingTheWrongTypeThrowsATypeErrorThatSaysWhatItHolds) {
  Value v = *Value::Parse(R"({"amount":"12"})");
  try {
    (void)v.Find("amount")->as_int();
    FAIL() << "no exception";
  } catch (const ValueTypeError& e) {
    EXPECT_STREQ(e.what(), R"(read as integer, but holds string "12")");
  }
  std::string long_string(100, 'x');
  try {
    (void)Value(long_string).as_bool();
    FAIL() << "no exception";
  } catch (const ValueTypeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "read as bool, but holds string \"" + std::string(63, 'x') + "...");
  }
  EXPECT_THROW((void)Value(1.5).as_int(), ValueTypeError);
  EXPECT_THROW((void)Value().as_object(), ValueTypeError);
}

TEST(Value, AsDoubleWidensAnInteger) {
  Value v = *Value::Parse(R"({"a":1,"b":2.5})");
  EXPECT_EQ(v.Find("a")->as_double(), 1.0);
  EXPECT_EQ(v.Find("b")->as_double(), 2.5);
  EXPECT_EQ(v.Find("a")->as_number(), 1.0);
}

TEST(Value, GettersReturnNulloptForAMissingFieldOrAnotherType) {
  Value v = *Value::Parse(R"({"n":3,"d":0.5,"s":"x","b":true,"o":{"in":7},"z":null})");
  EXPECT_EQ(v.GetInt("n"), 3);
  EXPECT_EQ(v.GetInt("d"), std::nullopt);
  EXPECT_EQ(v.GetDouble("n"), 3.0);
  EXPECT_EQ(v.GetDouble("d"), 0.5);
  EXPECT_EQ(v.GetDouble("s"), std::nullopt);
  EXPECT_EQ(v.GetString("s"), "x");
  EXPECT_EQ(v.GetString("n"), std::nullopt);
  EXPECT_EQ(v.GetBool("b"), true);
  EXPECT_EQ(v.GetBool("z"), std::nullopt);
  EXPECT_EQ(v.GetInt("o.in"), 7);
  EXPECT_EQ(v.GetInt("missing"), std::nullopt);
  EXPECT_EQ(Value(5).GetInt("n"), std::nullopt);  // not an object
}

TEST(Value, IsConstructibleFromEveryIntegerType) {
  EXPECT_EQ(Value(size_t{7}), Value(int64_t{7}));
  EXPECT_EQ(Value(7LL), Value(7));
  EXPECT_EQ(Value(uint32_t{4'000'000'000}).as_int(), 4'000'000'000);
  EXPECT_EQ(Value(int16_t{-3}).as_int(), -3);
  EXPECT_EQ(Value(uint8_t{255}).as_int(), 255);
  EXPECT_EQ(Value(uint64_t{INT64_MAX}).as_int(), INT64_MAX);
  // Beyond int64, as JSON parses such a number: a double.
  EXPECT_TRUE(Value(UINT64_MAX).is_double());
  EXPECT_EQ(Value(UINT64_MAX), *Value::Parse("18446744073709551615"));
  EXPECT_TRUE(Value(true).is_bool());
}

}  // namespace
}  // namespace weir
