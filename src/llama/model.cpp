// The LLaMA decoder behind model.h: modules, forward with masks, rotary embeddings and the KV cache; loading and
// saving Hugging Face checkpoints (core/safetensors.h reads the files; this file turns views into tensors).
#include "llama/model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/sys.h"
#include "core/torch_runtime.h"
#include "llama/decode_attention.h"
#include "llama/decode_step.h"

namespace pwab::llama {
namespace fs = std::filesystem;

namespace {

at::Generator cpu_generator(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

std::string shape_string(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//! HF's rotary embedding, x·cos + rotate_half(x)·sin, where rotate_half maps the halves (x1, x2) of the last
//! dimension to (−x2, x1). `sin_signed` is sin with its first half negated (LlamaModelImpl::rotary_cos_sin), so
//! rotate_half(x)·sin is roll(x, half)·sin_signed: the same products, bit for bit (−(a·b) = a·(−b) in IEEE
//! arithmetic, and each is rounded before the sum as in HF's), in one roll where HF takes two slices, a negation and
//! a concatenation: fewer operator calls in each decoding step and two fewer passes over the projections of a prompt
//! (docs/performance.md, "Sampling with a KV cache").
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin_signed) {
  return x * cos + x.roll(x.size(-1) / 2, -1) * sin_signed;
}

//! torch::linear, but a single input row on a CPU with several threads, outside autograd, splits the weight's
//! output rows between the threads, each a matrix-vector product on its share. Why: for one row libtorch calls
//! the BLAS's sgemv, and the MKL inside PyTorch's own libtorch runs it on one thread (on this AMD machine, its
//! generic path) while the others spin: splitting made decoding one sequence of a 100M model 1.31× faster
//! (docs/performance.md, "Sampling with a KV cache"). Weights under 2 MB (the tiny preset's) stay whole: they sit
//! in cache, and a parallel region costs more than it saves there.
torch::Tensor project(const torch::Tensor& x, const torch::Tensor& w) {
  const int64_t out = w.size(0), in = w.size(1);
  const int threads = at::get_num_threads();
  if (threads < 2 || x.numel() != in || !x.device().is_cpu() || x.scalar_type() != torch::kFloat32 ||
      w.scalar_type() != torch::kFloat32 || out * in < (int64_t{1} << 19) ||
      (torch::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())))
    return torch::linear(x, w);
  auto sizes = x.sizes().vec();
  sizes.back() = out;
  auto y = torch::empty({out}, x.options());
  // Detached: the worker threads run in autograd's default mode (grad mode is thread-local), where an out= product
  // refuses a weight that requires grad.
  auto v = x.detach().reshape({in}).contiguous();
  auto wc = w.detach().contiguous();
  at::parallel_for(0, out, (out + threads - 1) / threads, [&](int64_t lo, int64_t hi) {
    auto part = y.narrow(0, lo, hi - lo);
    at::mv_out(part, wc.narrow(0, lo, hi - lo), v);
  });
  return y.view(sizes);
}

}  // namespace

// ---- weight modules ----------------------------------------------------------------------------------------------

torch::Tensor WeightModule::active_weight() const {
  if (trained_ && adapter_enabled_) return trained_->weight.to(weight.scalar_type());
  return weight;
}

void WeightModule::add_trained_copy(torch::Dtype dtype) {
  if (trained_) throw UsageError("this module already has a trained copy (an adapter is attached)");
  torch::NoGradGuard no_grad;
  trained_ = register_module("modules_to_save", WeightHolder(weight.detach().to(dtype).clone()));
}

torch::Tensor WeightModule::trained_copy() const { return trained_ ? trained_->weight : torch::Tensor(); }

void WeightModule::drop_trained_copy(bool merge) {
  if (!trained_) return;
  if (merge) {
    torch::NoGradGuard no_grad;
    weight.copy_(trained_->weight);
  }
  unregister_module("modules_to_save");
  trained_ = nullptr;
}

ProjectionImpl::ProjectionImpl(int64_t in_features, int64_t out_features, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}, options));
}

torch::Tensor ProjectionImpl::forward(const torch::Tensor& x) {
  auto y = project(x, active_weight());
  if (!lora_A_ || !adapter_enabled_) return y;
  auto h = x.to(lora_A_->weight.scalar_type());
  if (lora_dropout_ > 0 && is_training()) h = torch::dropout(h, lora_dropout_, true);
  auto delta = torch::linear(torch::linear(h, lora_A_->weight), lora_B_->weight) * lora_scale_;
  return y + delta.to(y.scalar_type());
}

void ProjectionImpl::add_lora(int64_t r, double scale, double dropout, torch::Dtype dtype, uint64_t seed) {
  if (lora_A_) throw UsageError("this projection already has a LoRA pair (an adapter is attached)");
  if (r <= 0) throw UsageError("LoRA rank must be positive, not " + std::to_string(r));
  const int64_t in = weight.size(1), out = weight.size(0);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a=sqrt(5)), as nn.Linear
  auto gen = cpu_generator(seed);
  auto a = torch::empty({r, in}, torch::kFloat32).uniform_(-bound, bound, gen);
  auto on = torch::TensorOptions().dtype(dtype).device(weight.device());
  lora_A_ = register_module("lora_A", WeightHolder(a.to(on)));
  lora_B_ = register_module("lora_B", WeightHolder(torch::zeros({out, r}, on)));
  lora_scale_ = scale;
  lora_dropout_ = dropout;
}

void ProjectionImpl::drop_lora(bool merge) {
  if (!lora_A_) return;
  if (merge) {
    torch::NoGradGuard no_grad;
    auto delta = torch::matmul(lora_B_->weight.to(torch::kFloat32), lora_A_->weight.to(torch::kFloat32));
    weight.copy_(weight.to(torch::kFloat32) + delta * lora_scale_);
  }
  unregister_module("lora_A");
  unregister_module("lora_B");
  lora_A_ = nullptr;
  lora_B_ = nullptr;
}

torch::Tensor ProjectionImpl::lora_A() const { return lora_A_ ? lora_A_->weight : torch::Tensor(); }
torch::Tensor ProjectionImpl::lora_B() const { return lora_B_ ? lora_B_->weight : torch::Tensor(); }

RmsNormImpl::RmsNormImpl(int64_t width, double eps, const torch::TensorOptions& options) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({width}, options));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) {
  // In float32 the casts are no-ops; skipped, as each is still an operator call (a decoding step has nine norms).
  const bool wide = x.scalar_type() == torch::kFloat32;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  // Without autograd on the CPU, PyTorch's fused norm (2.4 and later): the same numbers, bit for bit, as the five
  // operators below (checked on the decoding and prompt shapes), in one pass instead of five.
  if (wide && x.device().is_cpu() &&
      !(torch::GradMode::is_enabled() && (x.requires_grad() || active_weight().requires_grad())))
    return at::rms_norm(x, {x.size(-1)}, active_weight(), eps_);
#endif
  auto h = wide ? x : x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, true) + eps_);
  return active_weight() * (wide ? h : h.to(x.scalar_type()));
}

EmbeddingImpl::EmbeddingImpl(int64_t vocab, int64_t width, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({vocab, width}, options));
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) { return torch::embedding(active_weight(), ids); }

// ---- KV cache ----------------------------------------------------------------------------------------------------

void KvCache::make_room(std::size_t layer, int64_t added, const torch::Tensor& k, const torch::Tensor& v) {
  if (layer >= k_.size()) {
    k_.resize(layer + 1);
    v_.resize(layer + 1);
  }
  const int64_t needed = length_ + added;
  auto& kb = k_[layer];
  auto& vb = v_[layer];
  if (!kb.defined() || needed > kb.size(2)) {
    const int64_t capacity = std::max({needed, reserve_, kb.defined() ? 2 * kb.size(2) : int64_t{0}});
    auto grow = [&](torch::Tensor& buffer, const torch::Tensor& like) {
      auto fresh = torch::zeros({like.size(0), like.size(1), capacity, like.size(3)}, like.options());
      if (buffer.defined() && length_ > 0) fresh.narrow(2, 0, length_).copy_(buffer.narrow(2, 0, length_));
      buffer = fresh;
    };
    grow(kb, k);
    grow(vb, v);
  }
}

