// src/rec/fast_sasrec.h: SASRec inference for one sequence in plain C++ (internal to src/rec, no torch).
//
// The same eval-mode forward as SasrecImpl::encode (sasrec.cpp), computed only as far as the last position
// needs it, on weights copied into contiguous float arrays at load time; then every candidate is scored against
// the last state and the top k are kept. Recommender::load builds it straight from the checkpoint's arrays
// (weights.h), so serving links no libtorch; the torch model is for training and is the reference
// (test/rec/fast_sasrec_test.cpp checks the two against each other).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rec/recommender.h"

namespace pwab::rec {

//! A tensor handed over by name: values in torch's row-major order and its shape.
struct WeightArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
//! Returns the tensor of the original state_dict name (e.g. "attention_layers.0.in_proj_weight").
using WeightSource = std::function<WeightArray(const std::string& name)>;

class FastSasrec {
 public:
  //! Copies the weights of a model of `shape` with `item_rows` item rows; `candidate_ids` (ascending, each
  //! < item_rows) are the items scored. Throws pwab::Error when a tensor has an unexpected shape.
  FastSasrec(const WeightSource& weights, int64_t item_rows, const ModelShape& shape,
             std::vector<int64_t> candidate_ids);

  //! The last position's state (hidden floats) for a sequence of item ids in time order; ids must be in
  //! [0, item_rows) and the last maxlen are used, right-aligned with 0 padding (an empty sequence is all padding).
  std::vector<float> last_state(const std::vector<int64_t>& sequence) const;
  //! The logit of every candidate, in candidate order.
  std::vector<float> logits(const std::vector<int64_t>& sequence) const;
  //! The top k candidates (ties: lower id first; NaN last) as (item id, logit). An empty sequence → empty.
  std::vector<std::pair<int64_t, float>> top(const std::vector<int64_t>& sequence, int k) const;

  //! The embedding row (hidden floats) of an item id in [0, item_rows): logit(item) = row · last_state.
  std::span<const float> item_embedding(int64_t id) const {
    const std::size_t h = static_cast<std::size_t>(shape_.hidden);
    return {item_table_.data() + static_cast<std::size_t>(id) * h, h};
  }

  int64_t item_rows() const { return item_rows_; }
  const ModelShape& shape() const { return shape_; }
  const std::vector<int64_t>& candidate_ids() const { return candidate_ids_; }

  //! Candidates per panel of the scoring table (one panel = kPanel candidates × hidden, candidate-minor).
  static constexpr int kPanel = 64;

 private:
  struct LayerNorm {
    std::vector<float> weight, bias;
  };
  //! Linear maps are stored transposed, [in][out], so y += x[i] · row i vectorizes over the outputs.
  struct Linear {
    int in = 0, out = 0;
    std::vector<float> weight_t, bias;
  };
  struct Block {
    LayerNorm attention_norm, forward_norm;
    Linear in_proj;  //!< packed q | k | v, out = 3 · hidden
    Linear out_proj, conv1, conv2;
  };
  struct Scratch;

  void encode_last(const std::vector<int64_t>& sequence, Scratch& s, float* state) const;
  void embed(const std::vector<int64_t>& sequence, float* x) const;
  void run_block(const Block& block, bool last, Scratch& s) const;
  void score_candidates(const float* state, float* scores) const;

  static LayerNorm take_norm(const WeightSource& weights, const std::string& prefix, int hidden);
  static Linear take_linear(const WeightSource& weights, const std::string& weight_name, const std::string& bias_name,
                            int in, int out);

  int64_t item_rows_;
  ModelShape shape_;
  std::vector<int64_t> candidate_ids_;
  std::vector<float> item_table_;      //!< [item_rows][hidden]
  std::vector<float> position_table_;  //!< [maxlen + 1][hidden]
  std::vector<Block> blocks_;
  LayerNorm last_norm_;
  std::vector<float> candidate_panels_;  //!< ceil(n / kPanel) panels of [hidden][kPanel], zero-padded
};

//! The best `k` of `scores` (one per id, ascending ids) by score descending, ties to the lower id, NaN last.
std::vector<std::pair<int64_t, float>> select_top(const float* scores, const std::vector<int64_t>& ids, int k);

}  // namespace pwab::rec
