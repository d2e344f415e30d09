// The tokenizer.json backend: Hugging Face "tokenizers" BPE in sentencepiece style (LLaMA-2's tokenizer.json).
//
// What it implements, following the tokenizers library (model/bpe, normalizers, pre_tokenizers/metaspace):
//  - added tokens ("<s>", "</s>", "<unk>", ...) are matched in the raw text first, longest first; the text between
//    them is normalized and tokenized on its own (so "a<s>b" gives "▁a", "<s>", "▁b", as Hugging Face does);
//  - normalizer: a Sequence of Prepend / Replace (plain string patterns) / null; pre-tokenizer: null, or Metaspace
//    (replacement, prepend_scheme always|first|never or the older add_prefix_space, split true|false);
//  - BPE: each character is a symbol (its id in the vocabulary; else its UTF-8 bytes as "<0xAB>" tokens when
//    byte_fallback; else the unknown token, runs fused when fuse_unk); then, repeatedly, the adjacent pair with the
//    lowest merge rank is merged, the leftmost first on ties;
//  - decoding: "▁" becomes a space, byte tokens are assembled into UTF-8, and one leading space is stripped when
//    the decoder strips it (Strip start 1, or Metaspace with a prepend scheme).
// Byte-level BPE (ByteLevel pre-tokenizer: LLaMA-3, GPT-2), WordPiece, Unigram and regex normalizers are rejected
// with a pwab::DataError naming the file and the unsupported part.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "core/json_depth.h"
#include "core/hash.h"
#include "tok/backends.h"

