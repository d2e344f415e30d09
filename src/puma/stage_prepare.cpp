// src/puma/stage_prepare.cpp: the tokenizer and prepare steps: a from-scratch vocabulary, the SFT examples.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agents/puma_prompt.h"
#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "env/tools.h"
#include "puma/dialogue_data.h"
#include "puma/pipeline_run.h"

namespace pwab::puma::stages {

namespace {

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

// The multi-turn track's step cap (docs/decisions.md §3.3: the scripts use 10), for the teacher's episodes.
constexpr int kDialogueSteps = 10;

bool wants_dialogue(const PipelineOptions& o) { return o.sft_weights.dialogue > 0 && o.sft_mode != SftMode::kFunction; }

// The multi-turn examples: the teacher's multi-turn episodes of the train tasks (dialogue_data.h).
void dialogue_data(PipelineRun& run, const agents::TokenCounter& counter) {
  const PipelineOptions& o = run.o;
  if (!run.ctx.dialogue_teacher) throw UsageError("prepare: no teacher for the multi-turn data");  // run_pipeline checks
  std::vector<const data::Task*> tasks;
  for (const data::Task& t : run.ds.tasks(data::Split::kTrain)) {
    if (o.train_limit > 0 && static_cast<int>(tasks.size()) >= o.train_limit) break;
    tasks.push_back(&t);
  }
  DialogueOptions d;
  d.max_steps = kDialogueSteps;
  d.seed = o.seed;
  DialogueReport rep;
  auto examples = dialogue_examples(*run.ctx.env, *run.ctx.dialogue_teacher, tasks, *run.ctx.embedder, counter,
                                    o.prepare, d, &rep);
  write_examples(run.data_dir / "dialogue_train.jsonl", examples);
  json report = json::parse(read_file(run.data_dir / "report.json"));
  report["dialogue"] = {{"episodes", rep.episodes},   {"examples", rep.examples}, {"skipped", rep.skipped},
                        {"calls", rep.calls},         {"responds", rep.responds}, {"stops", rep.stops},
                        {"teacher_avg_steps", rep.episodes ? static_cast<double>(rep.teacher_steps) / rep.episodes : 0.0}};
  write_json(run.data_dir / "report.json", report);
  run.steps.log(fmt::format("prepare: {} multi-turn examples from the teacher's {} episodes ({} left out; {:.2f} "
                            "steps each): {} calls, {} answers to the user, {} stops",
                            rep.examples, rep.episodes, rep.skipped,
                            rep.episodes ? static_cast<double>(rep.teacher_steps) / rep.episodes : 0.0, rep.calls,
                            rep.responds, rep.stops));
}

}  // namespace

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
  json dialogue = false;
  if (wants_dialogue(o)) {
    dialogue = {{"steps", kDialogueSteps}, {"seed", o.seed}};
    if (!run.ctx.recommender_fingerprint.empty()) dialogue["recommender"] = run.ctx.recommender_fingerprint;
  }
  run.settings += json{{"k", o.prepare.memory.k}, {"tokens", o.prepare.memory.max_tokens},
                       {"fallback", o.prepare.recommend_fallback == RecommendFallback::kSkip ? "skip" : "recent"},
                       {"recommend_length", o.prepare.recommend_length},
                       {"recommend_memory", std::string(agents::to_string(o.prepare.memory.recommend_layout))},
                       {"recommend_memory_tokens", o.prepare.memory.recommend_max_tokens},
                       {"labels", o.search_labels}, {"train_limit", o.train_limit}, {"test_limit", o.test_limit},
                       {"prompts", std::string(agents::kPumaPromptsVersion)}, {"embedder", embedder.name()},
                       {"dialogue", dialogue}}
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
  if (wants_dialogue(o)) dialogue_data(run, *counter);
  run.steps.mark("prepare", run.data_dir, run.settings);
}

}  // namespace pwab::puma::stages
