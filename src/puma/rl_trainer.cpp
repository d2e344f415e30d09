// The RL update on a PumaModel (rl_trainer.h): packed rollout rows, the clipped surrogate with KL to the
// reference, AdamW steps with clipping, data-parallel gradient sums, checkpoints.
#include "puma/rl_trainer.h"

#include <fmt/format.h>

#include <chrono>

#include "core/error.h"
#include "llama/distributed.h"
#include "llama/rl_loss.h"
#include "puma/model_impl.h"

namespace pwab::puma {
namespace fs = std::filesystem;

namespace {

// The rows one forward/backward computes, packed once and reused by every pass.
struct Chunk {
  llama::PackedRollouts batch;
  torch::Tensor reference;  // [labels] the reference's log-probabilities (computed on the first pass)
};

// Sums of one update's statistics (per token unless named otherwise).
struct Sums {
  double loss = 0, kl = 0, entropy = 0, clipped = 0, passes_tokens = 0, tokens = 0, row_tokens = 0;
  std::vector<double> values() const { return {loss, kl, entropy, clipped, passes_tokens, tokens, row_tokens}; }
  static Sums of(const std::vector<double>& v) { return {v[0], v[1], v[2], v[3], v[4], v[5], v[6]}; }
};

}  // namespace

struct PolicyTrainer::Impl {
  PumaModel& model;
  PolicyTrainerOptions o;
  detail::Trainables trainables;
  std::unique_ptr<PumaModel> frozen;  // the reference when every weight trains
  std::unique_ptr<torch::optim::AdamW> optimizer;
  int64_t steps = 0;

  Impl(PumaModel& m, PolicyTrainerOptions options) : model(m), o(std::move(options)) {
    if (o.inner_epochs < 1 || o.minibatches < 1 || o.total_steps < 1 || !(o.temperature > 0) || o.clip_low < 0 ||
        o.clip_low >= 1 || o.clip_high < 0 || o.kl_coef < 0 || o.micro_tokens < 1)
      throw UsageError("RL update: inner epochs ≥ 1, minibatches ≥ 1, a positive temperature, clip_low in [0, 1), "
                       "clip_high ≥ 0 and a KL coefficient ≥ 0 are required");
    if (!o.train.lora) frozen = model.copy();
    trainables = detail::make_trainables(model.impl().model, o.train);
    optimizer = std::make_unique<torch::optim::AdamW>(trainables.tensors, llama::hf_adamw_options(o.train.learning_rate));
    if (o.train.group) o.train.group->broadcast(trainables.tensors, 0);  // one starting point for every replica
  }

  llama::LlamaModelImpl& policy() { return *model.impl().model; }
  bool lead() const { return !o.train.group || o.train.group->rank() == 0; }
  double lr_at(int64_t step) const {
    const auto warmup = static_cast<int64_t>(o.train.warmup_ratio * static_cast<double>(o.total_steps));
    return o.train.learning_rate * llama::linear_schedule(step, warmup, o.total_steps);
  }

  torch::Tensor reference_logprobs(const llama::PackedRollouts& batch) {
    torch::NoGradGuard no_grad;
    if (frozen) return llama::rollout_logprobs(*frozen->impl().model, batch, o.temperature).logprobs;
    trainables.adapter->set_enabled(false);
    auto lp = llama::rollout_logprobs(policy(), batch, o.temperature).logprobs;
    trainables.adapter->set_enabled(true);
    return lp;
  }

  // The local groups of each minibatch cut into chunks of about micro_tokens tokens, padding counted: the groups go
  // in the order of their longest completion, so that short queries are not padded to the length of reviews (the
  // order of a minibatch's groups does not change its gradient, a sum).
  std::vector<std::vector<Chunk>> chunk(const std::vector<llama::RolloutGroup>& groups,
                                        const std::vector<int>& minibatch) {
    std::vector<std::vector<const llama::RolloutGroup*>> members(static_cast<std::size_t>(o.minibatches));
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (minibatch[i] < 0 || minibatch[i] >= o.minibatches)
        throw UsageError(fmt::format("RL update: group {} has minibatch {} outside [0, {})", i, minibatch[i],
                                     o.minibatches));
      members[static_cast<std::size_t>(minibatch[i])].push_back(&groups[i]);
    }
    const int64_t pad = model.impl().pad_id();
    std::vector<std::vector<Chunk>> out(members.size());
    auto longest = [](const llama::RolloutGroup* g) {
      std::size_t n = 0;
      for (const auto& c : g->completions) n = std::max(n, c.size());
      return std::pair{n, g->prompt.size()};
    };
    for (std::size_t m = 0; m < members.size(); ++m) {
      std::stable_sort(members[m].begin(), members[m].end(),
                       [&](const llama::RolloutGroup* a, const llama::RolloutGroup* b) { return longest(a) < longest(b); });
      std::vector<const llama::RolloutGroup*> current;
      int64_t prompts = 0, completions = 0, prompt_length = 0, completion_length = 0;
      auto padded = [&](int64_t p, int64_t c, int64_t pl, int64_t cl) { return p * pl + c * cl; };
      auto flush = [&] {
        if (current.empty()) return;
        out[m].push_back({llama::pack_rollouts(current, pad,
                                               o.per_sequence ? llama::LossNormalisation::kSequence
                                                              : llama::LossNormalisation::kToken),
                          {}});
        current.clear();
        prompts = completions = prompt_length = completion_length = 0;
      };
      for (const llama::RolloutGroup* g : members[m]) {
        const auto [c_len, p_len] = longest(g);
        const int64_t p = prompts + 1, c = completions + static_cast<int64_t>(g->completions.size());
        const int64_t pl = std::max<int64_t>(prompt_length, static_cast<int64_t>(p_len));
        const int64_t cl = std::max<int64_t>(completion_length, static_cast<int64_t>(c_len));
        if (!current.empty() && padded(p, c, pl, cl) > o.micro_tokens) {
          flush();
          prompts = 1, completions = static_cast<int64_t>(g->completions.size());
          prompt_length = static_cast<int64_t>(p_len), completion_length = static_cast<int64_t>(c_len);
        } else {
          prompts = p, completions = c, prompt_length = pl, completion_length = cl;
        }
        current.push_back(g);
      }
      flush();
    }
    return out;
  }

