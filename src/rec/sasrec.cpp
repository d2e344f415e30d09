#include "rec/sasrec.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "core/multiversion.h"
#include "core/sys.h"

namespace pwab::rec {

namespace {

torch::nn::LayerNorm make_layernorm(int64_t width) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(1e-8));
}

//! 0 on and below the diagonal, -inf above: position t attends to positions ≤ t.
torch::Tensor causal_mask(int64_t length) {
  return torch::full({length, length}, -std::numeric_limits<float>::infinity()).triu(1);
}

}  // namespace

// ---- SelfAttention -----------------------------------------------------------------------------------------

SelfAttentionImpl::SelfAttentionImpl(int64_t width, int64_t heads, double dropout)
    : width_(width), heads_(heads), dropout_(dropout) {
  if (heads <= 0 || width % heads != 0) throw Error("SASRec: hidden size must be divisible by the number of heads");
  in_proj_weight_ = register_parameter("in_proj_weight", torch::empty({3 * width, width}));
  in_proj_bias_ = register_parameter("in_proj_bias", torch::zeros({3 * width}));
  out_proj_ = register_module("out_proj", torch::nn::Linear(width, width));
  // nn.MultiheadAttention's own initialisation.
  torch::nn::init::xavier_uniform_(in_proj_weight_);
  torch::NoGradGuard no_grad;
  out_proj_->bias.zero_();
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& keys_values,
                                         const torch::Tensor& mask) {
  const int64_t batch = query.size(0), length = query.size(1), head_width = width_ / heads_;
  auto w = in_proj_weight_.chunk(3, 0);
  auto b = in_proj_bias_.chunk(3, 0);
  auto split_heads = [&](const torch::Tensor& t) {
    return t.reshape({batch, -1, heads_, head_width}).transpose(1, 2);  // [batch, heads, length, head_width]
  };
  auto q = split_heads(torch::linear(query, w[0], b[0]));
  auto k = split_heads(torch::linear(keys_values, w[1], b[1]));
  auto v = split_heads(torch::linear(keys_values, w[2], b[2]));
  q = q / std::sqrt(static_cast<double>(head_width));
  auto weights = torch::softmax(torch::matmul(q, k.transpose(-2, -1)) + mask, -1);
  if (is_training() && dropout_ > 0) weights = torch::dropout(weights, dropout_, true);
  auto attended = torch::matmul(weights, v).transpose(1, 2).reshape({batch, length, width_});
  return out_proj_(attended);
}

// ---- PointwiseFeedForward ----------------------------------------------------------------------------------

PointwiseFeedForwardImpl::PointwiseFeedForwardImpl(int64_t width, double dropout) {
  conv1_ = register_module("conv1", torch::nn::Conv1d(torch::nn::Conv1dOptions(width, width, 1)));
  conv2_ = register_module("conv2", torch::nn::Conv1d(torch::nn::Conv1dOptions(width, width, 1)));
  dropout1_ = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2_ = register_module("dropout2", torch::nn::Dropout(dropout));
}

torch::Tensor PointwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  // A kernel-size-1 convolution over positions is a linear map of each position: same numbers, no transposes.
  auto y = torch::relu(dropout1_(torch::linear(x, conv1_->weight.squeeze(-1), conv1_->bias)));
  y = dropout2_(torch::linear(y, conv2_->weight.squeeze(-1), conv2_->bias));
  return x + y;
}

// ---- Sasrec -------------------------------------------------------------------------------------------------

