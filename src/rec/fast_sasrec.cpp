// FastSasrec: the eval-mode SASRec forward for one sequence on plain float arrays (see fast_sasrec.h).
//
// Layout choices: linear maps are stored transposed ([in][out]) so every inner loop is an axpy over a contiguous
// output row, which GCC vectorizes without reassociating sums; keys are transposed per call ([hidden][length])
// for the same reason; the candidate table is cut into panels of kPanel candidates stored dimension-major, so
// scoring streams one array and keeps kPanel sums in registers. The hot kernels are compiled for AVX-512, AVX2
// and baseline x86-64 and picked at load time (the build is not -march=native).
#include "rec/fast_sasrec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/multiversion.h"

namespace pwab::rec {

namespace {

constexpr float kLayerNormEps = 1e-8f;
constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

//! y[r] = bias + x[r] · W for `rows` rows; W is stored transposed, row i of it at w_t + i · w_stride (so a
//! column range of a wider matrix can be applied).
PWAB_MULTIVERSION void apply_linear(const float* __restrict x, int rows, int in, int out, const float* __restrict w_t,
                                    int w_stride, const float* __restrict bias, float* __restrict y) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::ptrdiff_t>(r) * in;
    float* yr = y + static_cast<std::ptrdiff_t>(r) * out;
    for (int o = 0; o < out; ++o) yr[o] = bias[o];
    for (int i = 0; i < in; ++i) {
      const float xi = xr[i];
      const float* wi = w_t + static_cast<std::ptrdiff_t>(i) * w_stride;
#pragma GCC ivdep
      for (int o = 0; o < out; ++o) yr[o] += xi * wi[o];
    }
  }
}

//! scores[c] = Σ_j panel[j][c] · state[j] for each panel of kPanel candidates (dimension-major panels).
PWAB_MULTIVERSION void score_panels(const float* __restrict panels, std::size_t n_panels, int hidden,
                                    const float* __restrict state, float* __restrict scores) {
  constexpr int kPanel = FastSasrec::kPanel;
  for (std::size_t p = 0; p < n_panels; ++p) {
    const float* panel = panels + p * static_cast<std::size_t>(hidden) * kPanel;
    float sums[kPanel] = {};
    for (int j = 0; j < hidden; ++j) {
      const float sj = state[j];
      const float* row = panel + static_cast<std::ptrdiff_t>(j) * kPanel;
      for (int c = 0; c < kPanel; ++c) sums[c] += row[c] * sj;
    }
    for (int c = 0; c < kPanel; ++c) scores[p * kPanel + c] = sums[c];
  }
}

//! Whether any of the n values is greater than `bound` (NaN is not).
PWAB_MULTIVERSION bool any_greater(const float* __restrict values, std::size_t n, float bound) {
  int found = 0;
  for (std::size_t i = 0; i < n; ++i) found |= values[i] > bound;
  return found != 0;
}

//! LayerNorm of `rows` rows of `width` (biased variance, as torch), from x into y (may alias).
void layer_norm(const float* x, int rows, int width, const float* weight, const float* bias, float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::ptrdiff_t>(r) * width;
    float* yr = y + static_cast<std::ptrdiff_t>(r) * width;
    float mean = 0;
    for (int i = 0; i < width; ++i) mean += xr[i];
    mean /= static_cast<float>(width);
    float variance = 0;
    for (int i = 0; i < width; ++i) variance += (xr[i] - mean) * (xr[i] - mean);
    variance /= static_cast<float>(width);
    const float inverse_std = 1.0f / std::sqrt(variance + kLayerNormEps);
    for (int i = 0; i < width; ++i) yr[i] = (xr[i] - mean) * inverse_std * weight[i] + bias[i];
  }
}

//! In-place softmax of n values.
void softmax(float* v, int n) {
  float top = kMinusInfinity;
  for (int i = 0; i < n; ++i) top = std::max(top, v[i]);
  float sum = 0;
  for (int i = 0; i < n; ++i) {
    v[i] = std::exp(v[i] - top);
    sum += v[i];
  }
  for (int i = 0; i < n; ++i) v[i] /= sum;
}

