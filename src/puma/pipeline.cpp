// src/puma/pipeline.cpp: run_pipeline as the list of its steps (pipeline_steps()), one function per step:
// tokenizer_step, prepare_step, sft_step, eval_sft_step, sample_step, score_step, dpo_step, eval_dpo_step. The
// state they share (the context, the folders, the settings so far, the report) is a PipelineRun.
#include "puma/pipeline.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agents/puma_prompt.h"
#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "env/tools.h"
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
  return {{"epochs", o.epochs},         {"lr", o.learning_rate},          {"batch", o.batch_size},
          {"accum", o.accumulation_steps}, {"warmup", o.warmup_ratio},   {"max_length", o.max_length},
          {"seed", o.seed},             {"lora", o.lora},                 {"r", o.lora_r},
          {"alpha", o.lora_alpha},      {"beta", o.dpo_beta}};
}

// A step is skipped when its `.done` holds the same settings and no earlier step was redone.
class Steps {
 public:
  Steps(const PipelineContext& ctx, PipelineReport& report) : ctx_(ctx), report_(report) {}
  bool skip(const std::string& step, const fs::path& dir, const std::string& settings) {
    fs::path done = dir / ".done";
    if (!redo_rest_ && fs::exists(done) && read_file(done) == settings) {
      report_.skipped_steps.push_back(step);
      log(step + ": done before with the same settings, skipped");
      return true;
    }
    redo_rest_ = true;  // everything after a redone step depends on it
    fs::create_directories(dir);
    if (fs::exists(done)) fs::remove(done);
    log(step + ": running");
    return false;
  }
  void mark(const std::string& step, const fs::path& dir, const std::string& settings) {
    write_file_atomic(dir / ".done", settings);
    report_.ran_steps.push_back(step);
  }
  void log(const std::string& line) const {
    if (ctx_.log) ctx_.log(line);
  }

 private:
  const PipelineContext& ctx_;
  PipelineReport& report_;
  bool redo_rest_ = false;
};

// The dataset's own text for the tiny preset's vocabulary: instructions, product titles and categories, reviews,
// and the prompts' fixed wording.
std::vector<std::string> vocabulary_texts(const data::Dataset& ds) {
  std::vector<std::string> texts;
  for (data::Split s : {data::Split::kTrain, data::Split::kTest})
    for (const data::Task& t : ds.tasks(s)) texts.push_back(agents::puma_function_prompt(t.instruction));
  for (const data::Product& p : ds.products())
    texts.push_back("Title:" + p.title + "\nMain Category:" + p.main_category + "\nPrice:" + p.price.str() +
                    "\nAsin:" + p.parent_asin + "\n");
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

// What the steps share: the inputs, the folders, the report, and the settings so far. Each step appends its own
// settings to `settings` before it checks its `.done`, so a step's `.done` holds the settings of every step up to
// it: a changed setting redoes its step and every later one even across runs.
struct PipelineRun {
  PipelineRun(const PipelineContext& context, const PipelineOptions& options, PipelineReport& into)
      : ctx(context), o(options), ds(*context.ds), report(into), steps(context, into),
        tiny(options.base_model.empty()), base(tiny ? options.out / "base" : options.base_model),
        data_dir(options.out / "data"), sft_dir(options.out / "sft"), dpo_dir(options.out / "dpo"),
        sft_options(options.sft), dpo_options(options.dpo) {
    sft_options.on_progress = dpo_options.on_progress = context.progress;
    sft_options.cancel = dpo_options.cancel = context.cancel;
  }
  const PipelineContext& ctx;
  const PipelineOptions& o;
  const data::Dataset& ds;
  PipelineReport& report;
  Steps steps;
  const bool tiny;      // the tiny preset: a model from scratch over a vocabulary learnt from the dataset
  const fs::path base;  // the model SFT starts from
  const fs::path data_dir, sft_dir, dpo_dir;
  TrainOptions sft_options, dpo_options;  // the options with the context's progress and cancel
  std::string settings;
};

// tokenizer: the tiny preset's vocabulary from the dataset's text.
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
                                            {"train_examples_used", used}});
  run.steps.log(fmt::format("prepare: {} train parameter examples ({} used), {} D8 fallbacks, {} skipped",
                            rep.examples, used, rep.recommend_fallbacks, rep.skipped));
  run.steps.mark("prepare", run.data_dir, run.settings);
}

