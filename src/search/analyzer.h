// src/search/analyzer.h: the English analysis chain Anserini/Pyserini index and search with (Lucene 8):
// StandardTokenizer -> EnglishPossessiveFilter -> LowerCaseFilter -> StopFilter (33 words) -> PorterStemFilter.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pwab::search {

//! Changes whenever the analysis can produce different terms; stored in the index meta file.
inline constexpr std::string_view kAnalyzerVersion = "lucene8-english/1";

//! Removes a trailing "'s", "’s" or "＇s" (either case of s), as EnglishPossessiveFilter does.
void strip_english_possessive(std::string& token);
//! Lower-cases code point by code point (simple case mapping, as Java's Character.toLowerCase).
void lower_case(std::string& token);
//! Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET): a, an, and, ... with.
bool is_english_stop_word(std::string_view term);

//! Appends the analyzed terms of `text` to `terms`, in order.
void analyze_into(std::string_view text, std::vector<std::string>& terms);

}  // namespace pwab::search
