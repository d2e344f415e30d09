// src/tok/tokenizer.h: the LLaMA-family tokenizer behind a small, torch-free interface (library pwab_tok).
//
// Two backends load a Hugging Face model directory:
//  - `tokenizer.model` through sentencepiece (LLaMA-1/2, Mistral, Vicuna, TinyLlama, Code Llama, ...: any
//    sentencepiece BPE or unigram model). sentencepiece is built from Debian's source against the system protobuf,
//    so it lives in the same process as libtorch (docs/tokenizer.md says why the Debian library cannot).
//  - `tokenizer.json` of the Hugging Face "tokenizers" library when it holds a sentencepiece-style BPE
//    (model "BPE" with byte fallback, "▁" for spaces: what LLaMA-2's tokenizer.json is). Byte-level BPE (LLaMA-3,
//    GPT-2, Qwen) is rejected with a clear error.
// The PUMA pipeline uses Tokenizer for prompt lengths, training sequences and decoding generated ids;
// truncate_to_tokens() is the original's memory cap (docs/decisions.md §5.2 step 3). train_sentencepiece() makes the
// tiny preset's vocabulary from a dataset's own text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pwab::tok {

//! Special token ids and the defaults encode() applies; -1 means the model has no such token.
struct SpecialTokens {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;  //!< LLaMA-2 has none: load_tokenizer() then uses eos, as the original does (pad = eos)
  bool add_bos = true;   //!< what encode(text) adds; tokenizer_config.json's add_bos_token (LLaMA: true)
  bool add_eos = false;  //!< tokenizer_config.json's add_eos_token (LLaMA: false)
};

//! A loaded tokenizer. Immutable after loading: encode() and decode() may be called from any number of threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  //! Token ids of `text` (UTF-8), with BOS first and/or EOS last when asked. Never throws on any input bytes:
  //! characters outside the vocabulary become byte tokens (byte fallback) or the unknown token.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos, bool add_eos) const = 0;
  //! encode() with the model directory's defaults (special().add_bos / add_eos).
  std::vector<int32_t> encode(std::string_view text) const {
    return encode(text, special_.add_bos, special_.add_eos);
  }
  //! Text of `ids`. skip_special drops control tokens (BOS, EOS, PAD) and the unknown token, as Hugging Face's
  //! skip_special_tokens=True does; otherwise they appear as their piece text ("<s>"). Byte tokens that do not
  //! form valid UTF-8 become U+FFFD. Throws pwab::UsageError for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = true) const = 0;

  //! Number of ids (pieces) in the vocabulary.
  virtual int32_t vocab_size() const = 0;
  //! The piece of an id as the vocabulary spells it ("▁the", "<0x0A>", "<s>"); throws pwab::UsageError when out
  //! of range.
  virtual std::string piece(int32_t id) const = 0;
  //! The id of a piece, -1 when the vocabulary has none.
  virtual int32_t piece_to_id(std::string_view piece) const = 0;
  //! True for control tokens and the unknown token (the ones decode(skip_special) drops).
  virtual bool is_special(int32_t id) const = 0;
  //! For a byte-fallback token "<0xAB>": the byte 0xAB; -1 for any other token.
  virtual int byte_value(int32_t id) const = 0;

  int32_t bos_id() const { return special_.bos; }
  int32_t eos_id() const { return special_.eos; }
  int32_t unk_id() const { return special_.unk; }
  int32_t pad_id() const { return special_.pad; }
  const SpecialTokens& special() const { return special_; }

  //! "sentencepiece" or "tokenizer.json".
  virtual std::string_view backend() const = 0;
  //! The file the tokenizer was loaded from.
  const std::filesystem::path& source() const { return source_; }
  //! Hash of the loaded file's bytes (16 hex digits, pwab::hash_file), for manifests and checkpoint checks.
  const std::string& fingerprint() const { return fingerprint_; }
  //! One line for logs and manifests, e.g. "sentencepiece bpe, 32000 pieces, byte fallback, bos 1 eos 2 pad 2,
  //! tokenizer.model 3f1c…".
  virtual std::string description() const = 0;

 protected:
  SpecialTokens special_;
  std::filesystem::path source_;
  std::string fingerprint_;
  friend struct TokenizerAccess;
};

