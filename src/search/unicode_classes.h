// src/search/unicode_classes.h: the character classes the standard tokenizer needs, and UTF-8 decoding.
//
// Classes come from the Unicode Word_Break property (UAX #29) plus the scripts and emoji properties Lucene's
// tokenizer treats specially; they are looked up through ICU once per BMP code point and cached in a table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pwab::search {

enum class CharClass : uint8_t {
  kOther,         //!< dropped: spaces, punctuation, symbols that are not emoji, U+FFFD
  kLetter,        //!< Word_Break ALetter (Latin, Cyrillic, Hangul, ...)
  kHebrew,        //!< Word_Break Hebrew_Letter
  kNumeric,       //!< Word_Break Numeric
  kKatakana,      //!< Word_Break Katakana
  kExtendNumLet,  //!< '_' and other connectors
  kMidLetter,     //!< ':' and the like: joins letters only
  kMidNum,        //!< ',' ';': joins digits only
  kMidNumLet,     //!< '.' and U+2019: joins letters or digits
  kSingleQuote,   //!< '\''
  kDoubleQuote,   //!< '"'
  kExtend,        //!< Extend, Format and ZWJ: attach to the preceding character (WB4)
  kRegional,      //!< regional indicators (flags)
  kHan,           //!< CJK ideographs: one token each
  kHiragana,      //!< one token each
  kComplex,       //!< South-East Asian scripts (line break class SA): one token per run
  kEmoji,         //!< emoji and pictographic symbols such as the (R) and TM signs
};

struct CodePoint {
  char32_t value;
  uint8_t n_bytes;      //!< 1-4; an invalid byte decodes as U+FFFD of length 1
  uint8_t n_utf16;      //!< 1 or 2: what Lucene's length limits count
};

//! Decodes the code point at `pos` (< text.size()). Invalid, overlong or surrogate sequences give U+FFFD.
CodePoint decode_utf8(std::string_view text, std::size_t pos);

CharClass char_class(char32_t c);
//! True for code points with the Emoji property (ASCII excluded): what may follow a ZWJ in an emoji sequence.
bool is_emoji(char32_t c);

//! Simple (one-to-one) lower-case mapping, as Java's Character.toLowerCase.
char32_t to_lower(char32_t c);
void append_utf8(char32_t c, std::string& out);

}  // namespace pwab::search
