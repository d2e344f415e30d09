// src/puma/stage_dpo.cpp: the second stage by preferences: sample (candidates), score (pairs) and dpo.
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "agents/puma_prompt.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/sys.h"
#include "core/text.h"
#include "puma/pipeline_run.h"
#include "puma/search_vocabulary.h"

namespace pwab::puma::stages {

namespace {

// The candidates of a group of prompts: in-process (beam-sample, or independent samples of several tasks in one
// batch) or from the server. A task's draws depend on the run's seed and the task alone, not on its neighbours.
class CandidateSampler {
 public:
  CandidateSampler(const PipelineRun& run, PumaModel* model) : run_(run), model_(model) {}
  //! Tasks sampled together in-process (their samples share forward batches).
  std::size_t group_size() const { return run_.ctx.sample_model || run_.o.sample_beams ? 1 : std::max(1, 32 / run_.o.samples); }

  std::vector<std::vector<std::string>> sample(const std::vector<const Example*>& group) {
    const PipelineOptions& o = run_.o;
    std::vector<std::vector<std::string>> out;
    if (run_.ctx.sample_model) {
      for (const Example* e : group) out.push_back(from_server(*e));
    } else if (o.sample_beams) {
      GenerateConfig g = config();
      g.num_beams = o.samples;
      g.batch_size = 1;
      for (const Example* e : group) {
        g.seed = task_seed(*e);
        g.allowed_tokens = {allowed(*e)};
        out.push_back(model_->generate({e->prompt}, g).at(0));
      }
    } else {
      GenerateConfig g = config();
      std::vector<std::string> prompts;
      for (const Example* e : group)
        for (int i = 0; i < o.samples; ++i) {
          prompts.push_back(e->prompt);
          g.prompt_seeds.push_back(derive_seed(task_seed(*e), static_cast<uint64_t>(i)));
          g.allowed_tokens.push_back(allowed(*e));
        }
      g.batch_size = static_cast<int>(prompts.size());
      auto generated = model_->generate(prompts, g);
      for (std::size_t t = 0; t < group.size(); ++t) {
        out.emplace_back();
        for (int i = 0; i < o.samples; ++i) out.back().push_back(generated[t * o.samples + i].at(0));
      }
    }
    for (auto& candidates : out)
      for (std::string& c : candidates) c = agents::puma_generated_part(c, "### Tool Parameter:\n");
    return out;
  }

