#include "search/porter_stemmer.h"

#include <string_view>

#include "search/unicode_classes.h"

namespace pwab::search {
namespace {

// The algorithm on a buffer of UTF-16 units (or bytes, for ASCII words). `last_` is the index of the word's
// last character and `stem_last_` the index of the last character before a suffix found by ends(); the
// measure and vowel tests look at b_[0..stem_last_]. Replacements never make the word longer than it was.
template <class Unit>
class PorterWord {
 public:
  PorterWord(Unit* buffer, int length) : b_(buffer), last_(length - 1) {}

  //! Returns the stemmed length.
  int stem() {
    if (last_ > 1) {  // one- and two-letter words are never stemmed
      strip_plural_and_ed_ing();
      y_to_i();
      map_double_suffixes();
      map_ic_ful_ness();
      strip_derivational_suffix();
      tidy_final_e_and_ll();
    }
    return last_ + 1;
  }

 private:
  bool consonant(int i) const {
    switch (b_[i]) {
      case 'a':
      case 'e':
      case 'i':
      case 'o':
      case 'u': return false;
      case 'y': return i == 0 || !consonant(i - 1);
      default: return true;
    }
  }
  // m in the word form [C](VC)^m[V] of b_[0..stem_last_]: the number of vowel-to-consonant transitions.
  int measure() const {
    int m = 0;
    for (int i = 1; i <= stem_last_; ++i)
      if (consonant(i) && !consonant(i - 1)) ++m;
    return m;
  }
  bool vowel_in_stem() const {
    for (int i = 0; i <= stem_last_; ++i)
      if (!consonant(i)) return true;
    return false;
  }
  bool double_consonant(int i) const { return i >= 1 && b_[i] == b_[i - 1] && consonant(i); }
  // consonant-vowel-consonant ending at i, the last consonant not w, x or y (e.g. "hop", not "snow").
  bool cvc(int i) const {
    if (i < 2 || !consonant(i) || consonant(i - 1) || !consonant(i - 2)) return false;
    return b_[i] != 'w' && b_[i] != 'x' && b_[i] != 'y';
  }
  // Whether the word ends with `suffix`; on success stem_last_ marks where the suffix starts.
  bool ends(std::string_view suffix) {
    int n = static_cast<int>(suffix.size());
    if (n > last_ + 1) return false;
    for (int i = 0; i < n; ++i)
      if (b_[last_ - n + 1 + i] != static_cast<Unit>(suffix[i])) return false;
    stem_last_ = last_ - n;
    return true;
  }
  void set_suffix(std::string_view replacement) {
    for (std::size_t i = 0; i < replacement.size(); ++i) b_[stem_last_ + 1 + i] = static_cast<Unit>(replacement[i]);
    last_ = stem_last_ + static_cast<int>(replacement.size());
  }
  void replace_if_stem_has_vc(std::string_view replacement) {
    if (measure() > 0) set_suffix(replacement);
  }
  // Tries (suffix, replacement) pairs in order; the first suffix that matches decides, replaced or not.
  void replace_first(std::initializer_list<std::pair<std::string_view, std::string_view>> rules) {
    for (const auto& [suffix, replacement] : rules) {
      if (ends(suffix)) {
        replace_if_stem_has_vc(replacement);
        return;
      }
    }
  }