// The SFT data: the function examples (`function_repeats` copies) then the parameter examples; the evaluation
// pairs are the test split's function and parameter examples.
std::pair<std::vector<TrainPair>, std::vector<TrainPair>> sft_pairs(const PipelineRun& run) {
  std::vector<TrainPair> train;
  auto functions = pairs_of(read_examples(run.data_dir / "function_train.jsonl"));
  for (int copy = 0; copy < std::max(1, run.o.function_repeats); ++copy)
    train.insert(train.end(), functions.begin(), functions.end());
  auto more = pairs_of(read_examples(run.data_dir / "param_train.jsonl"));
  train.insert(train.end(), more.begin(), more.end());
  auto eval = pairs_of(read_examples(run.data_dir / "function_test.jsonl"));
  auto eval_params = pairs_of(read_examples(run.data_dir / "param_test.jsonl"));
  eval.insert(eval.end(), eval_params.begin(), eval_params.end());
  return {std::move(train), std::move(eval)};
}

// sft: function + parameter examples together (the original's function_param).
void sft_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  run.settings += train_json(o.sft).dump() + json{{"device", o.model.device}, {"dtype", o.model.dtype},
                                                  {"seed", o.seed}, {"function_repeats", o.function_repeats}}
                                                 .dump();
  if (run.steps.skip("sft", run.sft_dir, run.settings)) return;
  auto [train, eval] = sft_pairs(run);
  auto model = open_or_create(run.base, o, run.tiny);
  run.steps.log("sft: " + model->describe() + ", " + std::to_string(train.size()) + " pairs");
  TrainReport r = model->sft(train, eval, run.sft_dir / "work", run.sft_options);
  if (r.cancelled) {
    run.report.cancelled = true;
    return;
  }
  model->save(run.sft_dir / "model");
  write_json(run.sft_dir / "train.json", {{"steps", r.steps}, {"train_loss", r.train_loss}, {"eval_loss", r.eval_loss},
                                          {"seconds", r.seconds}, {"resumed", r.resumed}});
  run.steps.log(fmt::format("sft: {} steps, train loss {:.4f}, eval loss {:.4f}, {:.1f} s", r.steps, r.train_loss,
                            r.eval_loss, r.seconds));
  run.steps.mark("sft", run.sft_dir, run.settings);
}

// The fast test of the model in `dir`/model on the test split (eval-sft, eval-dpo), written to `dir`/eval; its
// result, run now or before, is returned.
FastTestResult evaluate_step(PipelineRun& run, const std::string& step, const fs::path& dir) {
  const fs::path eval_dir = dir / "eval";
  if (!run.steps.skip(step, eval_dir, run.settings)) {
    auto model = PumaModel::open(dir / "model", {}, run.o.model);
    evaluate_model(*model, run.ctx, run.o, task_list(run.ds, data::Split::kTest, run.o.test_limit), eval_dir);
    run.steps.mark(step, eval_dir, run.settings);
  }
  return fast_test_from_json(json::parse(read_file(eval_dir / "fast_test.json")));
}

// eval-sft: the fast test of the SFT model.
void eval_sft_step(PipelineRun& run) {
  run.settings += json{{"max_new_tokens", run.o.max_new_tokens}}.dump();
  run.report.sft = evaluate_step(run, "eval-sft", run.sft_dir);
  run.report.have_sft = true;
}

