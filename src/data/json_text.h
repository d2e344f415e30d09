// src/data/json_text.h: how data readers (the loader, `pwab build`'s raw reader) name a JSON value in error
// messages: its type in words and a short compact excerpt.
#pragma once
#include <simdjson.h>

#include <cstddef>
#include <string>

namespace pwab::data {

//! "an array", "an object", "an integer", "a float", "a string", "a boolean" or "null".
const char* json_type_name(simdjson::dom::element_type t);
//! The value as compact JSON, cut to `max_chars` (then ending in "...").
std::string json_preview(simdjson::dom::element e, std::size_t max_chars = 40);

}  // namespace pwab::data
