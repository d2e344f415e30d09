// src/puma/search_vocabulary.h: the tokens a copy-constrained search query may use.
//
// A search query that helps BM25 is made of the request's and the memory's own words: the heuristic teacher's
// queries (agents/heuristic_policy.h build_search_query) never add a word of their own, and the raw instruction as
// the query already finds the product in most tasks (docs/puma.md, "Copy-constrained search queries"). A small model
// trained from scratch copies badly: it writes product words it saw in training ("6 quart dutch oven lid" for a
// 6-quart air fryer), and BM25 then ranks the wrong kind of product. With GenerateConfig::allowed_tokens set to this
// list, the model still chooses, orders and drops words, but only among the prompt's.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace pwab::tok {
class Tokenizer;
}

namespace pwab::puma {

//! The ids of `prompt` as the model reads it, and of each of its whitespace-separated words encoded alone, with and
//! without the punctuation around it (a word that starts the query, or that follows another word than in the
//! prompt, can split into other pieces). Sorted and unique; EOS is left to the decoder, which always allows it.
std::vector<int32_t> search_vocabulary(const tok::Tokenizer& tokenizer, std::string_view prompt);

}  // namespace pwab::puma