std::pair<torch::Tensor, torch::Tensor> KvCache::append(std::size_t layer, const torch::Tensor& k,
                                                        const torch::Tensor& v) {
  const int64_t added = k.size(2), needed = length_ + added;
  make_room(layer, added, k, v);
  auto& kb = k_[layer];
  auto& vb = v_[layer];
  kb.narrow(2, length_, added).copy_(k);
  vb.narrow(2, length_, added).copy_(v);
  return {kb.narrow(2, 0, needed), vb.narrow(2, 0, needed)};
}

std::pair<torch::Tensor, torch::Tensor> KvCache::step_buffers(std::size_t layer) {
  if (layer >= k_.size() || !k_[layer].defined())
    throw UsageError("KV cache: a decoding step needs the layer's earlier keys and values (layer " +
                     std::to_string(layer) + " has none)");
  if (length_ + 1 > k_[layer].size(2)) {
    auto shape = k_[layer].sizes().vec();
    shape[2] = 1;
    auto like = torch::empty(shape, k_[layer].options());
    make_room(layer, 1, like, like);
  }
  return {k_[layer], v_[layer]};
}

void KvCache::write_packed(std::size_t layer, const torch::Tensor& k, const torch::Tensor& v,
                           const std::vector<int64_t>& lengths) {
  if (length_ != 0) throw UsageError("KV cache: a packed prefill needs an empty cache");
  if (layer >= k_.size()) {
    k_.resize(layer + 1);
    v_.resize(layer + 1);
  }
  const auto rows = static_cast<int64_t>(lengths.size());
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const int64_t capacity = std::max(longest, reserve_);
  auto& kb = k_[layer];
  auto& vb = v_[layer];
  kb = torch::zeros({rows, k.size(1), capacity, k.size(3)}, k.options());
  vb = torch::zeros({rows, v.size(1), capacity, v.size(3)}, v.options());
  int64_t offset = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = lengths[static_cast<std::size_t>(r)];
    kb[r].narrow(1, longest - n, n).copy_(k[0].narrow(1, offset, n));
    vb[r].narrow(1, longest - n, n).copy_(v[0].narrow(1, offset, n));
    offset += n;
  }
}

void KvCache::commit(const torch::Tensor& new_mask) {
  auto counts = new_mask.to(torch::kInt64).sum(1);
  mask_ = mask_.defined() ? torch::cat({mask_, new_mask}, 1) : new_mask;
  next_positions_ = next_positions_.defined() ? next_positions_ + counts : counts;
  length_ += new_mask.size(1);
}

void KvCache::select_rows(const torch::Tensor& rows) {
  if (!mask_.defined()) return;
  auto index = rows.to(mask_.device(), torch::kInt64);
  for (auto* buffers : {&k_, &v_})
    for (auto& b : *buffers)
      if (b.defined()) b = b.index_select(0, index);
  mask_ = mask_.index_select(0, index);
  next_positions_ = next_positions_.index_select(0, index);
}

void KvCache::clear() {
  k_.clear();
  v_.clear();
  mask_ = torch::Tensor();
  next_positions_ = torch::Tensor();
  length_ = 0;
}

torch::Tensor decode_step_attention(const torch::Tensor& query, torch::Tensor k, torch::Tensor v,
                                    const torch::Tensor& blocked, double scale) {
  for (const torch::Tensor* t : std::initializer_list<const torch::Tensor*>{&query, &k, &v, &blocked})
    if (!t->device().is_cpu() || t->scalar_type() != torch::kFloat32)
      throw UsageError("decode_step_attention: q, k, v and blocked must be float32 tensors on the CPU");
  if (query.dim() != 4 || k.dim() != 4 || v.dim() != 4 || query.size(2) != 1 || k.sizes() != v.sizes() ||
      query.size(0) != k.size(0) || query.size(3) != k.size(3) || k.size(1) < 1 || query.size(1) % k.size(1) != 0 ||
      blocked.numel() != k.size(0) * k.size(2))
    throw UsageError("decode_step_attention: expected q [rows, heads, 1, head], k and v [rows, kv_heads, total, head] "
                     "with kv_heads dividing heads, and blocked of rows × total; got q " + shape_string(query.sizes()) +
                     ", k " + shape_string(k.sizes()) + ", v " + shape_string(v.sizes()) + ", blocked " +
                     shape_string(blocked.sizes()));
  const int64_t rows = query.size(0), heads = query.size(1), head = query.size(3), kv_heads = k.size(1),
                total = k.size(2), groups = heads / kv_heads;
  auto q = query.contiguous();
  if (k.stride(3) != 1) k = k.contiguous();
  if (v.stride(3) != 1) v = v.contiguous();
  auto bias = blocked.reshape({rows, total}).contiguous();
  auto out = torch::empty({rows, heads, 1, head}, q.options());
  DecodeAttentionHead shape;
  shape.groups = groups;
  shape.head = head;
  shape.total = total;
  shape.key_stride = k.stride(2);
  shape.value_stride = v.stride(2);
  shape.scale = static_cast<float>(scale);
  const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
  const float* bp = bias.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t ks0 = k.stride(0), ks1 = k.stride(1), vs0 = v.stride(0), vs1 = v.stride(1);
  at::parallel_for(0, rows * kv_heads, 1, [&](int64_t lo, int64_t hi) {
    std::vector<int32_t> visible;  // a row's visible positions, shared by its key/value heads
    int64_t m = 0, row = -1;
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t r = t / kv_heads, h = t % kv_heads, first = (r * heads + h * groups) * head;
      if (r != row) m = visible_positions(bp + r * total, total, visible), row = r;
      decode_attention_head(qp + first, kp + r * ks0 + h * ks1, vp + r * vs0 + h * vs1, bp + r * total,
                            visible.data(), m, shape, op + first);
    }
  });
  return out;
}

// ---- decoder layers ----------------------------------------------------------------------------------------------

//! How a forward's tokens sit in its hidden states when not as a plain [rows, new] batch (declared in model.h for
//! run_layers()).
struct TokenLayout {
  //! Packed rows: x [1, Σ segments, hidden], each segment attending causally to itself alone.
  const std::vector<int64_t>* segments = nullptr;
  //! An unpadded batch: x [1, tokens, hidden] holds the real tokens of a [rows, n] batch at the flat indices `where`
  //! (int64, on the model's device). The norms, projections and MLP run on those tokens alone; the attention
  //! (rotary positions, the cache, `blocked`) on the [rows, n] layout.
  int64_t rows = 0, n = 0;
  torch::Tensor where;

  //! [1, tokens, width] → [rows, n, width], zeros at the padding.
  torch::Tensor pad(const torch::Tensor& t) const {
    const int64_t width = t.size(-1);
    return torch::zeros({rows * n, width}, t.options()).index_copy(0, where, t.reshape({-1, width})).view({rows, n, width});
  }
  //! [rows, n, width] → [1, tokens, width].
  torch::Tensor unpad(const torch::Tensor& t) const {
    return t.reshape({rows * n, t.size(-1)}).index_select(0, where).unsqueeze(0);
  }

