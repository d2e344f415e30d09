// src/data/render.h: products as the original benchmark shows them to the LLM (docs/decisions.md §2.2, §2.3).
//
// Every field is rendered with Python's str() (lists as ['a', 'b'], None for missing values) and the details
// with json.dumps (ensure_ascii, ", " / ": " separators, key order kept), exactly as the original does.
#pragma once
#include <string>

#include "data/types.h"

namespace pwab::data {

//! The ten product lines, "- Title: …\n- Parent Asin: …\n…\n- Category: <main_category>", with no leading or
//! trailing newline. Search documents, search and recommendation results, the details tool and the review
//! task's initial observation are all built from it.
std::string product_fields_block(const Product& p);

}  // namespace pwab::data