SasrecImpl::SasrecImpl(int64_t item_rows, ModelShape shape, double dropout) : item_rows_(item_rows), shape_(shape) {
  if (item_rows < 2 || shape.maxlen <= 0 || shape.hidden <= 0 || shape.blocks <= 0)
    throw Error("SASRec: invalid dimensions");
  item_emb_ = register_module("item_emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(item_rows, shape.hidden).padding_idx(0)));
  pos_emb_ = register_module("pos_emb", torch::nn::Embedding(torch::nn::EmbeddingOptions(shape.maxlen + 1, shape.hidden).padding_idx(0)));
  emb_dropout_ = register_module("emb_dropout", torch::nn::Dropout(dropout));
  for (int i = 0; i < shape.blocks; ++i) {
    attention_layernorms_->push_back(make_layernorm(shape.hidden));
    attention_layers_->push_back(SelfAttention(shape.hidden, shape.heads, dropout));
    forward_layernorms_->push_back(make_layernorm(shape.hidden));
    forward_layers_->push_back(PointwiseFeedForward(shape.hidden, dropout));
  }
  register_module("attention_layernorms", attention_layernorms_);
  register_module("attention_layers", attention_layers_);
  register_module("forward_layernorms", forward_layernorms_);
  register_module("forward_layers", forward_layers_);
  last_layernorm_ = register_module("last_layernorm", make_layernorm(shape.hidden));
}

torch::Tensor SasrecImpl::encode(const torch::Tensor& seqs) {
  const int64_t length = seqs.size(1);
  auto x = item_emb_(seqs) * std::sqrt(static_cast<double>(shape_.hidden));
  auto positions = torch::arange(1, length + 1, torch::kLong).unsqueeze(0) * (seqs != 0);
  x = emb_dropout_(x + pos_emb_(positions));
  auto mask = causal_mask(length);
  for (int i = 0; i < shape_.blocks; ++i) {
    auto q = attention_layernorms_[i]->as<torch::nn::LayerNorm>()->forward(x);
    x = q + attention_layers_[i]->as<SelfAttention>()->forward(q, x, mask);
    x = forward_layernorms_[i]->as<torch::nn::LayerNorm>()->forward(x);
    x = forward_layers_[i]->as<PointwiseFeedForward>()->forward(x);
  }
  return last_layernorm_(x);
}

void SasrecImpl::init_like_original() {
  torch::NoGradGuard no_grad;
  for (auto& p : parameters())
    if (p.dim() >= 2) torch::nn::init::xavier_normal_(p);
  item_emb_->weight[0].zero_();
  pos_emb_->weight[0].zero_();
}

// ---- tensor names ------------------------------------------------------------------------------------------

namespace {

//! The plain checks of weights.h, run on torch tensors.
ShapeLookup shapes_in(const std::map<std::string, torch::Tensor>& tensors) {
  return [&tensors](const std::string& name) -> std::optional<std::vector<int64_t>> {
    auto it = tensors.find(name);
    if (it == tensors.end()) return std::nullopt;
    return it->second.sizes().vec();
  };
}

}  // namespace

void assign_tensors(Sasrec& model, const std::map<std::string, torch::Tensor>& tensors, const std::string& what) {
  check_tensors(shapes_in(tensors), model->item_rows(), model->shape(), what);
  auto params = model->named_parameters();
  torch::NoGradGuard no_grad;
  for (const auto& [name, shape] : expected_tensors(model->item_rows(), model->shape()))
    params[name].copy_(tensors.at(name));
}

std::pair<int64_t, ModelShape> infer_dimensions(const std::map<std::string, torch::Tensor>& tensors,
                                                const std::string& what) {
  return infer_dimensions(shapes_in(tensors), what);
}

// ---- original .pth ------------------------------------------------------------------------------------------

std::map<std::string, torch::Tensor> read_state_dict_pth(const std::filesystem::path& path) {
  std::map<std::string, torch::Tensor> tensors;
  for (auto& [name, array] : read_torch_save_weights(path))
    tensors[name] = torch::from_blob(array.values.data(), array.shape, torch::kFloat32).clone();
  return tensors;
}

// ---- conversions --------------------------------------------------------------------------------------------

NamedArray to_named_array(const std::string& name, const torch::Tensor& tensor) {
  auto t = tensor.detach().to(torch::kFloat32).contiguous();
  NamedArray array{name, t.sizes().vec(), {}};
  array.values.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  return array;
}

torch::Tensor to_tensor(const NamedArray& array) {
  return torch::from_blob(const_cast<float*>(array.values.data()), array.shape, torch::kFloat32).clone();
}

OwnCheckpoint read_own_checkpoint(const std::filesystem::path& path) {
  CheckpointContents contents = decode_checkpoint(read_file(path), path.string());
  OwnCheckpoint checkpoint;
  checkpoint.meta = nlohmann::json::parse(contents.meta_json, nullptr, false);
  if (!checkpoint.meta.is_object()) throw Error(path.string() + ": corrupt checkpoint metadata");
  for (const auto& array : contents.arrays) {
    std::string_view name = array.name;
    if (name.starts_with(kLatestPrefix)) checkpoint.latest[std::string(name.substr(kLatestPrefix.size()))] = to_tensor(array);
    else checkpoint.served[array.name] = to_tensor(array);
  }
  checkpoint.optimizer_state = std::move(contents.blob);
  return checkpoint;
}

namespace {

//! score[i] += Σ_j columns[j·n + i] · h[j], in blocks of candidates that stay in L1 while the columns stream
//! past. Compiled for AVX-512, AVX2 and baseline x86-64, picked at load time (core/multiversion.h).
PWAB_MULTIVERSION void accumulate_scores(const float* columns, int64_t width, std::size_t n, const float* h,
                                         float* score) {
  constexpr std::size_t kBlock = 512;
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t end = std::min(n, start + kBlock);
    for (int64_t j = 0; j < width; ++j) {
      const float* column = columns + j * static_cast<int64_t>(n);
      const float hj = h[j];
      for (std::size_t i = start; i < end; ++i) score[i] += column[i] * hj;
    }
  }
}

}  // namespace