  //! Generation's prefill reads the logits of each row's last token only, and training those of the tokens that
  //! predict a label, which end each row (a prompt, then its target): so the last layer computes its queries,
  //! attention output and MLP for each row's last tokens alone, and its keys and values for every token (the cache,
  //! and the earlier tokens those last ones attend to). run_layers() sets this for the last layer; packed rows or a
  //! plain batch (not an unpadded one).
  bool last_only = false;
  //! Packed rows: how many tokens end each segment in the last layer (each 1..its length); null = one a segment.
  //! A plain batch always keeps its last position.
  const std::vector<int64_t>* tails = nullptr;
  int64_t tail(std::size_t segment) const { return tails ? (*tails)[segment] : 1; }
  //! The last tokens of each row: t [1, Σ segments, ...] (packed) or [rows, n, ...] along `dim` → that dimension
  //! narrowed to the segments' last tail() tokens, or to position n − 1 (a plain batch, left-padded or without
  //! padding, whose last position is real in every row).
  torch::Tensor last_tokens(const torch::Tensor& t, int64_t dim) const {
    if (!segments) return t.narrow(dim, t.size(dim) - 1, 1);
    std::vector<int64_t> kept;
    int64_t end = 0;
    for (std::size_t i = 0; i < segments->size(); ++i) {
      end += (*segments)[i];
      for (int64_t at = end - tail(i); at < end; ++at) kept.push_back(at);
    }
    return t.index_select(dim, torch::tensor(kept, torch::kInt64).to(t.device()));
  }
};

//! Grouped-query self-attention: query head h reads key/value head h / (heads / kv_heads).
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const LlamaConfig& c, const torch::TensorOptions& o)
      : heads_(c.num_attention_heads), kv_heads_(c.n_kv_heads()), head_(c.head_width()) {
    q_proj = register_module("q_proj", Projection(c.hidden_size, heads_ * head_, o));
    k_proj = register_module("k_proj", Projection(c.hidden_size, kv_heads_ * head_, o));
    v_proj = register_module("v_proj", Projection(c.hidden_size, kv_heads_ * head_, o));
    o_proj = register_module("o_proj", Projection(heads_ * head_, c.hidden_size, o));
  }

  //! blocked: [rows, 1, 1, new, total] float32, the lowest float at the keys each query must not attend to (padding,
  //! the future) and 0 elsewhere. Added rather than masked in: an addition's backward passes the gradient through,
  //! where masked_fill's is one more pass over the largest tensor in training.
  //! layout: packed rows (segments; blocked undefined), each attending causally to itself; or an unpadded batch,
  //! whose projections run on its real tokens and whose attention runs on the [rows, new] layout with `blocked`.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& blocked, KvCache* cache, std::size_t layer,
                        const TokenLayout* layout = nullptr) {
    const std::vector<int64_t>* segments = layout ? layout->segments : nullptr;
    const bool unpadded = layout && layout->where.defined();
    const int64_t rows = unpadded ? layout->rows : x.size(0), n = unpadded ? layout->n : x.size(1);
    // An unpadded batch's projections [1, tokens, width] go to their places in the [rows, new] layout (zeros at
    // the padding, which no real token attends to) for the rotation, the cache and the attention.
    auto padded = [&](const torch::Tensor& t) { return unpadded ? layout->pad(t) : t; };
    auto k = rotated(padded(k_proj->forward(x)), rows, n, kv_heads_, cos, sin);
    auto v = padded(v_proj->forward(x)).view({rows, n, kv_heads_, head_}).transpose(1, 2);
    if (cache && !segments) std::tie(k, v) = cache->append(layer, k, v);
    if (layout && layout->last_only) return last_tokens_attention(x, cos, sin, k, v, blocked, cache, layer, *layout);
    auto q = rotated(padded(q_proj->forward(x)), rows, n, heads_, cos, sin);
    torch::Tensor out;  // [rows, heads, n, head]
    if (segments) {
      // Packed rows: the projections above ran on the real tokens only; attention runs row by row, each a causal
      // block of its own (what the padded batch's mask allows), so no row reads another's keys.
      std::vector<torch::Tensor> parts;
      int64_t offset = 0;
      for (int64_t length : *segments) {
        parts.push_back(attend(q.narrow(2, offset, length), k.narrow(2, offset, length), v.narrow(2, offset, length),
                               torch::Tensor()));
        offset += length;
      }
      out = parts.size() == 1 ? parts[0] : torch::cat(parts, 2);
      if (cache) cache->write_packed(layer, k, v, *segments);  // generation's packed prefill
    } else {
      out = attend(q, k, v, blocked);
    }
    auto merged = out.transpose(1, 2).reshape({rows, n, heads_ * head_});
    return o_proj->forward(unpadded ? layout->unpad(merged) : merged);
  }

  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  //! forward() for TokenLayout::last_only: k and v [rows, kv_heads, total, head] of every token (rotated, in the
  //! cache), the queries of each row's last tokens only → the output at those tokens, [1, Σ tails, hidden] packed or
  //! [rows, 1, hidden]. Each of those tokens sees the keys the full forward's query at its place sees: its segment
  //! up to itself, or the row's unblocked keys.
  torch::Tensor last_tokens_attention(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                      const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& blocked,
                                      KvCache* cache, std::size_t layer, const TokenLayout& layout) {
    if (layout.where.defined()) throw UsageError("LLaMA forward: the last tokens alone of an unpadded batch");
    // Never the decoding step's kernel here: a pass without autograd (RL's reference, DPO's reference pass) must give
    // the numbers of the same pass with it, bit for bit, or a policy equal to its reference would already differ from
    // it, and Adam would turn that rounding into a step (tests
    // RlLoss.PrefixBatchesGiveTheLogprobsAndGradientsOfSeparateRows and
    // PumaRl.NothingMovesWhenThePolicyIsItsReferenceAndEveryRewardIsEqual).
    const auto* segments = layout.segments;
    auto kept = layout.last_tokens(x, 1);
    const int64_t rows = segments ? 1 : x.size(0), n = kept.size(1);
    auto q = rotated(q_proj->forward(kept), rows, n, heads_, layout.last_tokens(cos, 2),
                     layout.last_tokens(sin, 2));  // [rows, heads, n, head]
    torch::Tensor out;
    if (segments) {
      std::vector<torch::Tensor> parts;
      int64_t offset = 0, s = 0;
      for (std::size_t i = 0; i < segments->size(); ++i) {
        const int64_t length = (*segments)[i], tail = layout.tail(i);
        auto keys = k.narrow(2, offset, length), values = v.narrow(2, offset, length);
        auto queries = q.narrow(2, s, tail);
        if (tail == length) {
          parts.push_back(attend(queries, keys, values, torch::Tensor()));  // the whole segment: a causal block
        } else {
          // The segment's last `tail` queries: query i sits at position length − tail + i and sees the keys up to
          // it (one query alone sees them all: a decoding step's attention over the segment).
          auto options = torch::TensorOptions().dtype(torch::kFloat32).device(q.device());
          auto blocked = torch::zeros({1, 1, 1, tail, length}, options);
          if (tail > 1)
            blocked.masked_fill_(torch::ones({tail, length}, options.dtype(torch::kBool))
                                     .triu(length - tail + 1)
                                     .view({1, 1, 1, tail, length}),
                                 std::numeric_limits<float>::lowest());
          parts.push_back(attend(queries, keys, values, blocked, /*step_kernel=*/false));
        }
        offset += length;
        s += tail;
      }
      out = parts.size() == 1 ? parts[0] : torch::cat(parts, 2);
      if (cache) cache->write_packed(layer, k, v, *segments);
    } else {
      out = attend(q, k, v, blocked.narrow(3, blocked.size(3) - 1, 1), /*step_kernel=*/false);
    }
    return o_proj->forward(out.transpose(1, 2).reshape({rows, n, heads_ * head_}));
  }

  //! q [rows, heads, n, head] against k, v [rows, kv_heads, total, head] → [rows, heads, n, head]. blocked as
  //! forward()'s, or undefined for a causal block (n = total). `step_kernel`: a decoding step may go to
  //! decode_attention.h's kernel (without autograd only, so its rounding differs from the operators' that training
  //! runs).
  torch::Tensor attend(torch::Tensor q, const torch::Tensor& k, const torch::Tensor& v, torch::Tensor blocked,
                       bool step_kernel = true) {
    const int64_t rows = q.size(0), n = q.size(2), total = k.size(2), groups = heads_ / kv_heads_;
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_));
    if (step_kernel && n == 1 && blocked.defined() && decodes_by_hand(q, k, v))
      return decode_step_attention(q, k, v, blocked, scale);
