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

}  // namespace

PipelineOptions PipelineOptions::tiny_preset() {
  PipelineOptions o;
  o.prepare.memory.k = 20;
  o.prepare.memory.max_tokens = 192;
  o.sft.epochs = 4;
  o.sft.learning_rate = 3e-3;
  o.sft.batch_size = 8;
  o.sft.accumulation_steps = 1;
  o.sft.warmup_ratio = 0.05;
  o.sft.max_length = 384;
  o.sft.lora = false;
  o.dpo = o.sft;
  o.dpo.epochs = 1;
  o.dpo.learning_rate = 5e-4;
  o.dpo.batch_size = 4;
  o.samples = 4;
  o.max_new_tokens = 48;
  o.function_repeats = 4;
  return o;
}

PipelineOptions PipelineOptions::paper_preset() {
  PipelineOptions o;
  o.sft.epochs = 10;
  o.sft.learning_rate = 3e-4;
  o.sft.batch_size = 1;
  o.sft.accumulation_steps = 16;
  o.sft.max_length = 1280;
  o.dpo = o.sft;
  o.dpo.epochs = 5;
  o.dpo.learning_rate = 5e-5;
  o.dpo.max_length = 1024;
  o.samples = 10;
  o.sample_temperature = 1.5;
  return o;
}

const std::vector<std::string>& pipeline_steps() {
  static const std::vector<std::string> steps = {"tokenizer", "prepare", "sft",      "eval-sft",
                                                 "sample",    "score",   "dpo",      "eval-dpo"};
  return steps;
}

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

