// Greedy, sampled and beam-search generation over the KV cache (the torch side of generate.h; the choice of
// tokens is sampling.h's plain C++ on CPU copies of the last position's logits).
#include "llama/generate.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "llama/model.h"

namespace pwab::llama {
namespace {

struct Setup {
  std::set<int64_t> eos;
  int64_t pad = 0;
  int64_t vocab = 0;
  //! Per prompt, from GenerateOptions::allowed_tokens: 1 for the tokens it may write (EOS included); empty = all.
  std::vector<std::vector<char>> allowed;
};

//! Sets the scores of the tokens row `prompt` may not write to -inf (nothing when it is unconstrained).
void constrain(std::span<float> row, const Setup& s, std::size_t prompt) {
  if (s.allowed.empty() || s.allowed[prompt].empty()) return;
  const std::vector<char>& ok = s.allowed[prompt];
  for (std::size_t t = 0; t < row.size(); ++t)
    if (!ok[t]) row[t] = -std::numeric_limits<float>::infinity();
}

Setup check_options(const LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts,
                    const GenerateOptions& o) {
  const auto& c = model.config();
  if (o.max_new_tokens < 0) throw UsageError("generate: max_new_tokens must not be negative");
  if (o.num_beams < 1) throw UsageError("generate: num_beams must be at least 1");
  if (o.top_logprobs < 0) throw UsageError("generate: top_logprobs must not be negative");
  if (o.top_logprobs > 0 && o.num_beams > 1) throw UsageError("generate: top_logprobs needs greedy or sampling, not beams");
  if (o.num_return_sequences < 0 || o.num_return_sequences > o.num_beams)
    throw UsageError("generate: num_return_sequences must be between 1 and num_beams (" +
                     std::to_string(o.num_beams) + ")");
  if (o.num_beams == 1 && o.num_return_sequences > 1)
    throw UsageError("generate: several sequences per prompt need num_beams > 1");
  if (o.do_sample && !(o.temperature > 0))
    throw UsageError("generate: sampling needs a positive temperature (use do_sample = false for greedy)");
  for (const auto& p : prompts)
    if (p.empty()) throw UsageError("generate: a prompt has no tokens (add at least BOS)");
  if (!o.row_seeds.empty() && o.row_seeds.size() != prompts.size())
    throw UsageError("generate: row_seeds must give one seed per prompt");
  if (!o.allowed_tokens.empty() && o.allowed_tokens.size() != prompts.size())
    throw UsageError("generate: allowed_tokens must give one list per prompt");
  for (const auto& list : o.allowed_tokens)
    for (int32_t t : list)
      if (t < 0 || t >= c.vocab_size)
        throw UsageError("generate: allowed token " + std::to_string(t) + " is outside the vocabulary of " +
                         std::to_string(c.vocab_size));
  Setup s;
  s.vocab = c.vocab_size;
  const auto& eos = o.eos_token_ids.empty() ? c.eos_token_ids : o.eos_token_ids;
  s.eos.insert(eos.begin(), eos.end());
  s.pad = o.pad_token_id >= 0 ? o.pad_token_id : c.pad_token_id >= 0 ? c.pad_token_id : eos.empty() ? 0 : eos[0];
  if (s.pad >= c.vocab_size) throw UsageError("generate: pad_token_id outside the vocabulary");
  for (const auto& list : o.allowed_tokens) {
    std::vector<char> ok;
    if (!list.empty()) {
      ok.assign(static_cast<std::size_t>(s.vocab), 0);
      for (int32_t t : list) ok[static_cast<std::size_t>(t)] = 1;
      for (int64_t e : s.eos)
        if (e >= 0 && e < s.vocab) ok[static_cast<std::size_t>(e)] = 1;
    }
    s.allowed.push_back(std::move(ok));
  }
  return s;
}

//! The prompts' forward into an empty cache (reserving room for `new_tokens` more), returning the last position's
//! logits [rows, 1, vocab]. Prompts of different lengths go packed end to end (LlamaModelImpl::packed_prefill):
//! the cache comes out as a left-padded batch's forward leaves it, without the padding's work (a batch of PUMA's
//! prompts is about 30% padding); prompts of one length go as one batch.
torch::Tensor prefill(LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts, int64_t new_tokens,
                      KvCache& cache) {
  std::size_t longest = 0, shortest = SIZE_MAX, total = 0;
  for (const auto& p : prompts) {
    longest = std::max(longest, p.size());
    shortest = std::min(shortest, p.size());
    total += p.size();
  }
  cache = KvCache(static_cast<int64_t>(longest) + new_tokens);
  auto flat = torch::empty({static_cast<int64_t>(total)}, torch::kInt64);
  auto* id = flat.data_ptr<int64_t>();
  std::vector<int64_t> lengths;
  for (const auto& p : prompts) {
    id = std::copy(p.begin(), p.end(), id);
    lengths.push_back(static_cast<int64_t>(p.size()));
  }
  if (shortest != longest) return model.packed_prefill(flat.view({1, -1}), lengths, cache);
  return model.forward(flat.view({static_cast<int64_t>(prompts.size()), static_cast<int64_t>(longest)}), {}, &cache,
                       true);
}

//! The last position's logits [rows, 1, vocab] as one CPU float vector, row after row.
std::vector<float> cpu_rows(const torch::Tensor& logits) {
  auto c = logits.reshape({logits.size(0), logits.size(2)}).to(torch::kCPU, torch::kFloat32).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

//! The k largest entries of a log-probability row with their ids, largest first, lower id first among equals.
std::vector<std::pair<int32_t, float>> most_likely(const std::vector<float>& logprobs, int64_t k) {
  std::vector<int32_t> ids(logprobs.size());
  for (std::size_t t = 0; t < ids.size(); ++t) ids[t] = static_cast<int32_t>(t);
  const auto take = static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(k), ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + take, ids.end(), [&](int32_t a, int32_t b) {
    const float x = logprobs[static_cast<std::size_t>(a)], y = logprobs[static_cast<std::size_t>(b)];
    return x != y ? x > y : a < b;
  });
  std::vector<std::pair<int32_t, float>> out;
  for (std::ptrdiff_t t = 0; t < take; ++t) out.emplace_back(ids[t], logprobs[static_cast<std::size_t>(ids[t])]);
  return out;
}

torch::Tensor one_step_input(const std::vector<int64_t>& tokens) {
  return torch::tensor(tokens, torch::kInt64).view({static_cast<int64_t>(tokens.size()), 1});
}

std::vector<std::vector<Generation>> decode_single(LlamaModelImpl& model,
                                                   const std::vector<std::vector<int32_t>>& prompts,
                                                   const GenerateOptions& o, const Setup& s) {
  const std::size_t n = prompts.size();
  std::vector<Generation> out(n);
  std::vector<Rng> rngs;
  for (std::size_t i = 0; i < n; ++i) rngs.emplace_back(o.row_seeds.empty() ? derive_seed(o.seed, i) : o.row_seeds.at(i));
  const WarpOptions warp{o.temperature, o.top_k, o.top_p};
  // Equal prompts (several samples of one prompt) are read once: the unique prompts fill the cache, then each row
  // gets a copy of its prompt's keys and values.
  std::vector<std::vector<int32_t>> unique;
  std::vector<int64_t> source(n);
  {
    std::map<std::vector<int32_t>, int64_t> seen;
    for (std::size_t i = 0; i < n; ++i) {
      auto [it, fresh] = seen.emplace(prompts[i], static_cast<int64_t>(unique.size()));
      if (fresh) unique.push_back(prompts[i]);
      source[i] = it->second;
    }
  }
  KvCache cache;
  auto logits = prefill(model, unique, o.max_new_tokens, cache);
  if (unique.size() < n) {
    auto rows = torch::tensor(source, torch::kInt64);
    cache.select_rows(rows);
    logits = logits.index_select(0, rows.to(logits.device()));
  }
  std::vector<float> scores(static_cast<std::size_t>(s.vocab));
  // Cache row r decodes prompt active[r]; rows whose prompt finished are dropped from the cache, so a batch of
  // short and long outputs costs what its unfinished rows cost.
  std::vector<std::size_t> active(n);
  for (std::size_t i = 0; i < n; ++i) active[i] = i;
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    const auto rows = cpu_rows(logits);
    std::vector<int64_t> next;
    std::vector<int64_t> keep;
    std::vector<std::size_t> still;
    for (std::size_t r = 0; r < active.size(); ++r) {
      const std::size_t i = active[r];
      std::span<const float> row(rows.data() + r * s.vocab, static_cast<std::size_t>(s.vocab));
      std::vector<float> logprobs(row.begin(), row.end());
      log_softmax_inplace(logprobs);
      int64_t token;
      if (o.do_sample) {
        scores = logprobs;
        constrain(scores, s, i);
        apply_warpers(scores, warp);
        token = sample_one(scores, rngs[i]);
      } else if (!s.allowed.empty() && !s.allowed[i].empty()) {
        scores.assign(row.begin(), row.end());
        constrain(scores, s, i);
        token = argmax(scores);
      } else {
        token = argmax(row);
      }
      out[i].score += logprobs[static_cast<std::size_t>(token)];
      if (o.do_sample && o.temperature != 1.0) {
        // the sampling policy's log-probability: the logits at the temperature, before top-k / top-p
        std::vector<float> tempered(row.begin(), row.end());
        for (float& v : tempered) v = static_cast<float>(v / o.temperature);
        log_softmax_inplace(tempered);
        out[i].logprobs.push_back(tempered[static_cast<std::size_t>(token)]);
        if (o.top_logprobs > 0) out[i].top_logprobs.push_back(most_likely(tempered, o.top_logprobs));
      } else {
        out[i].logprobs.push_back(logprobs[static_cast<std::size_t>(token)]);
        if (o.top_logprobs > 0) out[i].top_logprobs.push_back(most_likely(logprobs, o.top_logprobs));
      }
      if (s.eos.count(token)) {
        out[i].eos = true;
      } else {
        out[i].tokens.push_back(static_cast<int32_t>(token));
        next.push_back(token);
        keep.push_back(static_cast<int64_t>(r));
        still.push_back(i);
      }
    }
    if (still.empty() || step + 1 == o.max_new_tokens) break;
    if (still.size() < active.size()) cache.select_rows(torch::tensor(keep, torch::kInt64));
    active = std::move(still);
    logits = model.forward(one_step_input(next), {}, &cache, true);
  }
  std::vector<std::vector<Generation>> result;
  for (auto& g : out) result.push_back({std::move(g)});
  return result;
}

struct Beam {
  double score = 0.0;
  int64_t source = 0;  // row of the previous step
  int64_t token = 0;
};

std::vector<std::vector<Generation>> run_beam_search(LlamaModelImpl& model,
                                                     const std::vector<std::vector<int32_t>>& prompts,
                                                     const GenerateOptions& o, const Setup& s) {
  const auto n = static_cast<int64_t>(prompts.size()), beams = o.num_beams, rows = n * beams;
  const auto vocab = static_cast<std::size_t>(s.vocab);
  const WarpOptions warp{o.temperature, o.top_k, o.top_p};
  std::vector<BeamHypotheses> hyps;
  std::vector<Rng> rngs;
  for (int64_t i = 0; i < n; ++i) {
    hyps.emplace_back(beams, o.length_penalty, o.early_stopping);
    rngs.emplace_back(o.row_seeds.empty() ? derive_seed(o.seed, static_cast<uint64_t>(i)) : o.row_seeds.at(i));
  }
  std::vector<bool> done(static_cast<std::size_t>(n), false);
  // Only the first beam of each prompt is live at the start, so the first step picks distinct tokens.
  std::vector<double> beam_scores(static_cast<std::size_t>(rows), -1e9);
  std::vector<bool> alive(static_cast<std::size_t>(rows), true);
  for (int64_t i = 0; i < n; ++i) beam_scores[static_cast<std::size_t>(i * beams)] = 0.0;
  std::vector<std::vector<int32_t>> seqs(static_cast<std::size_t>(rows));

  KvCache cache;
  auto logits = prefill(model, prompts, o.max_new_tokens, cache);  // the prompt once, then copied to its beams
  cache.select_rows(torch::arange(n, torch::kInt64).repeat_interleave(beams));

  std::vector<float> flat(static_cast<std::size_t>(beams) * vocab);
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    const auto logit_rows = cpu_rows(logits);
    std::vector<Beam> next(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) next[r] = {beam_scores[r], r, s.pad};
    for (int64_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      for (int64_t j = 0; j < beams; ++j) {
        const int64_t r = i * beams + j, source_row = step == 0 ? i : r;
        std::span<float> row(flat.data() + j * vocab, vocab);
        std::copy_n(logit_rows.data() + source_row * vocab, vocab, row.begin());
        log_softmax_inplace(row);
        constrain(row, s, static_cast<std::size_t>(i));
        if (o.do_sample) apply_warpers(row, warp);
        for (float& v : row) v = static_cast<float>(v + beam_scores[r]);
      }
      const auto picks = o.do_sample ? sample_without_replacement(flat, 2 * beams, rngs[i])
                                     : top_k_indices(flat, 2 * beams);
      int64_t kept = 0;
      double best = -std::numeric_limits<double>::infinity();
      for (std::size_t rank = 0; rank < picks.size() && kept < beams; ++rank) {
        const int64_t pick = picks[rank], j = pick / s.vocab, token = pick % s.vocab, source = i * beams + j;
        const double score = flat[pick];
        best = std::max(best, score);
        if (!alive[source] || score <= -1e8) continue;  // a dead beam's continuations are not candidates
        if (s.eos.count(token)) {
          if (static_cast<int64_t>(rank) < beams) hyps[i].add(seqs[source], score, step + 1, true);
          continue;
        }
        next[i * beams + kept++] = {score, source, token};
      }
      for (int64_t k = kept; k < beams; ++k) next[i * beams + k] = {-1e9, i * beams, s.pad};  // too few candidates
      for (int64_t k = 0; k < beams; ++k) alive[i * beams + k] = k < kept;
      done[i] = hyps[i].is_done(best, step + 1);
    }
    std::vector<std::vector<int32_t>> new_seqs(static_cast<std::size_t>(rows));
    std::vector<int64_t> sources(static_cast<std::size_t>(rows)), tokens(static_cast<std::size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      new_seqs[r] = seqs[next[r].source];
      if (!done[r / beams]) new_seqs[r].push_back(static_cast<int32_t>(next[r].token));
      beam_scores[r] = next[r].score;
      sources[r] = next[r].source;
      tokens[r] = next[r].token;
    }
    seqs = std::move(new_seqs);
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }) || step + 1 == o.max_new_tokens) break;
    cache.select_rows(torch::tensor(sources, torch::kInt64));
    logits = model.forward(one_step_input(tokens), {}, &cache, true);
  }
  std::vector<std::vector<Generation>> result;
  const int64_t n_return = o.num_return_sequences > 0 ? o.num_return_sequences : beams;
  for (int64_t i = 0; i < n; ++i) {
    if (!done[i])
      for (int64_t k = 0; k < beams; ++k) {
        const int64_t r = i * beams + k;
        if (alive[r]) hyps[i].add(seqs[r], beam_scores[r], static_cast<int64_t>(seqs[r].size()), false);
      }
    std::vector<Generation> gens;
    for (auto& h : hyps[i].sorted()) {
      if (static_cast<int64_t>(gens.size()) == n_return) break;
      gens.push_back({std::move(h.tokens), h.score, h.eos, {}, {}});
    }
    result.push_back(std::move(gens));
  }
  return result;
}

//! Checks the options, then runs `decode` without gradients and in eval mode (LoRA dropout off).
template <typename Decode>
std::vector<std::vector<Generation>> run(LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts,
                                         const GenerateOptions& options, Decode decode) {
  const Setup setup = check_options(model, prompts, options);
  if (prompts.empty()) return {};
  if (options.max_new_tokens == 0) return std::vector<std::vector<Generation>>(prompts.size(), {Generation{}});
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  try {
    auto result = decode(model, prompts, options, setup);
    model.train(was_training);
    return result;
  } catch (...) {
    model.train(was_training);
    throw;
  }
}

}  // namespace

std::vector<std::vector<Generation>> generate(LlamaModelImpl& model, const std::vector<std::vector<int32_t>>& prompts,
                                              const GenerateOptions& options) {
  return options.num_beams == 1 ? run(model, prompts, options, decode_single)
                                : run(model, prompts, options, run_beam_search);
}

std::vector<std::vector<Generation>> beam_search(LlamaModelImpl& model,
                                                 const std::vector<std::vector<int32_t>>& prompts,
                                                 const GenerateOptions& options) {
  return run(model, prompts, options, run_beam_search);
}

}  // namespace pwab::llama
