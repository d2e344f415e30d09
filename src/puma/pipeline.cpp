// src/puma/pipeline.cpp: run_pipeline as the list of its steps (pipeline_steps()), one function per step:
// tokenizer_step, prepare_step, sft_step, eval_sft_step, sample_step, score_step, dpo_step, eval_dpo_step. The
// state they share (the context, the folders, the settings so far, the report) is a PipelineRun.
#include "puma/pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "agents/puma_prompt.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/sys.h"
#include "core/text.h"
#include "llama/distributed.h"
#include "env/tools.h"
#include "puma/rl_tasks.h"
#include "runner/results.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::vector<TrainPair> pairs_of(const std::vector<Example>& examples) {
  std::vector<TrainPair> out;
  for (const Example& e : examples) out.push_back({e.prompt, e.target});
  return out;
}

template <typename T>
std::vector<T> first_n(std::vector<T> v, int n) {
  if (n > 0 && v.size() > static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
  return v;
}

json train_json(const TrainOptions& o) {
  return {{"epochs", o.epochs},
          {"lr", o.learning_rate},
          {"batch", o.batch_size},
          {"accum", o.accumulation_steps},
          {"warmup", o.warmup_ratio},
          {"max_length", o.max_length},
          {"max_prompt_length", o.max_prompt_length},
          {"truncation", o.prompt_truncation == PromptTruncation::kKeepEnd ? "keep_end" : "keep_start"},
          {"seed", o.seed},
          {"group_by_length", o.group_by_length},
          {"lora", o.lora},
          {"r", o.lora_r},
          {"alpha", o.lora_alpha},
          {"modules_to_save", o.lora_modules_to_save},
          {"beta", o.dpo_beta},
          {"rpo_alpha", o.rpo_alpha},
          {"clip", o.max_grad_norm}};
}

json shape_json(const ModelShape& s) {
  return {{"hidden", s.hidden}, {"layers", s.layers}, {"heads", s.heads},
          {"kv_heads", s.kv_heads}, {"ffn", s.ffn},        {"tied", s.tie_embeddings}};
}

// A step is skipped when its `.done` holds the same settings and no earlier step was redone, or taken over from the
// reuse directory (PipelineOptions::reuse_from) when that directory did the step with the same settings.
class Steps {
 public:
  Steps(const PipelineContext& ctx, PipelineReport& report, fs::path out, fs::path reuse)
      : ctx_(ctx), report_(report), out_(std::move(out)), reuse_(std::move(reuse)) {}
  bool skip(const std::string& step, const fs::path& dir, const std::string& settings) {
    fs::path done = dir / ".done";
    if (!redo_rest_ && fs::exists(done) && read_file(done) == settings) {
      report_.skipped_steps.push_back(step);
      log(step + ": done before with the same settings, skipped");
      return true;
    }
    if (!redo_rest_ && reuse(step, dir, settings)) return true;
    redo_rest_ = true;  // everything after a redone step depends on it
    fs::create_directories(dir);
    if (fs::exists(done)) fs::remove(done);
    log(step + ": running");
    started_ = std::chrono::steady_clock::now();
    return false;
  }
  void mark(const std::string& step, const fs::path& dir, const std::string& settings) {
    write_file_atomic(dir / ".done", settings);
    report_.ran_steps.push_back(step);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    write_file_atomic(dir / ".seconds", fmt::format("{:.3f}\n", seconds));
  }
  void log(const std::string& line) const {
    if (ctx_.log) ctx_.log(line);
  }
  //! Whether an earlier step was redone (so every later one is): the second-stage branches start from the state
  //! after eval-sft, not from each other's.
  bool redoing() const { return redo_rest_; }
  void set_redoing(bool redoing) { redo_rest_ = redoing; }

 private:
  // The same step done with the same settings in the reuse directory: its files are hard-linked into place (they
  // are only ever replaced by rename, never written in place), except the folders of later steps nested in it.
  bool reuse(const std::string& step, const fs::path& dir, const std::string& settings) {
    if (reuse_.empty()) return false;
    const fs::path rel = dir.lexically_relative(out_);
    if (rel.empty() || *rel.begin() == "..") return false;
    const fs::path from = reuse_ / rel;
    if (!fs::exists(from / ".done") || read_file(from / ".done") != settings) return false;
    if (fs::exists(dir)) {
      for (const auto& entry : fs::directory_iterator(dir))
        if (!nested_step(entry.path().filename().string())) fs::remove_all(entry.path());
    }
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(from)) {
      const std::string name = entry.path().filename().string();
      if (nested_step(name)) continue;
      fs::copy(entry.path(), dir / name, fs::copy_options::recursive | fs::copy_options::create_hard_links);
    }
    report_.skipped_steps.push_back(step);
    log(step + ": done with the same settings in " + reuse_.string() + ", reused");
    return true;
  }
  static bool nested_step(const std::string& name) { return name == "eval" || name == "sample" || name == "score"; }

  const PipelineContext& ctx_;
  PipelineReport& report_;
  fs::path out_, reuse_;
  bool redo_rest_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// A training step's work folder (checkpoint, curve) belongs to the settings it was started with: a resume with
// other settings starts over instead of continuing someone else's checkpoint.
void claim_work_dir(const fs::path& work, const std::string& settings) {
  const fs::path mine = work / ".settings";
  if (fs::exists(work) && (!fs::exists(mine) || read_file(mine) != settings)) fs::remove_all(work);
  write_file_atomic(mine, settings);
}

// The dataset's own text for the from-scratch presets' vocabulary: instructions, product titles and categories,
// reviews, and the prompts' fixed wording.
std::vector<std::string> vocabulary_texts(const data::Dataset& ds) {
  std::vector<std::string> texts;
  for (data::Split s : {data::Split::kTrain, data::Split::kTest})
    for (const data::Task& t : ds.tasks(s)) texts.push_back(agents::puma_function_prompt(t.instruction));
  for (const data::Product& p : ds.products()) {
    texts.push_back("Title:" + p.title + "\nMain Category:" + p.main_category + "\nPrice:" + p.price.str() +
                    "\nStore:" + p.store.value_or("") + "\nAsin:" + p.parent_asin + "\n");
    texts.push_back(ascii_lower(p.title));  // instructions and queries name products in lower case
  }
  for (const data::User& u : ds.users())
    for (const data::Behaviour& b : u.behaviours) texts.push_back("Rating:" + b.review.rating.str() + "\nText:" + b.review.text);
  texts.push_back(agents::puma_param_prompt("x", "none", std::string(env::kSearch)));
  for (std::string_view tool : {env::kSearch, env::kRecommend, env::kAddReview, std::string_view("Say: stop")})
    texts.push_back(std::string(tool));
  return texts;
}

std::unique_ptr<PumaModel> open_or_create(const fs::path& dir, const PipelineOptions& o, bool from_scratch) {
  if (from_scratch) {
    TinyOptions t;
    t.seed = o.seed;
    t.shape = o.shape;
    return PumaModel::create_tiny(dir, t, o.model);
  }
  return PumaModel::open(dir, {}, o.model);
}

void write_json(const fs::path& file, const json& j) { write_file_atomic(file, j.dump(2) + "\n"); }

json fast_test_json(const FastTestResult& r) {
  json j = json::object();
  auto row = [](const FastTestRow& x) {
    return json{{"total", x.total}, {"function_acc", x.function_acc}, {"result_acc", x.result_acc}};
  };
  for (const auto& [type, x] : r.by_type) j[type] = row(x);
  j["overall"] = row(r.overall);
  return j;
}

FastTestResult fast_test_from_json(const json& j) {
  FastTestResult r;
  auto row = [](const json& x) {
    return FastTestRow{x.at("total").get<int>(), x.at("function_acc").get<double>(), x.at("result_acc").get<double>()};
  };
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() == "overall") r.overall = row(it.value());
    else r.by_type[it.key()] = row(it.value());
  return r;
}

