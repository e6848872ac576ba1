#include "weir/key.h"

#include <gtest/gtest.h>

namespace weir {
namespace {

TEST(Key, IntKeysAreEightByteBigEndianLikeKafkaLongSerializer) {
  Key k = Key::Int(258);
  EXPECT_EQ(k.bytes(), std::string("\0\0\0\0\0\0\x01\x02", 8));
  EXPECT_EQ(k.AsInt(), 258);
  EXPECT_EQ(Key::Int(-1).AsInt(), -1);
}

TEST(Key, FieldOfTheWrongTypeIsRefusedWithItsName) {
  auto k = Key::FromField(Value(12), KeySerde::kString, "user");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message(), "key field 'user' must be a string, found integer");
  auto i = Key::FromField(Value("12"), KeySerde::kInt, "id");
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.status().message(), "key field 'id' must be an integer, found string");
}

TEST(Key, RendersAsJsonBySerde) {
  std::string out;
  Key::String("u\"1").AppendJson(out);
  out.push_back(' ');
  Key::Int(-7).AppendJson(out);
  out.push_back(' ');
  Key::Json(Value::MakeObject({{"a", 1}})).AppendJson(out);
  out.push_back(' ');
  Key().AppendJson(out);
  EXPECT_EQ(out, R"("u\"1" -7 {"a":1} null)");
}

TEST(Key, FromBytesRefusesMalformedIntKeys) {
  EXPECT_FALSE(Key::FromBytes(KeySerde::kInt, "abc").ok());
  EXPECT_EQ(Key::FromBytes(KeySerde::kInt, Key::Int(5).bytes())->AsInt(), 5);
}

TEST(Key, ParseKeySerdeNamesTheChoices) {
  EXPECT_EQ(*ParseKeySerde("int"), KeySerde::kInt);
  auto bad = ParseKeySerde("float");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected string, int, json or bytes"), std::string::npos);
}

}  // namespace
}  // namespace weir
