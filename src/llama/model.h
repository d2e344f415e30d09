// src/llama/model.h: a LLaMA-architecture decoder in libtorch (Hugging Face LlamaForCausalLM numerics).
//
// Pre-norm decoder layers: RMSNorm (computed in float32) → grouped-query self-attention with rotary position
// embeddings (HF's rotate_half convention: dimension i pairs with i + head_width/2, so real HF checkpoints give HF's
// logits) → residual → RMSNorm → SwiGLU MLP (down(silu(gate(x)) · up(x))) → residual; a final RMSNorm and lm_head
// (or the embedding matrix, when tie_word_embeddings). Parameter names are HF's (`model.layers.0.self_attn.q_proj.
// weight`, ...), so named_parameters() is the checkpoint's tensor list.
//
// Every weight lives in a WeightModule, which can also carry what an adapter adds (lora.h): a LoRA pair on a
// projection, or a trained copy of the whole weight (PEFT's modules_to_save), switchable on and off so DPO can use
// the model with adapters disabled as its reference.
//
// Padding and positions: forward() takes an attention mask (1 = token, 0 = padding, left or right). Position ids
// come from the mask (the count of real tokens before each one, as HF generate() computes them), so a left-padded
// row gives the same logits as the same tokens unpadded. A KvCache turns forward() into incremental decoding.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "llama/config.h"

namespace pwab::llama {

//! A module holding one tensor named "weight" (the LoRA factors and trained copies are these, so their names read
//! `q_proj.lora_A.weight`, as in PEFT).
class WeightHolderImpl : public torch::nn::Module {
 public:
  explicit WeightHolderImpl(torch::Tensor w) { weight = register_parameter("weight", std::move(w)); }
  torch::Tensor weight;
};
TORCH_MODULE(WeightHolder);

//! Base of the modules that own one weight of the checkpoint (projections, norms, the embedding table).
class WeightModule : public torch::nn::Module {
 public:
  //! The checkpoint's weight; frozen while an adapter is attached.
  torch::Tensor weight;

  //! The weight forward() uses: the trained copy while one exists and adapters are enabled, else `weight`; cast
  //! to weight's dtype (a float32 copy trains under a bfloat16 model).
  torch::Tensor active_weight() const;
  //! Adds a trainable copy of `weight` in `dtype` (PEFT's modules_to_save). Throws pwab::UsageError if one exists.
  void add_trained_copy(torch::Dtype dtype);
  //! The trained copy (undefined when there is none).
  torch::Tensor trained_copy() const;
  //! Removes the trained copy; with `merge`, first copies it into `weight`.
  void drop_trained_copy(bool merge);
  //! Whether the trained copy / LoRA pair take part in forward().
  void set_adapter_enabled(bool enabled) { adapter_enabled_ = enabled; }
  bool adapter_enabled() const { return adapter_enabled_; }

 protected:
  bool adapter_enabled_ = true;

