#include "embed/wordpiece.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <array>

#include "core/error.h"
#include "core/sys.h"

namespace pwab::embed {
namespace {

// ---- Unicode classes, as BERT defines them --------------------------------------------------------------------

//! BERT's "Chinese character" ranges: the CJK Unified Ideographs blocks and extensions, and the compatibility
//! ideographs. Hiragana, Katakana and Hangul are not in them (they are split like other letters).
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_ascii_punctuation(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

//! Unicode category C* (Cc, Cf, Cs, Co, Cn) except tab, LF and CR, which count as whitespace.
bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_C_MASK) != 0;
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= '\t' && c <= '\r');
  return u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) return is_ascii_punctuation(c);
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

// ---- UTF-8 -----------------------------------------------------------------------------------------------------

//! Decodes UTF-8; each byte of an invalid sequence (overlong, surrogate, out of range, truncated) becomes U+FFFD.
void decode_utf8(std::string_view s, std::u32string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    unsigned char b = p[i];
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    int len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    char32_t c = len == 4 ? b & 0x07u : len == 3 ? b & 0x0Fu : b & 0x1Fu;
    bool ok = len > 0 && b < 0xF5 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        ok = false;
      else
        c = (c << 6) | (p[i + k] & 0x3Fu);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))) ok = false;
    if (ok) {
      out.push_back(c);
      i += static_cast<std::size_t>(len);
    } else {
      out.push_back(0xFFFD);
      ++i;
    }
  }
}

void append_utf8(std::string& s, char32_t c) {
  if (c < 0x80) {
    s.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (c >> 6)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (c >> 12)));
    s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (c >> 18)));
    s.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// ---- Normalization ---------------------------------------------------------------------------------------------

//! Steps 2-4 of the header: clean, isolate CJK ideographs, strip accents, lower-case.
std::u32string normalize(std::string_view text, const WordPieceOptions& options) {
  std::u32string raw;
  raw.reserve(text.size());
  decode_utf8(text, raw);
  std::u32string cleaned;
  cleaned.reserve(raw.size());
  bool ascii = true;
  for (char32_t c : raw) {
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      cleaned.push_back(' ');
    } else if (options.tokenize_chinese_chars && is_cjk(c)) {
      cleaned.push_back(' ');
      cleaned.push_back(c);
      cleaned.push_back(' ');
      ascii = false;
    } else {
      cleaned.push_back(c);
      ascii = ascii && c < 0x80;
    }
  }
  if (options.strip_accents && !ascii) {  // ASCII is its own NFD and has no marks
    UErrorCode err = U_ZERO_ERROR;
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(err);
    if (U_FAILURE(err)) throw Error(std::string("ICU: no NFD normalizer: ") + u_errorName(err));
    auto in = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(cleaned.data()),
                                            static_cast<int32_t>(cleaned.size()));
    icu::UnicodeString decomposed = nfd->normalize(in, err);
    if (U_FAILURE(err)) throw Error(std::string("ICU: NFD failed: ") + u_errorName(err));
    cleaned.clear();
    for (int32_t i = 0; i < decomposed.length();) {
      UChar32 c = decomposed.char32At(i);
      i += U16_LENGTH(c);
      if (u_charType(c) != U_NON_SPACING_MARK) cleaned.push_back(static_cast<char32_t>(c));
    }
  }
  if (options.lowercase) {
    std::u32string lower;
    lower.reserve(cleaned.size());
    for (char32_t c : cleaned) {
      if (c < 0x80) {
        lower.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
      } else if (c == 0x130) {  // the one character whose full lower case is two code points ("i" + U+0307)
        lower.push_back('i');
        lower.push_back(0x307);
      } else {
        lower.push_back(static_cast<char32_t>(u_tolower(static_cast<UChar32>(c))));
      }
    }
    cleaned.swap(lower);
  }
  return cleaned;
}

//! Step 5: calls word(utf8, n_chars) for each word and each punctuation character.
template <typename Word>
void split_words(const std::u32string& text, Word&& word) {
  std::string current;
  std::size_t n_chars = 0;
  auto flush = [&] {
    if (n_chars > 0) word(current, n_chars);
    current.clear();
    n_chars = 0;
  };
  for (char32_t c : text) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      append_utf8(current, c);
      n_chars = 1;
      flush();
    } else {
      append_utf8(current, c);
      ++n_chars;
    }
  }
  flush();
}

//! Step 1: splits the raw text at literal special tokens (leftmost, then longest); calls segment(text between
//! them) and special(token, id) in order.
template <typename Segment, typename Special>
void split_specials(std::string_view text, const std::vector<std::pair<std::string, int32_t>>& specials,
                    Segment&& segment, Special&& special) {
  std::size_t segment_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (const auto& [token, id] : specials) {
      if (text[i] == token[0] && text.compare(i, token.size(), token) == 0) {
        segment(text.substr(segment_start, i - segment_start));
        special(token, id);
        i += token.size() - 1;
        segment_start = i + 1;
        break;
      }
    }
  }
  segment(text.substr(segment_start));
}

}  // namespace