std::vector<const data::Task*> task_list(const data::Dataset& ds, data::Split split, int limit) {
  std::vector<const data::Task*> out;
  for (const data::Task& t : ds.tasks(split)) {
    if (limit > 0 && out.size() >= static_cast<std::size_t>(limit)) break;
    out.push_back(&t);
  }
  return out;
}


// Progress lines for a long loop over tasks: done, rate, ETA, every ~30 s.
class TaskProgress {
 public:
  TaskProgress(const Steps& steps, std::string what, std::size_t total)
      : steps_(steps), what_(std::move(what)), total_(total) {}
  void done(std::size_t n) {
    auto now = std::chrono::steady_clock::now();
    if (n < total_ && std::chrono::duration<double>(now - last_).count() < 30) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(n) / std::max(1e-9, secs);
    steps_.log(fmt::format("{}: {}/{} tasks, {:.2f} tasks/s, ETA {:.0f} s", what_, n, total_, rate,
                           rate > 0 ? static_cast<double>(total_ - n) / rate : 0.0));
  }

 private:
  const Steps& steps_;
  std::string what_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
};

// What the steps share: the inputs, the folders, the report, and the settings so far. Each step appends its own
// settings to `settings` before it checks its `.done`, so a step's `.done` holds the settings of every step up to
// it: a changed setting redoes its step and every later one even across runs.
struct PipelineRun {
  PipelineRun(const PipelineContext& context, const PipelineOptions& options, PipelineReport& into)
      : ctx(context), o(options), ds(*context.ds), report(into), steps(context, into, options.out, options.reuse_from),
        tiny(options.base_model.empty()), base(tiny ? options.out / "base" : options.base_model),
        data_dir(options.out / "data"), sft_dir(options.out / "sft"), dpo_dir(options.out / "dpo"),
        rl_dir(options.out / "rl"), sft_options(options.sft), dpo_options(options.dpo), rl_options(options.rl.train) {
    sft_options.on_progress = dpo_options.on_progress = rl_options.on_progress = context.progress;
    sft_options.cancel = dpo_options.cancel = rl_options.cancel = context.cancel;
  }
  const PipelineContext& ctx;
  const PipelineOptions& o;
  const data::Dataset& ds;
  PipelineReport& report;
  Steps steps;
  const bool tiny;      // a from-scratch model over a vocabulary learnt from the dataset
  const fs::path base;  // the model SFT starts from
  const fs::path data_dir, sft_dir, dpo_dir, rl_dir;
  TrainOptions sft_options, dpo_options, rl_options;  // the options with the context's progress and cancel
  std::string settings;
  // Where the second-stage branches start from: the settings up to eval-sft and whether a step up to it was redone.
  std::string settings_after_sft;
  bool redo_after_sft = false;
  //! Data-parallel: this process's group (null for one process). Rank 0 runs every step; the others join the
  //! training steps only, when rank 0 announces that it trains (tell_followers).
  llama::ProcessGroup* group = nullptr;
  std::set<std::string> told;  // the training steps announced so far
  bool cancelled() const { return ctx.cancel && ctx.cancel->load(); }
};