//! Multi-head causal attention for query positions first..first+rows-1: per head, softmax weights over
//! positions 0..t (queries already scaled), then the weighted sum of values. keys_t is [hidden][length];
//! key_value rows are keys | values; `weights` has room for `length` floats.
void causal_attention(const float* queries, int first, int rows, const float* keys_t, const float* key_value,
                      int length, int hidden, int heads, float* weights, float* attended) {
  const int head_width = hidden / heads;
  for (int r = 0; r < rows; ++r) {
    const int visible = first + r + 1;
    const float* query = queries + static_cast<std::ptrdiff_t>(r) * hidden;
    float* out = attended + static_cast<std::ptrdiff_t>(r) * hidden;
    for (int offset = 0; offset < hidden; offset += head_width) {
      for (int u = 0; u < visible; ++u) weights[u] = 0;
      for (int d = offset; d < offset + head_width; ++d) {
        const float qd = query[d];
        const float* key_row = keys_t + static_cast<std::ptrdiff_t>(d) * length;
        for (int u = 0; u < visible; ++u) weights[u] += qd * key_row[u];
      }
      softmax(weights, visible);
      for (int d = offset; d < offset + head_width; ++d) out[d] = 0;
      for (int u = 0; u < visible; ++u) {
        const float wu = weights[u];
        const float* value = key_value + static_cast<std::ptrdiff_t>(u) * 2 * hidden + hidden;
        for (int d = offset; d < offset + head_width; ++d) out[d] += wu * value[d];
      }
    }
  }
}

void check_shape(const WeightArray& array, const std::string& name, const std::vector<int64_t>& expected) {
  int64_t count = 1;
  for (int64_t d : expected) count *= d;
  if (array.shape != expected || array.values.size() != static_cast<std::size_t>(count))
    throw Error("fast SASRec: tensor '" + name + "' does not have the expected shape");
}

}  // namespace

//! Per-call working memory, one per thread (recommend() runs on many threads at once).
struct FastSasrec::Scratch {
  std::vector<float> x;         //!< [maxlen][hidden] the running activations
  std::vector<float> normed;    //!< [maxlen][hidden] Q = LN_attn(x), then the feed-forward's input
  std::vector<float> query;     //!< [maxlen][hidden] projected queries, scaled
  std::vector<float> key_value; //!< [maxlen][2 hidden] projected keys | values
  std::vector<float> keys_t;    //!< [hidden][maxlen] keys transposed
  std::vector<float> attended;  //!< [maxlen][hidden] heads concatenated
  std::vector<float> inner;     //!< [maxlen][hidden] relu(conv1(x)), also out_proj's output
  std::vector<float> weights;   //!< [maxlen] one query's attention weights
  std::vector<float> state;     //!< [hidden] the last position's output
  std::vector<float> scores;    //!< one per candidate, padded to whole panels

  void fit(const ModelShape& shape, std::size_t n_scores) {
    const std::size_t cells = static_cast<std::size_t>(shape.maxlen) * shape.hidden;
    for (auto* v : {&x, &normed, &query, &keys_t, &attended, &inner}) v->resize(cells);
    key_value.resize(2 * cells);
    weights.resize(static_cast<std::size_t>(shape.maxlen));
    state.resize(static_cast<std::size_t>(shape.hidden));
    scores.resize(n_scores);
  }
};

// ---- loading ------------------------------------------------------------------------------------------------

FastSasrec::LayerNorm FastSasrec::take_norm(const WeightSource& weights, const std::string& prefix, int hidden) {
  WeightArray w = weights(prefix + ".weight"), b = weights(prefix + ".bias");
  check_shape(w, prefix + ".weight", {hidden});
  check_shape(b, prefix + ".bias", {hidden});
  return {std::move(w.values), std::move(b.values)};
}

FastSasrec::Linear FastSasrec::take_linear(const WeightSource& weights, const std::string& weight_name,
                                           const std::string& bias_name, int in, int out) {
  WeightArray w = weights(weight_name), b = weights(bias_name);
  // conv1/conv2 weights are [out, in, 1]: the same numbers as [out, in].
  if (w.shape.size() == 3 && w.shape[2] == 1) w.shape.pop_back();
  check_shape(w, weight_name, {out, in});
  check_shape(b, bias_name, {out});
  Linear linear{in, out, std::vector<float>(static_cast<std::size_t>(in) * out), std::move(b.values)};
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i)
      linear.weight_t[static_cast<std::size_t>(i) * out + o] = w.values[static_cast<std::size_t>(o) * in + i];
  return linear;
}