#if TORCH_VERSION_MAJOR >= 2
    // PyTorch 2.x: its fused attention (one kernel forward and backward, the scores never stored whole), which is
    // what transformers runs ("sdpa"); the key/value heads are shared by their query heads inside it (enable_gqa).
    // 16-bit types keep the path below, whose rounding is HF's eager one.
    if (q.scalar_type() == torch::kFloat32) {
      if (!blocked.defined())
        return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, scale, /*enable_gqa=*/groups > 1);
      if (n == 1 && groups > 1) {
        // One query a row (a decoding step that decodes_by_hand() leaves here: on a GPU, or under autograd): the
        // query heads of a key/value head go in as that head's `groups` queries, all under the row's one mask row.
        // With enable_gqa, each query head is a product of one query against the keys, which MKL runs as a
        // matrix-vector product behind an OpenMP region of its own inside the kernel's; folded, it is one small
        // matrix product per key/value head: about 0.6x the attention's time at batch 32 on the tiny preset's
        // shapes, and the same numbers to float rounding (bench/ecosystem/decode_attention.py;
        // docs/performance.md, "Sampling with a KV cache").
        return at::scaled_dot_product_attention(q.reshape({rows, kv_heads_, groups, head_}), k, v,
                                                blocked.view({rows, 1, 1, total}), 0.0, false, scale)
            .view({rows, heads_, 1, head_});
      }
      return at::scaled_dot_product_attention(q, k, v, blocked.view({rows, 1, n, total}), 0.0, false, scale,
                                              /*enable_gqa=*/groups > 1);
    }
#endif
    if (!blocked.defined())
      blocked = torch::zeros({1, 1, 1, n, total}, torch::TensorOptions().dtype(torch::kFloat32).device(q.device()))
                    .masked_fill_(torch::ones({n, total}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
                                      .triu(1)
                                      .view({1, 1, 1, n, total}),
                                  std::numeric_limits<float>::lowest());
    // In float32 the queries are scaled before the product ([new, head] values instead of [new, total] scores, a
    // pass over the largest tensor saved in training); in 16-bit types the scores are, as HF does, so the rounding
    // is HF's.
    const bool scale_queries = q.scalar_type() == torch::kFloat32;
    if (scale_queries) q = q * scale;
    // The query heads of one key/value head share its keys: [rows, kv, groups·new, head] against [rows, kv, total,
    // head], no repeated copies of the keys (HF's repeat_kv gives the same numbers).
    auto scores = torch::matmul(q.reshape({rows, kv_heads_, groups * n, head_}), k.transpose(-1, -2))
                      .view({rows, kv_heads_, groups, n, total});
    if (!scale_queries) scores = (scores / std::sqrt(static_cast<double>(head_))).to(torch::kFloat32);
    scores = scores + blocked;
    auto probs = torch::softmax(scores, -1).to(v.scalar_type());
    return torch::matmul(probs.view({rows, kv_heads_, groups * n, total}), v).view({rows, heads_, n, head_});
  }

  //! A projection [rows, n, heads·head] with the rotary embedding applied → [rows, heads, n, head]. Without autograd
  //! on the CPU in float32, decode_step.h's rotation runs in place on the projection's fresh output, token by token:
  //! the same products and sums, bit for bit, as apply_rope(), without its roll over the transposed heads and its
  //! three further passes (the prompts' forward of 32 PUMA prompts 1.05x in pairs; docs/performance.md, "A decoding
  //! step without operator calls").
  torch::Tensor rotated(const torch::Tensor& projected, int64_t rows, int64_t n, int64_t heads,
                        const torch::Tensor& cos, const torch::Tensor& sin) const {
    const bool by_hand = projected.device().is_cpu() && projected.scalar_type() == torch::kFloat32 &&
                         cos.scalar_type() == torch::kFloat32 && head_ % 2 == 0 &&
                         !(torch::GradMode::is_enabled() && (projected.requires_grad() || cos.requires_grad()));
    if (!by_hand) return apply_rope(projected.view({rows, n, heads, head_}).transpose(1, 2), cos, sin);
    auto out = projected.is_contiguous() ? projected : projected.contiguous();
    // cos and sin are [rows or 1, 1, n, head] (sin's first half negated, rotary_cos_sin()); one row of each a token.
    auto c = cos.expand({rows, 1, n, head_}).reshape({rows * n, head_}).contiguous();
    auto s = sin.expand({rows, 1, n, head_}).reshape({rows * n, head_}).contiguous();
    float* p = out.data_ptr<float>();
    const float *cp = c.data_ptr<float>(), *sp = s.data_ptr<float>();
    const int64_t head = head_, half = head_ / 2, width = heads * head_;
    at::parallel_for(0, rows * n, 256, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) rotate_heads(p + t * width, heads, head, cp + t * head, sp + t * head + half);
    });
    return out.view({rows, n, heads, head_}).transpose(1, 2);
  }

  //! A decoding step on the CPU in float32 without autograd goes to decode_attention.h's kernel, which reads only
  //! the positions each row may see: in a batch of prompts of different lengths the cache is left-padded to the
  //! longest (docs/performance.md, "Sampling with a KV cache").
  static bool decodes_by_hand(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    for (const auto* t : {&q, &k, &v})
      if (!t->device().is_cpu() || t->scalar_type() != torch::kFloat32 ||
          (torch::GradMode::is_enabled() && t->requires_grad()))
        return false;
    return true;
  }

  int64_t heads_, kv_heads_, head_;
};
TORCH_MODULE(Attention);