// Whether a train task is held out of SFT for the second stage (PipelineOptions::holdout): the last `holdout` of
// the train tasks used.
bool held_out(const PipelineRun& run, const std::string& task) {
  if (run.o.holdout <= 0) return false;
  const auto& tasks = run.ds.tasks(data::Split::kTrain);
  const std::size_t used = run.o.train_limit > 0 ? std::min<std::size_t>(tasks.size(), run.o.train_limit) : tasks.size();
  const data::Task& t = task_of_key(run.ds, task);
  return t.split == data::Split::kTrain && t.index + static_cast<std::size_t>(run.o.holdout) >= used;
}

// The train examples of a prepared file the second stage uses: the held-out ones when there is a holdout.
std::vector<Example> second_stage_examples(const PipelineRun& run, std::vector<Example> examples) {
  if (run.o.holdout > 0) std::erase_if(examples, [&](const Example& e) { return !held_out(run, e.task); });
  return examples;
}

// Data-parallel: rank 0 tells the other ranks whether a training step trains (they then join it) or not.
void tell_followers(PipelineRun& run, const std::string& step, bool train) {
  if (!run.group || run.told.count(step)) return;
  run.group->announce(step, train ? "train" : "skip");
  run.told.insert(step);
}

// tokenizer: the from-scratch vocabulary from the dataset's text.
void tokenizer_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  run.settings = json{{"tiny", run.tiny}, {"vocab", o.tiny_vocab_size}, {"base", o.base_model.string()}}.dump();
  if (!run.tiny || run.steps.skip("tokenizer", run.base, run.settings)) return;
  tok::SpmTrainOptions so;
  so.vocab_size = o.tiny_vocab_size;
  tok::train_sentencepiece(vocabulary_texts(run.ds), run.base, so);
  run.steps.mark("tokenizer", run.base, run.settings);
}

// prepare: the SFT examples, memory cut with the model's tokenizer.
void prepare_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  const data::Dataset& ds = run.ds;
  const embed::Embedder& embedder = *run.ctx.embedder;
  run.settings += json{{"k", o.prepare.memory.k}, {"tokens", o.prepare.memory.max_tokens},
                       {"fallback", o.prepare.recommend_fallback == RecommendFallback::kSkip ? "skip" : "recent"},
                       {"recommend_length", o.prepare.recommend_length},
                       {"labels", o.search_labels}, {"train_limit", o.train_limit}, {"test_limit", o.test_limit},
                       {"prompts", std::string(agents::kPumaPromptsVersion)}, {"embedder", embedder.name()}}
                      .dump();
  if (run.steps.skip("prepare", run.data_dir, run.settings)) return;
  auto counter = agents::tokenizer_token_counter(tok::load_tokenizer(run.base));
  SearchLabeler labeler = o.search_labels == "llm" ? run.ctx.search_labeler : heuristic_search_labeler(ds, embedder);
  PrepareReport rep;
  write_examples(run.data_dir / "function_train.jsonl", first_n(function_examples(ds, data::Split::kTrain), o.train_limit));
  write_examples(run.data_dir / "function_test.jsonl", first_n(function_examples(ds, data::Split::kTest), o.test_limit));
  auto train_params = param_examples(ds, data::Split::kTrain, embedder, *counter, labeler, o.prepare, &rep);
  const std::size_t used = o.train_limit > 0 ? std::min(train_params.size(), static_cast<std::size_t>(o.train_limit))
                                             : train_params.size();
  write_examples(run.data_dir / "param_train.jsonl", first_n(std::move(train_params), o.train_limit));
  write_examples(run.data_dir / "param_test.jsonl",
                 first_n(param_examples(ds, data::Split::kTest, embedder, *counter, labeler, o.prepare), o.test_limit));
  write_json(run.data_dir / "report.json", {{"train_tasks", rep.tasks}, {"train_examples", rep.examples},
                                            {"recommend_fallbacks", rep.recommend_fallbacks}, {"skipped", rep.skipped},
                                            {"train_examples_used", used}, {"search_labels_llm", rep.search_labels_llm},
                                            {"search_labels_heuristic", rep.search_labels_heuristic}});
  run.steps.log(fmt::format("prepare: {} train parameter examples ({} used), {} D8 fallbacks, {} skipped",
                            rep.examples, used, rep.recommend_fallbacks, rep.skipped));
  run.steps.mark("prepare", run.data_dir, run.settings);
}