PipelineReport run_pipeline(const PipelineContext& ctx, const PipelineOptions& o, const std::string& until) {
  if (!ctx.ds || !ctx.embedder || !ctx.env) throw UsageError("run_pipeline: dataset, embedder and environment needed");
  const auto& steps = pipeline_steps();
  if (!until.empty() && std::find(steps.begin(), steps.end(), until) == steps.end())
    throw UsageError("unknown pipeline step '" + until + "' (steps: tokenizer, prepare, sft, eval-sft, sample, "
                     "score, dpo, eval-dpo)");
  if (o.search_labels == "llm" && !ctx.search_labeler)
    throw UsageError("search labels from an LLM need --model (or use --search-labels heuristic)");
  const data::Dataset& ds = *ctx.ds;
  const bool tiny = o.base_model.empty();
  PipelineReport report;
  Steps st(ctx, report);
  auto reached = [&](const std::string& step) { return !until.empty() && step == until; };
  const fs::path base = tiny ? o.out / "base" : o.base_model;
  const fs::path data_dir = o.out / "data", sft_dir = o.out / "sft", dpo_dir = o.out / "dpo";
  TrainOptions sft_options = o.sft, dpo_options = o.dpo;
  sft_options.on_progress = dpo_options.on_progress = ctx.progress;
  sft_options.cancel = dpo_options.cancel = ctx.cancel;

  // tokenizer: the tiny preset's vocabulary from the dataset's text.
  std::string settings = json{{"tiny", tiny}, {"vocab", o.tiny_vocab_size}, {"base", o.base_model.string()}}.dump();
  if (tiny && !st.skip("tokenizer", base, settings)) {
    tok::SpmTrainOptions so;
    so.vocab_size = o.tiny_vocab_size;
    tok::train_sentencepiece(vocabulary_texts(ds), base, so);
    st.mark("tokenizer", base, settings);
  }
  if (reached("tokenizer")) return report;

  // prepare: the SFT examples, memory cut with the model's tokenizer.
  settings += json{{"k", o.prepare.memory.k}, {"tokens", o.prepare.memory.max_tokens},
                   {"fallback", o.prepare.recommend_fallback == RecommendFallback::kSkip ? "skip" : "recent"},
                   {"labels", o.search_labels}, {"train_limit", o.train_limit}, {"test_limit", o.test_limit},
                   {"prompts", std::string(agents::kPumaPromptsVersion)}, {"embedder", ctx.embedder->name()}}
                  .dump();
  if (!st.skip("prepare", data_dir, settings)) {
    auto counter = agents::tokenizer_token_counter(tok::load_tokenizer(base));
    SearchLabeler labeler = o.search_labels == "llm" ? ctx.search_labeler : heuristic_search_labeler(ds, *ctx.embedder);
    PrepareReport rep;
    write_examples(data_dir / "function_train.jsonl", first_n(function_examples(ds, data::Split::kTrain), o.train_limit));
    write_examples(data_dir / "function_test.jsonl", first_n(function_examples(ds, data::Split::kTest), o.test_limit));
    auto train_params = param_examples(ds, data::Split::kTrain, *ctx.embedder, *counter, labeler, o.prepare, &rep);
    const std::size_t used = o.train_limit > 0 ? std::min(train_params.size(), static_cast<std::size_t>(o.train_limit))
                                               : train_params.size();
    write_examples(data_dir / "param_train.jsonl", first_n(std::move(train_params), o.train_limit));
    write_examples(data_dir / "param_test.jsonl",
                   first_n(param_examples(ds, data::Split::kTest, *ctx.embedder, *counter, labeler, o.prepare),
                           o.test_limit));
    write_json(data_dir / "report.json", {{"train_tasks", rep.tasks}, {"train_examples", rep.examples},
                                          {"recommend_fallbacks", rep.recommend_fallbacks}, {"skipped", rep.skipped},
                                          {"train_examples_used", used}});
    st.log(fmt::format("prepare: {} train parameter examples ({} used), {} D8 fallbacks, {} skipped", rep.examples,
                       used, rep.recommend_fallbacks, rep.skipped));
    st.mark("prepare", data_dir, settings);
  }
  if (reached("prepare")) return report;

  // sft: function + parameter examples together (the original's function_param).
  settings += train_json(o.sft).dump() + json{{"device", o.model.device}, {"dtype", o.model.dtype}, {"seed", o.seed},
                                              {"function_repeats", o.function_repeats}}.dump();
  if (!st.skip("sft", sft_dir, settings)) {
    std::vector<TrainPair> train;
    auto functions = pairs_of(read_examples(data_dir / "function_train.jsonl"));
    for (int copy = 0; copy < std::max(1, o.function_repeats); ++copy)
      train.insert(train.end(), functions.begin(), functions.end());
    auto more = pairs_of(read_examples(data_dir / "param_train.jsonl"));
    train.insert(train.end(), more.begin(), more.end());
    auto eval = pairs_of(read_examples(data_dir / "function_test.jsonl"));
    auto eval_params = pairs_of(read_examples(data_dir / "param_test.jsonl"));
    eval.insert(eval.end(), eval_params.begin(), eval_params.end());
    auto model = open_or_create(base, o, tiny);
    st.log("sft: " + model->describe() + ", " + std::to_string(train.size()) + " pairs");
    TrainReport r = model->sft(train, eval, sft_dir / "work", sft_options);
    if (r.cancelled) {
      report.cancelled = true;
      return report;
    }
    model->save(sft_dir / "model");
    write_json(sft_dir / "train.json", {{"steps", r.steps}, {"train_loss", r.train_loss}, {"eval_loss", r.eval_loss},
                                        {"seconds", r.seconds}, {"resumed", r.resumed}});
    st.log(fmt::format("sft: {} steps, train loss {:.4f}, eval loss {:.4f}, {:.1f} s", r.steps, r.train_loss,
                       r.eval_loss, r.seconds));
    st.mark("sft", sft_dir, settings);
  }
  if (reached("sft")) return report;

  auto test_tasks = task_list(ds, data::Split::kTest, o.test_limit);
  settings += json{{"max_new_tokens", o.max_new_tokens}}.dump();
  if (!st.skip("eval-sft", sft_dir / "eval", settings)) {
    auto model = PumaModel::open(sft_dir / "model", {}, o.model);
    evaluate_model(*model, ctx, o, test_tasks, sft_dir / "eval");
    st.mark("eval-sft", sft_dir / "eval", settings);
  }
  report.sft = fast_test_from_json(json::parse(read_file(sft_dir / "eval" / "fast_test.json")));
  report.have_sft = true;
  if (reached("eval-sft")) return report;

  // sample: diverse candidates for the train tasks' parameter prompts (ground-truth tool, as the DPO pairs' prompts).
  settings += json{{"samples", o.samples}, {"temperature", o.sample_temperature}}.dump();
  const fs::path sample_dir = dpo_dir / "sample";
  if (!st.skip("sample", sample_dir, settings)) {
    auto examples = read_examples(data_dir / "param_train.jsonl");
    auto model = PumaModel::open(sft_dir / "model", {}, o.model);
    std::vector<std::string> prompts;
    for (const Example& e : examples) prompts.push_back(e.prompt);
    GenerateConfig g;
    g.max_new_tokens = o.max_new_tokens;
    g.sample = true;
    g.temperature = o.sample_temperature;
    g.num_beams = o.samples;
    g.seed = o.seed;
    g.batch_size = 1;
    std::string lines;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      if (ctx.cancel && ctx.cancel->load()) {
        report.cancelled = true;
        return report;
      }
      auto candidates = model->generate({prompts[i]}, g).at(0);
      for (std::string& c : candidates) c = agents::puma_generated_part(c, "### Tool Parameter:\n");
      lines += json{{"task", examples[i].task}, {"candidates", candidates}}.dump() + "\n";
    }
    write_file_atomic(sample_dir / "candidates.jsonl", lines);
    st.mark("sample", sample_dir, settings);
  }
  if (reached("sample")) return report;

  // score: each candidate executed in the environment; best vs worst pairs, ties skipped (D7).
  const fs::path score_dir = dpo_dir / "score";
  if (!st.skip("score", score_dir, settings)) {
    auto examples = read_examples(data_dir / "param_train.jsonl");
    std::map<std::string, const Example*> by_task;
    for (const Example& e : examples) by_task[e.task] = &e;
    std::string text = read_file(sample_dir / "candidates.jsonl"), pairs_lines;
    int pairs = 0, ties = 0;
    for (std::string_view line : split_lines(text)) {
      if (trim(line).empty()) continue;
      json j = json::parse(line);
      std::string key = j.at("task").get<std::string>();
      const data::Task& task = ds.tasks(data::Split::kTrain).at(std::stoul(key.substr(key.find('/') + 1)));
      ScoredCandidates scored = score_candidates(*ctx.env, task, j.at("candidates").get<std::vector<std::string>>());
      auto pair = preference_pair(scored);
      if (!pair) {
        ++ties;
        continue;
      }
      ++pairs;
      pairs_lines += json{{"task", key}, {"prompt", by_task.at(key)->prompt}, {"chosen", pair->chosen},
                          {"rejected", pair->rejected}, {"chosen_score", pair->chosen_score},
                          {"rejected_score", pair->rejected_score}}
                         .dump() +
                     "\n";
    }
    write_file_atomic(score_dir / "pairs.jsonl", pairs_lines);
    write_json(score_dir / "report.json", {{"pairs", pairs}, {"tie_tasks", ties}});
    st.log(fmt::format("score: {} preference pairs, {} tasks skipped as ties (D7)", pairs, ties));
    st.mark("score", score_dir, settings);
  }
  json score_report = json::parse(read_file(score_dir / "report.json"));
  report.preference_pairs = score_report.at("pairs").get<int>();
  report.tie_tasks = score_report.at("tie_tasks").get<int>();
  if (reached("score")) return report;

  settings += train_json(o.dpo).dump();
  if (!st.skip("dpo", dpo_dir, settings)) {
    std::vector<PreferenceExample> pairs;
    const std::string pairs_text = read_file(score_dir / "pairs.jsonl");  // the lines below point into it
    for (std::string_view line : split_lines(pairs_text)) {
      if (trim(line).empty()) continue;
      json j = json::parse(line);
      pairs.push_back({j.at("prompt"), j.at("chosen"), j.at("rejected")});
    }
    auto model = PumaModel::open(sft_dir / "model", {}, o.model);
    if (pairs.empty()) {
      st.log("dpo: no preference pairs (every task's candidates tied); the DPO model is the SFT model");
    } else {
      TrainReport r = model->dpo(pairs, dpo_dir / "work", dpo_options);
      if (r.cancelled) {
        report.cancelled = true;
        return report;
      }
      st.log(fmt::format("dpo: {} steps, loss {:.4f}, {:.1f} s", r.steps, r.train_loss, r.seconds));
    }
    model->save(dpo_dir / "model");
    st.mark("dpo", dpo_dir, settings);
  }
  if (reached("dpo")) return report;

  if (!st.skip("eval-dpo", dpo_dir / "eval", settings)) {
    auto model = PumaModel::open(dpo_dir / "model", {}, o.model);
    evaluate_model(*model, ctx, o, test_tasks, dpo_dir / "eval");
    st.mark("eval-dpo", dpo_dir / "eval", settings);
  }
  report.dpo = fast_test_from_json(json::parse(read_file(dpo_dir / "eval" / "fast_test.json")));
  report.have_dpo = true;
  return report;
}

}  // namespace pwab::puma