//! SwiGLU: down(silu(gate(x)) · up(x)).
class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const LlamaConfig& c, const torch::TensorOptions& o) {
    gate_proj = register_module("gate_proj", Projection(c.hidden_size, c.intermediate_size, o));
    up_proj = register_module("up_proj", Projection(c.hidden_size, c.intermediate_size, o));
    down_proj = register_module("down_proj", Projection(c.intermediate_size, c.hidden_size, o));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    if (torch::GradMode::is_enabled()) return down_proj->forward(torch::silu(gate_proj->forward(x)) * up_proj->forward(x));
    // Without autograd (generation), the same operations in place on the gate's fresh output: two fewer tensors of
    // [tokens, intermediate], the largest of a prompt's forward, allocated and written.
    auto h = gate_proj->forward(x);
    torch::silu_(h);
    h.mul_(up_proj->forward(x));
    return down_proj->forward(h);
  }
  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const LlamaConfig& c, const torch::TensorOptions& o) {
    self_attn = register_module("self_attn", Attention(c, o));
    mlp = register_module("mlp", Mlp(c, o));
    input_layernorm = register_module("input_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps, o));
    post_attention_layernorm =
        register_module("post_attention_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps, o));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& blocked, KvCache* cache, std::size_t layer, const TokenLayout* layout) {
    auto residual = layout && layout->last_only ? layout->last_tokens(x, 1) : x;
    auto h = residual + self_attn->forward(input_layernorm->forward(x), cos, sin, blocked, cache, layer, layout);
    return h + mlp->forward(post_attention_layernorm->forward(h));
  }
  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
  RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};

// ---- the model ---------------------------------------------------------------------------------------------------

std::vector<double> rope_inv_freq(const LlamaConfig& c) {
  const int64_t dim = c.head_width();
  std::vector<double> freqs;
  for (int64_t i = 0; i < dim; i += 2) freqs.push_back(1.0 / std::pow(c.rope_theta, static_cast<double>(i) / dim));
  const auto& s = c.rope_scaling;
  if (s.type == RopeScaling::kLinear) {
    for (double& f : freqs) f /= s.factor;
  } else if (s.type == RopeScaling::kLlama3) {
    // transformers' _compute_llama3_parameters: long wavelengths are slowed by `factor`, short ones kept, and the
    // band between is interpolated.
    const double old = static_cast<double>(s.original_max_position_embeddings);
    const double low_wavelen = old / s.low_freq_factor, high_wavelen = old / s.high_freq_factor;
    for (double& f : freqs) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
  }
  return freqs;
}

LlamaModelImpl::LlamaModelImpl(LlamaConfig config, const torch::TensorOptions& options) : config_(std::move(config)) {
  config_.validate("(model construction)");
  if (options.dtype() == caffe2::TypeMeta::Make<c10::Half>() && options.device().is_cpu())
    throw UsageError("LLaMA: float16 computation needs a CUDA device (libtorch 1.13 has no float16 matmul on the "
                     "CPU); use bfloat16 or float32 on the CPU");
  const auto& c = config_;
  backbone_ = register_module("model", std::make_shared<torch::nn::Module>());
  embed_tokens_ = backbone_->register_module("embed_tokens", Embedding(c.vocab_size, c.hidden_size, options));
  layers_ = backbone_->register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layer_list_.push_back(std::make_shared<DecoderLayerImpl>(c, options));
    layers_->push_back(layer_list_.back());
  }
  norm_ = backbone_->register_module("norm", RmsNorm(c.hidden_size, c.rms_norm_eps, options));
  if (!c.tie_word_embeddings) lm_head_ = register_module("lm_head", Projection(c.hidden_size, c.vocab_size, options));
  auto freqs = rope_inv_freq(c);
  inv_freq_ = torch::tensor(std::vector<float>(freqs.begin(), freqs.end()));
}

torch::Dtype LlamaModelImpl::dtype() const { return embed_tokens_->weight.scalar_type(); }
torch::Device LlamaModelImpl::device() const { return embed_tokens_->weight.device(); }

torch::Tensor LlamaModelImpl::rotary_cos_sin(const torch::Tensor& positions) const {
  auto freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq_.to(positions.device());  // [rows, new, h/2]
  auto angles = torch::cat({freqs, freqs}, -1).unsqueeze(1);                                     // [rows, 1, new, h]
  // cos and sin of the whole row, as HF takes them (the same values, lane for lane), then sin's first half negated
  // for apply_rope().
  auto sin = angles.sin();
  const int64_t half = sin.size(-1) / 2;
  return torch::stack({angles.cos(), torch::cat({-sin.narrow(-1, 0, half), sin.narrow(-1, half, half)}, -1)}).to(dtype());
}

torch::Tensor LlamaModelImpl::hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                            KvCache* cache) {
  return batch_hidden_states(input_ids, attention_mask, cache, /*skip_padding=*/false);
}

torch::Tensor LlamaModelImpl::batch_hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                                  KvCache* cache, bool skip_padding, bool last_only) {
  if (input_ids.dim() != 2 || input_ids.size(1) == 0)
    throw UsageError("LLaMA forward: input_ids must be [rows, tokens] with at least one token, got " +
                     shape_string(input_ids.sizes()));
  const auto dev = device();
  auto ids = input_ids.to(dev, torch::kInt64);
  const int64_t rows = ids.size(0), n = ids.size(1);
  auto mask = attention_mask.defined() ? attention_mask.to(dev, torch::kBool)
                                       : torch::ones({rows, n}, torch::TensorOptions().dtype(torch::kBool).device(dev));
  if (mask.sizes() != ids.sizes())
    throw UsageError("LLaMA forward: attention_mask " + shape_string(mask.sizes()) + " must match input_ids " +
                     shape_string(ids.sizes()));
  const bool cached = cache && cache->length() > 0;
  if (cached && cache->rows() != rows)
    throw UsageError("LLaMA forward: the KV cache has " + std::to_string(cache->rows()) + " rows, the input " +
                     std::to_string(rows));
  if (step_kernels_ && cached && n == 1 && !skip_padding && (!attention_mask.defined() || mask.all().item<bool>()))
    if (auto x = decode_step(ids, *cache); x.defined()) return x;
  if (last_only && skip_padding) throw UsageError("LLaMA forward: the last tokens alone of an unpadded batch");
  {
    // Out-of-range ids would index outside the embedding table.
    auto lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size)
      throw UsageError("LLaMA forward: token id " + std::to_string(lo < 0 ? lo : hi) + " outside the vocabulary of " +
                       std::to_string(config_.vocab_size));
  }
  const int64_t past = cached ? cache->length() : 0, total = past + n;
  // Positions count the real tokens before each token (HF generate's position_ids), so padding shifts nothing.
  auto start = cached ? cache->next_positions().unsqueeze(1) : torch::zeros({rows, 1}, ids.options());
  auto positions = (start + mask.to(torch::kInt64).cumsum(1) - 1).clamp_min(0);
  auto full_mask = cached ? torch::cat({cache->mask(), mask}, 1) : mask;
  auto causal = torch::ones({n, total}, full_mask.options()).tril(past);  // query i sees keys j <= past + i
  auto blocked = torch::zeros({rows, 1, 1, n, total}, torch::TensorOptions().dtype(torch::kFloat32).device(dev))
                     .masked_fill_((full_mask.unsqueeze(1) & causal.unsqueeze(0)).logical_not().view({rows, 1, 1, n, total}),
                                   std::numeric_limits<float>::lowest());
  torch::Tensor x;
  const int64_t tokens = skip_padding ? mask.sum().item<int64_t>() : rows * n;
  if (tokens > 0 && tokens < rows * n) {
    TokenLayout layout;
    layout.rows = rows;
    layout.n = n;
    layout.where = torch::arange(rows * n, ids.options()).masked_select(mask.reshape({-1}));
    x = layout.pad(run_layers(ids.view({-1}).index_select(0, layout.where).unsqueeze(0), positions, blocked, cache,
                              &layout));
  } else {
    x = run_layers(ids, positions, blocked, cache, nullptr, last_only && n > 1);
  }
  if (cache) cache->commit(mask);
  return x;
}