// Each example floor(w) times, and once more when its own draw (seeded by the run and the task) falls below the
// fractional part: the same rows on every run with these settings.
void add_weighted(std::vector<TrainPair>& out, const std::vector<Example>& examples, double weight, uint64_t seed,
                  const char* kind) {
  const int whole = static_cast<int>(weight);
  const double part = weight - whole;
  for (const Example& e : examples) {
    int copies = whole;
    if (part > 0 && Rng(derive_seed(seed, hash_bytes(std::string(kind) + e.task))).uniform() < part) ++copies;
    for (int i = 0; i < copies; ++i) out.push_back({e.prompt, e.target});
  }
}

// The SFT data by the SFT mode and the weights; the evaluation pairs are the test split's examples of the same
// kinds, unweighted.
std::pair<std::vector<TrainPair>, std::vector<TrainPair>> sft_pairs(const PipelineRun& run) {
  std::vector<TrainPair> train, eval;
  const SftWeights& w = run.o.sft_weights;
  auto sft_part = [&](std::vector<Example> examples) {  // without the tasks held out for the second stage
    if (run.o.holdout > 0) std::erase_if(examples, [&](const Example& e) { return held_out(run, e.task); });
    return examples;
  };
  if (run.o.sft_mode != SftMode::kParam) {
    add_weighted(train, sft_part(read_examples(run.data_dir / "function_train.jsonl")), w.function, run.o.seed,
                 "function");
    eval = pairs_of(read_examples(run.data_dir / "function_test.jsonl"));
  }
  if (run.o.sft_mode != SftMode::kFunction) {
    std::map<data::TaskType, std::vector<Example>> by_type;
    for (Example& e : sft_part(read_examples(run.data_dir / "param_train.jsonl"))) by_type[e.type].push_back(std::move(e));
    add_weighted(train, by_type[data::TaskType::kSearch], w.search, run.o.seed, "search");
    add_weighted(train, by_type[data::TaskType::kRecommend], w.recommend, run.o.seed, "recommend");
    add_weighted(train, by_type[data::TaskType::kReview], w.review, run.o.seed, "review");
    auto eval_params = pairs_of(read_examples(run.data_dir / "param_test.jsonl"));
    eval.insert(eval.end(), eval_params.begin(), eval_params.end());
  }
  if (train.empty()) throw UsageError("the SFT data is empty: every weight of the SFT mode's examples is 0");
  return {std::move(train), std::move(eval)};
}

json train_report_json(const TrainReport& r) {
  json j = {{"steps", r.steps},       {"train_loss", r.train_loss}, {"eval_loss", r.eval_loss},
            {"seconds", r.seconds},   {"resumed", r.resumed},       {"tokens", r.tokens},
            {"tokens_per_s", r.tokens_per_s}, {"truncated_rows", r.truncated_rows}, {"ranks", r.world}};
  if (r.world > 1) {
    j["comm_seconds"] = r.comm_seconds;
    j["bytes_all_reduced"] = r.bytes_all_reduced;
  }
  if (r.have_eval_preferences) {
    const PreferenceStats& p = r.eval_preferences;
    j["eval"] = {{"loss", p.loss},       {"margin", p.margin},           {"accuracy", p.accuracy},
                 {"kl", p.kl},           {"chosen_reward", p.chosen_reward}, {"rejected_reward", p.rejected_reward}};
  }
  return j;
}

// sft: function + parameter examples (the SFT mode); epochs 0 = no SFT, the base model goes on as it is.
void sft_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  json extra = {{"device", o.model.device}, {"dtype", o.model.dtype}, {"seed", o.seed}, {"holdout", o.holdout},
                {"weights", to_string(o.sft_weights)}, {"mode", std::string(to_string(o.sft_mode))}};
  if (run.tiny) extra["shape"] = shape_json(o.shape);
  run.settings += train_json(o.sft).dump() + extra.dump();
  if (run.steps.skip("sft", run.sft_dir, run.settings)) return tell_followers(run, "sft", false);
  auto [train, eval] = sft_pairs(run);
  auto model = open_or_create(run.base, o, run.tiny);
  run.steps.log("sft: " + model->describe() + ", " + std::to_string(train.size()) + " pairs" +
                (o.sft.epochs == 0 ? " (0 epochs: no SFT, the base model is kept)" : ""));
  TrainOptions opts = run.sft_options;
  if (opts.lora) {
    opts.adapter_dir = run.sft_dir / "adapter";
    opts.adapter_base_model = run.base.string();
  }
  claim_work_dir(run.sft_dir / "work", run.settings);
  tell_followers(run, "sft", o.sft.epochs > 0);
  TrainReport r = model->sft(train, eval, run.sft_dir / "work", opts);
  if (r.cancelled) {
    run.report.cancelled = true;
    return;
  }
  model->save(run.sft_dir / "model");
  write_json(run.sft_dir / "train.json", train_report_json(r));
  run.steps.log(fmt::format("sft: {} steps, train loss {:.4f}, eval loss {:.4f}, {:.1f} s, {:.0f} tokens/s{}", r.steps,
                            r.train_loss, r.eval_loss, r.seconds, r.tokens_per_s,
                            r.world > 1 ? fmt::format(" on {} ranks ({:.1f} s in collectives)", r.world, r.comm_seconds)
                                        : ""));
  run.steps.mark("sft", run.sft_dir, run.settings);
}