std::vector<std::pair<int64_t, float>> top_candidates(Sasrec& model, const torch::Tensor& candidate_columns,
                                                      const std::vector<int64_t>& candidate_ids,
                                                      const std::vector<int64_t>& sequence, int k) {
  if (sequence.empty() || k <= 0 || candidate_ids.empty()) return {};
  auto state = model->encode(right_aligned(sequence, model->shape().maxlen)).select(1, -1).squeeze(0).contiguous();
  // scores = columnsᵀ · state as hidden axpy passes over the candidates: vectorizes without reassociation and
  // beats a BLAS matrix-vector call at this size (no dispatch, no threads).
  const float* h = state.data_ptr<float>();
  const float* columns = candidate_columns.data_ptr<float>();
  std::vector<float> scores(candidate_ids.size(), 0.0f);
  float* score = scores.data();
  accumulate_scores(columns, candidate_columns.size(0), candidate_ids.size(), h, score);
  return select_top(score, candidate_ids, k);
}

FastSasrec make_fast_sasrec(Sasrec& model, const std::vector<int64_t>& candidate_ids) {
  auto params = model->named_parameters();
  auto weights = [&](const std::string& name) {
    auto tensor = params[name].detach().to(torch::kFloat32).contiguous();
    const float* data = tensor.data_ptr<float>();
    return WeightArray{tensor.sizes().vec(), std::vector<float>(data, data + tensor.numel())};
  };
  return FastSasrec(weights, model->item_rows(), model->shape(), candidate_ids);
}

torch::Tensor candidate_columns(Sasrec& model, const std::vector<int64_t>& ids) {
  torch::NoGradGuard no_grad;
  return model->item_table().index_select(0, torch::tensor(ids, torch::kLong)).t().contiguous();
}

torch::Tensor right_aligned(const std::vector<int64_t>& ids, int maxlen) {
  auto seq = torch::zeros({1, maxlen}, torch::kLong);
  auto* out = seq.data_ptr<int64_t>();
  std::size_t n = std::min<std::size_t>(ids.size(), static_cast<std::size_t>(maxlen));
  for (std::size_t i = 0; i < n; ++i) out[maxlen - n + i] = ids[ids.size() - n + i];
  return seq;
}

}  // namespace pwab::rec