torch::Tensor LlamaModelImpl::decode_step(const torch::Tensor& ids, KvCache& cache) {
  if (ids.dim() != 2 || ids.size(1) != 1 || cache.length() == 0 || cache.rows() != ids.size(0))
    throw UsageError("LLaMA decoding step: expected ids [rows, 1] after a cache of those rows, got ids " +
                     shape_string(ids.sizes()) + " and a cache of " + std::to_string(cache.rows()) + " rows, " +
                     std::to_string(cache.length()) + " positions");
  if (!device().is_cpu() || dtype() != torch::kFloat32 || torch::GradMode::is_enabled()) return {};
  const auto& c = config_;
  const int64_t rows = ids.size(0), hidden = c.hidden_size, heads = c.num_attention_heads, kv_heads = c.n_kv_heads(),
                head = c.head_width(), inter = c.intermediate_size, groups = heads / kv_heads, past = cache.length();
  if (cache.mask().size(1) != past || head % 2 != 0) return {};
  //! A projection's weight and, while a LoRA pair is attached and enabled, its factors A [r, in], B [out, r] and
  //! scale: y = x·Wᵀ + scale · (x·Aᵀ)·Bᵀ, as ProjectionImpl::forward() computes it in eval mode.
  struct Linear {
    torch::Tensor w, a, b;
    float scale = 0.0f;
  };
  struct Weights {
    torch::Tensor input_norm;
    Linear q, k, v, o;
    torch::Tensor post_norm;
    Linear gate, up, down;
  };
  std::vector<Weights> layers;
  bool plain = true;
  auto usable = [&](const torch::Tensor& t) {
    if (t.scalar_type() != torch::kFloat32 || !t.is_contiguous()) plain = false;
    return t;
  };
  auto weight = [&](const WeightModule& m) { return usable(m.active_weight()); };
  auto linear = [&](const ProjectionImpl& p) {
    Linear l{weight(p), {}, {}, 0.0f};
    if (p.has_lora() && p.adapter_enabled()) {
      // LoRA's dropout acts in training mode only; generation runs in eval mode.
      if (p.is_training()) plain = false;
      l.a = usable(p.lora_A());
      l.b = usable(p.lora_B());
      l.scale = static_cast<float>(p.lora_scale());
    }
    return l;
  };
  for (const auto& layer : layer_list_) {
    const auto& a = *layer->self_attn;
    const auto& m = *layer->mlp;
    layers.push_back({weight(*layer->input_layernorm), linear(*a.q_proj), linear(*a.k_proj), linear(*a.v_proj),
                      linear(*a.o_proj), weight(*layer->post_attention_layernorm), linear(*m.gate_proj),
                      linear(*m.up_proj), linear(*m.down_proj)});
  }
  const auto embedding = weight(*embed_tokens_), final_norm = weight(*norm_);
  if (!plain) return {};

  auto id = ids.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t* token = id.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r)
    if (token[r] < 0 || token[r] >= c.vocab_size)
      throw UsageError("LLaMA forward: token id " + std::to_string(token[r]) + " outside the vocabulary of " +
                       std::to_string(c.vocab_size));
  std::vector<std::pair<torch::Tensor, torch::Tensor>> buffers;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    buffers.push_back(cache.step_buffers(l));
    if (!buffers.back().first.is_contiguous() || !buffers.back().second.is_contiguous()) return {};
  }
  const int64_t capacity = buffers.empty() ? 0 : buffers[0].first.size(2), total = past + 1;

  // Each row's visible positions (its cached tokens, then the new one), listed once for every layer's attention.
  auto seen = cache.mask().contiguous();
  auto next = cache.next_positions().contiguous();
  const bool* seen_p = seen.data_ptr<bool>();
  const int64_t* next_p = next.data_ptr<int64_t>();
  std::vector<int32_t> visible(static_cast<std::size_t>(rows * total));
  std::vector<int64_t> visible_count(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    int32_t* list = visible.data() + r * total;
    int64_t m = 0;
    for (int64_t j = 0; j < past; ++j)
      if (seen_p[r * past + j]) list[m++] = static_cast<int32_t>(j);
    list[m++] = static_cast<int32_t>(past);
    visible_count[static_cast<std::size_t>(r)] = m;
  }
  // The rotation's cos and sin at each row's position: the angle in float32 as rotary_cos_sin() forms it.
  const int64_t half = head / 2;
  auto inv = inv_freq_.to(torch::kCPU).contiguous();
  const float* inv_p = inv.data_ptr<float>();
  std::vector<float> cos(static_cast<std::size_t>(rows * half)), sin(cos.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(next_p[r]) * inv_p[i];
      cos[r * half + i] = std::cos(angle);
      sin[r * half + i] = std::sin(angle);
    }

  auto out = torch::empty({rows, 1, hidden}, embedding.options());
  float* x = out.data_ptr<float>();
  const float* table = embedding.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) std::memcpy(x + r * hidden, table + token[r] * hidden, sizeof(float) * hidden);
  // One buffer for the step's intermediates, kept from step to step: at batch 32 it is past malloc's threshold for
  // fresh pages, whose faults a new one would pay each step.
  thread_local std::vector<float> work;
  work.resize(static_cast<std::size_t>(rows * (hidden + 2 * heads * head + 2 * kv_heads * head + 2 * inter)));
  float* h = work.data();
  float* q = h + rows * hidden;
  float* k = q + rows * heads * head;
  float* v = k + rows * kv_heads * head;
  float* att = v + rows * kv_heads * head;
  float* gate = att + rows * heads * head;
  float* up = gate + rows * inter;
  const int threads = at::get_num_threads();
  // y [rows, out] = x [rows, in] · wᵀ: a few rows read each weight row once (decode_step.h), split between the
  // threads from 16 K weights (64 KB) up: one core reads a step's weights from the L3 cache at about 27 GB/s,
  // and with the tiny preset's weights split a step at batch 1 took about 0.085 ms of products against 0.11 (the
  // operators' one-row products, project(), split only from 2 MB, where the BLAS's own sgemv is the alternative);
  // more rows go to the BLAS, as the operators' would (splitting those between the threads was slower).
  auto times = [&](const float* in_rows, const torch::Tensor& w, float* y) {
    const int64_t o = w.size(0), n = w.size(1);
    const float* wp = w.data_ptr<float>();
    if (rows >= 4) {
      auto yt = torch::from_blob(y, {rows, o}, torch::kFloat32);
      at::mm_out(yt, torch::from_blob(const_cast<float*>(in_rows), {rows, n}, torch::kFloat32), w.t());
    } else if (threads >= 2 && rows * o * n >= (int64_t{1} << 14)) {
      at::parallel_for(0, o, (o + threads - 1) / threads,
                       [&](int64_t lo, int64_t hi) { rows_times_weight(in_rows, rows, n, wp, o, lo, hi, y); });
    } else {
      rows_times_weight(in_rows, rows, n, wp, o, 0, o, y);
    }
  };
  // A LoRA pair adds scale · (x·Aᵀ)·Bᵀ: the two small products in a buffer of their own, then the sum, rounded in
  // the operators' order (the product, times the scale, added).
  thread_local std::vector<float> lora;
  auto product = [&](const float* in_rows, const Linear& l, float* y) {
    times(in_rows, l.w, y);
    if (!l.a.defined()) return;
    const int64_t r = l.a.size(0), o = l.w.size(0);
    lora.resize(static_cast<std::size_t>(rows * (r + o)));
    times(in_rows, l.a, lora.data());
    float* delta = lora.data() + rows * r;
    times(lora.data(), l.b, delta);
    for (int64_t i = 0; i < rows * o; ++i) y[i] += delta[i] * l.scale;
  };
  DecodeAttentionHead shape;
  shape.groups = groups;
  shape.head = head;
  shape.total = total;
  shape.key_stride = head;
  shape.value_stride = head;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head)));
  // The attention's tasks run on the threads once a step reads enough of the cache to pay for the region.
  const int64_t attention_grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, total * head * groups));
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Weights& w = layers[l];
    rms_norm_rows(x, w.input_norm.data_ptr<float>(), rows, hidden, eps, h);
    product(h, w.q, q);
    product(h, w.k, k);
    product(h, w.v, v);
    float* kb = buffers[l].first.data_ptr<float>();
    float* vb = buffers[l].second.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
      rotate_heads(q + r * heads * head, heads, head, cos.data() + r * half, sin.data() + r * half);
      rotate_heads(k + r * kv_heads * head, kv_heads, head, cos.data() + r * half, sin.data() + r * half);
      for (int64_t g = 0; g < kv_heads; ++g) {
        const int64_t at = ((r * kv_heads + g) * capacity + past) * head;
        std::memcpy(kb + at, k + (r * kv_heads + g) * head, sizeof(float) * head);
        std::memcpy(vb + at, v + (r * kv_heads + g) * head, sizeof(float) * head);
      }
    }
    at::parallel_for(0, rows * kv_heads, attention_grain, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t r = t / kv_heads, g = t % kv_heads, first = (r * heads + g * groups) * head,
                      cached = (r * kv_heads + g) * capacity * head;
        decode_attention_head(q + first, kb + cached, vb + cached, nullptr, visible.data() + r * total,
                              visible_count[static_cast<std::size_t>(r)], shape, att + first);
      }
    });
    product(att, w.o, h);
    add_into(x, h, rows * hidden);
    rms_norm_rows(x, w.post_norm.data_ptr<float>(), rows, hidden, eps, h);
    product(h, w.gate, gate);
    product(h, w.up, up);
    swiglu(gate, up, rows * inter);
    product(gate, w.down, h);
    add_into(x, h, rows * hidden);
  }
  rms_norm_rows(x, final_norm.data_ptr<float>(), rows, hidden, eps, x);
  cache.commit(torch::ones({rows, 1}, torch::kBool));
  return out;
}

