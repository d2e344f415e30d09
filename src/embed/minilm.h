// src/embed/minilm.h: the paper's sentence encoder, all-MiniLM-L6-v2, run with libtorch (header is torch-free).
//
// Loads a Hugging Face BERT model directory (config.json, model.safetensors or a sharded
// model.safetensors.index.json, vocab.txt) and embeds texts as the original PersonalWAB does for review scoring
// and relevant memory (docs/decisions.md §3.1, D5): uncased WordPiece (wordpiece.h) truncated at 512 tokens, the
// BERT encoder, mean pooling of the last hidden state over the attention mask, L2 normalization. Any BERT-shaped
// model works (sizes come from config.json); the tensor names are BertModel's, with or without a "bert." prefix.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "embed/embedder.h"
#include "embed/wordpiece.h"

namespace pwab::embed {

//! The config.json fields the encoder uses (Hugging Face BertConfig names and defaults).
struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  std::string hidden_act = "gelu";  //!< "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh" (tanh), or "relu"

  //! Parses and checks a config.json; throws pwab::DataError naming the file and the field.
  static BertConfig from_file(const std::filesystem::path& config_json);
};

struct MiniLMOptions {
  std::size_t batch_size = 32;          //!< most texts per forward pass (texts are sorted by length first)
  std::size_t max_batch_tokens = 1024;  //!< most padded tokens per pass: long texts go in smaller batches
  std::size_t max_length = 512;         //!< tokens per text with [CLS]/[SEP]; capped at max_position_embeddings
  int n_threads = 0;                    //!< libtorch intra-op threads set at load; 0 = all hardware threads, -1 = leave
};

class MiniLMEmbedder final : public Embedder {
 public:
  //! Loads `model_dir`. Throws pwab::DataError (or pwab::Error for unreadable files) naming the file and what is
  //! wrong: a missing file, a bad config field, a missing tensor or one of the wrong shape.
  static std::unique_ptr<MiniLMEmbedder> load(const std::filesystem::path& model_dir, MiniLMOptions options = {});
  ~MiniLMEmbedder() override;

  //! "minilm:<directory name>/<dim>@<8 hex digits of a hash of the weights, vocabulary and config>".
  std::string name() const override;
  std::size_t dim() const override;
  //! Thread-safe: calls are serialized (each forward pass already uses all intra-op threads).
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const override;
  //! The same from token ids (each sequence as encode() returns it, [CLS] … [SEP]).
  std::vector<std::vector<float>> embed_ids(const std::vector<std::vector<int32_t>>& ids) const;

  const WordPieceTokenizer& tokenizer() const;
  const BertConfig& config() const;
  const MiniLMOptions& options() const;

 private:
  struct Impl;
  explicit MiniLMEmbedder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::embed
