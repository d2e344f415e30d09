// The RL rollout loop (rl.h): task order, episodes played in batches, rewards to advantages, the update, the curve,
// evaluation, checkpoints and resume.
#include "puma/rl.h"
#include "puma/search_vocabulary.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "core/sys.h"
#include "core/text.h"
#include "llama/distributed.h"
#include "puma/rl_trainer.h"
#include "puma/train_scaffold.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// One completion of an episode, as sampled.
struct Turn {
  std::vector<int32_t> prompt;
  SampledCompletion completion;
};

// An episode played to its end.
struct Played {
  std::size_t slot = 0;  // index of its task in the iteration
  int sample = 0;
  std::vector<Turn> turns;
  std::vector<std::optional<double>> turn_rewards;  // RlEpisode::turn_reward of each turn
  double reward = 0, advantage = 0;
};

// Plays `episodes` to their ends: each round, every live episode's next prompt is completed, all of them in batches
// of `batch`; episode e's completion in round r draws from seed_of(e, r). Prompts are encoded once.
// With copy_search, a prompt that asks for a search query is decoded from its own words (search_vocabulary.h).
void play(PumaModel& model, std::vector<std::unique_ptr<RlEpisode>>& episodes, std::vector<Played>& played,
          GenerateConfig config, int batch, const std::function<uint64_t(std::size_t, int)>& seed_of,
          bool copy_search) {
  std::map<std::string, std::vector<int32_t>> encoded, vocabulary;
  constexpr int kMaxRounds = 256;  // an episode that never ends is a bug of its own; stop it rather than hang
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<std::size_t> live;
    std::vector<std::vector<int32_t>> prompts;
    config.prompt_seeds.clear();
    config.allowed_tokens.clear();
    bool constrained = false;
    for (std::size_t e = 0; e < episodes.size(); ++e) {
      std::optional<std::string> prompt = episodes[e]->next_prompt();
      if (!prompt) continue;
      auto it = encoded.find(*prompt);
      if (it == encoded.end()) it = encoded.emplace(*prompt, model.encode_prompt(*prompt)).first;
      live.push_back(e);
      prompts.push_back(it->second);
      config.prompt_seeds.push_back(seed_of(e, round));
      if (copy_search && episodes[e]->asks_search_query()) {
        auto v = vocabulary.find(*prompt);
        if (v == vocabulary.end()) v = vocabulary.emplace(*prompt, search_vocabulary(model.tokenizer(), *prompt)).first;
        config.allowed_tokens.push_back(v->second);
        constrained = true;
      } else {
        config.allowed_tokens.emplace_back();
      }
    }
    if (!constrained) config.allowed_tokens.clear();
    if (live.empty()) return;
    config.batch_size = std::max(1, batch);
    std::vector<SampledCompletion> out = model.complete_ids(prompts, config);
    for (std::size_t i = 0; i < live.size(); ++i) {
      Played& p = played[live[i]];
      episodes[live[i]]->take(out[i].text);
      p.turn_rewards.push_back(episodes[live[i]]->turn_reward(p.turns.size()));
      p.turns.push_back({std::move(prompts[i]), std::move(out[i])});
    }
  }
  throw Error(fmt::format("RL: an episode asked for more than {} completions", kMaxRounds));
}

// The position-th task of the endless sequence of per-epoch shuffles of [0, n).
class TaskOrder {
 public:
  TaskOrder(std::size_t n, uint64_t seed) : n_(n), seed_(seed) {}
  std::size_t at(int64_t position) {
    const int64_t epoch = position / static_cast<int64_t>(n_);
    if (epoch != epoch_) {
      order_.resize(n_);
      std::iota(order_.begin(), order_.end(), std::size_t{0});
      Rng rng(derive_seed(seed_, 0x5e1ec7, static_cast<uint64_t>(epoch)));
      for (std::size_t i = n_; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
      epoch_ = epoch;
    }
    return order_[static_cast<std::size_t>(position % static_cast<int64_t>(n_))];
  }

 private:
  std::size_t n_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<std::size_t> order_;
};

json evaluation_json(const RlEvaluation& e) {
  json j = {{"reward", e.reward}, {"tasks", e.tasks}};
  for (const auto& [kind, r] : e.by_kind) j["reward_" + kind] = r;
  return j;
}

RlEvaluation evaluation_from_json(const json& j) {
  RlEvaluation e;
  e.reward = j.at("reward").get<double>();
  e.tasks = j.at("tasks").get<std::size_t>();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key().starts_with("reward_")) e.by_kind[it.key().substr(7)] = it->get<double>();
  return e;
}

