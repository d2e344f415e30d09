// src/embed/wordpiece.h: BERT's tokenizer (BasicTokenizer + WordPiece) for the sentence encoders.
//
// Follows Hugging Face's BertTokenizerFast, which is what AutoTokenizer gives for all-MiniLM-L6-v2 and hence what
// the original PersonalWAB scored reviews with (docs/decisions.md §3.1):
//  1. the vocabulary's special tokens ([CLS], [SEP], [PAD], [UNK], [MASK]) written literally in the text are
//     matched first, in the raw text, and become those tokens;
//  2. clean: NUL, U+FFFD and control/format/unassigned characters (Unicode C*, except tab, LF, CR) are dropped,
//     whitespace (White_Space, plus tab, LF, CR) becomes a space;
//  3. CJK ideographs (BERT's fixed code point ranges) are surrounded by spaces;
//  4. accents are stripped (NFD, then nonspacing marks Mn dropped), then the text is lower-cased;
//  5. split on whitespace, and every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*)
//     becomes a token of its own;
//  6. each word is split greedily, longest match first, into vocabulary pieces ("##" marks a continuation); a
//     word longer than 100 characters, or one with a part no piece matches, becomes [UNK].
// encode() adds [CLS] and [SEP] and truncates the pieces to max_length - 2 (512 in total by default, as the
// original's truncation=True with model_max_length 512). Invalid UTF-8 bytes are read as U+FFFD and therefore
// dropped (Python would have refused to decode them). Unicode data comes from ICU, so code points assigned after
// the Unicode version of Hugging Face's tables can classify differently; nothing else is known to differ.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pwab::embed {

struct WordPieceOptions {
  bool lowercase = true;      //!< uncased models (all-MiniLM-L6-v2)
  bool strip_accents = true;  //!< Hugging Face's default: strip when lower-casing
  bool tokenize_chinese_chars = true;
  std::size_t max_length = 512;  //!< encode(): tokens including [CLS] and [SEP]; at least 2
  std::size_t max_chars_per_word = 100;
};

class WordPieceTokenizer {
 public:
  //! Reads a vocab.txt (one token per line, id = line number, a trailing CR ignored). Throws pwab::DataError
  //! naming the file when it is empty or lacks [CLS], [SEP], [PAD] or [UNK]; pwab::Error when unreadable.
  static WordPieceTokenizer from_file(const std::filesystem::path& vocab_txt, WordPieceOptions options = {});
  //! `source` names the vocabulary in errors.
  explicit WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options = {},
                              std::string source = "vocabulary");

  //! [CLS] pieces [SEP], truncated to options().max_length.
  std::vector<int32_t> encode(std::string_view text) const;
  //! The pieces of a text, without special tokens or truncation (e.g. "un", "##aff", "##able", ",").
  std::vector<std::string> tokenize(std::string_view text) const;
  //! Steps 1-5 only: the words WordPiece will split (special tokens pass through unchanged).
  std::vector<std::string> basic_tokenize(std::string_view text) const;

  //! -1 when the token is not in the vocabulary.
  int32_t token_to_id(std::string_view token) const;
  const std::string& id_to_token(int32_t id) const;
  std::size_t vocab_size() const { return vocab_.size(); }
  int32_t cls_id() const { return cls_id_; }
  int32_t sep_id() const { return sep_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t unk_id() const { return unk_id_; }
  const WordPieceOptions& options() const { return options_; }

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  //! Calls emit(id, piece) for every piece of `text`, special tokens included, in order.
  template <typename Emit>
  void for_each_piece(std::string_view text, Emit&& emit) const;
  template <typename Emit>
  void wordpiece(const std::string& word, std::size_t n_chars, Emit& emit) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
  std::vector<std::pair<std::string, int32_t>> specials_;  // matched in raw text, longest first
  WordPieceOptions options_;
  int32_t cls_id_ = -1, sep_id_ = -1, pad_id_ = -1, unk_id_ = -1;
};

}  // namespace pwab::embed