  // Gradients summed over the ranks (zeros where a rank had none), clipped, one AdamW step.
  double step(bool anything) {
    if (o.train.group) {
      std::vector<torch::Tensor> grads;
      for (auto& p : trainables.tensors) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        grads.push_back(p.grad());
      }
      o.train.group->all_reduce_sum(grads);
    }
    double norm = 0;
    if (anything) {
      llama::set_learning_rate(*optimizer, lr_at(steps));
      norm = o.train.max_grad_norm > 0
                 ? torch::nn::utils::clip_grad_norm_(trainables.tensors, o.train.max_grad_norm)
                 : 0.0;
      optimizer->step();
      ++steps;
    }
    optimizer->zero_grad();
    return norm;
  }

  PolicyUpdateStats update(const std::vector<llama::RolloutGroup>& groups, const std::vector<int>& minibatch) {
    if (minibatch.size() != groups.size()) throw UsageError("RL update: one minibatch index per group is needed");
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<Chunk>> chunks = chunk(groups, minibatch);
    llama::ProcessGroup* group = o.train.group;
    // the weight of each minibatch (its completions or tokens) over all ranks: every rank divides by the same sum
    std::vector<double> local_weight;
    for (const auto& m : chunks) {
      double n = 0;
      for (const Chunk& c : m) n += c.batch.weight_sum;
      local_weight.push_back(n);
    }
    std::vector<double> global_weight = group ? group->all_reduce_sum(local_weight) : local_weight;
    const llama::PolicyLossOptions loss_options{o.clip_low, o.clip_high, o.kl_coef};
    PolicyUpdateStats stats;
    Sums sums;
    policy().train();
    for (int epoch = 0; epoch < o.inner_epochs; ++epoch) {
      for (std::size_t m = 0; m < chunks.size(); ++m) {
        const double total = global_weight[m];
        for (Chunk& c : chunks[m]) {
          if (epoch == 0) {
            c.reference = reference_logprobs(c.batch);
            sums.tokens += static_cast<double>(c.batch.labels);
            sums.row_tokens += static_cast<double>(c.batch.row_tokens);
          }
          llama::RolloutLogprobs lp = llama::rollout_logprobs(policy(), c.batch, o.temperature, epoch == 0);
          llama::PolicyLossTerms t =
              llama::policy_loss(lp.logprobs, c.batch.old_logprobs, c.batch.advantages, c.reference, loss_options);
          auto loss = (t.per_token * c.batch.weights.to(t.per_token.device())).sum() / total;
          loss.backward();
          sums.loss += t.per_token.detach().sum().item<double>();
          sums.clipped += t.clipped.sum().item<double>();
          sums.passes_tokens += static_cast<double>(c.batch.labels);
          if (epoch == 0) {
            sums.kl += t.kl.sum().item<double>();
            sums.entropy += lp.entropy.sum().item<double>();
          }
        }
        stats.grad_norm = step(total > 0);
        stats.steps += total > 0;
      }
    }
    policy().eval();
    if (group) sums = Sums::of(group->all_reduce_sum(sums.values()));
    const double per_pass = std::max(1.0, sums.passes_tokens), first = std::max(1.0, sums.tokens);
    stats.loss = sums.loss / per_pass;
    stats.clip_fraction = sums.clipped / per_pass;
    stats.kl = sums.kl / first;
    stats.entropy = sums.entropy / first;
    stats.tokens = static_cast<int64_t>(sums.tokens);
    stats.row_tokens = static_cast<int64_t>(sums.row_tokens);
    stats.lr = lr_at(std::max<int64_t>(0, steps - 1));
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats;
  }
};

PolicyTrainer::PolicyTrainer(PumaModel& model, PolicyTrainerOptions options)
    : impl_(std::make_unique<Impl>(model, std::move(options))) {}
PolicyTrainer::~PolicyTrainer() = default;

PolicyUpdateStats PolicyTrainer::update(const std::vector<llama::RolloutGroup>& groups,
                                        const std::vector<int>& minibatch) {
  return impl_->update(groups, minibatch);
}

int64_t PolicyTrainer::optimizer_steps() const { return impl_->steps; }

void PolicyTrainer::save_checkpoint(const fs::path& file, const std::string& extra_json) const {
  if (!impl_->lead()) return;
  llama::TrainState state;
  state.optimizer_step = impl_->steps;
  state.extra_json = extra_json;
  llama::save_checkpoint(file, impl_->trainables.named, *impl_->optimizer, state);
}

std::string PolicyTrainer::load_checkpoint(const fs::path& file) {
  llama::TrainState state = llama::load_checkpoint(file, impl_->trainables.named, *impl_->optimizer);
  impl_->steps = state.optimizer_step;
  return state.extra_json;
}

void PolicyTrainer::finish() {
  detail::finish_trainables(impl_->model.impl().model, impl_->trainables, impl_->o.train);
  impl_->policy().eval();
}

void PolicyTrainer::abandon() {
  if (impl_->trainables.adapter) impl_->trainables.adapter->detach();
  llama::set_base_trainable(impl_->policy(), false);
  impl_->policy().eval();
}

}  // namespace pwab::puma
