#include "weir/key.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// Keys of up to 31 bytes are kept inline and longer ones on the heap: every length on either
// side of the boundary keeps its bytes through copies, moves and assignments between the forms.
TEST(Key, KeepsItsBytesThroughCopiesAndMovesInlineOrOnTheHeap) {
  std::vector<std::string> texts;
  for (size_t n : {0, 1, 15, 16, 30, 31, 32, 33, 100, 5000}) {
    std::string t(n, 'a');
    for (size_t i = 0; i < n; ++i) t[i] = static_cast<char>('a' + i * 7 % 26);
    texts.push_back(t);
  }
  for (const std::string& a : texts) {
    for (const std::string& b : texts) {
      Key x = Key::String(a);
      Key y = Key::Bytes(b);
      EXPECT_EQ(x.bytes(), a);
      Key copy = x;
      EXPECT_EQ(copy, x);
      EXPECT_EQ(copy.bytes(), a);
      y = copy;  // copy-assign over a key of the other length
      EXPECT_EQ(y.serde(), KeySerde::kString);
      EXPECT_EQ(y.bytes(), a);
      Key moved = std::move(copy);
      EXPECT_EQ(moved.bytes(), a);
      EXPECT_EQ(copy.bytes(), "");  // NOLINT(bugprone-use-after-move): moved-from is empty
      Key target = Key::Bytes(b);
      target = std::move(moved);
      EXPECT_EQ(target.bytes(), a);
      EXPECT_FALSE(target == Key::Bytes(a));  // the serde differs
      EXPECT_TRUE(target == Key::String(a));
      const Key& same = target;
      target = same;  // self-assignment keeps the key
      EXPECT_EQ(target.bytes(), a);
      EXPECT_EQ(Key::FromBytes(KeySerde::kBytes, b)->bytes(), b);
      // In place, over a key of the other length, and from a view of its own bytes.
      Key in_place = Key::Bytes(b);
      ASSERT_TRUE(in_place.AssignBytes(KeySerde::kString, a).ok());
      EXPECT_EQ(in_place, Key::String(a));
      ASSERT_TRUE(in_place.AssignField(Value(b), KeySerde::kBytes, "f").ok());
      EXPECT_EQ(in_place, Key::Bytes(b));
      ASSERT_TRUE(
          in_place.AssignBytes(KeySerde::kString, in_place.bytes().substr(b.size() / 2)).ok());
      EXPECT_EQ(in_place.bytes(), b.substr(b.size() / 2));
    }
  }
  std::vector<Key> grown;  // moved as the vector grows
  for (int i = 0; i < 100; ++i)
    grown.push_back(Key::String(texts[static_cast<size_t>(i) % texts.size()]));
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(grown[static_cast<size_t>(i)].bytes(), texts[static_cast<size_t>(i) % texts.size()]);
}

TEST(Key, AssignInPlaceMakesWhatFromBytesAndFromFieldMakeAndLeavesTheKeyOnAnError) {
  const std::string long_text(40, 'x');
  const std::vector<Value> fields = {Value(7),
                                     Value(-1),
                                     Value("u"),
                                     Value(long_text),
                                     Value(1.5),
                                     Value(true),
                                     Value::MakeArray({1, "a"}),
                                     Value()};
  const Key before = Key::String(long_text);  // on the heap: an error must not free it
  for (KeySerde serde :
       {KeySerde::kString, KeySerde::kInt, KeySerde::kJson, KeySerde::kBytes, KeySerde::kNull}) {
    for (const Value& field : fields) {
      Key key = before;
      const Result<Key> made = Key::FromField(field, serde, "f");
      const Status assigned = key.AssignField(field, serde, "f");
      EXPECT_EQ(assigned.ok(), made.ok()) << field.ToJson();
      if (made.ok()) {
        EXPECT_EQ(key, *made);
        // And what the constructors of each serde make.
        const Key constructed = serde == KeySerde::kString  ? Key::String(field.as_string())
                                : serde == KeySerde::kInt   ? Key::Int(field.as_int())
                                : serde == KeySerde::kJson  ? Key::Json(field)
                                : serde == KeySerde::kBytes ? Key::Bytes(field.as_string())
                                                            : Key();
        EXPECT_EQ(key, constructed) << field.ToJson();
      } else {
        EXPECT_EQ(assigned.message(), made.status().message());
        EXPECT_EQ(key, before);
      }
    }
  }
  Key key = before;
  EXPECT_FALSE(key.AssignBytes(KeySerde::kInt, "1234567").ok());
  EXPECT_FALSE(key.AssignBytes(KeySerde::kNull, "x").ok());
  EXPECT_EQ(key, before);
  ASSERT_TRUE(key.AssignBytes(KeySerde::kInt, Key::Int(-5).bytes()).ok());
  EXPECT_EQ(key.AsInt(), -5);
  ASSERT_TRUE(key.AssignBytes(KeySerde::kNull, "").ok());
  EXPECT_TRUE(key.is_null());
}

TEST(Key, ParseKeySerdeNamesTheChoices) {
  EXPECT_EQ(*ParseKeySerde("int"), KeySerde::kInt);
  auto bad = ParseKeySerde("float");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected string, int, json or bytes"), std::string::npos);
}

}  // namespace
}  // namespace weir
