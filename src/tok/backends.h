// src/tok/backends.h: the two Tokenizer backends and the helpers they share (internal to pwab_tok).
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "tok/tokenizer.h"

namespace pwab::tok {

//! Lets load_tokenizer() and the backends fill a Tokenizer's protected state.
struct TokenizerAccess {
  static SpecialTokens& special(Tokenizer& t) { return t.special_; }
  static void set_source(Tokenizer& t, std::filesystem::path source, std::string fingerprint) {
    t.source_ = std::move(source);
    t.fingerprint_ = std::move(fingerprint);
  }
};

//! A sentencepiece tokenizer.model; special tokens from the model's own ids. Throws pwab::DataError naming the file.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& file);
//! A Hugging Face tokenizer.json holding a sentencepiece-style BPE; special tokens from its added tokens.
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& file);

//! Reads a whole file; throws pwab::DataError naming it when it cannot be read.
std::string read_file_bytes(const std::filesystem::path& file);

//! "<0xAB>" -> 0xAB, anything else -> -1.
int parse_byte_piece(std::string_view piece);

//! Appends `bytes` to `out`, replacing each byte that does not start a complete, valid UTF-8 sequence with U+FFFD
//! (what sentencepiece does with byte tokens that do not form characters).
void append_utf8_or_replacement(std::string_view bytes, std::string& out);

//! Length of the complete, valid UTF-8 sequence at s[i] (no overlongs, surrogates or code points past U+10FFFF);
//! 0 if there is none.
std::size_t valid_utf8_at(std::string_view s, std::size_t i);

}  // namespace pwab::tok
