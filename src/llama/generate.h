// src/llama/generate.h: text generation with a LlamaModel and a KV cache (the header is torch-free).
//
// Three decoders, as transformers' generate() runs them:
//   greedy       num_beams 1, do_sample false: the argmax token each step;
//   sampling     num_beams 1, do_sample true: temperature / top-k / top-p (sampling.h), explicit seed;
//   beam search  num_beams B: B running beams per prompt; each step the 2·B best (beam, token) continuations by
//                summed log-probability are taken (or, with do_sample, drawn without replacement from the warped
//                distribution: HF's beam-sample, which PUMA runs with B = 10, temperature 1.5), EOS continuations
//                become finished hypotheses, and the B best hypotheses come back ordered by score.
// Prompts of different lengths are read packed end to end into a left-padded KV cache (no work on the padding);
// each row stops at an EOS token or after max_new_tokens.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "llama/sampling.h"

namespace pwab::llama {

class LlamaModelImpl;

struct GenerateOptions {
  int64_t max_new_tokens = 32;
  bool do_sample = false;
  double temperature = 1.0;  //!< with do_sample
  int64_t top_k = 50;        //!< with do_sample; 50 is transformers' GenerationConfig default; 0 = off
  double top_p = 1.0;        //!< with do_sample; 1 = off
  int64_t num_beams = 1;
  int64_t num_return_sequences = 0;  //!< beam search: candidates returned per prompt; 0 = num_beams
  double length_penalty = 1.0;       //!< beam scores are sum_logprobs / length ^ length_penalty
  bool early_stopping = true;        //!< beam search stops a prompt once num_beams hypotheses are finished
  std::vector<int64_t> eos_token_ids;  //!< empty = the model config's
  int64_t pad_token_id = -1;           //!< padding and filler after EOS; -1 = config's pad, else the first EOS
  uint64_t seed = 0;                   //!< sampling: prompt i draws from Rng(derive_seed(seed, i)), batch-independent
  std::vector<uint64_t> row_seeds;     //!< when set (one per prompt): prompt i draws from Rng(row_seeds[i]) instead
  //! Greedy and sampling: also report, at each position, this many most likely tokens of the distribution that
  //! Generation::logprobs is taken from (OpenAI's top_logprobs); 0 = none.
  int64_t top_logprobs = 0;
  //! When set (one list per prompt): prompt i may only generate the tokens of allowed_tokens[i] and EOS (an empty
  //! list leaves it free). Lexically constrained decoding, as transformers' prefix_allowed_tokens_fn with a fixed
  //! set: the other tokens' scores become -inf before the choice, in all three decoders. Generation::logprobs and
  //! score stay the model's own, before the constraint, as they are before top-k.
  std::vector<std::vector<int32_t>> allowed_tokens;
};

//! One generated continuation.
struct Generation {
  std::vector<int32_t> tokens;  //!< new tokens, without the EOS that ended them
  double score = 0.0;  //!< greedy/sampling: summed log-probability of the tokens (EOS included) under the model;
                       //!< beam search: the beam score (warped log-probabilities when sampling, length-normalised)
  bool eos = false;    //!< ended by EOS (else by max_new_tokens)
  //! Greedy and sampling: the log-probability of each generated token, the final EOS included (tokens.size() +
  //! eos entries), under the distribution it was drawn from before top-k / top-p: the logits divided by the
  //! temperature when sampling, the plain model's otherwise (RL's sampling-policy log-probabilities). Empty for
  //! beam search.
  std::vector<float> logprobs;
  //! With GenerateOptions::top_logprobs = k: one list per entry of `logprobs`, the k most likely tokens of the same
  //! distribution with their log-probabilities, most likely first (ties: lower id first). Empty otherwise.
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
};

//! Generates for each prompt (token ids, BOS included if wanted): one Generation per prompt for greedy and
//! sampling, num_return_sequences (distinct, best score first) for beam search. Throws pwab::UsageError for an
//! empty prompt or invalid options. Runs without gradients.
std::vector<std::vector<Generation>> generate(LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts,
                                              const GenerateOptions& options);
//! Beam search whatever num_beams is (generate() takes it for num_beams > 1; with one beam and no sampling it
//! picks greedy's tokens, which the tests check).
std::vector<std::vector<Generation>> beam_search(LlamaModelImpl& model,
                                                 const std::vector<std::vector<int32_t>>& prompts,
                                                 const GenerateOptions& options);

}  // namespace pwab::llama