// The fast test of the model in `dir`/model on the test split (eval-sft, eval-dpo), written to `dir`/eval; its
// result, run now or before, is returned.
FastTestResult evaluate_step(PipelineRun& run, const std::string& step, const fs::path& dir) {
  const fs::path eval_dir = dir / "eval";
  if (!run.steps.skip(step, eval_dir, run.settings)) {
    auto model = PumaModel::open(dir / "model", {}, run.o.model);
    FastTestResult r =
        evaluate_model(*model, run.ctx, run.o, task_list(run.ds, data::Split::kTest, run.o.test_limit), eval_dir);
    run.steps.log(fmt::format("{}: function acc {:.3f}, result acc {:.3f} (search {:.3f}, recommend {:.3f}, review "
                              "{:.3f})",
                              step, r.overall.function_acc, r.overall.result_acc, r.by_type["search"].result_acc,
                              r.by_type["recommend"].result_acc, r.by_type["review"].result_acc));
    run.steps.mark(step, eval_dir, run.settings);
  }
  return fast_test_from_json(json::parse(read_file(eval_dir / "fast_test.json")));
}

// eval-sft: the fast test of the SFT model.
void eval_sft_step(PipelineRun& run) {
  run.settings += json{{"max_new_tokens", run.o.max_new_tokens}, {"function_file", run.o.function_file.string()}}.dump();
  run.report.sft = evaluate_step(run, "eval-sft", run.sft_dir);
  run.report.have_sft = true;
  run.settings_after_sft = run.settings;
  run.redo_after_sft = run.steps.redoing();
}

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
        out.push_back(model_->generate({e->prompt}, g).at(0));
      }
    } else {
      GenerateConfig g = config();
      std::vector<std::string> prompts;
      for (const Example* e : group)
        for (int i = 0; i < o.samples; ++i) {
          prompts.push_back(e->prompt);
          g.prompt_seeds.push_back(derive_seed(task_seed(*e), static_cast<uint64_t>(i)));
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
    json extra = {{"n", o.samples}};
    if (o.sample_top_k > 0) extra["top_k"] = o.sample_top_k;
    req.extra_body_json = extra.dump();
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

// Each task's candidates executed in the environment; best vs worst is the pair, ties give none (docs/decisions.md D7).
CandidateStats score_samples(const PipelineRun& run, const fs::path& candidates, const fs::path& params,
                             const fs::path& pairs_out) {
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
        score_candidates(*run.ctx.env, task_of_key(run.ds, key), j.at("candidates").get<std::vector<std::string>>());
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

// score: the preference pairs for DPO (score_samples), train and test.
void score_step(PipelineRun& run) {
  const fs::path score_dir = run.dpo_dir / "score";
  const fs::path sample_dir = run.dpo_dir / "sample";
  if (!run.steps.skip("score", score_dir, run.settings)) {
    CandidateStats train = score_samples(run, sample_dir / "candidates.jsonl", run.data_dir / "param_train.jsonl",
                                         score_dir / "pairs.jsonl");
    CandidateStats test = score_samples(run, sample_dir / "candidates_test.jsonl", run.data_dir / "param_test.jsonl",
                                        score_dir / "pairs_test.jsonl");
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

// eval-dpo: the fast test of the DPO model.
void eval_dpo_step(PipelineRun& run) {
  run.report.dpo = evaluate_step(run, "eval-dpo", run.dpo_dir);
  run.report.have_dpo = true;
}

// The RL step's settings (what its `.done` adds to the settings after eval-sft).
json rl_json(const PipelineOptions& o) {
  const RlOptions& r = o.rl;
  json types = json::array();
  for (data::TaskType t : o.rl_types) types.push_back(std::string(data::to_string(t)));
  return {{"algo", std::string(llama::to_string(r.algo))}, {"iterations", r.iterations},
          {"tasks", r.tasks_per_iteration}, {"group", r.group_size}, {"temperature", r.temperature},
          {"top_k", r.top_k}, {"max_new_tokens", r.max_new_tokens}, {"clip_low", r.clip_low},
          {"clip_high", r.clip_high}, {"kl", r.kl_coef}, {"loss_norm", r.per_sequence ? "sequence" : "token"},
          {"inner_epochs", r.inner_epochs},
          {"minibatches", r.minibatches}, {"skip_tied", r.skip_tied_groups}, {"eval_every", r.eval_every},
          {"track", o.rl_track == env::Track::kMultiTurn ? "multi" : "single"}, {"types", types},
          {"eval_tasks", o.rl_eval_tasks}, {"max_steps", o.rl_max_steps}, {"function", o.rl_function},
          {"train", train_json(r.train)}};
}

// At most `limit` items spread evenly over `items` (all when limit is 0 or more than there are): an evaluation
// set that sees every part of the split.
template <typename T>
std::vector<T> spread_subset(const std::vector<T>& items, int limit) {
  if (limit <= 0 || items.size() <= static_cast<std::size_t>(limit)) return items;
  std::vector<T> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(limit); ++i) out.push_back(items[i * items.size() / limit]);
  return out;
}

std::vector<Example> of_types(std::vector<Example> examples, const std::vector<data::TaskType>& types) {
  std::erase_if(examples, [&](const Example& e) { return std::find(types.begin(), types.end(), e.type) == types.end(); });
  return examples;
}

// What an RL run plays: the train and evaluation tasks of its track, and what they need to stay alive.
struct RlSetup {
  std::unique_ptr<PumaModel> model;
  MultiTurnWorld world;
  RlTasks train, eval;
};

RlSetup rl_setup(const PipelineRun& run) {
  const PipelineOptions& o = run.o;
  RlSetup s;
  s.model = PumaModel::open(run.sft_dir / "model", {}, o.model);
  if (o.rl_track == env::Track::kSingleTurn) {
    s.train = single_turn_rl_tasks(
        *run.ctx.env, of_types(second_stage_examples(run, read_examples(run.data_dir / "param_train.jsonl")), o.rl_types),
        o.rl_function);
    s.eval = single_turn_rl_tasks(
        *run.ctx.env, spread_subset(of_types(read_examples(run.data_dir / "param_test.jsonl"), o.rl_types), o.rl_eval_tasks));
    if (o.rl_eval_tasks == 0) s.eval = RlTasks{};
  } else {
    s.world.env = run.ctx.env;
    s.world.embedder = run.ctx.embedder;
    s.world.memory = o.prepare.memory;
    s.world.counter = agents::tokenizer_token_counter(s.model->shared_tokenizer());
    s.world.max_steps = o.rl_max_steps;
    auto of = [&](data::Split split, int limit) {
      std::vector<const data::Task*> out;
      for (const data::Task* t : task_list(run.ds, split, limit))
        if (std::find(o.rl_types.begin(), o.rl_types.end(), t->type) != o.rl_types.end() &&
            (split == data::Split::kTest || o.holdout <= 0 || held_out(run, data::task_key(*t))))
          out.push_back(t);
      return out;
    };
    s.train = multi_turn_rl_tasks(s.world, of(data::Split::kTrain, o.train_limit));
    if (o.rl_eval_tasks > 0)
      s.eval = multi_turn_rl_tasks(s.world, spread_subset(of(data::Split::kTest, o.test_limit), o.rl_eval_tasks));
  }
  if (s.train.size() == 0) throw UsageError("rl: no train task of the chosen types (--rl-types)");
  return s;
}

RlOptions rl_options(const PipelineRun& run) {
  RlOptions r = run.o.rl;
  r.train = run.rl_options;
  if (r.train.lora) {
    r.train.adapter_dir = run.rl_dir / "adapter";
    r.train.adapter_base_model = (run.sft_dir / "model").string();
  }
  return r;
}

json rl_report_json(const RlReport& r) {
  json j = {{"iterations", r.iterations}, {"resumed", r.resumed}, {"seconds", r.seconds}, {"episodes", r.episodes},
            {"completions", r.completions}, {"train_tokens", r.train_tokens}, {"sample_seconds", r.sample_seconds},
            {"update_seconds", r.update_seconds}, {"eval_seconds", r.eval_seconds}, {"ranks", r.world},
            {"rollouts_per_s", static_cast<double>(r.completions) / std::max(1e-9, r.sample_seconds)}};
  if (r.have_eval) {
    auto e = [](const RlEvaluation& x) {
      json k = {{"reward", x.reward}, {"tasks", x.tasks}};
      for (const auto& [kind, v] : x.by_kind) k["reward_" + kind] = v;
      return k;
    };
    if (!r.resumed) j["first_eval"] = e(r.first_eval);
    j["last_eval"] = e(r.last_eval);
  }
  return j;
}

// rl: online RL from the SFT model on the environment's reward (rl.h); the RL model is the result.
void rl_step(PipelineRun& run) {
  run.settings = run.settings_after_sft + rl_json(run.o).dump();  // the RL branch starts after eval-sft
  run.steps.set_redoing(run.redo_after_sft);
  if (run.steps.skip("rl", run.rl_dir, run.settings)) return tell_followers(run, "rl", false);
  RlSetup s = rl_setup(run);
  const RlOptions& r = run.o.rl;
  run.steps.log(fmt::format("rl: {} ({}), {} iterations of {} tasks × {} episodes, {} train tasks, {} evaluation tasks",
                            s.model->describe(), llama::to_string(r.algo), r.iterations, r.tasks_per_iteration,
                            r.group_size, s.train.size(), s.eval.size()));
  claim_work_dir(run.rl_dir / "work", run.settings);
  tell_followers(run, "rl", true);
  RlReport report = train_rl(*s.model, s.train, s.eval, run.rl_dir / "work", rl_options(run), run.ctx.log);
  if (report.cancelled) {
    run.report.cancelled = true;
    return;
  }
  s.model->save(run.rl_dir / "model");
  write_json(run.rl_dir / "train.json", rl_report_json(report));
  run.steps.log(fmt::format("rl: {} iterations, {} episodes in {:.1f} s (sampling {:.1f} s, updates {:.1f} s){}",
                            report.iterations, report.episodes, report.seconds, report.sample_seconds,
                            report.update_seconds,
                            report.have_eval ? fmt::format("; greedy reward {:.4f} → {:.4f}",
                                                           report.first_eval.reward, report.last_eval.reward)
                                             : ""));
  run.steps.mark("rl", run.rl_dir, run.settings);
}

// eval-rl: the fast test of the RL model.
void eval_rl_step(PipelineRun& run) {
  run.report.rl = evaluate_step(run, "eval-rl", run.rl_dir);
  run.report.have_rl = true;
}

// The steps in order; pipeline_steps() lists their names.
struct PipelineStep {
  const char* name;
  void (*run)(PipelineRun&);
};
constexpr PipelineStep kSteps[] = {{"tokenizer", tokenizer_step}, {"prepare", prepare_step},
                                   {"sft", sft_step},             {"eval-sft", eval_sft_step},
                                   {"sample", sample_step},       {"score", score_step},
                                   {"dpo", dpo_step},             {"eval-dpo", eval_dpo_step},
                                   {"rl", rl_step},               {"eval-rl", eval_rl_step}};

// The settings a report names, written at each run (the steps' `.done` files hold them as they ran).
json options_json(const PipelineOptions& o, const PipelineContext& ctx) {
  json j = {{"preset", o.preset},
            {"base_model", o.base_model.empty() ? "(from scratch)" : o.base_model.string()},
            {"seed", o.seed},
            {"embedder", ctx.embedder ? ctx.embedder->name() : ""},
            {"search_labels", o.search_labels},
            {"memory", {{"k", o.prepare.memory.k}, {"tokens", o.prepare.memory.max_tokens}}},
            {"sft_mode", std::string(to_string(o.sft_mode))},
            {"sft_weights", to_string(o.sft_weights)},
            {"sft", train_json(o.sft)},
            {"dpo", train_json(o.dpo)},
            {"samples", o.samples},
            {"sample_temperature", o.sample_temperature},
            {"sample_beams", o.sample_beams},
            {"max_new_tokens", o.max_new_tokens},
            {"train_limit", o.train_limit},
            {"holdout", o.holdout},
            {"align", o.align},
            {"test_limit", o.test_limit},
            {"sample_limit", o.sample_limit},
            {"dpo_eval_tasks", o.dpo_eval_tasks},
            {"device", o.model.device},
            {"dtype", o.model.dtype}};
  if (o.base_model.empty()) {
    j["shape"] = shape_json(o.shape);
    j["vocab"] = o.tiny_vocab_size;
  }
  return j;
}

}  // namespace

FastTestResult evaluate_model(PumaModel& model, const PipelineContext& ctx, const PipelineOptions& o,
                              const std::vector<const data::Task*>& tasks, const fs::path& dir) {
  const data::Dataset& ds = *ctx.ds;
  auto counter = agents::tokenizer_token_counter(model.shared_tokenizer());
  std::map<std::string, std::string, std::less<>> functions, params;
  json functions_json = json::object(), params_json = json::object();
  GenerateConfig g;
  g.batch_size = 8;
  if (!o.function_file.empty()) {
    Predictions given = read_predictions(o.function_file);
    for (const data::Task* t : tasks) {
      auto it = given.find(t->instruction);
      std::string fn = it == given.end() || it->second.empty() ? "" : std::string(trim(it->second.front()));
      functions[t->instruction] = fn;
      functions_json[t->instruction] = json::array({fn});
    }
  } else {
    std::vector<std::string> function_prompts;
    for (const data::Task* t : tasks) function_prompts.push_back(agents::puma_function_prompt(t->instruction));
    g.max_new_tokens = o.function_max_new_tokens;
    auto generated = model.generate(function_prompts, g);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      std::string fn = agents::puma_function_from_completion(generated[i].at(0));
      functions[tasks[i]->instruction] = fn;
      functions_json[tasks[i]->instruction] = json::array({fn});
    }
  }
  std::vector<std::string> param_prompts;
  for (const data::Task* t : tasks) {
    const std::string& fn = functions[t->instruction];
    std::optional<data::TaskType> type = env::task_type_of_function(fn);
    std::string memory = agents::puma_memory(ds, *t, type, *ctx.embedder, o.prepare.memory, *counter);
    param_prompts.push_back(agents::puma_param_prompt(agents::puma_instruction_text(ds, *t, type), memory, fn));
  }
  g.max_new_tokens = o.max_new_tokens;
  auto param_texts = model.generate(param_prompts, g);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::string p = agents::puma_generated_part(param_texts[i].at(0), "### Tool Parameter:\n");
    params[tasks[i]->instruction] = p;
    params_json[tasks[i]->instruction] = json::array({p});
  }
  fs::create_directories(dir);
  write_json(dir / "functions.json", functions_json);
  write_json(dir / "params.json", params_json);
  FastTestResult r = fast_test(*ctx.env, tasks, functions, params);
  std::string lines;
  for (const FastTestTask& t : r.tasks)
    lines += json{{"task", t.task}, {"type", std::string(data::to_string(t.type))}, {"function", t.function},
                  {"f", t.f}, {"r", t.r}}
                 .dump() +
             "\n";
  write_file_atomic(dir / "scores.jsonl", lines);
  write_json(dir / "fast_test.json", fast_test_json(r));
  return r;
}

const std::vector<std::string>& pipeline_steps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PipelineStep& s : kSteps) out.emplace_back(s.name);
    return out;
  }();
  return names;
}

