#include "core/text.h"

#include <bit>
#include <set>
#include <stdexcept>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pwab {

namespace {

// The scalar definition: a token starts at every word byte after a non-word byte, and at every byte that is
// neither a word byte nor a space.
inline bool basic_word_byte(unsigned char c) {
  return c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

std::size_t count_basic_tokens_scalar(std::string_view text, bool in_word) {
  std::size_t n = 0;
  for (unsigned char c : text) {
    if (basic_word_byte(c)) {
      if (!in_word) ++n;
      in_word = true;
    } else {
      in_word = false;
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') ++n;
    }
  }
  return n;
}

}  // namespace

std::size_t count_basic_tokens(std::string_view text) {
#if defined(__SSE2__)
  // 16 bytes at a time (SSE2 is in every x86-64): bit masks of word bytes W and space bytes S; token starts are
  // W & ~(W shifted by one, with the previous block's last bit) plus ~W & ~S. Same count as the scalar loop.
  std::size_t n = 0;
  unsigned carry = 0;  // 1 if the byte before the block is a word byte
  const char* p = text.data();
  std::size_t len = text.size();
  std::size_t i = 0;
  const __m128i k_digit = _mm_set1_epi8(static_cast<char>(0x80 - '0'));
  const __m128i k_digit_lim = _mm_set1_epi8(static_cast<char>(-128 + 10));
  const __m128i k_alpha = _mm_set1_epi8(static_cast<char>(0x80 - 'a'));
  const __m128i k_alpha_lim = _mm_set1_epi8(static_cast<char>(-128 + 26));
  const __m128i k_0x20 = _mm_set1_epi8(0x20);
  const __m128i k_space = _mm_set1_epi8(' '), k_nl = _mm_set1_epi8('\n'), k_tab = _mm_set1_epi8('\t'),
                k_cr = _mm_set1_epi8('\r');
  for (; i + 16 <= len; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i high = _mm_cmplt_epi8(v, _mm_setzero_si128());
    __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(v, k_digit), k_digit_lim);
    __m128i alpha = _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(v, k_0x20), k_alpha), k_alpha_lim);
    __m128i space = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, k_space), _mm_cmpeq_epi8(v, k_nl)),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, k_tab), _mm_cmpeq_epi8(v, k_cr)));
    unsigned w = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(high, _mm_or_si128(digit, alpha))));
    unsigned s = static_cast<unsigned>(_mm_movemask_epi8(space));
    unsigned starts = (w & ~((w << 1) | carry)) | (~(w | s) & 0xFFFFu);
    n += static_cast<std::size_t>(std::popcount(starts));
    carry = (w >> 15) & 1u;
  }
  return n + count_basic_tokens_scalar(text.substr(i), carry != 0);
#else
  return count_basic_tokens_scalar(text, false);
#endif
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return out;
}

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_trim(std::string_view s, char delim) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = s.find(delim, start);
    out.emplace_back(trim(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

void for_each_nonblank_line(std::string_view text, const std::function<void(std::string_view, std::size_t)>& fn) {
  std::size_t line_no = 0;
  for (std::size_t pos = 0, nl; pos < text.size(); pos = nl + 1) {
    nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line_no;
    std::string_view line = text.substr(pos, nl - pos);
    if (!trim(line).empty()) fn(line, line_no);
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

double distinct_ngram_share(std::string_view text, int n) {
  if (n < 1) throw std::invalid_argument("distinct_ngram_share: n must be at least 1");
  std::vector<std::string> words;
  std::string word;
  for (unsigned char c : text) {
    const bool letter_or_digit = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    if (letter_or_digit) {
      word += static_cast<char>(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  const std::size_t k = static_cast<std::size_t>(n);
  if (words.size() < k) return 1.0;
  std::set<std::vector<std::string>> seen;
  const std::size_t total = words.size() - k + 1;
  for (std::size_t i = 0; i < total; ++i) seen.emplace(words.begin() + static_cast<std::ptrdiff_t>(i),
                                                       words.begin() + static_cast<std::ptrdiff_t>(i + k));
  return static_cast<double>(seen.size()) / static_cast<double>(total);
}

}  // namespace pwab
