// BERT WordPiece tokenization against the reference in test/fixtures/minilm/make_fixture.py (BertTokenizerFast
// semantics): cleaning, CJK, accents, punctuation, [UNK], ## continuations, literal special tokens, truncation.
#include "embed/wordpiece.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_support.h"

namespace pwab::embed {
namespace {

namespace fs = std::filesystem;

nlohmann::json expected() { return nlohmann::json::parse(test::read_text(test::fixture("minilm/expected.json"))); }

WordPieceTokenizer fixture_tokenizer(WordPieceOptions options = {}) {
  return WordPieceTokenizer::from_file(test::fixture("minilm/vocab.txt"), options);
}

std::string data_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(WordPiece, MatchesTheReferenceOnTrickyStrings) {
  auto tok = fixture_tokenizer();
  auto cases = expected()["tokenization"];
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    const auto text = c["text"].get<std::string>();
    EXPECT_EQ(tok.basic_tokenize(text), c["words"].get<std::vector<std::string>>()) << text;
    EXPECT_EQ(tok.tokenize(text), c["pieces"].get<std::vector<std::string>>()) << text;
    EXPECT_EQ(tok.encode(text), c["ids"].get<std::vector<int32_t>>()) << text;
  }
}

TEST(WordPiece, SpecialTokensAreLookedUpByName) {
  auto tok = fixture_tokenizer();
  // The fixture puts them at 0..4, not at BERT's 0/100/101/102/103.
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.unk_id(), 1);
  EXPECT_EQ(tok.cls_id(), 2);
  EXPECT_EQ(tok.sep_id(), 3);
  EXPECT_EQ(tok.token_to_id("[MASK]"), 4);
  EXPECT_EQ(tok.token_to_id("not-a-token"), -1);
  EXPECT_EQ(tok.id_to_token(tok.cls_id()), "[CLS]");
  EXPECT_THROW(tok.id_to_token(-1), UsageError);
  EXPECT_EQ(tok.encode(""), (std::vector<int32_t>{2, 3}));
}

TEST(WordPiece, GreedyLongestMatchWithContinuations) {
  auto tok = fixture_tokenizer();
  EXPECT_EQ(tok.tokenize("unbelievable"), (std::vector<std::string>{"un", "##believ", "##able"}));
  EXPECT_EQ(tok.tokenize("replaying"), (std::vector<std::string>{"re", "##play", "##ing"}));
  // One unmatched part makes the whole word [UNK], not just that part.
  EXPECT_EQ(tok.tokenize("playx"), (std::vector<std::string>{"[UNK]"}));
  // 100 characters are split; 101 are [UNK].
  EXPECT_EQ(tok.tokenize(std::string(100, 'b')).size(), 100u);
  EXPECT_EQ(tok.tokenize(std::string(101, 'b')), (std::vector<std::string>{"[UNK]"}));
  // The limit counts characters, not bytes: 60 two-byte letters are one word of 60.
  std::string accented;
  for (int i = 0; i < 60; ++i) accented += "\xC3\xA9";  // é → e
  EXPECT_EQ(tok.tokenize(accented).size(), 60u);
}

TEST(WordPiece, TruncatesKeepingClsAndSep) {
  auto tok = fixture_tokenizer();
  auto e = expected()["long"];
  auto ids = tok.encode(e["text"].get<std::string>());
  ASSERT_EQ(ids.size(), 512u);
  EXPECT_EQ(ids.front(), tok.cls_id());
  EXPECT_EQ(ids.back(), tok.sep_id());
  EXPECT_EQ(ids, e["ids"].get<std::vector<int32_t>>());
  EXPECT_GT(e["n_pieces"].get<int>(), 512);

  WordPieceOptions small;
  small.max_length = 5;
  auto short_ids = fixture_tokenizer(small).encode("hello , world ! great battery");
  EXPECT_EQ(short_ids, (std::vector<int32_t>{tok.cls_id(), tok.token_to_id("hello"), tok.token_to_id(","),
                                             tok.token_to_id("world"), tok.sep_id()}));
  small.max_length = 1;
  EXPECT_THROW(fixture_tokenizer(small), UsageError);
}

TEST(WordPiece, InvalidUtf8IsDroppedLikeReplacementCharacters) {
  auto tok = fixture_tokenizer();
  EXPECT_EQ(tok.tokenize("ba\xFF"
                         "d"),
            tok.tokenize("bad"));
  EXPECT_EQ(tok.tokenize("ba\xC3"), tok.tokenize("ba"));  // truncated sequence
  EXPECT_EQ(tok.tokenize("ba\xC0\xAF"
                         "d"),
            tok.tokenize("bad"));  // overlong '/'
  EXPECT_EQ(tok.tokenize("ba\xED\xA0\x80"
                         "d"),
            tok.tokenize("bad"));  // a surrogate
}

TEST(WordPiece, CasedOptionsKeepCaseAndAccents) {
  WordPieceOptions cased;
  cased.lowercase = false;
  cased.strip_accents = false;
  auto tok = fixture_tokenizer(cased);
  EXPECT_EQ(tok.basic_tokenize("Hello Café, [CLS]"), (std::vector<std::string>{"Hello", "Café", ",", "[CLS]"}));
  EXPECT_EQ(tok.tokenize("Hello"), (std::vector<std::string>{"[UNK]"}));  // the vocabulary is lower case

  WordPieceOptions no_cjk;
  no_cjk.tokenize_chinese_chars = false;
  EXPECT_EQ(fixture_tokenizer(no_cjk).basic_tokenize("我爱 北京"), (std::vector<std::string>{"我爱", "北京"}));
}

TEST(WordPiece, VocabularyFiles) {
  test::TempDir dir;
  // CRLF line ends are accepted; ids are line numbers; a repeated token keeps its last line.
  test::write_text(dir / "crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhi\r\nhi\r\n");
  auto tok = WordPieceTokenizer::from_file(dir / "crlf.txt");
  EXPECT_EQ(tok.vocab_size(), 6u);
  EXPECT_EQ(tok.encode("hi HI"), (std::vector<int32_t>{2, 5, 5, 3}));

  test::write_text(dir / "no_unk.txt", "[PAD]\n[CLS]\n[SEP]\nhi\n");
  auto message = data_error([&] { WordPieceTokenizer::from_file(dir / "no_unk.txt"); });
  EXPECT_NE(message.find("no_unk.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("no [UNK] token"), std::string::npos) << message;

  test::write_text(dir / "empty.txt", "");
  EXPECT_NE(data_error([&] { WordPieceTokenizer::from_file(dir / "empty.txt"); }).find("no tokens"), std::string::npos);
  EXPECT_THROW(WordPieceTokenizer::from_file(dir / "absent.txt"), Error);
}

}  // namespace pwab::embed