// The training steps as a rank other than 0 takes part in them: the same inputs and model as rank 0 builds (read
// from the pipeline directory rank 0 wrote), trained together; rank 0 writes every result.
void follow_sft(PipelineRun& run) {
  auto [train, eval] = sft_pairs(run);
  auto model = open_or_create(run.base, run.o, run.tiny);
  model->sft(train, eval, run.sft_dir / "work", run.sft_options);
}

void follow_dpo(PipelineRun& run) {
  std::vector<PreferenceExample> pairs = read_preference_pairs(run.dpo_dir / "score" / "pairs.jsonl");
  std::vector<PreferenceExample> eval = read_preference_pairs(run.dpo_dir / "score" / "pairs_test.jsonl");
  auto model = PumaModel::open(run.sft_dir / "model", {}, run.o.model);
  model->dpo(pairs, eval, run.dpo_dir / "work", run.dpo_options);
}

void follow_rl(PipelineRun& run) {
  RlSetup s = rl_setup(run);
  train_rl(*s.model, s.train, s.eval, run.rl_dir / "work", rl_options(run));
}

PipelineReport follow_pipeline(PipelineRun& run, PipelineReport& report, const std::string& until) {
  for (const PipelineStep& step : kSteps) {
    const std::string name = step.name;
    if (name == "sft" || name == "dpo" || name == "rl") {
      const bool train = run.group->wait_for(name) == "train";
      run.steps.log(fmt::format("rank {}: {} {}", run.group->rank(), name, train ? "starts" : "is not trained now"));
      if (train) (name == "sft" ? follow_sft : name == "dpo" ? follow_dpo : follow_rl)(run);
    }
    if (name == until) break;
  }
  return report;
}