// What a checkpoint carries besides the weights: the iteration and the totals so far, so that a resumed run
// reports the whole run.
json checkpoint_extra(int iteration, const RlReport& r, double seconds) {
  json j = {{"iteration", iteration},     {"seconds", seconds},
            {"episodes", r.episodes},     {"completions", r.completions},
            {"train_tokens", r.train_tokens}, {"sample_seconds", r.sample_seconds},
            {"update_seconds", r.update_seconds}, {"eval_seconds", r.eval_seconds}};
  if (r.have_eval) j["first_eval"] = evaluation_json(r.first_eval);
  return j;
}

void restore_totals(const json& j, RlReport& r) {
  r.seconds = j.value("seconds", 0.0);
  r.episodes = j.value("episodes", int64_t{0});
  r.completions = j.value("completions", int64_t{0});
  r.train_tokens = j.value("train_tokens", int64_t{0});
  r.sample_seconds = j.value("sample_seconds", 0.0);
  r.update_seconds = j.value("update_seconds", 0.0);
  r.eval_seconds = j.value("eval_seconds", 0.0);
  if (j.contains("first_eval")) {
    r.first_eval = evaluation_from_json(j["first_eval"]);
    r.have_eval = true;
  }
}

void check_options(const RlOptions& o, const RlTasks& train) {
  if (train.size() == 0 || !train.episode) throw UsageError("RL: no train tasks");
  if (train.kinds.size() != train.size()) throw UsageError("RL: one kind per task is needed");
  validate_rl_options(o);
}

// What one iteration measured on this rank, summed over the ranks before it is reported.
struct IterationSums {
  double reward = 0, reward_sq = 0, episodes = 0, groups = 0, tied = 0, group_std = 0, completions = 0,
         completion_tokens = 0, sample_seconds = 0;
  std::vector<double> kind_reward, kind_episodes;

  std::vector<double> values() const {
    std::vector<double> v{reward, reward_sq, episodes, groups, tied, group_std, completions, completion_tokens,
                          sample_seconds};
    v.insert(v.end(), kind_reward.begin(), kind_reward.end());
    v.insert(v.end(), kind_episodes.begin(), kind_episodes.end());
    return v;
  }
  void assign(const std::vector<double>& v) {
    std::size_t i = 0;
    for (double* x : {&reward, &reward_sq, &episodes, &groups, &tied, &group_std, &completions, &completion_tokens,
                      &sample_seconds})
      *x = v[i++];
    for (double& x : kind_reward) x = v[i++];
    for (double& x : kind_episodes) x = v[i++];
  }
};