namespace pwab::tok {
namespace {

using nlohmann::json;
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class HfBpeTokenizer final : public Tokenizer {
 public:
  HfBpeTokenizer(const std::filesystem::path& file, const std::string& bytes) : file_(file.string()) {
    json j;
    if (json_nests_deeper_than(bytes)) throw DataError(fmt::format("{}: {}", file_, json_depth_message()));
    try {
      j = json::parse(bytes);
    } catch (const json::exception& e) {
      throw DataError(fmt::format("{}: not valid JSON ({})", file_, e.what()));
    }
    try {
      load(j);
    } catch (const json::exception& e) {
      throw DataError(fmt::format("{}: unexpected tokenizer.json structure ({})", file_, e.what()));
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool add_eos) const override {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_bos && special_.bos >= 0) out.push_back(special_.bos);
    // Split out added tokens; tokenize the text between them.
    std::size_t start = 0, i = 0;
    while (i < text.size()) {
      const auto* added = match_added(text, i);
      if (!added) {
        ++i;
        continue;
      }
      if (i > start) encode_section(text.substr(start, i - start), start == 0, out);
      out.push_back(added->second);
      i += added->first.size();
      start = i;
    }
    if (start < text.size()) encode_section(text.substr(start), start == 0, out);
    if (add_eos && special_.eos >= 0) out.push_back(special_.eos);
    return out;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out, bytes;
    for (int32_t id : ids) {
      check_id(id);
      if (skip_special && is_special(id)) continue;
      if (byte_[id] >= 0) {
        bytes += static_cast<char>(byte_[id]);
        continue;
      }
      if (!bytes.empty()) append_utf8_or_replacement(bytes, out), bytes.clear();
      const std::string& p = pieces_[id];
      if (kind_[id] == Kind::kAdded) {
        out += p;
        continue;
      }
      for (std::size_t k = 0; k < p.size();) {
        if (p.compare(k, kSpaceMark.size(), kSpaceMark) == 0) {
          out += ' ';
          k += kSpaceMark.size();
        } else {
          out += p[k++];
        }
      }
    }
    if (!bytes.empty()) append_utf8_or_replacement(bytes, out);
    if (strip_leading_space_ && !out.empty() && out.front() == ' ') out.erase(0, 1);
    return out;
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  std::string piece(int32_t id) const override {
    check_id(id);
    return pieces_[id];
  }
  int32_t piece_to_id(std::string_view piece) const override {
    auto it = vocab_.find(piece);
    return it == vocab_.end() ? -1 : it->second;
  }
  bool is_special(int32_t id) const override {
    return id >= 0 && id < vocab_size() && (kind_[id] == Kind::kSpecial || id == special_.unk);
  }
  int byte_value(int32_t id) const override {
    check_id(id);
    return byte_[id];
  }
  std::string_view backend() const override { return "tokenizer.json"; }
  std::string description() const override {
    return fmt::format("tokenizer.json bpe, {} pieces, {} merges{}, bos {} eos {} pad {}, {} {}", pieces_.size(),
                       merges_.size(), byte_fallback_ ? ", byte fallback" : "", special_.bos, special_.eos,
                       special_.pad, source_.filename().string(), fingerprint_);
  }

 private:
  enum class Kind : uint8_t { kNormal, kAdded, kSpecial };

  [[noreturn]] void unsupported(const std::string& what) const {
    throw DataError(fmt::format("{}: unsupported tokenizer.json: {}. Supported: sentencepiece-style BPE (LLaMA-1/2, "
                                "Mistral); load the model's tokenizer.model instead if it has one",
                                file_, what));
  }

  static std::string type_of(const json& j) { return j.is_object() ? j.value("type", std::string()) : ""; }

  void load(const json& j) {
    if (!j.is_object() || !j.contains("model")) throw DataError(fmt::format("{}: no \"model\" object", file_));
    const json& model = j.at("model");
    const std::string model_type = type_of(model).empty() && model.contains("merges") ? "BPE" : type_of(model);
    if (model_type != "BPE") unsupported(fmt::format("model type \"{}\" (only BPE)", model_type));
    if (!model.value("continuing_subword_prefix", json()).is_null() &&
        !model.at("continuing_subword_prefix").get<std::string>().empty())
      unsupported("BPE with continuing_subword_prefix");
    if (!model.value("end_of_word_suffix", json()).is_null() &&
        !model.at("end_of_word_suffix").get<std::string>().empty())
      unsupported("BPE with end_of_word_suffix");
    if (!model.value("dropout", json()).is_null() && model.at("dropout").get<double>() > 0)
      unsupported("BPE dropout");
    byte_fallback_ = model.value("byte_fallback", false);
    fuse_unk_ = model.value("fuse_unk", false);

    // Vocabulary: piece -> id, ids dense from 0 (added tokens may extend it).
    std::vector<std::pair<int32_t, std::string>> entries;
    for (const auto& [piece, id] : model.at("vocab").items()) entries.emplace_back(id.get<int32_t>(), piece);
    for (const auto& a : j.value("added_tokens", json::array()))
      entries.emplace_back(a.at("id").get<int32_t>(), a.at("content").get<std::string>());
    int32_t n = 0;
    for (const auto& e : entries) {
      if (e.first < 0) throw DataError(fmt::format("{}: negative token id {}", file_, e.first));
      n = std::max(n, e.first + 1);
    }
    if (n == 0) throw DataError(fmt::format("{}: empty vocabulary", file_));
    if (n > (1 << 24)) throw DataError(fmt::format("{}: vocabulary of {} ids is implausibly large", file_, n));
    pieces_.assign(n, std::string());
    std::vector<bool> seen(n, false);
    for (auto& [id, piece] : entries) {
      if (seen[id] && pieces_[id] != piece)
        throw DataError(fmt::format("{}: id {} names two pieces, \"{}\" and \"{}\"", file_, id, pieces_[id], piece));
      seen[id] = true;
      pieces_[id] = piece;
      vocab_.emplace(piece, id);
    }
    for (int32_t id = 0; id < n; ++id)
      if (!seen[id]) throw DataError(fmt::format("{}: id {} has no piece (ids must be dense)", file_, id));
    kind_.assign(n, Kind::kNormal);
    byte_.assign(n, -1);
    std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
    if (byte_fallback_) {
      for (int32_t id = 0; id < n; ++id) {
        const int b = parse_byte_piece(pieces_[id]);
        if (b >= 0) byte_[id] = b, byte_ids_[b] = id;
      }
    }
    for (const auto& a : j.value("added_tokens", json::array())) {
      const int32_t id = a.at("id").get<int32_t>();
      kind_[id] = a.value("special", false) ? Kind::kSpecial : Kind::kAdded;
      added_.emplace_back(a.at("content").get<std::string>(), id);
    }
    std::sort(added_.begin(), added_.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& a : added_)
      if (!a.first.empty()) added_first_byte_[static_cast<unsigned char>(a.first[0])] = true;

    const json unk = model.value("unk_token", json());
    if (unk.is_string()) {
      special_.unk = piece_to_id(unk.get<std::string>());
      if (special_.unk < 0) throw DataError(fmt::format("{}: unk_token \"{}\" is not in the vocabulary", file_,
                                                        unk.get<std::string>()));
    }
    // BOS/EOS: the conventional sentencepiece names; load_tokenizer() overrides them from the configs.
    special_.bos = piece_to_id("<s>");
    special_.eos = piece_to_id("</s>");
    special_.pad = -1;

    // Merges: "a b" strings (tokenizers < 0.20) or ["a", "b"] pairs.
    const json& merges = model.at("merges");
    merges_.reserve(merges.size());
    int32_t rank = 0;
    for (const auto& m : merges) {
      std::string left, right;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const auto sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw DataError(fmt::format("{}: merge \"{}\" is not two pieces separated by one space", file_, s));
        left = s.substr(0, sp), right = s.substr(sp + 1);
      } else {
        left = m.at(0).get<std::string>(), right = m.at(1).get<std::string>();
      }
      const int32_t l = piece_to_id(left), r = piece_to_id(right), merged = piece_to_id(left + right);
      if (l < 0 || r < 0 || merged < 0)
        throw DataError(fmt::format("{}: merge \"{} {}\" uses a piece that is not in the vocabulary", file_, left,
                                    right));
      merges_.try_emplace(pair_key(l, r), rank++, merged);  // the first occurrence ranks
    }

    // Whether the text may be cut into words before each "▁" that follows another character (a pure speed-up):
    // only when no ordinary piece holds such a "▁" (sentencepiece-trained vocabularies never do).
    split_at_words_ = true;
    for (int32_t id = 0; id < n && split_at_words_; ++id) {
      const std::string& p = pieces_[id];
      if (kind_[id] != Kind::kNormal) continue;
      for (std::size_t pos = p.find(kSpaceMark, 1); pos != std::string::npos; pos = p.find(kSpaceMark, pos + 1)) {
        if (pos < kSpaceMark.size() || p.compare(pos - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) != 0) {
          split_at_words_ = false;
          break;
        }
      }
    }

    // Normalizer and pre-tokenizer.
    load_normalizer(j.value("normalizer", json()));
    const json pre = j.value("pre_tokenizer", json());
    if (!pre.is_null()) {
      const std::string t = type_of(pre);
      if (t == "Metaspace") {
        load_metaspace(pre);
      } else if (t == "Sequence" && pre.contains("pretokenizers") && pre.at("pretokenizers").size() == 1 &&
                 type_of(pre.at("pretokenizers").at(0)) == "Metaspace") {
        load_metaspace(pre.at("pretokenizers").at(0));
      } else if (t == "ByteLevel" || pre.dump().find("\"ByteLevel\"") != std::string::npos) {
        unsupported("byte-level BPE (LLaMA-3, GPT-2, Qwen style ByteLevel pre-tokenizer)");
      } else {
        unsupported(fmt::format("pre_tokenizer \"{}\"", t));
      }
    }
    const json dec = j.value("decoder", json());
    const std::string dump = dec.dump();
    strip_leading_space_ = dump.find("\"Strip\"") != std::string::npos ||
                           (type_of(dec) == "Metaspace" && metaspace_prepend_ != Prepend::kNever);
  }

  void load_normalizer(const json& n) {
    if (n.is_null()) return;
    const std::string t = type_of(n);
    if (t == "Sequence") {
      for (const auto& sub : n.at("normalizers")) load_normalizer(sub);
    } else if (t == "Prepend") {
      prefix_ += n.at("prepend").get<std::string>();
      if (!replacements_.empty()) unsupported("Prepend after Replace in the normalizer");
    } else if (t == "Replace") {
      const json& pat = n.at("pattern");
      if (!pat.contains("String")) unsupported("Replace normalizer with a regex pattern");
      const std::string from = pat.at("String").get<std::string>();
      if (from.empty()) unsupported("Replace normalizer with an empty pattern");
      replacements_.emplace_back(from, n.at("content").get<std::string>());
    } else {
      unsupported(fmt::format("normalizer \"{}\"", t));
    }
  }

  void load_metaspace(const json& m) {
    has_metaspace_ = true;
    metaspace_ = m.value("replacement", std::string(kSpaceMark));
    if (m.contains("prepend_scheme")) {
      const std::string s = m.at("prepend_scheme").get<std::string>();
      metaspace_prepend_ = s == "always" ? Prepend::kAlways : s == "first" ? Prepend::kFirst : Prepend::kNever;
    } else {
      metaspace_prepend_ = m.value("add_prefix_space", true) ? Prepend::kAlways : Prepend::kNever;
    }
    metaspace_split_ = m.value("split", true);
  }

  static uint64_t pair_key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }

