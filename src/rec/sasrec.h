// src/rec/sasrec.h: the SASRec network in libtorch, with the original's tensor names (internal to src/rec).
//
// The architecture is PersonalWAB's variant of pmixer's SASRec (docs/decisions.md §2.3.2): scaled item embedding plus
// 1-based positional embedding (0 on padding), pre-LN causal self-attention whose residual adds the normed
// query, a post-LN point-wise feed-forward with residual, a last LayerNorm; eps 1e-8; no timeline mask and no
// key-padding mask. Parameter names match the original state_dict (`item_emb.weight`, ...).
#pragma once
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "rec/checkpoint_file.h"
#include "rec/fast_sasrec.h"
#include "rec/recommender.h"
#include "rec/weights.h"

namespace pwab::rec {

//! nn.MultiheadAttention's parameters (packed in_proj, out_proj) and numerics, batch-first.
class SelfAttentionImpl : public torch::nn::Module {
 public:
  SelfAttentionImpl(int64_t width, int64_t heads, double dropout);
  //! query, keys_values: [batch, length, width]; additive mask [length, length].
  torch::Tensor forward(const torch::Tensor& query, const torch::Tensor& keys_values, const torch::Tensor& mask);

 private:
  int64_t width_, heads_;
  double dropout_;
  torch::Tensor in_proj_weight_, in_proj_bias_;
  torch::nn::Linear out_proj_{nullptr};
};
TORCH_MODULE(SelfAttention);

//! Two kernel-size-1 Conv1d layers (computed as per-position linear maps) with dropout and a residual.
class PointwiseFeedForwardImpl : public torch::nn::Module {
 public:
  PointwiseFeedForwardImpl(int64_t width, double dropout);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv1d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Dropout dropout1_{nullptr}, dropout2_{nullptr};
};
TORCH_MODULE(PointwiseFeedForward);

class SasrecImpl : public torch::nn::Module {
 public:
  //! item_rows = largest item id + 1 (row 0 is padding).
  SasrecImpl(int64_t item_rows, ModelShape shape, double dropout);

  //! seqs: [batch, maxlen] int64 item ids, right-aligned, 0 = padding → [batch, maxlen, hidden].
  torch::Tensor encode(const torch::Tensor& seqs);
  //! The item embedding table [item_rows, hidden].
  const torch::Tensor& item_table() const { return item_emb_->weight; }
  //! The original initialisation: Xavier-normal on every parameter of 2+ dimensions, padding rows zeroed.
  void init_like_original();

  int64_t item_rows() const { return item_rows_; }
  const ModelShape& shape() const { return shape_; }

 private:
  int64_t item_rows_;
  ModelShape shape_;
  torch::nn::Embedding item_emb_{nullptr}, pos_emb_{nullptr};
  torch::nn::Dropout emb_dropout_{nullptr};
  torch::nn::ModuleList attention_layernorms_, attention_layers_, forward_layernorms_, forward_layers_;
  torch::nn::LayerNorm last_layernorm_{nullptr};
};
TORCH_MODULE(Sasrec);

//! Copies tensors into the model by name; throws pwab::Error (prefixed by `what`) naming a missing tensor or a
//! wrong shape (check_tensors, weights.h). Extra tensors are ignored.
void assign_tensors(Sasrec& model, const std::map<std::string, torch::Tensor>& tensors, const std::string& what);
//! Derives item rows and the shape from a state_dict's tensors (weights.h's infer_dimensions on their shapes).
std::pair<int64_t, ModelShape> infer_dimensions(const std::map<std::string, torch::Tensor>& tensors, const std::string& what);

//! Reads an original PersonalWAB checkpoint: a state_dict saved by torch.save (zip format), as float32
//! (read_torch_save_weights, weights.h, as tensors).
std::map<std::string, torch::Tensor> read_state_dict_pth(const std::filesystem::path& path);

NamedArray to_named_array(const std::string& name, const torch::Tensor& tensor);
torch::Tensor to_tensor(const NamedArray& array);

//! pwab's own checkpoint, read back as tensors (see checkpoint_file.h; train.cpp writes it).
struct OwnCheckpoint {
  nlohmann::json meta;
  std::map<std::string, torch::Tensor> served;  //!< the weights inference uses (best validated), original names
  std::map<std::string, torch::Tensor> latest;  //!< the last epoch's weights, for resume (names without prefix)
  std::string optimizer_state;                  //!< torch::save of the Adam optimizer
};
OwnCheckpoint read_own_checkpoint(const std::filesystem::path& path);

//! The top k of `candidate_ids` for one sequence (ties: lower id first). candidate_columns is the candidates'
//! embedding rows transposed, [hidden, n] contiguous float32, in the order of candidate_ids (ascending); see
//! candidate_columns(). Call in eval mode under a NoGradGuard.
std::vector<std::pair<int64_t, float>> top_candidates(Sasrec& model, const torch::Tensor& candidate_columns,
                                                      const std::vector<int64_t>& candidate_ids,
                                                      const std::vector<int64_t>& sequence, int k);

//! The item_emb rows of `ids`, transposed to [hidden, ids.size()] contiguous, for top_candidates().
torch::Tensor candidate_columns(Sasrec& model, const std::vector<int64_t>& ids);

//! The torch-free copy of `model` that inference runs on (fast_sasrec.h), scoring `candidate_ids` (ascending).
FastSasrec make_fast_sasrec(Sasrec& model, const std::vector<int64_t>& candidate_ids);

//! Item ids right-aligned in a [1, maxlen] int64 tensor (the last maxlen kept, 0-padded on the left).
torch::Tensor right_aligned(const std::vector<int64_t>& ids, int maxlen);

}  // namespace pwab::rec