  // Step 1a/1b: caresses -> caress, ponies -> poni, cats -> cat; agreed -> agree, plastered -> plaster,
  // hopping -> hop, filing -> file.
  void strip_plural_and_ed_ing() {
    if (b_[last_] == 's') {
      if (ends("sses")) {
        last_ -= 2;
      } else if (ends("ies")) {
        set_suffix("i");
      } else if (b_[last_ - 1] != 's') {
        --last_;
      }
    }
    if (ends("eed")) {
      if (measure() > 0) --last_;
    } else if ((ends("ed") || ends("ing")) && vowel_in_stem()) {
      last_ = stem_last_;
      if (ends("at")) {
        set_suffix("ate");
      } else if (ends("bl")) {
        set_suffix("ble");
      } else if (ends("iz")) {
        set_suffix("ize");
      } else if (double_consonant(last_)) {
        if (b_[last_] != 'l' && b_[last_] != 's' && b_[last_] != 'z') --last_;
      } else if (measure() == 1 && cvc(last_)) {
        set_suffix("e");
      }
    }
  }
  // Step 1c: happy -> happi, sky stays.
  void y_to_i() {
    if (ends("y") && vowel_in_stem()) b_[last_] = 'i';
  }
  // Step 2, keyed on the next-to-last letter.
  void map_double_suffixes() {
    if (last_ == 0) return;
    switch (b_[last_ - 1]) {
      case 'a': replace_first({{"ational", "ate"}, {"tional", "tion"}}); break;
      case 'c': replace_first({{"enci", "ence"}, {"anci", "ance"}}); break;
      case 'e': replace_first({{"izer", "ize"}}); break;
      case 'l': replace_first({{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}}); break;
      case 'o': replace_first({{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}}); break;
      case 's': replace_first({{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}}); break;
      case 't': replace_first({{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}}); break;
      case 'g': replace_first({{"logi", "log"}}); break;
      default: break;
    }
  }
  // Step 3, keyed on the last letter.
  void map_ic_ful_ness() {
    switch (b_[last_]) {
      case 'e': replace_first({{"icate", "ic"}, {"ative", ""}, {"alize", "al"}}); break;
      case 'i': replace_first({{"iciti", "ic"}}); break;
      case 'l': replace_first({{"ical", "ic"}, {"ful", ""}}); break;
      case 's': replace_first({{"ness", ""}}); break;
      default: break;
    }
  }
  bool ends_any(std::initializer_list<std::string_view> suffixes) {
    for (std::string_view s : suffixes)
      if (ends(s)) return true;
    return false;
  }
  // Step 4: drops -al, -ance, -er, -ic, -able, -ant, -ment, -ion (after s or t), ... when the rest has m > 1.
  void strip_derivational_suffix() {
    if (last_ == 0) return;
    bool found = false;
    switch (b_[last_ - 1]) {
      case 'a': found = ends("al"); break;
      case 'c': found = ends_any({"ance", "ence"}); break;
      case 'e': found = ends("er"); break;
      case 'i': found = ends("ic"); break;
      case 'l': found = ends_any({"able", "ible"}); break;
      case 'n': found = ends_any({"ant", "ement", "ment", "ent"}); break;
      case 'o':
        found = (ends("ion") && stem_last_ >= 0 && (b_[stem_last_] == 's' || b_[stem_last_] == 't')) || ends("ou");
        break;
      case 's': found = ends("ism"); break;
      case 't': found = ends_any({"ate", "iti"}); break;
      case 'u': found = ends("ous"); break;
      case 'v': found = ends("ive"); break;
      case 'z': found = ends("ize"); break;
      default: break;
    }
    if (found && measure() > 1) last_ = stem_last_;
  }
  // Step 5: probate -> probat, rate stays; controll -> control, roll stays.
  void tidy_final_e_and_ll() {
    stem_last_ = last_;
    if (b_[last_] == 'e') {
      int m = measure();
      if (m > 1 || (m == 1 && !cvc(last_ - 1))) --last_;
    }
    if (b_[last_] == 'l' && double_consonant(last_) && measure() > 1) --last_;
  }

  Unit* b_;
  int last_;
  int stem_last_ = 0;
};

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

void stem_non_ascii(std::string& token) {
  std::u16string units;
  for (std::size_t pos = 0; pos < token.size();) {
    CodePoint cp = decode_utf8(token, pos);
    pos += cp.n_bytes;
    if (cp.value < 0x10000) {
      units += static_cast<char16_t>(cp.value);
    } else {
      char32_t v = cp.value - 0x10000;
      units += static_cast<char16_t>(0xD800 + (v >> 10));
      units += static_cast<char16_t>(0xDC00 + (v & 0x3FF));
    }
  }
  int length = PorterWord<char16_t>(units.data(), static_cast<int>(units.size())).stem();
  std::string out;
  for (int i = 0; i < length; ++i) {
    char32_t c = units[i];
    if (c >= 0xD800 && c < 0xDC00 && i + 1 < length) c = 0x10000 + ((c - 0xD800) << 10) + (units[++i] - 0xDC00);
    append_utf8(c, out);
  }
  token = std::move(out);
}

}  // namespace

void porter_stem(std::string& token) {
  if (token.size() <= 2) return;
  if (!is_ascii(token)) {
    stem_non_ascii(token);
    return;
  }
  token.resize(PorterWord<char>(token.data(), static_cast<int>(token.size())).stem());
}

}  // namespace pwab::search