//! Which file of a model directory load_tokenizer() reads.
enum class TokenizerFormat {
  kAuto,           //!< tokenizer.model when present, else tokenizer.json
  kSentencePiece,  //!< tokenizer.model only
  kHfJson,         //!< tokenizer.json only
};
//! "auto" | "sentencepiece" | "tokenizer.json"; parse_tokenizer_format() throws pwab::UsageError otherwise.
std::string_view to_string(TokenizerFormat f);
TokenizerFormat parse_tokenizer_format(std::string_view s);

struct LoadOptions {
  TokenizerFormat format = TokenizerFormat::kAuto;
  //! Overrides the padding id; otherwise the config's pad_token, else the model's own pad piece, else eos.
  std::optional<int32_t> pad_id{};
  //! Override the directory's add_bos_token / add_eos_token.
  std::optional<bool> add_bos{};
  std::optional<bool> add_eos{};
};

//! Loads the tokenizer of a Hugging Face model directory (or a tokenizer.model / tokenizer.json file itself).
//! Reads tokenizer_config.json and special_tokens_map.json when present (add_bos_token, add_eos_token, bos/eos/
//! unk/pad tokens as strings or {"content": ...} objects). Throws pwab::DataError naming the file when the
//! directory has no tokenizer, a file is corrupt, or a token a config names is not in the vocabulary.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir, const LoadOptions& options = {});

//! The original's memory cap (docs/decisions.md §5.2 step 3): encodes `text` with BOS (when count_bos and the model
//! has one), keeps the first max_tokens ids, BOS included in the count, and decodes them with skip_special. Text that
//! fits comes back as decode(encode(text)), which for LLaMA's lossless vocabulary is the text itself. Unlike Hugging
//! Face, a cut inside a multi-byte character (byte-fallback tokens) drops that character's partial bytes instead
//! of decoding them to U+FFFD. max_tokens must be at least 1.
std::string truncate_to_tokens(const Tokenizer& tokenizer, std::string_view text, std::size_t max_tokens,
                               bool count_bos = true);

//! The sentencepiece model type of train_sentencepiece().
enum class SpmModelType { kBpe, kUnigram };
std::string_view to_string(SpmModelType t);
SpmModelType parse_spm_model_type(std::string_view s);  //!< "bpe" | "unigram"; else pwab::UsageError

//! Training settings. The defaults reproduce LLaMA-2's tokenizer recipe at a small size: BPE, byte fallback, ids
//! unk 0 / bos 1 / eos 2 (no pad piece), identity normalization (no NFKC), whitespace kept as is, digits split.
struct SpmTrainOptions {
  int vocab_size = 2000;  //!< pieces, including the 3 specials and the 256 byte pieces when byte_fallback
  SpmModelType model_type = SpmModelType::kBpe;
  bool byte_fallback = true;
  double character_coverage = 0.9995;  //!< rarer characters are left to byte fallback
  bool split_digits = true;
  uint32_t seed = 1;       //!< sentencepiece's random generator (only used when sampling sentences)
  int num_threads = 1;     //!< 1 makes training deterministic (unigram's EM sums per thread)
  std::size_t max_sentences = 0;  //!< sample at most this many lines (seeded); 0 = use every line
  bool verbose = false;    //!< sentencepiece's INFO log on stderr
};

//! Trains a sentencepiece model on `texts` (each split into lines; empty lines skipped) and writes it to
//! `model_dir`/tokenizer.model (atomically; the directory is created). The same texts and options give a
//! byte-identical file. Throws pwab::UsageError for bad options (e.g. a vocab_size the text cannot fill) and
//! pwab::Error when writing fails. Returns the written file's path.
std::filesystem::path train_sentencepiece(const std::vector<std::string>& texts, const std::filesystem::path& model_dir,
                                          const SpmTrainOptions& options = {});
//! Same, reading the training text from a file (one sentence per line).
std::filesystem::path train_sentencepiece_file(const std::filesystem::path& input_file,
                                               const std::filesystem::path& model_dir,
                                               const SpmTrainOptions& options = {});

//! Writes the Hugging Face tokenizer.json equivalent of a sentencepiece BPE tokenizer.model (vocabulary, merges
//! ordered as transformers' LlamaConverter orders them, LLaMA's normalizer and decoder), so a model directory
//! can carry both files. Throws pwab::UsageError for a unigram model (it has no merges).
void write_hf_tokenizer_json(const std::filesystem::path& tokenizer_model, const std::filesystem::path& out_json);

}  // namespace pwab::tok