// sample: diverse candidates for the train tasks' parameter prompts (ground-truth tool, as the DPO pairs' prompts).
void sample_step(PipelineRun& run) {
  const PipelineOptions& o = run.o;
  run.settings += json{{"samples", o.samples}, {"temperature", o.sample_temperature}}.dump();
  const fs::path sample_dir = run.dpo_dir / "sample";
  if (run.steps.skip("sample", sample_dir, run.settings)) return;
  auto examples = read_examples(run.data_dir / "param_train.jsonl");
  auto model = PumaModel::open(run.sft_dir / "model", {}, o.model);
  GenerateConfig g;
  g.max_new_tokens = o.max_new_tokens;
  g.sample = true;
  g.temperature = o.sample_temperature;
  g.num_beams = o.samples;
  g.seed = o.seed;
  g.batch_size = 1;
  std::string lines;
  for (const Example& e : examples) {
    if (run.ctx.cancel && run.ctx.cancel->load()) {
      run.report.cancelled = true;
      return;
    }
    auto candidates = model->generate({e.prompt}, g).at(0);
    for (std::string& c : candidates) c = agents::puma_generated_part(c, "### Tool Parameter:\n");
    lines += json{{"task", e.task}, {"candidates", candidates}}.dump() + "\n";
  }
  write_file_atomic(sample_dir / "candidates.jsonl", lines);
  run.steps.mark("sample", sample_dir, run.settings);
}

// The DPO pairs of the sampled candidates (pairs.jsonl lines) and how many tasks gave one or tied.
struct ScoredSamples {
  std::string pairs_lines;
  int pairs = 0, ties = 0;
};

// Each train task's candidates executed in the environment; best vs worst is the pair, ties give none (D7).
ScoredSamples score_samples(const PipelineRun& run) {
  auto examples = read_examples(run.data_dir / "param_train.jsonl");
  std::map<std::string, const Example*> by_task;
  for (const Example& e : examples) by_task[e.task] = &e;
  const std::string text = read_file(run.dpo_dir / "sample" / "candidates.jsonl");
  ScoredSamples out;
  for (std::string_view line : split_lines(text)) {
    if (trim(line).empty()) continue;
    json j = json::parse(line);
    std::string key = j.at("task").get<std::string>();
    const data::Task& task = run.ds.tasks(data::Split::kTrain).at(std::stoul(key.substr(key.find('/') + 1)));
    ScoredCandidates scored = score_candidates(*run.ctx.env, task, j.at("candidates").get<std::vector<std::string>>());
    auto pair = preference_pair(scored);
    if (!pair) {
      ++out.ties;
      continue;
    }
    ++out.pairs;
    out.pairs_lines += json{{"task", key}, {"prompt", by_task.at(key)->prompt}, {"chosen", pair->chosen},
                            {"rejected", pair->rejected}, {"chosen_score", pair->chosen_score},
                            {"rejected_score", pair->rejected_score}}
                           .dump() +
                       "\n";
  }
  return out;
}

// score: the preference pairs for DPO (score_samples).
void score_step(PipelineRun& run) {
  const fs::path score_dir = run.dpo_dir / "score";
  if (!run.steps.skip("score", score_dir, run.settings)) {
    ScoredSamples s = score_samples(run);
    write_file_atomic(score_dir / "pairs.jsonl", s.pairs_lines);
    write_json(score_dir / "report.json", {{"pairs", s.pairs}, {"tie_tasks", s.ties}});
    run.steps.log(fmt::format("score: {} preference pairs, {} tasks skipped as ties (D7)", s.pairs, s.ties));
    run.steps.mark("score", score_dir, run.settings);
  }
  json score_report = json::parse(read_file(score_dir / "report.json"));
  run.report.preference_pairs = score_report.at("pairs").get<int>();
  run.report.tie_tasks = score_report.at("tie_tasks").get<int>();
}

// The preference pairs the score step wrote.
std::vector<PreferenceExample> read_preference_pairs(const fs::path& file) {
  std::vector<PreferenceExample> pairs;
  const std::string pairs_text = read_file(file);  // the lines below point into it
  for (std::string_view line : split_lines(pairs_text)) {
    if (trim(line).empty()) continue;
    json j = json::parse(line);
    pairs.push_back({j.at("prompt"), j.at("chosen"), j.at("rejected")});
  }
  return pairs;
}