torch::Tensor LlamaModelImpl::run_layers(const torch::Tensor& ids, const torch::Tensor& positions,
                                         const torch::Tensor& blocked, KvCache* cache, const TokenLayout* layout,
                                         bool last_only) {
  auto cos_sin = rotary_cos_sin(positions);
  auto cos = cos_sin[0], sin = cos_sin[1];
  auto x = embed_tokens_->forward(ids);
  TokenLayout last_layer = layout ? *layout : TokenLayout{};
  last_layer.last_only = true;
  for (std::size_t i = 0; i < layer_list_.size(); ++i)
    x = layer_list_[i]->forward(x, cos, sin, blocked, cache, i,
                                last_only && i + 1 == layer_list_.size() ? &last_layer : layout);
  return norm_->forward(x);
}

torch::Tensor LlamaModelImpl::packed_hidden_states(const torch::Tensor& ids, const std::vector<int64_t>& lengths,
                                                   const std::vector<int64_t>& tails) {
  if (!tails.empty()) {
    if (tails.size() != lengths.size())
      throw UsageError("LLaMA packed forward: " + std::to_string(tails.size()) + " tails for " +
                       std::to_string(lengths.size()) + " rows");
    for (std::size_t r = 0; r < tails.size(); ++r)
      if (tails[r] < 1 || tails[r] > lengths[r])
        throw UsageError("LLaMA packed forward: row " + std::to_string(r) + " keeps " + std::to_string(tails[r]) +
                         " of its " + std::to_string(lengths[r]) + " tokens (1 to all of them)");
  }
  return run_packed(ids, lengths, nullptr, tails.empty() ? nullptr : &tails);
}

torch::Tensor LlamaModelImpl::packed_prefill(const torch::Tensor& ids, const std::vector<int64_t>& lengths,
                                             KvCache& cache) {
  if (cache.length() != 0) throw UsageError("LLaMA packed prefill: the KV cache must be empty");
  const std::vector<int64_t> ones(lengths.size(), 1);
  auto x = run_packed(ids, lengths, &cache, &ones);  // [1, rows, hidden]: each row's last token
  const auto rows = static_cast<int64_t>(lengths.size());
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  auto mask = torch::zeros({rows, longest}, torch::kBool);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = lengths[static_cast<std::size_t>(r)];
    mask[r].narrow(0, longest - n, n).fill_(true);
  }
  cache.commit(mask.to(device()));
  return logits(x[0].unsqueeze(1));
}

torch::Tensor LlamaModelImpl::run_packed(const torch::Tensor& ids, const std::vector<int64_t>& lengths,
                                         KvCache* cache, const std::vector<int64_t>* tails) {
  int64_t total = 0;
  for (int64_t l : lengths) {
    if (l < 1) throw UsageError("LLaMA packed forward: every row needs a token");
    total += l;
  }
  if (ids.dim() != 2 || ids.size(0) != 1 || ids.size(1) != total)
    throw UsageError("LLaMA packed forward: ids must be [1, " + std::to_string(total) + "] for rows of these lengths, got " +
                     shape_string(ids.sizes()));
  const auto dev = device();
  auto on_device = ids.to(dev, torch::kInt64);
  {
    auto lo = on_device.min().item<int64_t>(), hi = on_device.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size)
      throw UsageError("LLaMA forward: token id " + std::to_string(lo < 0 ? lo : hi) + " outside the vocabulary of " +
                       std::to_string(config_.vocab_size));
  }
  std::vector<int64_t> positions;
  positions.reserve(static_cast<std::size_t>(total));
  for (int64_t l : lengths)
    for (int64_t t = 0; t < l; ++t) positions.push_back(t);
  auto pos = torch::tensor(positions, torch::kInt64).to(dev).view({1, total});
  TokenLayout layout;
  layout.segments = &lengths;
  layout.tails = tails;
  return run_layers(on_device, pos, torch::Tensor(), cache, &layout, tails != nullptr);
}

std::pair<torch::Tensor, torch::Tensor> LlamaModelImpl::prefix_hidden_states(const torch::Tensor& prompt_ids,
                                                                             const torch::Tensor& prompt_mask,
                                                                             const torch::Tensor& continuation_ids,
                                                                             const torch::Tensor& continuation_mask,
                                                                             const torch::Tensor& parent) {
  if (parent.dim() != 1 || parent.size(0) != continuation_ids.size(0))
    throw UsageError("LLaMA prefix forward: parent must give one prompt row per continuation row, got " +
                     shape_string(parent.sizes()) + " for continuations " + shape_string(continuation_ids.sizes()));
  // Autograd flows through the cache: its buffers are written by copy_ (recorded; a packed prefill writes each row's
  // slice, disjoint ones) and copied to the continuation rows by index_select, and each buffer is written in one
  // pass, before anything has saved it.
  KvCache cache(prompt_ids.size(1) + continuation_ids.size(1));
  // Only each prompt's last position is read (it predicts the continuation's first token), so the prompts' last
  // layer runs for that token alone (TokenLayout::last_only), every token's keys and values still in the cache.
  auto prompts = packed_prompts(prompt_ids, prompt_mask, cache);
  if (!prompts.defined())
    prompts = batch_hidden_states(prompt_ids, prompt_mask, &cache, /*skip_padding=*/false, /*last_only=*/true)
                  .select(1, -1);
  cache.select_rows(parent);
  // The completions are right-padded to the longest (48 tokens against 19 on average in the GRPO benchmark):
  // only their real tokens go through the projections and the MLP (docs/performance.md, "One GRPO iteration").
  auto continuations = batch_hidden_states(continuation_ids, continuation_mask, &cache, /*skip_padding=*/true);
  return {prompts, continuations};
}

torch::Tensor LlamaModelImpl::packed_prompts(const torch::Tensor& prompt_ids, const torch::Tensor& prompt_mask,
                                             KvCache& cache) {
  // Packing pays where the rows differ in length; it needs each row's tokens as one run at the right (left padding,
  // as llama/rl_loss.cpp's pack_rollouts writes them), the longest row as wide as the batch.
  if (prompt_ids.dim() != 2 || prompt_ids.size(0) < 2 || !prompt_mask.defined() ||
      prompt_mask.sizes() != prompt_ids.sizes())
    return {};
  auto mask = prompt_mask.to(torch::kCPU, torch::kBool).contiguous();
  const int64_t rows = mask.size(0), width = mask.size(1);
  auto lengths_t = mask.sum(1, false, torch::kInt64);
  std::vector<int64_t> lengths(lengths_t.data_ptr<int64_t>(), lengths_t.data_ptr<int64_t>() + rows);
  const auto [shortest, longest] = std::minmax_element(lengths.begin(), lengths.end());
  if (*shortest == *longest || *longest != width || *shortest < 1) return {};
  const bool* m = mask.data_ptr<bool>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < width; ++t)
      if (m[r * width + t] != (t >= width - lengths[static_cast<std::size_t>(r)])) return {};
  const auto dev = device();
  auto flat_mask = mask.view({-1});
  auto ids = prompt_ids.to(torch::kCPU, torch::kInt64).view({-1}).masked_select(flat_mask);
  const std::vector<int64_t> ones(lengths.size(), 1);
  auto x = run_packed(ids.view({1, -1}).to(dev), lengths, &cache, &ones)[0];  // [rows, hidden]: the last tokens
  cache.commit(mask.to(dev));
  return x;
}

