#include "core/hash.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "support/test_support.h"

namespace pwab {

TEST(Hash, ChunkingDoesNotMatter) {
  std::string text = "The quick brown fox jumps over the lazy dog, twice over.";
  Hasher whole;
  whole.update(text);
  Hasher parts;
  parts.update(text.substr(0, 3)).update(text.substr(3, 11)).update(text.substr(14));
  EXPECT_EQ(whole.digest(), parts.digest());
  EXPECT_EQ(whole.hex().size(), 16u);
}

TEST(Hash, LengthAndContentMatter) {
  EXPECT_NE(hash_bytes(""), hash_bytes(std::string(1, '\0')));
  EXPECT_NE(hash_bytes("ab"), hash_bytes("ba"));
  EXPECT_NE(hash_bytes("abcdefgh"), hash_bytes("abcdefgi"));
}

TEST(Hash, FileHashEqualsBytesHash) {
  test::TempDir dir;
  std::string text(100000, 'x');
  text[500] = 'y';
  test::write_text(dir / "f.bin", text);
  EXPECT_EQ(hash_file(dir / "f.bin"), hash_bytes(text));
  EXPECT_THROW(hash_file(dir / "missing"), Error);
}

}  // namespace pwab
