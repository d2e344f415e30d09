#include "tok/tokenizer.h"
#include "core/json_depth.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "tok/backends.h"

namespace fs = std::filesystem;

namespace pwab::tok {

// ---- shared helpers --------------------------------------------------------------------------------------------

std::string read_file_bytes(const fs::path& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw DataError(fmt::format("{}: is a directory, expected a file", file.string()));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError(fmt::format("{}: cannot be read", file.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw DataError(fmt::format("{}: read error", file.string()));
  return std::move(ss).str();
}

int parse_byte_piece(std::string_view p) {
  if (p.size() != 6 || !p.starts_with("<0x") || p[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  const int hi = hex(p[3]), lo = hex(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

namespace {


}  // namespace

void append_utf8_or_replacement(std::string_view bytes, std::string& out) {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t len = valid_utf8_at(bytes, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes, i, len);
      i += len;
    }
  }
}

// ---- enums -----------------------------------------------------------------------------------------------------

std::string_view to_string(TokenizerFormat f) {
  switch (f) {
    case TokenizerFormat::kAuto: return "auto";
    case TokenizerFormat::kSentencePiece: return "sentencepiece";
    case TokenizerFormat::kHfJson: return "tokenizer.json";
  }
  return "auto";
}

TokenizerFormat parse_tokenizer_format(std::string_view s) {
  if (s == "auto") return TokenizerFormat::kAuto;
  if (s == "sentencepiece" || s == "tokenizer.model") return TokenizerFormat::kSentencePiece;
  if (s == "tokenizer.json" || s == "hf" || s == "json") return TokenizerFormat::kHfJson;
  throw UsageError(fmt::format("unknown tokenizer format '{}' (expected auto, sentencepiece or tokenizer.json)", s));
}

std::string_view to_string(SpmModelType t) { return t == SpmModelType::kBpe ? "bpe" : "unigram"; }

SpmModelType parse_spm_model_type(std::string_view s) {
  if (s == "bpe") return SpmModelType::kBpe;
  if (s == "unigram") return SpmModelType::kUnigram;
  throw UsageError(fmt::format("unknown sentencepiece model type '{}' (expected bpe or unigram)", s));
}

// ---- loading ---------------------------------------------------------------------------------------------------

namespace {

using nlohmann::json;

std::optional<json> read_json_if_present(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  const std::string bytes = read_file_bytes(file);
  if (json_nests_deeper_than(bytes)) throw DataError(fmt::format("{}: {}", file.string(), json_depth_message()));
  try {
    return json::parse(bytes);
  } catch (const json::exception& e) {
    throw DataError(fmt::format("{}: not valid JSON ({})", file.string(), e.what()));
  }
}

//! A special token entry: "<s>", {"content": "<s>", ...}, or null / absent (nullopt).
std::optional<std::string> token_content(const json& config, const char* key, const fs::path& file) {
  if (!config.is_object() || !config.contains(key) || config.at(key).is_null()) return std::nullopt;
  const json& v = config.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) return v.at("content").get<std::string>();
  throw DataError(fmt::format("{}: \"{}\" is neither a string nor an object with a \"content\" string", file.string(),
                              key));
}

std::optional<bool> bool_entry(const json& config, const char* key, const fs::path& file) {
  if (!config.is_object() || !config.contains(key) || config.at(key).is_null()) return std::nullopt;
  if (!config.at(key).is_boolean())
    throw DataError(fmt::format("{}: \"{}\" must be true or false", file.string(), key));
  return config.at(key).get<bool>();
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& model_dir, const LoadOptions& options) {
  std::error_code ec;
  fs::path dir = model_dir, file;
  if (fs::is_regular_file(model_dir, ec)) {
    dir = model_dir.parent_path();
    file = model_dir;
  } else if (!fs::is_directory(model_dir, ec)) {
    throw DataError(fmt::format("{}: no such model directory", model_dir.string()));
  }
  if (file.empty()) {
    const fs::path spm = dir / "tokenizer.model", hf = dir / "tokenizer.json";
    const bool has_spm = fs::exists(spm, ec), has_hf = fs::exists(hf, ec);
    switch (options.format) {
      case TokenizerFormat::kAuto: file = has_spm ? spm : has_hf ? hf : fs::path(); break;
      case TokenizerFormat::kSentencePiece: file = has_spm ? spm : fs::path(); break;
      case TokenizerFormat::kHfJson: file = has_hf ? hf : fs::path(); break;
    }
    if (file.empty())
      throw DataError(fmt::format("{}: no {} in the model directory", dir.string(),
                                  options.format == TokenizerFormat::kSentencePiece ? "tokenizer.model"
                                  : options.format == TokenizerFormat::kHfJson      ? "tokenizer.json"
                                                                                    : "tokenizer.model or tokenizer.json"));
  }
  const bool is_json = file.extension() == ".json";
  std::unique_ptr<Tokenizer> tok = is_json ? load_hf_tokenizer_json(file) : load_sentencepiece(file);
  SpecialTokens& s = TokenizerAccess::special(*tok);

  // tokenizer_config.json wins over special_tokens_map.json, as in transformers.
  const fs::path config_file = dir / "tokenizer_config.json", map_file = dir / "special_tokens_map.json";
  const auto config = read_json_if_present(config_file);
  const auto map = read_json_if_present(map_file);
  auto resolve = [&](const char* key, int32_t& slot) {
    for (const auto& [j, f] : {std::pair{&config, &config_file}, std::pair{&map, &map_file}}) {
      if (!*j) continue;
      if (auto content = token_content(**j, key, *f)) {
        const int32_t id = tok->piece_to_id(*content);
        if (id < 0)
          throw DataError(fmt::format("{}: {} \"{}\" is not in the vocabulary of {}", f->string(), key, *content,
                                      file.string()));
        slot = id;
        return true;
      }
    }
    return false;
  };
  resolve("bos_token", s.bos);
  resolve("eos_token", s.eos);
  resolve("unk_token", s.unk);
  const bool pad_from_config = resolve("pad_token", s.pad);
  if (config) {
    if (auto v = bool_entry(*config, "add_bos_token", config_file)) s.add_bos = *v;
    if (auto v = bool_entry(*config, "add_eos_token", config_file)) s.add_eos = *v;
  }
  if (options.add_bos) s.add_bos = *options.add_bos;
  if (options.add_eos) s.add_eos = *options.add_eos;
  if (options.pad_id) {
    if (*options.pad_id < 0 || *options.pad_id >= tok->vocab_size())
      throw UsageError(fmt::format("pad id {} is outside the vocabulary [0, {}) of {}", *options.pad_id,
                                   tok->vocab_size(), file.string()));
    s.pad = *options.pad_id;
  } else if (!pad_from_config && s.pad < 0) {
    s.pad = s.eos;  // LLaMA-2 has no padding token; the original pads with eos
  }
  return tok;
}

// ---- truncation ------------------------------------------------------------------------------------------------

std::string truncate_to_tokens(const Tokenizer& tokenizer, std::string_view text, std::size_t max_tokens,
                               bool count_bos) {
  if (max_tokens == 0) throw UsageError("truncate_to_tokens: max_tokens must be at least 1");
  std::vector<int32_t> ids = tokenizer.encode(text, count_bos, false);
  if (ids.size() > max_tokens) {
    ids.resize(max_tokens);
    // A cut inside a character spelled as byte tokens: drop the partial character's bytes. Find the run of
    // byte tokens at the end, walk its complete UTF-8 sequences, and drop an incomplete but well-started tail.
    std::size_t run = ids.size();
    while (run > 0 && tokenizer.byte_value(ids[run - 1]) >= 0) --run;
    std::string bytes;
    for (std::size_t k = run; k < ids.size(); ++k) bytes += static_cast<char>(tokenizer.byte_value(ids[k]));
    std::size_t i = 0;
    while (i < bytes.size()) {
      const std::size_t len = valid_utf8_at(bytes, i);
      if (len > 0) {
        i += len;
        continue;
      }
      // Not a complete sequence here: is it the start of one that the cut truncated?
      const auto b = static_cast<unsigned char>(bytes[i]);
      const std::size_t want = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
      bool prefix = want > 0 && i + want > bytes.size();
      for (std::size_t k = i + 1; prefix && k < bytes.size(); ++k)
        prefix = (static_cast<unsigned char>(bytes[k]) & 0xC0) == 0x80;
      if (prefix) {
        ids.resize(run + i);
        break;
      }
      ++i;  // an invalid byte of the text itself: left for decode() to show as U+FFFD
    }
  }
  return tokenizer.decode(ids, true);
}

std::size_t valid_utf8_at(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  const std::size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
  if (len == 0 || b > 0xF4 || i + len > s.size()) return 0;
  uint32_t c = b & (len == 4 ? 0x07u : len == 3 ? 0x0Fu : 0x1Fu);
  for (std::size_t k = 1; k < len; ++k) {
    const auto cb = static_cast<unsigned char>(s[i + k]);
    if ((cb & 0xC0) != 0x80) return 0;
    c = (c << 6) | (cb & 0x3Fu);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  return c < kMin[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? 0 : len;
}

}  // namespace pwab::tok