torch::Tensor LlamaModelImpl::logits(const torch::Tensor& hidden) {
  auto out = lm_head_ ? lm_head_->forward(hidden) : project(hidden, embed_tokens_->active_weight());
  return out.to(torch::kFloat32);
}

torch::Tensor LlamaModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                      KvCache* cache, bool last_only) {
  auto h = batch_hidden_states(input_ids, attention_mask, cache, /*skip_padding=*/false, last_only);
  if (last_only) h = h.narrow(1, h.size(1) - 1, 1);  // a no-op unless the forward had nothing to skip
  return logits(h);
}

std::vector<std::pair<std::string, std::shared_ptr<WeightModule>>> LlamaModelImpl::weight_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<WeightModule>>> out;
  for (const auto& item : named_modules("", false))
    if (auto m = std::dynamic_pointer_cast<WeightModule>(item.value())) out.emplace_back(item.key(), m);
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> LlamaModelImpl::checkpoint_weights() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& [name, m] : weight_modules()) out.emplace_back(name + ".weight", m->weight);
  return out;
}

void LlamaModelImpl::set_adapters_enabled(bool enabled) {
  for (const auto& [name, m] : weight_modules()) m->set_adapter_enabled(enabled);
}

void LlamaModelImpl::init_weights(uint64_t seed) {
  torch::NoGradGuard no_grad;
  uint64_t index = 0;
  for (const auto& [name, m] : weight_modules()) {
    ++index;
    if (dynamic_cast<RmsNormImpl*>(m.get())) {
      m->weight.fill_(1.0);
      continue;
    }
    auto gen = cpu_generator(derive_seed(seed, index));
    m->weight.copy_(torch::empty(m->weight.sizes(), torch::kFloat32).normal_(0.0, config_.initializer_range, gen));
  }
}

LlamaModel create_model(const LlamaConfig& config, uint64_t seed, const torch::TensorOptions& options) {
  LlamaModel model(config, options);
  model->init_weights(seed);
  return model;
}

// ---- checkpoints -------------------------------------------------------------------------------------------------

torch::Dtype parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "f32") return torch::kFloat32;
  if (name == "float16" || name == "fp16" || name == "f16" || name == "half") return torch::kFloat16;
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  throw UsageError("unknown dtype '" + name + "' (float32, float16, bfloat16)");
}

std::string dtype_name(torch::Dtype dtype) {
  if (dtype == torch::kFloat32) return "float32";
  if (dtype == torch::kFloat16) return "float16";
  if (dtype == torch::kBFloat16) return "bfloat16";
  throw UsageError(std::string("unsupported model dtype ") + c10::toString(dtype));
}

namespace {

//! The view's numbers as a CPU tensor of its own dtype (copied: the mapping may be unaligned and goes away).
torch::Tensor view_to_tensor(const safetensors::TensorView& view, const fs::path& source) {
  using safetensors::Dtype;
  torch::Dtype dtype;
  switch (view.dtype) {
    case Dtype::kF32: dtype = torch::kFloat32; break;
    case Dtype::kF16: dtype = torch::kFloat16; break;
    case Dtype::kBF16: dtype = torch::kBFloat16; break;
    case Dtype::kF64: dtype = torch::kFloat64; break;
    default:
      throw DataError(source.string() + ": tensor '" + view.name + "' is " + view.describe() +
                      ", expected a floating-point dtype (F32, F16, BF16)");
  }
  auto t = torch::empty(view.shape, dtype);
  if (!view.bytes.empty()) std::memcpy(t.data_ptr(), view.bytes.data(), view.bytes.size());
  return t;
}

bool ignorable_tensor(const std::string& name, const LlamaConfig& config) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("rotary_emb.inv_freq") || (config.tie_word_embeddings && name == "lm_head.weight");
}

}  // namespace

LlamaModel load_model(const fs::path& model_dir, const LoadOptions& options) {
  if (!fs::exists(model_dir)) throw DataError("LLaMA model directory " + model_dir.string() + " does not exist");
  if (!fs::is_directory(model_dir))
    throw DataError("LLaMA model path " + model_dir.string() +
                    " is not a directory (expected a Hugging Face model directory with config.json and "
                    "model.safetensors or model.safetensors.index.json)");
  LlamaConfig config = LlamaConfig::from_file(model_dir / "config.json");
  LlamaModel model(config, torch::TensorOptions().dtype(options.dtype).device(options.device));
  auto set = safetensors::TensorSet::open(model_dir);
  const std::string source = set.source().string();
  std::set<std::string> used;
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, param] : model->checkpoint_weights()) {
      const safetensors::TensorView* view = set.find(name);
      if (!view)
        throw DataError(source + ": missing tensor '" + name + "' (shape " + shape_string(param.sizes()) +
                        " from config.json)");
      if (at::IntArrayRef(view->shape) != param.sizes())
        throw DataError(source + ": tensor '" + name + "' is " + view->describe() + ", config.json implies shape " +
                        shape_string(param.sizes()));
      param.copy_(view_to_tensor(*view, set.source()));
      used.insert(name);
    }
  }
  for (const auto& name : set.names())
    if (!used.count(name) && !ignorable_tensor(name, config))
      throw DataError(source + ": unexpected tensor '" + name + "': not a weight of a LLaMA model with this " +
                      "config.json (biases, other architectures and quantized weights are not supported)");
  if (options.n_threads >= 0) torch_init_threads(options.n_threads);
  return model;
}

namespace {

void remove_old_weights(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool weights = name.rfind("model", 0) == 0 &&
                         (entry.path().extension() == ".safetensors" || name == "model.safetensors.index.json");
    if (weights) fs::remove(entry.path());
  }
}

}  // namespace

void save_model(const LlamaModelImpl& model, const fs::path& model_dir, const SaveOptions& options) {
  const torch::Dtype dtype = options.dtype.empty() ? model.dtype() : parse_dtype(options.dtype);
  if (options.max_shard_bytes <= 0) throw UsageError("save_model: max_shard_bytes must be positive");
  fs::create_directories(model_dir);
  remove_old_weights(model_dir);
  std::vector<std::vector<safetensors::TensorData>> shards(1);
  int64_t shard_bytes = 0, total_bytes = 0;
  for (const auto& [name, t] : model.checkpoint_weights()) {
    auto d = to_safetensors(name, t, dtype);
    const auto size = static_cast<int64_t>(d.bytes.size());
    if (!shards.back().empty() && shard_bytes + size > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shard_bytes += size;
    total_bytes += size;
    shards.back().push_back(std::move(d));
  }
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  if (shards.size() == 1) {
    safetensors::write_file(model_dir / "model.safetensors", shards[0], metadata);
  } else {
    nlohmann::json weight_map = nlohmann::json::object();
    for (std::size_t i = 0; i < shards.size(); ++i) {
      char file[64];
      std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      for (const auto& d : shards[i]) weight_map[d.name] = file;
      safetensors::write_file(model_dir / file, shards[i], metadata);
    }
    nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    write_file_atomic(model_dir / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  LlamaConfig config = model.config();
  config.torch_dtype = dtype_name(dtype);
  config.write(model_dir / "config.json");
}

safetensors::TensorData to_safetensors(const std::string& name, const torch::Tensor& t, torch::Dtype dtype) {
  auto c = t.detach().to(torch::kCPU).to(dtype).contiguous();
  safetensors::TensorData d;
  d.name = name;
  d.dtype = dtype == torch::kFloat32   ? safetensors::Dtype::kF32
            : dtype == torch::kFloat16 ? safetensors::Dtype::kF16
                                       : safetensors::Dtype::kBF16;
  d.shape.assign(c.sizes().begin(), c.sizes().end());
  d.bytes.assign(static_cast<const char*>(c.data_ptr()), c.nbytes());
  return d;
}

}  // namespace pwab::llama