PipelineReport run_pipeline(const PipelineContext& ctx, const PipelineOptions& o, const std::string& until) {
  if (!ctx.ds || !ctx.embedder || !ctx.env) throw UsageError("run_pipeline: dataset, embedder and environment needed");
  const auto& steps = pipeline_steps();
  if (!until.empty() && std::find(steps.begin(), steps.end(), until) == steps.end())
    throw UsageError(fmt::format("unknown pipeline step '{}' (steps: {})", until, fmt::join(steps, ", ")));
  if (o.search_labels == "llm" && !ctx.search_labeler)
    throw UsageError("search labels from an LLM need --model (or use --search-labels heuristic)");
  if (o.samples < 1) throw UsageError("samples must be at least 1");
  if (o.holdout > 0) {
    const std::size_t train_tasks = ctx.ds->tasks(data::Split::kTrain).size();
    const std::size_t used = o.train_limit > 0 ? std::min<std::size_t>(train_tasks, o.train_limit) : train_tasks;
    if (static_cast<std::size_t>(o.holdout) >= used)
      throw UsageError(fmt::format("--holdout {} would keep all {} train tasks out of SFT: pass a smaller --holdout "
                                   "(0: the second stage learns on the SFT tasks)",
                                   o.holdout, used));
  }
  PipelineReport report;
  PipelineRun run(ctx, o, report);
  // Started as several processes (torchrun, srun): join the group; rank 0 runs the pipeline, the others train.
  std::unique_ptr<llama::ProcessGroup> group;
  if (llama::DistEnv env = llama::dist_env_from_environment(); env.world > 1) {
    // The ranks on a host share its cores (OMP_NUM_THREADS, when set, is the user's choice and wins): read by
    // the models when they load.
    if (!std::getenv("OMP_NUM_THREADS")) ::setenv("OMP_NUM_THREADS", std::to_string(env.threads).c_str(), 1);
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.dist_timeout_s * 1000));
    group = std::make_unique<llama::ProcessGroup>(env, timeout, o.model.device);
    run.group = run.sft_options.group = run.dpo_options.group = run.rl_options.group = group.get();
    report.rank = env.rank;
    report.world = env.world;
    run.steps.log(fmt::format("rank {} of {} ({}, {}), rendezvous at {}:{}, {} threads", env.rank, env.world,
                              env.launcher, group->backend(), env.master_addr, env.master_port,
                              std::getenv("OMP_NUM_THREADS")));
    if (env.rank != 0) {
      run.sft_options.on_progress = run.dpo_options.on_progress = run.rl_options.on_progress = nullptr;
      return follow_pipeline(run, report, until);
    }
  }
  fs::create_directories(o.out);
  write_json(o.out / "options.json", options_json(o, ctx));
  // The second stage: the branch the last step asked for belongs to, else the one --align names.
  const std::string branch = pipeline_branch(until).empty() ? parse_align(o.align) : pipeline_branch(until);
  for (const PipelineStep& step : kSteps) {
    const std::string own = pipeline_branch(step.name);
    if (!own.empty() && own != branch) {
      if (own == "dpo" ? step.name == std::string("dpo") : step.name == std::string("rl"))
        tell_followers(run, step.name, false);  // the other ranks stop waiting for a training step not taken
      continue;
    }
    step.run(run);
    if (report.cancelled || step.name == until) break;  // cancelled: the same command resumes
  }
  // The training steps not reached are not trained now: the other ranks may stop waiting for them.
  for (const char* step : {"sft", "dpo", "rl"}) tell_followers(run, step, false);
  write_pipeline_report(o.out);
  return report;
}

}  // namespace pwab::puma
