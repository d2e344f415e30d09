#include "search/unicode_classes.h"

#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include <array>
#include <memory>

namespace pwab::search {
namespace {

constexpr uint8_t kEmojiBit = 0x80;

CharClass classify_with_icu(char32_t c) {
  auto cp = static_cast<UChar32>(c);
  switch (u_getIntPropertyValue(cp, UCHAR_WORD_BREAK)) {
    case U_WB_ALETTER: return CharClass::kLetter;
    case U_WB_HEBREW_LETTER: return CharClass::kHebrew;
    case U_WB_NUMERIC: return CharClass::kNumeric;
    case U_WB_KATAKANA: return CharClass::kKatakana;
    case U_WB_EXTENDNUMLET: return CharClass::kExtendNumLet;
    case U_WB_MIDLETTER: return CharClass::kMidLetter;
    case U_WB_MIDNUM: return CharClass::kMidNum;
    case U_WB_MIDNUMLET: return CharClass::kMidNumLet;
    case U_WB_SINGLE_QUOTE: return CharClass::kSingleQuote;
    case U_WB_DOUBLE_QUOTE: return CharClass::kDoubleQuote;
    case U_WB_EXTEND:
    case U_WB_FORMAT:
    case U_WB_ZWJ: return CharClass::kExtend;
    case U_WB_REGIONAL_INDICATOR: return CharClass::kRegional;
    default: break;
  }
  UErrorCode err = U_ZERO_ERROR;
  UScriptCode script = uscript_getScript(cp, &err);
  if (U_SUCCESS(err) && script == USCRIPT_HAN) return CharClass::kHan;
  if (U_SUCCESS(err) && script == USCRIPT_HIRAGANA) return CharClass::kHiragana;
  if (u_getIntPropertyValue(cp, UCHAR_LINE_BREAK) == U_LB_COMPLEX_CONTEXT) return CharClass::kComplex;
  // '#', '*' and digits have the Emoji property too, but only form emoji as keycaps (handled by the tokenizer).
  if (c > 0x7F && u_hasBinaryProperty(cp, UCHAR_EMOJI)) return CharClass::kEmoji;
  return CharClass::kOther;
}

uint8_t table_entry(char32_t c) {
  uint8_t entry = static_cast<uint8_t>(classify_with_icu(c));
  if (c > 0x7F && u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_EMOJI)) entry |= kEmojiBit;
  return entry;
}

// The Basic Multilingual Plane, classified once; supplementary code points are rare and asked each time.
const std::array<uint8_t, 0x10000>& bmp_table() {
  static const std::unique_ptr<std::array<uint8_t, 0x10000>> table = [] {
    auto t = std::make_unique<std::array<uint8_t, 0x10000>>();
    for (char32_t c = 0; c < 0x10000; ++c) (*t)[c] = table_entry(c);
    return t;
  }();
  return *table;
}

uint8_t entry_of(char32_t c) { return c < 0x10000 ? bmp_table()[c] : table_entry(c); }

}  // namespace

CodePoint decode_utf8(std::string_view text, std::size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t left = text.size() - pos;
  unsigned char b0 = s[pos];
  if (b0 < 0x80) return {b0, 1, 1};
  constexpr CodePoint kInvalid{0xFFFD, 1, 1};
  int n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (n == 0 || b0 > 0xF4 || static_cast<std::size_t>(n) > left) return kInvalid;
  char32_t c = b0 & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    unsigned char b = s[pos + i];
    if ((b & 0xC0) != 0x80) return kInvalid;
    c = (c << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMinForLength[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return kInvalid;
  return {c, static_cast<uint8_t>(n), static_cast<uint8_t>(c > 0xFFFF ? 2 : 1)};
}

CharClass char_class(char32_t c) { return static_cast<CharClass>(entry_of(c) & ~kEmojiBit); }

bool is_emoji(char32_t c) { return (entry_of(c) & kEmojiBit) != 0; }

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  return static_cast<char32_t>(u_tolower(static_cast<UChar32>(c)));
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace pwab::search