 private:
  uint64_t task_seed(const Example& e) const { return derive_seed(run_.o.seed, hash_bytes(e.task)); }
  // The tokens a candidate may use: a search query's from its prompt with copy_search, else any (empty).
  std::vector<int32_t> allowed(const Example& e) const {
    if (!run_.o.copy_search || e.type != data::TaskType::kSearch) return {};
    return search_vocabulary(model_->tokenizer(), e.prompt);
  }
  GenerateConfig config() const {
    GenerateConfig g;
    g.max_new_tokens = run_.o.max_new_tokens;
    g.sample = true;
    g.temperature = run_.o.sample_temperature;
    g.top_k = run_.o.sample_top_k;
    return g;
  }
  std::vector<std::string> from_server(const Example& e) const {
    const PipelineOptions& o = run_.o;
    llm::ChatRequest req;
    req.model = run_.ctx.sample_model_name;
    req.prompt = e.prompt;
    req.temperature = o.sample_temperature;
    req.max_tokens = o.max_new_tokens;
    req.seed = static_cast<int64_t>(task_seed(e) >> 1);
    // The server decodes the query from the prompt's words as in-process sampling does (`pwab lm serve` honours
    // the field; a server that ignores it samples freely: docs/puma.md "Copy-constrained search queries").
    req.prompt_words_only = o.copy_search && e.type == data::TaskType::kSearch;
    // Every token is -1 on the wire: what vLLM (before and after it took 0 too) and `pwab lm serve` read as no top-k.
    req.top_k = o.sample_top_k > 0 ? o.sample_top_k : -1;
    req.extra_body_json = json{{"n", o.samples}}.dump();
    llm::ChatResponse r = run_.ctx.sample_model->chat(req);
    std::vector<std::string> out{r.message.content};
    out.insert(out.end(), r.more_choices.begin(), r.more_choices.end());
    return out;
  }
  const PipelineRun& run_;
  PumaModel* model_;
};

// Samples `examples` into `file` (JSONL: task, candidates), continuing a partial file written with the same
// settings; false when cancelled (the partial file stays for the next run).
bool sample_into(PipelineRun& run, CandidateSampler& sampler, const std::vector<Example>& examples,
                 const fs::path& file, const std::string& what, std::size_t* n_candidates) {
  fs::path part = file;
  part += ".part";
  std::set<std::string> done;
  if (fs::exists(part)) {
    std::string kept;  // without a last line an interruption cut short: that task is sampled again
    for (std::string_view line : split_lines(read_file(part))) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("task")) continue;
      done.insert(j["task"].get<std::string>());
      *n_candidates += j["candidates"].size();
      kept += std::string(line) + "\n";
    }
    if (!done.empty()) run.steps.log(fmt::format("{}: continuing after {} tasks sampled before", what, done.size()));
    write_file_atomic(part, kept);
  } else {
    write_file_atomic(part, "");
  }
  TaskProgress progress(run.steps, what, examples.size());
  std::vector<const Example*> pending;
  for (const Example& e : examples)
    if (!done.count(e.task)) pending.push_back(&e);
  std::size_t n = done.size();
  for (std::size_t start = 0; start < pending.size(); start += sampler.group_size()) {
    if (run.cancelled()) return false;
    std::vector<const Example*> group(pending.begin() + static_cast<std::ptrdiff_t>(start),
                                      pending.begin() + static_cast<std::ptrdiff_t>(
                                                            std::min(pending.size(), start + sampler.group_size())));
    std::vector<std::vector<std::string>> candidates = sampler.sample(group);
    std::string lines;
    for (std::size_t i = 0; i < group.size(); ++i) {
      *n_candidates += candidates[i].size();
      lines += json{{"task", group[i]->task}, {"candidates", candidates[i]}}.dump() + "\n";
    }
    append_file(part, lines);
    n += group.size();
    progress.done(n);
  }
  fs::rename(part, file);
  return true;
}

// Each task's candidates executed in the environment; best vs worst is the pair, ties give none (docs/decisions.md D7).
CandidateStats score_samples(const PipelineRun& run, const env::Environment& env, const fs::path& candidates,
                             const fs::path& params, const fs::path& pairs_out) {
  CandidateStats stats;
  std::map<std::string, std::string> prompts;
  for (const Example& e : read_examples(params)) prompts[e.task] = e.prompt;
  std::string lines;
  const std::string text = fs::exists(candidates) ? read_file(candidates) : std::string();
  for (std::string_view line : split_lines(text)) {
    if (trim(line).empty()) continue;
    json j = json::parse(line);
    const std::string key = j.at("task").get<std::string>();
    ScoredCandidates scored =
        score_candidates(env, task_of_key(run.ds, key), j.at("candidates").get<std::vector<std::string>>());
    if (scored.scores.empty()) continue;
    ++stats.tasks;
    const auto [lo, hi] = std::minmax_element(scored.scores.begin(), scored.scores.end());
    stats.mean_distinct += static_cast<double>(scored.candidates.size());
    stats.mean_best += *hi;
    stats.mean_worst += *lo;
    stats.mean_spread += *hi - *lo;
    auto pair = preference_pair(scored);
    if (!pair) {
      ++stats.tie_tasks;
      continue;
    }
    ++stats.pairs;
    stats.mean_margin += pair->chosen_score - pair->rejected_score;
    lines += json{{"task", key}, {"prompt", prompts.at(key)}, {"chosen", pair->chosen}, {"rejected", pair->rejected},
                  {"chosen_score", pair->chosen_score}, {"rejected_score", pair->rejected_score}}
                 .dump() +
             "\n";
  }
  if (stats.tasks) {
    const double n = stats.tasks;
    stats.mean_distinct /= n, stats.mean_best /= n, stats.mean_worst /= n, stats.mean_spread /= n;
  }
  if (stats.pairs) stats.mean_margin /= stats.pairs;
  write_file_atomic(pairs_out, lines);
  return stats;
}