 private:
  WeightHolder trained_{nullptr};
};

//! y = x·Wᵀ (no bias), plus scale · dropout(x)·Aᵀ·Bᵀ while a LoRA pair is attached and enabled.
class ProjectionImpl : public WeightModule {
 public:
  ProjectionImpl(int64_t in_features, int64_t out_features, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  //! Attaches LoRA factors A [r, in] (uniform ±1/sqrt(in), PEFT's kaiming-uniform default, from `seed`) and
  //! B [out, r] (zeros): the output is unchanged until B trains. Throws pwab::UsageError if a pair exists.
  void add_lora(int64_t r, double scale, double dropout, torch::Dtype dtype, uint64_t seed);
  //! Removes the pair; with `merge`, first adds scale·B·A to `weight`.
  void drop_lora(bool merge);
  bool has_lora() const { return !lora_A_.is_empty(); }
  torch::Tensor lora_A() const;
  torch::Tensor lora_B() const;
  double lora_scale() const { return lora_scale_; }

 private:
  WeightHolder lora_A_{nullptr}, lora_B_{nullptr};
  double lora_scale_ = 0.0, lora_dropout_ = 0.0;
};
TORCH_MODULE(Projection);

//! LLaMA's RMSNorm: x / sqrt(mean(x²) + eps) in float32, cast back, times the weight.
class RmsNormImpl : public WeightModule {
 public:
  RmsNormImpl(int64_t width, double eps, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

//! The token embedding table [vocab, hidden].
class EmbeddingImpl : public WeightModule {
 public:
  EmbeddingImpl(int64_t vocab, int64_t width, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& ids);
};
TORCH_MODULE(Embedding);

//! Keys and values of the positions seen so far, per layer, for incremental decoding. Storage is allocated for
//! `reserve` positions and doubles when exceeded. A cache belongs to one model and one batch of rows.
class KvCache {
 public:
  explicit KvCache(int64_t reserve = 0) : reserve_(reserve) {}

  //! Positions cached so far (padding included).
  int64_t length() const { return length_; }
  //! Rows (sequences) of the cache; 0 before the first forward().
  int64_t rows() const { return mask_.defined() ? mask_.size(0) : 0; }
  //! Row i becomes old row rows[i] (int64, on any device): beam search reordering, or expanding a prompt's cache
  //! to several beams. The number of rows may change.
  void select_rows(const torch::Tensor& rows);
  void clear();

  // Used by the model's forward():
  //! Mask [rows, length] (bool) of the cached positions, and the position id the next real token of each row gets.
  const torch::Tensor& mask() const { return mask_; }
  const torch::Tensor& next_positions() const { return next_positions_; }
  //! Writes layer `layer`'s keys/values [rows, kv_heads, new, head] after the cached ones; returns the keys and
  //! values of all positions (cached + new).
  std::pair<torch::Tensor, torch::Tensor> append(std::size_t layer, const torch::Tensor& k, const torch::Tensor& v);
  //! A decoding step's buffers of layer `layer` [rows, kv_heads, capacity, head], with room for one position more:
  //! the step (LlamaModelImpl's decoding step without operator calls) writes position length() itself, then commits.
  //! Throws pwab::UsageError if the layer has no keys yet.
  std::pair<torch::Tensor, torch::Tensor> step_buffers(std::size_t layer);
  //! Packed prefill (LlamaModelImpl::packed_prefill): layer `layer`'s keys/values [1, kv_heads, Σ lengths, head] of
  //! rows packed end to end go into an empty cache of lengths.size() rows, each row's on the right of the longest
  //! (left padding, zeros before it), the layout a left-padded batch's forward writes.
  void write_packed(std::size_t layer, const torch::Tensor& k, const torch::Tensor& v, const std::vector<int64_t>& lengths);
  //! Ends a forward step: the new tokens' mask [rows, new] joins the cached mask.
  void commit(const torch::Tensor& new_mask);

 private:
  //! Grows layer `layer`'s buffers (shaped as k and v but for positions) to hold `added` positions after length().
  void make_room(std::size_t layer, int64_t added, const torch::Tensor& k, const torch::Tensor& v);
  int64_t reserve_ = 0, length_ = 0, capacity_ = 0;
  std::vector<torch::Tensor> k_, v_;  // per layer [rows, kv_heads, capacity, head]
  torch::Tensor mask_, next_positions_;
};

class DecoderLayerImpl;  // model.cpp
struct TokenLayout;      // model.cpp

class LlamaModelImpl : public torch::nn::Module {
 public:
  //! Allocates the modules with uninitialised weights in `options` (dtype, device); use create_model() or
  //! load_model(), which fill them.
  LlamaModelImpl(LlamaConfig config, const torch::TensorOptions& options);

  //! input_ids [rows, new] int64; attention_mask [rows, new] (1 token, 0 padding; undefined = all ones) for the
  //! new tokens only (the cache remembers earlier ones); cache: null for a full forward. Returns float32 logits
  //! [rows, new, vocab], or [rows, 1, vocab] for the last position only when `last_only` (generation).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                        KvCache* cache = nullptr, bool last_only = false);
  //! The final hidden states [rows, new, hidden] (after the last RMSNorm), in the model's dtype.
  torch::Tensor hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                              KvCache* cache = nullptr);
  //! The final hidden states of prompts and of continuations that read them: `prompt_ids` [prompts, P] (left-padded,
  //! `prompt_mask` 1 on tokens), `continuation_ids` [rows, C] (right-padded, `continuation_mask`), each row
  //! continuing the prompt `parent[row]`: it sees that prompt and its own earlier tokens, at the positions that
  //! follow the prompt. Returns {[prompts, hidden] at each prompt's last position, [rows, C, hidden]},
  //! differentiable: RL training computes a prompt once for all the completions sampled from it (llama/rl_loss.h).
  //! The prompts' keys and values go through a KvCache, copied to each of their rows; prompts of different lengths
  //! are read packed end to end (no work on their padding), the cache left as the left-padded batch's forward leaves
  //! it; the prompts' last layer runs for their last token alone (TokenLayout::last_only); the continuations' padding
  //! positions skip the norms, projections and MLP, and their hidden states are zero.
  std::pair<torch::Tensor, torch::Tensor> prefix_hidden_states(const torch::Tensor& prompt_ids,
                                                               const torch::Tensor& prompt_mask,
                                                               const torch::Tensor& continuation_ids,
                                                               const torch::Tensor& continuation_mask,
                                                               const torch::Tensor& parent);
  //! The final hidden states of rows packed end to end, without padding: `ids` [1, Σ lengths] int64, row r's tokens
  //! after those of rows 0..r−1, each at positions 0..length−1 and attending to its own earlier tokens only. Returns
  //! [1, Σ lengths, hidden], differentiable: the numbers of the rows padded into a batch, without the padding's
  //! work (training's forward, llama/train.h; PUMA's rows differ in length by half on average). With `tails` (one a
  //! row, each 1..its length), the hidden states of each row's last tails[r] tokens alone, [1, Σ tails, hidden]: the
  //! last layer computes those tokens' queries, attention output and MLP only, and every token's keys and values
  //! (training reads only the positions that predict a label, which end each row).
  torch::Tensor packed_hidden_states(const torch::Tensor& ids, const std::vector<int64_t>& lengths,
                                     const std::vector<int64_t>& tails = {});
  //! Generation's first step for prompts of different lengths, without the padding's work: `ids` [1, Σ lengths] as
  //! packed_hidden_states() takes them. The keys and values go into `cache` (empty) as a left-padded batch's forward
  //! writes them, so decoding goes on from it exactly as after forward(left-padded ids, mask, cache). Returns each
  //! row's last-position logits [rows, 1, vocab], float32.
  torch::Tensor packed_prefill(const torch::Tensor& ids, const std::vector<int64_t>& lengths, KvCache& cache);
  //! A decoding step, `ids` [rows, 1] int64 (every row's token real) after `cache` (not empty), on the CPU in
  //! float32 without autograd (LoRA pairs included, in eval mode), through decode_step.h's and decode_attention.h's
  //! kernels instead of libtorch's operators: the final hidden states [rows, 1, hidden], the cache advanced as
  //! forward() advances it. forward() and hidden_states() take this path for such a step by themselves (unless
  //! set_step_kernels(false)). Undefined, the cache untouched, when the step does not qualify.
  torch::Tensor decode_step(const torch::Tensor& ids, KvCache& cache);
  //! Whether forward() runs qualifying decoding steps through decode_step() (the default) or through the operators,
  //! as the benchmark's comparison and tests need.
  void set_step_kernels(bool on) { step_kernels_ = on; }
  bool step_kernels() const { return step_kernels_; }
  //! hidden [.., hidden] → float32 logits [.., vocab].
  torch::Tensor logits(const torch::Tensor& hidden);

  //! Fills every weight as transformers' LlamaPreTrainedModel._init_weights: normal(0, initializer_range) for
  //! projections and embeddings, ones for norms; deterministic in `seed`.
  void init_weights(uint64_t seed);

  //! Every checkpoint weight by its HF name ("model.norm.weight", ...; no lm_head when tied), adapters excluded.
  std::vector<std::pair<std::string, torch::Tensor>> checkpoint_weights() const;
  //! Every weight-owning module by its HF module path ("model.layers.0.self_attn.q_proj", "lm_head", ...).
  std::vector<std::pair<std::string, std::shared_ptr<WeightModule>>> weight_modules() const;
  //! Turns every attached adapter part on or off (lora.h uses this; DPO's reference is the model with it off).
  void set_adapters_enabled(bool enabled);

  const LlamaConfig& config() const { return config_; }
  torch::Dtype dtype() const;
  torch::Device device() const;

 private:
  torch::Tensor rotary_cos_sin(const torch::Tensor& positions) const;
  //! hidden_states(); with `skip_padding`, the padding positions' norms, projections and MLP are not computed and
  //! their hidden states are zero (prefix_hidden_states()'s completions, which nothing reads at their padding).
  //! With `last_only`, the hidden states of the last position alone, [rows, 1, hidden] (forward()'s; not with
  //! `skip_padding`).
  torch::Tensor batch_hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                    KvCache* cache, bool skip_padding, bool last_only = false);
  //! prefix_hidden_states()'s prompts packed end to end into `cache` when they differ in length and are left-padded:
  //! each prompt's last hidden state, [prompts, hidden]; undefined when the batch does not qualify.
  torch::Tensor packed_prompts(const torch::Tensor& prompt_ids, const torch::Tensor& prompt_mask, KvCache& cache);
  //! packed_hidden_states(), its keys and values also written into `cache` when given (packed_prefill()).
  //! With `tails`, each row's last tails[r] tokens alone: [1, Σ tails, hidden] (TokenLayout::last_only).
  torch::Tensor run_packed(const torch::Tensor& ids, const std::vector<int64_t>& lengths, KvCache* cache,
                           const std::vector<int64_t>* tails = nullptr);
  //! Embedding → decoder layers → final norm, for ids at `positions` with the additive mask `blocked`; `layout`
  //! (model.cpp) for packed rows (each attending causally within itself, no `blocked`) or an unpadded batch.
  //! `last_only`: the last layer computes each row's last tokens alone (TokenLayout::last_only: the layout's tails,
  //! or one), the keys and values of every token still in the cache; the result is then [1, Σ tails, hidden]
  //! (packed) or [rows, 1, hidden].
  torch::Tensor run_layers(const torch::Tensor& ids, const torch::Tensor& positions, const torch::Tensor& blocked,
                           KvCache* cache, const TokenLayout* layout = nullptr, bool last_only = false);
  LlamaConfig config_;
  bool step_kernels_ = true;
  torch::Tensor inv_freq_;  // [head/2] float32, on the model's device
  std::shared_ptr<torch::nn::Module> backbone_;  // "model": embed_tokens, layers, norm
  Embedding embed_tokens_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  std::vector<std::shared_ptr<DecoderLayerImpl>> layer_list_;
  RmsNorm norm_{nullptr};
  Projection lm_head_{nullptr};  // null when tie_word_embeddings
};
TORCH_MODULE(LlamaModel);

//! A decoding step's attention by decode_attention.h's kernel: q [rows, heads, 1, head] against k, v [rows, kv_heads,
//! total, head] (any strides with the head's floats contiguous, as a KV cache's narrowed buffers are), under blocked
//! [rows, 1, 1, 1, total] (0, or the lowest float where a row may not look) → [rows, heads, 1, head]; CPU, float32,
//! no autograd (pwab::UsageError otherwise, or for shapes that do not fit). One task per (row, key/value head), split
//! between libtorch's threads. The attention layers call it; bench/llama/llama_bench.cpp times it against PyTorch's
//! fused attention.
torch::Tensor decode_step_attention(const torch::Tensor& q, torch::Tensor k, torch::Tensor v,
                                    const torch::Tensor& blocked, double scale);

//! HF rotary inverse frequencies [head/2] for a config (theta, linear or llama3 rope_scaling), as double.
std::vector<double> rope_inv_freq(const LlamaConfig& config);

//! A model with fresh weights (init_weights(seed)) in `options`.
LlamaModel create_model(const LlamaConfig& config, uint64_t seed, const torch::TensorOptions& options = {});

struct LoadOptions {
  torch::Dtype dtype = torch::kFloat32;  //!< compute dtype; stored F32/F16/BF16 weights are converted to it
  torch::Device device = torch::kCPU;
  int n_threads = 0;  //!< libtorch intra-op threads set at load; 0 = all hardware threads, -1 = leave as is
};

//! Loads a Hugging Face model directory: config.json and model.safetensors or a sharded
//! model.safetensors.index.json. Throws pwab::DataError naming the file and the tensor for a missing tensor, a wrong
//! shape, a non-float dtype, or a tensor that is not a LLaMA weight (rotary_emb.inv_freq buffers are ignored).
LlamaModel load_model(const std::filesystem::path& model_dir, const LoadOptions& options = {});

struct SaveOptions {
  std::string dtype;                         //!< "float32", "float16", "bfloat16"; empty = the model's dtype
  int64_t max_shard_bytes = int64_t{2} << 30;  //!< larger checkpoints are sharded with an index, as HF does
};

//! Writes config.json and the checkpoint weights (adapters not included: merge them first) in HF's layout,
//! removing model*.safetensors files left from an earlier save in `model_dir`.
void save_model(const LlamaModelImpl& model, const std::filesystem::path& model_dir, const SaveOptions& options = {});

//! A tensor as a safetensors record (copied to the CPU in `dtype`: float32, float16 or bfloat16), for
//! save_model() and LoRA adapters.
safetensors::TensorData to_safetensors(const std::string& name, const torch::Tensor& t, torch::Dtype dtype);

//! "float32" → torch::kFloat32, ...; throws pwab::UsageError for other names.
torch::Dtype parse_dtype(const std::string& name);
std::string dtype_name(torch::Dtype dtype);

}  // namespace pwab::llama
