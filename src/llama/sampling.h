// src/llama/sampling.h: choosing next tokens from a row of scores (torch-free; generate.cpp feeds it the model's
// logits, tests feed it hand-made ones).
//
// The warpers are transformers' logits warpers, in the order its generate() applies them: temperature, then top-k,
// then top-p; removed entries become -inf. Sampling takes an explicit pwab::Rng, so a seed reproduces a run.
// BeamHypotheses is transformers' BeamHypotheses: the finished candidates of one prompt, kept best first.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"

namespace pwab::llama {

struct WarpOptions {
  double temperature = 1.0;  //!< scores are divided by it (> 0)
  int64_t top_k = 0;         //!< keep the k best (0 = off)
  double top_p = 1.0;        //!< keep the smallest set of best entries whose probability reaches top_p (1 = off)
};

//! Replaces logits by log-probabilities (computed in double).
void log_softmax_inplace(std::span<float> row);
//! Applies temperature, top-k and top-p to `scores` in place (unnormalised log-probabilities).
void apply_warpers(std::span<float> scores, const WarpOptions& options);
//! Index of the largest score (the lowest index among ties).
int64_t argmax(std::span<const float> scores);
//! One index drawn with probability ∝ exp(score): the inverse of the cumulative distribution at one uniform draw.
int64_t sample_one(std::span<const float> scores, Rng& rng);
//! `k` distinct indices drawn without replacement with probability ∝ exp(score), as successive torch.multinomial
//! draws would (Gumbel-top-k). Indices with -inf scores are never drawn; fewer than `k` come back if fewer are
//! possible. Returned best score first.
std::vector<int64_t> sample_without_replacement(std::span<const float> scores, int64_t k, Rng& rng);
//! The `k` largest scores' indices, best first (ties: the lower index first).
std::vector<int64_t> top_k_indices(std::span<const float> scores, int64_t k);

//! One finished candidate of a beam search.
struct Hypothesis {
  std::vector<int32_t> tokens;  //!< generated tokens, without the final EOS
  double score = 0.0;           //!< summed log-probabilities / length ^ length_penalty
  double sum_logprobs = 0.0;
  bool eos = false;             //!< ended by an EOS token (else by max_new_tokens)
};

//! The best `n_beams` finished hypotheses of one prompt.
class BeamHypotheses {
 public:
  BeamHypotheses(int64_t n_beams, double length_penalty, bool early_stopping)
      : n_beams_(n_beams), length_penalty_(length_penalty), early_stopping_(early_stopping) {}

  //! Adds a candidate whose score is sum_logprobs / generated_length ^ length_penalty (generated_length counts the
  //! EOS token); beyond n_beams the worst is dropped.
  void add(std::vector<int32_t> tokens, double sum_logprobs, int64_t generated_length, bool eos);
  //! Whether no running beam can still enter: with early stopping, as soon as n_beams candidates exist; else when
  //! the best running sum, normalised at `generated_length`, cannot beat the worst kept candidate.
  bool is_done(double best_running_sum, int64_t generated_length) const;
  //! The candidates, best score first (ties: the earlier added first).
  std::vector<Hypothesis> sorted() const;
  std::size_t size() const { return hyps_.size(); }

 private:
  int64_t n_beams_;
  double length_penalty_;
  bool early_stopping_;
  std::vector<Hypothesis> hyps_;
};

}  // namespace pwab::llama