json candidate_stats_json(const CandidateStats& s) {
  return {{"tasks", s.tasks},          {"pairs", s.pairs},           {"tie_tasks", s.tie_tasks},
          {"tie_share", s.tie_share()}, {"mean_distinct", s.mean_distinct}, {"mean_best", s.mean_best},
          {"mean_worst", s.mean_worst}, {"mean_spread", s.mean_spread}, {"mean_margin", s.mean_margin}};
}

CandidateStats candidate_stats_from_json(const json& j) {
  CandidateStats s;
  s.tasks = j.value("tasks", 0);
  s.pairs = j.value("pairs", 0);
  s.tie_tasks = j.value("tie_tasks", 0);
  s.mean_distinct = j.value("mean_distinct", 0.0);
  s.mean_best = j.value("mean_best", 0.0);
  s.mean_worst = j.value("mean_worst", 0.0);
  s.mean_spread = j.value("mean_spread", 0.0);
  s.mean_margin = j.value("mean_margin", 0.0);
  return s;
}

}  // namespace

// sample: diverse candidates for the train tasks' parameter prompts (ground-truth tool, as the DPO pairs' prompts),
// and for the first dpo_eval_tasks test tasks (the DPO evaluation pairs).
void sample_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  run.settings = run.settings_after_sft;  // the DPO branch starts after eval-sft
  run.steps.set_redoing(run.redo_after_sft);
  json s = {{"samples", o.samples}, {"temperature", o.sample_temperature}, {"top_k", o.sample_top_k},
            {"beams", o.sample_beams}, {"limit", o.sample_limit}, {"eval_tasks", o.dpo_eval_tasks},
            {"server", run.ctx.sample_model ? run.ctx.sample_model_name : ""}, {"seeds", "per-task"},
            {"sampler", "inverse-cdf"}};
  run.settings += s.dump();
  const fs::path sample_dir = run.dpo_dir / "sample";
  const fs::path partial_settings = sample_dir / ".partial-settings";
  if (run.steps.skip("sample", sample_dir, run.settings)) return;
  // partial files from an interrupted run count only when they were sampled with these settings
  if (!fs::exists(partial_settings) || read_file(partial_settings) != run.settings) {
    for (const char* f : {"candidates.jsonl.part", "candidates_test.jsonl.part"}) fs::remove(sample_dir / f);
    write_file_atomic(partial_settings, run.settings);
  }
  auto train = first_n(second_stage_examples(run, read_examples(run.data_dir / "param_train.jsonl")), o.sample_limit);
  auto test = o.dpo_eval_tasks > 0 ? first_n(read_examples(run.data_dir / "param_test.jsonl"), o.dpo_eval_tasks)
                                   : std::vector<Example>{};
  std::unique_ptr<PumaModel> model;
  if (!run.ctx.sample_model) model = PumaModel::open(run.sft_dir / "model", {}, o.model);
  CandidateSampler sampler(run, model.get());
  const auto start = std::chrono::steady_clock::now();
  std::size_t n_train = 0, n_test = 0;
  if (!sample_into(run, sampler, train, sample_dir / "candidates.jsonl", "sample (train)", &n_train) ||
      !sample_into(run, sampler, test, sample_dir / "candidates_test.jsonl", "sample (test, DPO eval pairs)", &n_test)) {
    run.report.cancelled = true;
    return;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_json(sample_dir / "report.json",
             {{"train_tasks", train.size()}, {"test_tasks", test.size()}, {"candidates", n_train + n_test},
              {"seconds", seconds}, {"candidates_per_s", static_cast<double>(n_train + n_test) / std::max(1e-9, seconds)},
              {"source", run.ctx.sample_model ? "server " + run.ctx.sample_model_name : "in-process"}});
  run.steps.log(fmt::format("sample: {} candidates for {} + {} tasks in {:.1f} s", n_train + n_test, train.size(),
                            test.size(), seconds));
  fs::remove(partial_settings);
  run.steps.mark("sample", sample_dir, run.settings);
}

