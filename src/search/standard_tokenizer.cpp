#include "search/standard_tokenizer.h"

#include "search/unicode_classes.h"

namespace pwab::search {
namespace {

// One code point and the Extend/Format/ZWJ marks after it, which UAX #29 (rule WB4) treats as one unit.
struct Unit {
  CharClass cls;
  char32_t first;
  std::size_t end;
  int n_utf16;
  bool ends_with_zwj;
};

constexpr char32_t kZeroWidthJoiner = 0x200D;

Unit unit_at(std::string_view text, std::size_t pos) {
  CodePoint cp = decode_utf8(text, pos);
  Unit u{char_class(cp.value), cp.value, pos + cp.n_bytes, cp.n_utf16, false};
  while (u.end < text.size()) {
    CodePoint next = decode_utf8(text, u.end);
    if (char_class(next.value) != CharClass::kExtend) break;
    u.end += next.n_bytes;
    u.n_utf16 += next.n_utf16;
    u.ends_with_zwj = next.value == kZeroWidthJoiner;
  }
  return u;
}

bool is_ahletter(CharClass c) { return c == CharClass::kLetter || c == CharClass::kHebrew; }
bool is_core(CharClass c) { return is_ahletter(c) || c == CharClass::kNumeric || c == CharClass::kKatakana; }

// WB5, WB8, WB9, WB10, WB13, WB13b: may `next` directly follow `last` inside a word?
bool joins(CharClass last, CharClass next) {
  switch (last) {
    case CharClass::kLetter:
    case CharClass::kHebrew:
    case CharClass::kNumeric: return is_ahletter(next) || next == CharClass::kNumeric;
    case CharClass::kKatakana: return next == CharClass::kKatakana;
    case CharClass::kExtendNumLet: return is_core(next);
    default: return false;
  }
}

// WB6/WB7 (letters), WB7b/WB7c (Hebrew and '"'), WB11/WB12 (digits): may `mid` sit between `last` and `next`?
bool bridges(CharClass last, CharClass mid, CharClass next) {
  bool letter_mid = mid == CharClass::kMidLetter || mid == CharClass::kMidNumLet || mid == CharClass::kSingleQuote;
  bool number_mid = mid == CharClass::kMidNum || mid == CharClass::kMidNumLet || mid == CharClass::kSingleQuote;
  if (is_ahletter(last) && letter_mid && is_ahletter(next)) return true;
  if (last == CharClass::kHebrew && mid == CharClass::kDoubleQuote && next == CharClass::kHebrew) return true;
  return last == CharClass::kNumeric && number_mid && next == CharClass::kNumeric;
}

bool is_mid(CharClass c) {
  return c == CharClass::kMidLetter || c == CharClass::kMidNum || c == CharClass::kMidNumLet ||
         c == CharClass::kSingleQuote || c == CharClass::kDoubleQuote;
}

}  // namespace

// Longest word starting at `start` under the UAX #29 rules; returns `start` when it holds no letter or digit
// (a lone '_'). Stops before exceeding the maximum token length.
std::size_t StandardTokenizer::scan_word(std::size_t start) const {
  std::size_t pos = start, end = start;
  int n_utf16 = 0;
  bool has_core = false;
  CharClass last = CharClass::kOther;
  while (pos < text_.size()) {
    Unit u = unit_at(text_, pos);
    if (is_core(u.cls) || u.cls == CharClass::kExtendNumLet) {
      bool first = pos == start;
      if (!first && u.cls != CharClass::kExtendNumLet && !joins(last, u.cls)) break;
      if (n_utf16 + u.n_utf16 > kMaxTokenUtf16Units) break;
      n_utf16 += u.n_utf16;
      pos = u.end;
      last = u.cls;
      has_core = has_core || is_core(u.cls);
      if (has_core) end = pos;
      continue;
    }
    if (!is_mid(u.cls) || !is_core(last) || last == CharClass::kKatakana) break;
    if (u.end < text_.size()) {
      Unit next = unit_at(text_, u.end);
      if (bridges(last, u.cls, next.cls) && n_utf16 + u.n_utf16 + next.n_utf16 <= kMaxTokenUtf16Units) {
        n_utf16 += u.n_utf16 + next.n_utf16;
        pos = end = next.end;
        last = next.cls;
        continue;
      }
    }
    // WB7a: a Hebrew letter keeps a following apostrophe.
    if (last == CharClass::kHebrew && u.cls == CharClass::kSingleQuote && n_utf16 + u.n_utf16 <= kMaxTokenUtf16Units)
      end = u.end;
    break;
  }
  return has_core ? end : start;
}

// An emoji with its modifiers and variation selectors, joined to further emoji by ZWJ (WB3c); a flag is a pair
// of regional indicators.
std::size_t StandardTokenizer::scan_emoji(std::size_t start) const {
  Unit u = unit_at(text_, start);
  if (u.cls == CharClass::kRegional && u.end < text_.size()) {
    Unit second = unit_at(text_, u.end);
    if (second.cls == CharClass::kRegional) return second.end;
    return u.end;
  }
  while (u.ends_with_zwj && u.end < text_.size()) {
    CodePoint next = decode_utf8(text_, u.end);
    if (!is_emoji(next.value)) break;
    u = unit_at(text_, u.end);
  }
  return u.end;
}

std::size_t StandardTokenizer::scan_complex_run(std::size_t start) const {
  std::size_t pos = start;
  int n_utf16 = 0;
  while (pos < text_.size()) {
    Unit u = unit_at(text_, pos);
    if (u.cls != CharClass::kComplex || n_utf16 + u.n_utf16 > kMaxTokenUtf16Units) break;
    n_utf16 += u.n_utf16;
    pos = u.end;
  }
  return pos;
}

bool StandardTokenizer::next(std::string_view& token) {
  while (pos_ < text_.size()) {
    std::size_t start = pos_;
    CodePoint cp = decode_utf8(text_, start);
    std::size_t end = start;
    switch (char_class(cp.value)) {
      case CharClass::kLetter:
      case CharClass::kHebrew:
      case CharClass::kNumeric:
      case CharClass::kKatakana:
      case CharClass::kExtendNumLet: end = scan_word(start); break;
      case CharClass::kHan:
      case CharClass::kHiragana: end = unit_at(text_, start).end; break;
      case CharClass::kComplex: end = scan_complex_run(start); break;
      case CharClass::kEmoji:
      case CharClass::kRegional: end = scan_emoji(start); break;
      case CharClass::kOther:
        if (cp.value == '#' || cp.value == '*') {  // keycap: '#', optional U+FE0F, then U+20E3
          Unit u = unit_at(text_, start);
          std::string_view marks = text_.substr(start + 1, u.end - start - 1);
          if (marks.find("\xE2\x83\xA3") != std::string_view::npos) end = u.end;
        }
        break;
      default: break;
    }
    if (end > start) {
      pos_ = end;
      token = text_.substr(start, end - start);
      return true;
    }
    pos_ = start + cp.n_bytes;
  }
  return false;
}

}  // namespace pwab::search
