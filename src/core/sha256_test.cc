#include "core/sha256.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "testing/temp_dir.h"

namespace weir {
namespace {

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesHashAsTheWhole) {
  std::string text(1000, 'x');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{55}, size_t{56}, size_t{63}, size_t{64},
                     size_t{65}, size_t{999}}) {
    Sha256 hash;
    hash.Update(std::string_view(text).substr(0, cut));
    hash.Update(std::string_view(text).substr(cut));
    Sha256 whole;
    whole.Update(text);
    EXPECT_EQ(hash.Finish(), whole.Finish()) << "cut at " << cut;
  }
}

TEST(Sha256, DigestFilesCoversNamesContentsAndOrder) {
  testing::TempDir dir;
  std::ofstream(dir / "a.py") << "print(1)\n";
  std::ofstream(dir / "b.py") << "print(2)\n";
  auto ab = DigestFiles(dir.path(), {"a.py", "b.py"});
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  EXPECT_EQ(ab->size(), 64u);
  EXPECT_EQ(*DigestFiles(dir.path(), {"a.py", "b.py"}), *ab);
  EXPECT_NE(*DigestFiles(dir.path(), {"b.py", "a.py"}), *ab);
  std::ofstream(dir / "b.py") << "print(3)\n";
  EXPECT_NE(*DigestFiles(dir.path(), {"a.py", "b.py"}), *ab);
}

TEST(Sha256, AMissingFileIsNamed) {
  testing::TempDir dir;
  auto digest = DigestFiles(dir.path(), {"fraud.py"});
  ASSERT_FALSE(digest.ok());
  EXPECT_EQ(digest.status().code(), StatusCode::kNotFound);
  EXPECT_NE(digest.status().message().find("worker file fraud.py"), std::string::npos)
      << digest.status().message();
}

}  // namespace
}  // namespace weir