// The rollout groups of one task's episodes: completions that followed the same prompt tokens share a group (the
// single-turn parameter prompt, the multi-turn function prompt). A completion carries its episode's advantage, or,
// when its turn has a reward of its own, the advantage of that reward among the group's. Groups whose advantages
// are all 0 are left out when `skip_tied`, unless they are turns of their own reward and the KL term (`anchor`)
// can hold them.
std::vector<llama::RolloutGroup> groups_of(const std::vector<const Played*>& episodes, llama::AdvantageEstimator algo,
                                           bool skip_tied, bool anchor) {
  struct Member {
    const Turn* turn;
    double advantage;
    std::optional<double> own;
  };
  std::map<std::vector<int32_t>, std::vector<Member>> by_prompt;
  std::vector<const std::vector<int32_t>*> order;
  for (const Played* p : episodes)
    for (std::size_t t = 0; t < p->turns.size(); ++t) {
      const Turn& turn = p->turns[t];
      if (turn.completion.ids.empty()) continue;
      auto [it, fresh] = by_prompt.try_emplace(turn.prompt);
      if (fresh) order.push_back(&it->first);
      it->second.push_back({&turn, p->advantage, p->turn_rewards[t]});
    }
  std::vector<llama::RolloutGroup> out;
  for (const std::vector<int32_t>* prompt : order) {
    std::vector<Member>& members = by_prompt.at(*prompt);
    bool own = true;
    for (const Member& m : members) own = own && m.own.has_value();
    if (own) {
      std::vector<double> rewards;
      for (const Member& m : members) rewards.push_back(*m.own);
      std::vector<double> advantages = llama::group_advantages(rewards, algo);
      for (std::size_t i = 0; i < members.size(); ++i) members[i].advantage = advantages[i];
    }
    bool signal = false;
    for (const Member& m : members) signal = signal || m.advantage != 0;
    if (skip_tied && !signal && !(own && anchor)) continue;
    if (own && !signal) {
      // A tied turn held only by the KL term: its samples are nearly always one answer (the function SFT taught),
      // and copies of it would outnumber the completions that carry a signal in the per-sequence mean, diluting
      // their step (measured: the search gain fell from +0.034 to +0.014). One of each distinct answer is enough.
      std::set<std::vector<int32_t>> seen;
      std::erase_if(members, [&](const Member& m) { return !seen.insert(m.turn->completion.ids).second; });
    }
    llama::RolloutGroup g{*prompt, {}, {}, {}};
    for (const Member& m : members) {
      g.completions.push_back(m.turn->completion.ids);
      g.old_logprobs.push_back(m.turn->completion.logprobs);
      g.advantages.push_back(m.advantage);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string rollout_line(int iteration, const std::string& task, const Played& p) {
  json turns = json::array();
  for (const Turn& t : p.turns) {
    // The model's own tokens only: a turn's prompt (the conversation so far, re-read as text) is never trained.
    std::vector<int> mask(t.prompt.size(), 0);
    mask.resize(t.prompt.size() + t.completion.ids.size(), 1);
    turns.push_back({{"prompt_ids", t.prompt}, {"completion_ids", t.completion.ids},
                     {"logprobs", t.completion.logprobs}, {"loss_mask", std::move(mask)}, {"eos", t.completion.eos},
                     {"text", t.completion.text}});
  }
  return json{{"format", "pwab-rl-episode/1"}, {"iteration", iteration}, {"task", task}, {"sample", p.sample},
              {"reward", p.reward}, {"advantage", p.advantage}, {"turns", turns}}
             .dump() +
         "\n";
}

}  // namespace

RlEvaluation evaluate_greedy(PumaModel& model, const RlTasks& tasks, int max_new_tokens, int batch,
                             bool copy_search) {
  RlEvaluation e;
  if (tasks.size() == 0) return e;
  std::vector<std::unique_ptr<RlEpisode>> episodes;
  std::vector<Played> played(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) episodes.push_back(tasks.episode(i, 0));
  GenerateConfig g;
  g.max_new_tokens = max_new_tokens;
  play(model, episodes, played, g, batch, [](std::size_t, int) { return uint64_t{0}; }, copy_search);
  std::map<std::string, std::pair<double, int>> kinds;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const double r = episodes[i]->reward();
    e.reward += r;
    kinds[tasks.kinds[i]].first += r;
    ++kinds[tasks.kinds[i]].second;
  }
  e.tasks = tasks.size();
  e.reward /= static_cast<double>(tasks.size());
  for (const auto& [kind, s] : kinds) e.by_kind[kind] = s.first / s.second;
  return e;
}

RlReport train_rl(PumaModel& model, const RlTasks& train, const RlTasks& eval, const fs::path& work_dir,
                  const RlOptions& o, const std::function<void(const std::string&)>& log) {
  check_options(o, train);
  fs::create_directories(work_dir);
  llama::ProcessGroup* group = o.train.group;
  const int rank = group ? group->rank() : 0, world = group ? group->world() : 1;
  const bool lead = rank == 0;
  auto say = [&](const std::string& line) {
    if (lead && log) log(line);
  };
  const fs::path checkpoint = work_dir / "checkpoint.pt", curve = work_dir / "curve.jsonl";
  const fs::path rollouts = work_dir / (rank == 0 ? std::string("rollouts.jsonl") : fmt::format("rollouts-rank{}.jsonl", rank));
  const std::set<std::string> kind_set(train.kinds.begin(), train.kinds.end());
  const std::vector<std::string> kinds(kind_set.begin(), kind_set.end());

  PolicyTrainerOptions to;
  to.train = o.train;
  to.total_steps = std::max<int64_t>(1, int64_t{o.iterations} * o.inner_epochs * o.minibatches);
  to.temperature = o.temperature;
  to.clip_low = o.clip_low;
  to.clip_high = o.clip_high;
  to.kl_coef = o.kl_coef;
  to.per_sequence = o.per_sequence;
  to.inner_epochs = o.inner_epochs;
  to.minibatches = o.minibatches;
  PolicyTrainer trainer(model, to);

  RlReport report;
  report.world = world;
  int done = 0;
  if (resumes_from(checkpoint, group, "rl")) {
    json extra = json::parse(trainer.load_checkpoint(checkpoint));
    done = extra.at("iteration").get<int>();
    restore_totals(extra, report);
    report.resumed = true;
    if (lead) keep_log_until(curve, "iteration", done);
    keep_log_until(rollouts, "iteration", done);
    say(fmt::format("rl: resuming after iteration {} of {}", done, o.iterations));
  } else {
    if (lead && fs::exists(curve)) fs::remove(curve);
    if (fs::exists(rollouts)) fs::remove(rollouts);
  }
  auto add_point = [&](const json& point) {
    if (lead) append_file(curve, point.dump() + "\n");
  };
  auto evaluate = [&](int iteration) {
    RlEvaluation e;
    if (!lead || eval.size() == 0) return e;
    const auto start = Clock::now();
    e = evaluate_greedy(model, eval, o.max_new_tokens, o.generate_batch, o.copy_search);
    report.eval_seconds += since(start);
    json point = evaluation_json(e);
    point["iteration"] = iteration;
    point["kind"] = "eval";
    add_point(point);
    say(fmt::format("rl: iteration {}: greedy reward {:.4f} on {} evaluation tasks", iteration, e.reward, e.tasks));
    return e;
  };
  const auto start = Clock::now();
  const double seconds_before = report.seconds;
  auto save = [&](int iteration) {
    trainer.save_checkpoint(checkpoint, checkpoint_extra(iteration, report, seconds_before + since(start)).dump());
  };

  if (!report.resumed) {
    report.first_eval = evaluate(0);
    report.have_eval = eval.size() > 0;
  }
  TaskOrder order(train.size(), o.train.seed);
  const int B = o.tasks_per_iteration, G = o.group_size;
  GenerateConfig sampling;
  sampling.sample = true;
  sampling.temperature = o.temperature;
  sampling.top_k = o.top_k;
  sampling.max_new_tokens = o.max_new_tokens;
  int iteration = done;
  auto stop_now = [&] {
    const bool cancel = o.train.cancel && o.train.cancel->load();
    const bool boxed = o.stop_after_iterations > 0 && iteration - done >= o.stop_after_iterations && iteration > done;
    return ranks_stop(group, cancel || boxed);  // all ranks stop at the same iteration
  };
  for (; iteration < o.iterations; ++iteration) {
    if (stop_now()) {
      save(iteration);
      report.cancelled = true;
      trainer.abandon();
      report.iterations = iteration;
      report.seconds = seconds_before + since(start);
      return report;
    }
    // This rank's share of the iteration's tasks: every world-th, each played G times.
    const auto sample_start = Clock::now();
    std::vector<std::size_t> slots;
    for (int j = rank; j < B; j += world) slots.push_back(static_cast<std::size_t>(j));
    std::vector<std::size_t> task_of(static_cast<std::size_t>(B));
    for (int j = 0; j < B; ++j) task_of[static_cast<std::size_t>(j)] = order.at(int64_t{iteration} * B + j);
    std::vector<std::unique_ptr<RlEpisode>> episodes;
    std::vector<Played> played;
    std::vector<uint64_t> episode_seeds;
    for (std::size_t slot : slots)
      for (int s = 0; s < G; ++s) {
        const std::size_t task = task_of[slot];
        const uint64_t seed = derive_seed(derive_seed(o.train.seed, static_cast<uint64_t>(iteration), task),
                                          static_cast<uint64_t>(s));
        episodes.push_back(train.episode(task, seed));
        played.push_back({slot, s, {}, {}, 0, 0});
        episode_seeds.push_back(seed);
      }
    play(model, episodes, played, sampling, o.generate_batch,
         [&](std::size_t e, int round) { return derive_seed(episode_seeds[e], 0xd1ce, static_cast<uint64_t>(round)); },
         o.copy_search);
    // Rewards to advantages, task by task.
    IterationSums sums;
    sums.kind_reward.assign(kinds.size(), 0);
    sums.kind_episodes.assign(kinds.size(), 0);
    std::vector<llama::RolloutGroup> groups;
    std::vector<int> minibatch;
    for (std::size_t g = 0; g < slots.size(); ++g) {
      std::vector<double> rewards;
      std::vector<const Played*> members;
      const std::size_t task = task_of[slots[g]];
      const auto kind = static_cast<std::size_t>(
          std::lower_bound(kinds.begin(), kinds.end(), train.kinds[task]) - kinds.begin());
      for (int s = 0; s < G; ++s) {
        const std::size_t e = g * static_cast<std::size_t>(G) + static_cast<std::size_t>(s);
        played[e].reward = episodes[e]->reward();
        rewards.push_back(played[e].reward);
        members.push_back(&played[e]);
        sums.reward += played[e].reward;
        sums.reward_sq += played[e].reward * played[e].reward;
        sums.kind_reward[kind] += played[e].reward;
        sums.kind_episodes[kind] += 1;
        for (const Turn& t : played[e].turns) {
          sums.completions += 1;
          sums.completion_tokens += static_cast<double>(t.completion.ids.size());
        }
      }
      sums.episodes += G;
      sums.groups += 1;
      const bool tied = llama::rewards_tied(rewards);
      sums.tied += tied;
      const double mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) / G;
      double sq = 0;
      for (double r : rewards) sq += (r - mean) * (r - mean);
      sums.group_std += std::sqrt(sq / G);
      std::vector<double> advantages = llama::group_advantages(rewards, o.algo);
      for (int s = 0; s < G; ++s)
        played[g * static_cast<std::size_t>(G) + static_cast<std::size_t>(s)].advantage =
            advantages[static_cast<std::size_t>(s)];
      for (llama::RolloutGroup& rg : groups_of(members, o.algo, o.skip_tied_groups, o.kl_coef > 0)) {
        groups.push_back(std::move(rg));
        minibatch.push_back(static_cast<int>(slots[g] * static_cast<std::size_t>(o.minibatches) / static_cast<std::size_t>(B)));
      }
    }
    sums.sample_seconds = since(sample_start);
    if (o.save_rollouts) {
      std::string lines;
      for (const Played& p : played) lines += rollout_line(iteration + 1, train.keys[task_of[p.slot]], p);
      append_file(rollouts, lines);
    }
    PolicyUpdateStats u = trainer.update(groups, minibatch);
    if (group) sums.assign(group->all_reduce_sum(sums.values()));
    report.episodes += static_cast<int64_t>(sums.episodes);
    report.completions += static_cast<int64_t>(sums.completions);
    report.train_tokens += u.tokens;
    report.sample_seconds += sums.sample_seconds / world;
    report.update_seconds += u.seconds;
    const double n = std::max(1.0, sums.episodes), mean = sums.reward / n;
    json point = {{"iteration", iteration + 1},
                  {"kind", "train"},
                  {"reward", mean},
                  {"reward_std", std::sqrt(std::max(0.0, sums.reward_sq / n - mean * mean))},
                  {"group_reward_std", sums.group_std / std::max(1.0, sums.groups)},
                  {"tie_share", sums.tied / std::max(1.0, sums.groups)},
                  {"loss", u.loss},
                  {"kl", u.kl},
                  {"entropy", u.entropy},
                  {"clip_fraction", u.clip_fraction},
                  {"grad_norm", u.grad_norm},
                  {"lr", u.lr},
                  {"completion_tokens", sums.completion_tokens / std::max(1.0, sums.completions)},
                  {"trained_tokens", u.tokens},
                  {"rollouts_per_s", sums.completions / std::max(1e-9, sums.sample_seconds / world)},
                  {"tokens_per_s", static_cast<double>(u.row_tokens) / std::max(1e-9, u.seconds)},
                  {"sample_seconds", sums.sample_seconds / world},
                  {"update_seconds", u.seconds}};
    for (std::size_t k = 0; k < kinds.size(); ++k)
      if (sums.kind_episodes[k] > 0) point["reward_" + kinds[k]] = sums.kind_reward[k] / sums.kind_episodes[k];
    add_point(point);
    if (lead && o.train.on_progress)
      o.train.on_progress({"rl", iteration + 1, o.iterations, 0, mean, point["tokens_per_s"].get<double>(), u.lr});
    if (lead && log && ((iteration + 1) % 10 == 0 || iteration + 1 == o.iterations))
      log(fmt::format("rl: iteration {}/{}: reward {:.4f}, groups without signal {:.2f}, KL {:.4f}, entropy {:.3f}, "
                      "clipped {:.3f}, {:.0f} rollouts/s, {:.0f} tokens/s",
                      iteration + 1, o.iterations, mean, point["tie_share"].get<double>(), u.kl, u.entropy,
                      u.clip_fraction, point["rollouts_per_s"].get<double>(), point["tokens_per_s"].get<double>()));
    const int finished = iteration + 1;
    if (o.eval_every > 0 && finished % o.eval_every == 0 && finished < o.iterations) evaluate(finished);
    if (finished % o.checkpoint_every == 0 || finished == o.iterations) save(finished);
  }
  report.iterations = iteration;
  report.last_eval = evaluate(iteration);
  report.have_eval = lead && eval.size() > 0;
  report.seconds = seconds_before + since(start);
  trainer.finish();
  return report;
}

}  // namespace pwab::puma