// ---- WordPieceTokenizer ----------------------------------------------------------------------------------------

WordPieceTokenizer WordPieceTokenizer::from_file(const std::filesystem::path& vocab_txt, WordPieceOptions options) {
  std::string text = read_file(vocab_txt);
  std::vector<std::string> vocab;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(start, end - start);
    if (!token.empty() && token.back() == '\r') token.pop_back();
    vocab.push_back(std::move(token));
    start = end + 1;
  }
  return WordPieceTokenizer(std::move(vocab), options, "vocabulary " + vocab_txt.string());
}

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options, std::string source)
    : vocab_(std::move(vocab)), options_(options) {
  if (vocab_.empty()) throw DataError(source + ": no tokens");
  if (vocab_.size() > static_cast<std::size_t>(INT32_MAX)) throw DataError(source + ": too many tokens");
  if (options_.max_length < 2) throw UsageError("WordPiece: max_length must leave room for [CLS] and [SEP]");
  // As Hugging Face's load_vocab: a token listed twice keeps its last line number.
  for (std::size_t i = 0; i < vocab_.size(); ++i) ids_[vocab_[i]] = static_cast<int32_t>(i);
  auto required = [&](std::string_view token) {
    int32_t id = token_to_id(token);
    if (id < 0) throw DataError(source + ": no " + std::string(token) + " token");
    return id;
  };
  cls_id_ = required("[CLS]");
  sep_id_ = required("[SEP]");
  pad_id_ = required("[PAD]");
  unk_id_ = required("[UNK]");
  for (std::string_view token : {"[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"}) {
    int32_t id = token_to_id(token);
    if (id >= 0) specials_.emplace_back(std::string(token), id);
  }
  std::stable_sort(specials_.begin(), specials_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

int32_t WordPieceTokenizer::token_to_id(std::string_view token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string& WordPieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_.size())
    throw UsageError("WordPiece: token id " + std::to_string(id) + " out of range");
  return vocab_[static_cast<std::size_t>(id)];
}

template <typename Emit>
void WordPieceTokenizer::wordpiece(const std::string& word, std::size_t n_chars, Emit& emit) const {
  if (n_chars > options_.max_chars_per_word) {
    emit(unk_id_);
    return;
  }
  // Greedy longest match first; all pieces are found before any is emitted, since a miss makes the word [UNK].
  std::array<int32_t, 128> small;
  std::vector<int32_t> large;
  std::size_t n_pieces = 0;
  auto push = [&](int32_t id) {
    if (n_pieces < small.size())
      small[n_pieces] = id;
    else
      large.push_back(id);
    ++n_pieces;
  };
  std::string candidate;
  std::size_t start = 0;
  while (start < word.size()) {
    std::size_t end = word.size();
    int32_t found = -1;
    while (end > start) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(word, start, end - start);
      found = token_to_id(candidate);
      if (found >= 0) break;
      do {
        --end;  // back to the previous character boundary
      } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (found < 0) {
      emit(unk_id_);
      return;
    }
    push(found);
    start = end;
  }
  for (std::size_t i = 0; i < n_pieces; ++i) emit(i < small.size() ? small[i] : large[i - small.size()]);
}

template <typename Emit>
void WordPieceTokenizer::for_each_piece(std::string_view text, Emit&& emit) const {
  auto run = [&](std::string_view segment) {
    if (segment.empty()) return;
    split_words(normalize(segment, options_),
                [&](const std::string& word, std::size_t n_chars) { wordpiece(word, n_chars, emit); });
  };
  split_specials(text, specials_, run, [&](const std::string&, int32_t id) { emit(id); });
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids{cls_id_};
  const std::size_t limit = options_.max_length - 1;  // room for [SEP]
  for_each_piece(text, [&](int32_t id) {
    if (ids.size() < limit) ids.push_back(id);
  });
  ids.push_back(sep_id_);
  return ids;
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  for_each_piece(text, [&](int32_t id) { pieces.push_back(vocab_[static_cast<std::size_t>(id)]); });
  return pieces;
}

std::vector<std::string> WordPieceTokenizer::basic_tokenize(std::string_view text) const {
  std::vector<std::string> words;
  auto run = [&](std::string_view segment) {
    split_words(normalize(segment, options_), [&](const std::string& word, std::size_t) { words.push_back(word); });
  };
  split_specials(text, specials_, run, [&](const std::string& token, int32_t) { words.push_back(token); });
  return words;
}

}  // namespace pwab::embed