FastSasrec::FastSasrec(const WeightSource& weights, int64_t item_rows, const ModelShape& shape,
                       std::vector<int64_t> candidate_ids)
    : item_rows_(item_rows), shape_(shape), candidate_ids_(std::move(candidate_ids)) {
  const int h = shape.hidden;
  if (h <= 0 || shape.maxlen <= 0 || shape.blocks <= 0 || shape.heads <= 0 || h % shape.heads != 0)
    throw Error("fast SASRec: invalid model shape");
  WeightArray items = weights("item_emb.weight"), positions = weights("pos_emb.weight");
  check_shape(items, "item_emb.weight", {item_rows, h});
  check_shape(positions, "pos_emb.weight", {shape.maxlen + 1, h});
  item_table_ = std::move(items.values);
  position_table_ = std::move(positions.values);
  for (int b = 0; b < shape.blocks; ++b) {
    const std::string n = std::to_string(b), attention = "attention_layers." + n, ffn = "forward_layers." + n;
    Block block;
    block.attention_norm = take_norm(weights, "attention_layernorms." + n, h);
    block.in_proj = take_linear(weights, attention + ".in_proj_weight", attention + ".in_proj_bias", h, 3 * h);
    block.out_proj = take_linear(weights, attention + ".out_proj.weight", attention + ".out_proj.bias", h, h);
    block.forward_norm = take_norm(weights, "forward_layernorms." + n, h);
    block.conv1 = take_linear(weights, ffn + ".conv1.weight", ffn + ".conv1.bias", h, h);
    block.conv2 = take_linear(weights, ffn + ".conv2.weight", ffn + ".conv2.bias", h, h);
    blocks_.push_back(std::move(block));
  }
  last_norm_ = take_norm(weights, "last_layernorm", h);

  const std::size_t n = candidate_ids_.size(), n_panels = (n + kPanel - 1) / kPanel;
  candidate_panels_.assign(n_panels * h * kPanel, 0.0f);
  for (std::size_t c = 0; c < n; ++c) {
    const int64_t id = candidate_ids_[c];
    if (id < 0 || id >= item_rows) throw Error("fast SASRec: candidate id " + std::to_string(id) + " has no item row");
    float* panel = candidate_panels_.data() + (c / kPanel) * h * kPanel;
    for (int j = 0; j < h; ++j) panel[j * kPanel + c % kPanel] = item_table_[static_cast<std::size_t>(id) * h + j];
  }
}

// ---- forward ------------------------------------------------------------------------------------------------

//! x[t] = item_emb[id] · sqrt(hidden) + pos_emb[t + 1, or 0 on padding], right-aligned over maxlen positions.
void FastSasrec::embed(const std::vector<int64_t>& sequence, float* x) const {
  const int length = shape_.maxlen, h = shape_.hidden;
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(h)));
  const std::size_t used = std::min(sequence.size(), static_cast<std::size_t>(length));
  const std::size_t padding = static_cast<std::size_t>(length) - used;
  for (int t = 0; t < length; ++t) {
    const std::size_t position_index = static_cast<std::size_t>(t);
    const int64_t id = position_index < padding ? 0 : sequence[sequence.size() - used + (position_index - padding)];
    if (id < 0 || id >= item_rows_) throw Error("fast SASRec: item id " + std::to_string(id) + " has no item row");
    const float* item = item_table_.data() + static_cast<std::size_t>(id) * h;
    const float* position = position_table_.data() + static_cast<std::size_t>(id == 0 ? 0 : t + 1) * h;
    float* xt = x + static_cast<std::ptrdiff_t>(t) * h;
    for (int j = 0; j < h; ++j) xt[j] = item[j] * scale + position[j];
  }
}

//! One block: Q = LN_attn(x); x = Q + MHA(Q, x, x) (causal); x = LN_fwd(x); x += conv2(relu(conv1(x))).
//! Keys and values come from every position; in the last block only the last position's query is computed.
void FastSasrec::run_block(const Block& block, bool last, Scratch& s) const {
  const int length = shape_.maxlen, h = shape_.hidden, heads = shape_.heads, head_width = h / heads;
  const int first = last ? length - 1 : 0, rows = length - first;
  float* x = s.x.data() + static_cast<std::ptrdiff_t>(first) * h;
  float* normed = s.normed.data() + static_cast<std::ptrdiff_t>(first) * h;

  layer_norm(x, rows, h, block.attention_norm.weight.data(), block.attention_norm.bias.data(), normed);
  // The packed in_proj: queries from Q (columns 0..h), keys | values from the un-normed x (columns h..3h).
  const Linear& proj = block.in_proj;
  const std::vector<float>& kv = s.key_value;
  apply_linear(s.x.data(), length, h, 2 * h, proj.weight_t.data() + h, 3 * h, proj.bias.data() + h, s.key_value.data());
  apply_linear(normed, rows, h, h, proj.weight_t.data(), 3 * h, proj.bias.data(), s.query.data());
  const float query_scale = static_cast<float>(std::sqrt(static_cast<double>(head_width)));
  for (int i = 0; i < rows * h; ++i) s.query[i] /= query_scale;
  for (int t = 0; t < length; ++t)
    for (int j = 0; j < h; ++j) s.keys_t[static_cast<std::size_t>(j) * length + t] = kv[static_cast<std::size_t>(t) * 2 * h + j];

  causal_attention(s.query.data(), first, rows, s.keys_t.data(), kv.data(), length, h, heads, s.weights.data(),
                   s.attended.data());

  const Linear& op = block.out_proj;
  apply_linear(s.attended.data(), rows, h, h, op.weight_t.data(), h, op.bias.data(), s.inner.data());
  for (int i = 0; i < rows * h; ++i) x[i] = normed[i] + s.inner[i];
  layer_norm(x, rows, h, block.forward_norm.weight.data(), block.forward_norm.bias.data(), x);

  apply_linear(x, rows, h, h, block.conv1.weight_t.data(), h, block.conv1.bias.data(), s.inner.data());
  for (int i = 0; i < rows * h; ++i) s.inner[i] = std::max(s.inner[i], 0.0f);
  apply_linear(s.inner.data(), rows, h, h, block.conv2.weight_t.data(), h, block.conv2.bias.data(), normed);
  for (int i = 0; i < rows * h; ++i) x[i] += normed[i];
}