// score: the preference pairs for DPO (score_samples), train pairs on the reward environment, the test pairs (DPO's
// evaluation) on the environment the benchmark scores with.
void score_step(PipelineRun& run) {
  const fs::path score_dir = run.dpo_dir / "score";
  const fs::path sample_dir = run.dpo_dir / "sample";
  if (const json reward = run.reward_settings(); !reward.empty()) run.settings += reward.dump();
  if (!run.steps.skip("score", score_dir, run.settings)) {
    CandidateStats train = score_samples(run, run.reward_env(), sample_dir / "candidates.jsonl",
                                         run.data_dir / "param_train.jsonl", score_dir / "pairs.jsonl");
    CandidateStats test = score_samples(run, *run.ctx.env, sample_dir / "candidates_test.jsonl",
                                        run.data_dir / "param_test.jsonl", score_dir / "pairs_test.jsonl");
    json report = candidate_stats_json(train);
    report["test"] = candidate_stats_json(test);
    write_json(score_dir / "report.json", report);
    run.steps.log(fmt::format("score: {} preference pairs from {} tasks ({} tied, no pair: D7), mean reward spread "
                              "{:.3f}; {} test pairs for the DPO evaluation",
                              train.pairs, train.tasks, train.tie_tasks, train.mean_spread, test.pairs));
    run.steps.mark("score", score_dir, run.settings);
  }
  json score_report = json::parse(read_file(score_dir / "report.json"));
  run.report.candidates = candidate_stats_from_json(score_report);
  run.report.preference_pairs = run.report.candidates.pairs;
  run.report.tie_tasks = run.report.candidates.tie_tasks;
}

// The preference pairs the score step wrote.
std::vector<PreferenceExample> read_preference_pairs(const fs::path& file) {
  std::vector<PreferenceExample> pairs;
  if (!fs::exists(file)) return pairs;
  const std::string pairs_text = read_file(file);  // the lines below point into it
  for (std::string_view line : split_lines(pairs_text)) {
    if (trim(line).empty()) continue;
    json j = json::parse(line);
    pairs.push_back({j.at("prompt"), j.at("chosen"), j.at("rejected")});
  }
  return pairs;
}

// dpo: DPO from the SFT model on the preference pairs; with no pair (or 0 epochs) the DPO model is the SFT model.
void dpo_step(PipelineRun& run) {
  run.settings += train_json(run.o.dpo).dump();
  if (run.steps.skip("dpo", run.dpo_dir, run.settings)) return tell_followers(run, "dpo", false);
  std::vector<PreferenceExample> pairs = read_preference_pairs(run.dpo_dir / "score" / "pairs.jsonl");
  std::vector<PreferenceExample> eval = read_preference_pairs(run.dpo_dir / "score" / "pairs_test.jsonl");
  auto model = PumaModel::open(run.sft_dir / "model", {}, run.o.model);
  if (pairs.empty() || run.o.dpo.epochs == 0) {
    tell_followers(run, "dpo", false);
    run.steps.log(pairs.empty() ? "dpo: no preference pairs (every task's candidates tied); the DPO model is the SFT model"
                                : "dpo: 0 epochs (no DPO); the DPO model is the SFT model");
    write_json(run.dpo_dir / "train.json", {{"steps", 0}, {"pairs", pairs.size()}});
  } else {
    TrainOptions opts = run.dpo_options;
    if (opts.lora) {
      opts.adapter_dir = run.dpo_dir / "adapter";
      opts.adapter_base_model = (run.sft_dir / "model").string();
    }
    run.steps.log(fmt::format("dpo: {} pairs, {} evaluation pairs", pairs.size(), eval.size()));
    claim_work_dir(run.dpo_dir / "work", run.settings);
    tell_followers(run, "dpo", true);
    TrainReport r = model->dpo(pairs, eval, run.dpo_dir / "work", opts);
    if (r.cancelled) {
      run.report.cancelled = true;
      return;
    }
    json j = train_report_json(r);
    j["pairs"] = pairs.size();
    j["eval_pairs"] = eval.size();
    write_json(run.dpo_dir / "train.json", j);
    run.steps.log(fmt::format("dpo: {} steps, loss {:.4f}, {:.1f} s{}", r.steps, r.train_loss, r.seconds,
                              r.have_eval_preferences
                                  ? fmt::format("; eval loss {:.4f}, margin {:.3f}, accuracy {:.3f}, KL {:.4f}",
                                                r.eval_preferences.loss, r.eval_preferences.margin,
                                                r.eval_preferences.accuracy, r.eval_preferences.kl)
                                  : ""));
  }
  model->save(run.dpo_dir / "model");
  run.steps.mark("dpo", run.dpo_dir, run.settings);
}

}  // namespace pwab::puma::stages