  void check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size())
      throw UsageError(fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab_size()));
  }

  const std::pair<std::string, int32_t>* match_added(std::string_view text, std::size_t i) const {
    if (!added_first_byte_[static_cast<unsigned char>(text[i])]) return nullptr;
    for (const auto& a : added_)
      if (!a.first.empty() && text.substr(i, a.first.size()) == a.first) return &a;
    return nullptr;
  }

  //! Normalizes and pre-tokenizes one section of text between added tokens, then runs BPE on each word.
  void encode_section(std::string_view section, bool first, std::vector<int32_t>& out) const {
    // Invalid UTF-8 bytes become U+FFFD, as sentencepiece's normalizer does (Rust strings cannot hold them).
    std::string s;
    s.reserve(section.size() + 8);
    for (std::size_t i = 0; i < section.size();) {
      const std::size_t len = valid_utf8_at(section, i);
      if (len == 0) {
        s += "\xEF\xBF\xBD";
        ++i;
      } else {
        s.append(section, i, len);
        i += len;
      }
    }
    if (!s.empty()) s.insert(0, prefix_);
    for (const auto& [from, to] : replacements_) s = replace_all(s, from, to);
    if (has_metaspace_) {
      s = replace_all(s, " ", metaspace_);
      const bool prepend = metaspace_prepend_ == Prepend::kAlways || (metaspace_prepend_ == Prepend::kFirst && first);
      if (prepend && !s.starts_with(metaspace_)) s.insert(0, metaspace_);
      if (metaspace_split_) {
        // Split before each replacement character (it starts the next word).
        std::size_t begin = 0;
        for (std::size_t pos = s.find(metaspace_, 1); pos != std::string::npos; pos = s.find(metaspace_, pos + 1)) {
          bpe_word(std::string_view(s).substr(begin, pos - begin), out);
          begin = pos;
        }
        bpe_word(std::string_view(s).substr(begin), out);
        return;
      }
    }
    if (!split_at_words_) return bpe_word(s, out);
    // No piece spans a "▁" that follows another character, so each such word can be merged on its own: the
    // same result as one BPE over the whole section, with small heaps instead of one over the whole text.
    std::size_t begin = 0;
    for (std::size_t pos = s.find(kSpaceMark, 1); pos != std::string::npos; pos = s.find(kSpaceMark, pos + 1)) {
      if (pos >= kSpaceMark.size() && s.compare(pos - kSpaceMark.size(), kSpaceMark.size(), kSpaceMark) == 0)
        continue;  // inside a run of "▁": whitespace-only pieces may span it
      bpe_word(std::string_view(s).substr(begin, pos - begin), out);
      begin = pos;
    }
    bpe_word(std::string_view(s).substr(begin), out);
  }

  static std::string replace_all(const std::string& s, const std::string& from, const std::string& to) {
    std::string r;
    r.reserve(s.size());
    std::size_t i = 0;
    for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, i)) {
      r.append(s, i, pos - i);
      r += to;
      i = pos + from.size();
    }
    r.append(s, i);
    return r;
  }

  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices into the symbol array, -1 at the ends
    bool alive;
  };
  struct Candidate {
    int32_t rank, pos, left_id, right_id, merged_id;
    bool operator<(const Candidate& o) const {  // the std heap is a max-heap: "less" = merged later
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };

  void bpe_word(std::string_view w, std::vector<int32_t>& out) const {
    if (w.empty()) return;
    // Per-thread scratch buffers: words are short and many, so allocation would dominate.
    thread_local std::vector<Symbol> syms;
    thread_local std::vector<Candidate> heap_storage;
    syms.clear();
    auto push = [&](int32_t id) {
      const auto k = static_cast<int32_t>(syms.size());
      syms.push_back({id, k - 1, -1, true});
      if (k > 0) syms[k - 1].next = k;
    };
    for (std::size_t i = 0; i < w.size();) {
      const std::size_t len = std::max<std::size_t>(1, valid_utf8_at(w, i));
      const std::string_view ch = w.substr(i, len);
      i += len;
      if (const int32_t id = piece_to_id(ch); id >= 0) {
        push(id);
        continue;
      }
      bool all_bytes = byte_fallback_;
      for (char c : ch) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all_bytes) {
        for (char c : ch) push(byte_ids_[static_cast<unsigned char>(c)]);
      } else if (special_.unk >= 0) {
        if (!(fuse_unk_ && !syms.empty() && syms.back().id == special_.unk)) push(special_.unk);
      }  // no unknown token and no byte for it: the character is dropped (tokenizers would fail)
    }

    // A binary heap (std::push_heap / pop_heap over the scratch vector): lowest rank first, then leftmost.
    auto& heap = heap_storage;
    heap.clear();
    auto consider = [&](int32_t pos) {
      if (pos < 0 || syms[pos].next < 0) return;
      const int32_t l = syms[pos].id, r = syms[syms[pos].next].id;
      auto it = merges_.find(pair_key(l, r));
      if (it == merges_.end()) return;
      heap.push_back({it->second.first, pos, l, r, it->second.second});
      std::push_heap(heap.begin(), heap.end());
    };
    for (int32_t k = 0; k + 1 < static_cast<int32_t>(syms.size()); ++k) consider(k);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end());
      const Candidate c = heap.back();
      heap.pop_back();
      Symbol& left = syms[c.pos];
      // Stale entries: the left symbol was merged away or changed, or its right neighbour changed.
      if (!left.alive || left.id != c.left_id || left.next < 0 || syms[left.next].id != c.right_id) continue;
      Symbol& right = syms[left.next];
      left.id = c.merged_id;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) syms[right.next].prev = c.pos;
      consider(left.prev);
      consider(c.pos);
    }
    for (const auto& s : syms)
      if (s.alive) out.push_back(s.id);
  }

  std::string file_;
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::vector<Kind> kind_;
  std::vector<int16_t> byte_;  // id -> byte value of a "<0xAB>" piece, or -1
  int32_t byte_ids_[256] = {};
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) -> (rank, merged id)
  std::vector<std::pair<std::string, int32_t>> added_;                // longest first
  bool added_first_byte_[256] = {};
  bool byte_fallback_ = false, fuse_unk_ = false;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> replacements_;
  enum class Prepend { kAlways, kFirst, kNever };
  bool has_metaspace_ = false, metaspace_split_ = true;
  std::string metaspace_;
  Prepend metaspace_prepend_ = Prepend::kAlways;
  bool strip_leading_space_ = false;
  bool split_at_words_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::filesystem::path& file) {
  const std::string bytes = read_file_bytes(file);
  auto tok = std::make_unique<HfBpeTokenizer>(file, bytes);
  TokenizerAccess::set_source(*tok, file, to_hex(hash_bytes(bytes)));
  return tok;
}

}  // namespace pwab::tok
