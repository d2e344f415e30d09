// src/search/porter_stemmer.h: the Porter stemmer as Martin Porter's reference implementation has it (and so
// Lucene's PorterStemFilter), not as the 1980 paper or Snowball's "porter" have it: words of one or two
// characters are left alone, step 2 maps "bli" to "ble" (not "abli" to "able") and "logi" to "log".
#pragma once
#include <string>

namespace pwab::search {

//! Stems a lower-cased token in place. Characters other than ASCII letters count as consonants; lengths are
//! counted in UTF-16 units, as Lucene counts them.
void porter_stem(std::string& token);

}  // namespace pwab::search