// dpo: DPO from the SFT model on the preference pairs; with no pair the DPO model is the SFT model.
void dpo_step(PipelineRun& run) {
  run.settings += train_json(run.o.dpo).dump();
  if (run.steps.skip("dpo", run.dpo_dir, run.settings)) return;
  std::vector<PreferenceExample> pairs = read_preference_pairs(run.dpo_dir / "score" / "pairs.jsonl");
  auto model = PumaModel::open(run.sft_dir / "model", {}, run.o.model);
  if (pairs.empty()) {
    run.steps.log("dpo: no preference pairs (every task's candidates tied); the DPO model is the SFT model");
  } else {
    TrainReport r = model->dpo(pairs, run.dpo_dir / "work", run.dpo_options);
    if (r.cancelled) {
      run.report.cancelled = true;
      return;
    }
    run.steps.log(fmt::format("dpo: {} steps, loss {:.4f}, {:.1f} s", r.steps, r.train_loss, r.seconds));
  }
  model->save(run.dpo_dir / "model");
  run.steps.mark("dpo", run.dpo_dir, run.settings);
}

// eval-dpo: the fast test of the DPO model.
void eval_dpo_step(PipelineRun& run) {
  run.report.dpo = evaluate_step(run, "eval-dpo", run.dpo_dir);
  run.report.have_dpo = true;
}

// The steps in order; pipeline_steps() lists their names.
struct PipelineStep {
  const char* name;
  void (*run)(PipelineRun&);
};
constexpr PipelineStep kSteps[] = {{"tokenizer", tokenizer_step}, {"prepare", prepare_step},
                                   {"sft", sft_step},             {"eval-sft", eval_sft_step},
                                   {"sample", sample_step},       {"score", score_step},
                                   {"dpo", dpo_step},             {"eval-dpo", eval_dpo_step}};

}  // namespace

FastTestResult evaluate_model(PumaModel& model, const PipelineContext& ctx, const PipelineOptions& o,
                              const std::vector<const data::Task*>& tasks, const fs::path& dir) {
  const data::Dataset& ds = *ctx.ds;
  auto counter = agents::tokenizer_token_counter(model.shared_tokenizer());
  std::vector<std::string> function_prompts;
  for (const data::Task* t : tasks) function_prompts.push_back(agents::puma_function_prompt(t->instruction));
  GenerateConfig g;
  g.max_new_tokens = o.function_max_new_tokens;
  auto generated = model.generate(function_prompts, g);
  std::map<std::string, std::string, std::less<>> functions, params;
  json functions_json = json::object(), params_json = json::object();
  std::vector<std::string> param_prompts;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    std::string text = agents::puma_generated_part(generated[i].at(0), "### Tool:\n");
    std::string fn(trim(std::string_view(text).substr(0, text.find('\n'))));
    functions[tasks[i]->instruction] = fn;
    functions_json[tasks[i]->instruction] = json::array({fn});
    std::optional<data::TaskType> type = env::task_type_of_function(fn);
    std::string memory = agents::puma_memory(ds, *tasks[i], type, *ctx.embedder, o.prepare.memory, *counter);
    param_prompts.push_back(agents::puma_param_prompt(agents::puma_instruction_text(ds, *tasks[i], type), memory, fn));
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

PipelineReport run_pipeline(const PipelineContext& ctx, const PipelineOptions& o, const std::string& until) {
  if (!ctx.ds || !ctx.embedder || !ctx.env) throw UsageError("run_pipeline: dataset, embedder and environment needed");
  const auto& steps = pipeline_steps();
  if (!until.empty() && std::find(steps.begin(), steps.end(), until) == steps.end())
    throw UsageError(fmt::format("unknown pipeline step '{}' (steps: {})", until, fmt::join(steps, ", ")));
  if (o.search_labels == "llm" && !ctx.search_labeler)
    throw UsageError("search labels from an LLM need --model (or use --search-labels heuristic)");
  PipelineReport report;
  PipelineRun run(ctx, o, report);
  for (const PipelineStep& step : kSteps) {
    step.run(run);
    if (report.cancelled || step.name == until) break;  // cancelled: the same command resumes
  }
  return report;
}

}  // namespace pwab::puma
