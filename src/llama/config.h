// src/llama/config.h: the hyperparameters of a LLaMA-architecture decoder, read from and written to a Hugging Face
// config.json (torch-free).
//
// A plain struct (as llama.cpp's llama_hparams): the field names and defaults are those of transformers'
// LlamaConfig, so a config.json from a LLaMA-2 or LLaMA-3 checkpoint parses as is. Anything the decoder does not
// implement (another model_type, biases, an activation other than SiLU, an unknown rope_scaling type) is rejected
// when the file is read, with a pwab::DataError naming the file and the field, instead of computing wrong numbers.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pwab::llama {

//! rope_scaling of config.json. kNone: plain RoPE; kLinear: positions divided by `factor` (inv_freq / factor);
//! kLlama3: LLaMA-3.1's frequency-dependent rescaling (low_freq_factor, high_freq_factor, original context).
enum class RopeScaling { kNone, kLinear, kLlama3 };

struct RopeScalingConfig {
  RopeScaling type = RopeScaling::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 0;  //!< 0 = absent: as many as num_attention_heads (no grouping)
  int64_t head_dim = 0;             //!< 0 = absent: hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScalingConfig rope_scaling{};
  bool tie_word_embeddings = false;
  int64_t bos_token_id = 1;
  std::vector<int64_t> eos_token_ids{2};  //!< config.json's eos_token_id: one id or a list (LLaMA-3 instruct)
  int64_t pad_token_id = -1;               //!< -1 = none (LLaMA-2 pads with EOS)
  std::string torch_dtype = "float32";     //!< the dtype the weights are stored in: float32, float16, bfloat16
  double initializer_range = 0.02;         //!< std of the normal initialisation of a model built from scratch

  //! Parses and checks a config.json; throws pwab::DataError naming the file and the field.
  static LlamaConfig from_file(const std::filesystem::path& config_json);
  //! The same from JSON text; `label` names the source in errors.
  static LlamaConfig from_json(const std::string& text, const std::string& label);
  //! A config.json that transformers' LlamaConfig (and from_json) reads back to this config.
  std::string to_json() const;
  //! Writes to_json() atomically to `config_json`.
  void write(const std::filesystem::path& config_json) const;
  //! Throws pwab::UsageError naming `label` if the sizes are inconsistent (heads not dividing the width, ...).
  void validate(const std::string& label) const;

  //! The effective sizes (resolving the 0 = absent defaults).
  int64_t n_kv_heads() const { return num_key_value_heads > 0 ? num_key_value_heads : num_attention_heads; }
  int64_t head_width() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
  //! Number of parameters (weights) of the model this config describes.
  int64_t n_parameters() const;
};

//! A small LLaMA for tests, benchmarks and the pipeline's from-scratch "tiny" preset: hidden 64, 2 layers,
//! 4 heads, 2 key/value heads, SwiGLU width 172, 512 positions, the given vocabulary.
LlamaConfig tiny_config(int64_t vocab_size);

}  // namespace pwab::llama