void FastSasrec::encode_last(const std::vector<int64_t>& sequence, Scratch& s, float* state) const {
  embed(sequence, s.x.data());
  for (int b = 0; b < shape_.blocks; ++b) run_block(blocks_[b], b + 1 == shape_.blocks, s);
  const float* last = s.x.data() + static_cast<std::ptrdiff_t>(shape_.maxlen - 1) * shape_.hidden;
  layer_norm(last, 1, shape_.hidden, last_norm_.weight.data(), last_norm_.bias.data(), state);
}

void FastSasrec::score_candidates(const float* state, float* scores) const {
  const std::size_t n_panels = (candidate_ids_.size() + kPanel - 1) / kPanel;
  score_panels(candidate_panels_.data(), n_panels, shape_.hidden, state, scores);
}

std::vector<float> FastSasrec::last_state(const std::vector<int64_t>& sequence) const {
  Scratch s;
  s.fit(shape_, 0);
  std::vector<float> state(static_cast<std::size_t>(shape_.hidden));
  encode_last(sequence, s, state.data());
  return state;
}

std::vector<float> FastSasrec::logits(const std::vector<int64_t>& sequence) const {
  std::vector<float> state = last_state(sequence);
  std::vector<float> scores(((candidate_ids_.size() + kPanel - 1) / kPanel) * kPanel);
  score_candidates(state.data(), scores.data());
  scores.resize(candidate_ids_.size());
  return scores;
}

std::vector<std::pair<int64_t, float>> FastSasrec::top(const std::vector<int64_t>& sequence, int k) const {
  if (sequence.empty() || k <= 0 || candidate_ids_.empty()) return {};
  thread_local Scratch scratch;  // reused across calls: no allocation (or page faults) on the hot path
  scratch.fit(shape_, ((candidate_ids_.size() + kPanel - 1) / kPanel) * kPanel);
  encode_last(sequence, scratch, scratch.state.data());
  score_candidates(scratch.state.data(), scratch.scores.data());
  return select_top(scratch.scores.data(), candidate_ids_, k);
}

// ---- top k --------------------------------------------------------------------------------------------------

std::vector<std::pair<int64_t, float>> select_top(const float* scores, const std::vector<int64_t>& ids, int k) {
  const std::size_t n = ids.size();
  if (k <= 0 || n == 0) return {};
  const std::size_t keep = std::min<std::size_t>(static_cast<std::size_t>(k), n);
  auto key = [&](std::size_t i) { return std::isnan(scores[i]) ? kMinusInfinity : scores[i]; };
  auto better = [&](std::size_t a, std::size_t b) { return key(a) > key(b) || (key(a) == key(b) && a < b); };
  std::vector<std::size_t> best;
  if (keep <= 64) {
    // Candidates come in ascending index, so once the list is full a newcomer gets in only with a strictly
    // greater score than the worst kept (a tie loses to the lower index; NaN never compares greater).
    // Most chunks hold no such score: a branch-free scan of the chunk (it vectorizes) skips them whole.
    best.reserve(keep + 1);
    float worst_kept = kMinusInfinity;
    constexpr std::size_t kChunk = 64;
    for (std::size_t start = 0; start < n; start += kChunk) {
      const std::size_t end = std::min(n, start + kChunk);
      if (best.size() == keep && !any_greater(scores + start, end - start, worst_kept)) continue;
      for (std::size_t i = start; i < end; ++i) {
        if (best.size() == keep && !(scores[i] > worst_kept)) continue;
        best.insert(std::upper_bound(best.begin(), best.end(), i, better), i);
        if (best.size() > keep) best.pop_back();
        if (best.size() == keep) worst_kept = key(best.back());
      }
    }
  } else {  // a long list: sort once instead of inserting into it
    best.resize(n);
    for (std::size_t i = 0; i < n; ++i) best[i] = i;
    std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(keep), best.end(), better);
    best.resize(keep);
  }
  std::vector<std::pair<int64_t, float>> out;
  out.reserve(keep);
  for (std::size_t i : best) out.emplace_back(ids[i], scores[i]);
  return out;
}

}  // namespace pwab::rec
