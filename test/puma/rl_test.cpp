// Online RL on a PumaModel (puma/rl.h, rl_trainer.h) with small models and rewards the tests make: nothing moves
// when the policy is its reference and every reward is equal; a reward for one answer makes it likelier; a run
// killed or cancelled and resumed ends with the weights of an uninterrupted one; two ranks train what one process
// trains; multi-turn episodes train exactly the tokens the model generated; and copy_search samples search queries
// from the prompt's words alone.
#include "puma/rl.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include "agents/fc_test_util.h"
#include "agents/puma_prompt.h"
#include "core/error.h"
#include "llama/distributed.h"
#include "llama/rl_loss.h"
#include "env/tools.h"
#include "core/text.h"
#include "puma/rl_tasks.h"
#include "puma/scoring.h"
#include "puma/search_vocabulary.h"
#include "support/test_support.h"

namespace pwab::puma {
namespace {

namespace fs = std::filesystem;

const char* kTools[] = {"search_product_by_query", "get_recommendations_by_history", "add_product_review"};
const char* kAsks[] = {"Find me a red kettle", "Recommend something for me", "Write a review of this mug"};

std::vector<TrainPair> pairs() {
  std::vector<TrainPair> out;
  for (int i = 0; i < 48; ++i)
    out.push_back({"### Instruction: " + std::string(kAsks[i % 3]) + " " + std::to_string(i) + "\n\n### Tool:\n",
                   kTools[i % 3]});
  return out;
}

fs::path vocabulary(const fs::path& dir) {
  std::vector<std::string> texts;
  for (const TrainPair& p : pairs()) texts.push_back(p.prompt + p.target);
  tok::SpmTrainOptions so;
  so.vocab_size = 320;
  tok::train_sentencepiece(texts, dir / "tok", so);
  return dir / "tok";
}

// A small model that names the tools after a little SFT, saved so every test (and rank) starts from it. With
// `undecided`, every search request was also taught the review tool, so the model hesitates between the two.
fs::path sft_model(const fs::path& dir, int epochs = 3, bool undecided = false) {
  auto model = PumaModel::create_tiny(vocabulary(dir));
  std::vector<TrainPair> rows = pairs();
  if (undecided)
    for (std::size_t i = 0; i < pairs().size(); i += 3) rows.push_back({pairs()[i].prompt, kTools[2]});
  TrainOptions o;
  o.lora = false;
  o.epochs = epochs;
  o.learning_rate = 5e-3;
  o.batch_size = 4;
  o.accumulation_steps = 1;
  o.max_length = 64;
  model->sft(rows, {}, dir / "sft-work", o);
  model->save(dir / "sft");
  return dir / "sft";
}

// An episode of one prompt whose reward is reward(completion).
class OnePrompt final : public RlEpisode {
 public:
  OnePrompt(std::string prompt, std::function<double(const std::string&)> reward)
      : prompt_(std::move(prompt)), reward_of_(std::move(reward)) {}
  std::optional<std::string> next_prompt() override {
    if (done_) return std::nullopt;
    return prompt_;
  }
  void take(const std::string& completion) override {
    reward_ = reward_of_(completion);
    done_ = true;
  }
  double reward() const override { return reward_; }

 private:
  std::string prompt_;
  std::function<double(const std::string&)> reward_of_;
  bool done_ = false;
  double reward_ = 0;
};

RlTasks prompt_tasks(std::function<double(const std::string&)> reward, std::size_t n = 48) {
  RlTasks t;
  for (std::size_t i = 0; i < n; ++i) {
    t.keys.push_back("train/" + std::to_string(i));
    t.kinds.push_back(kTools[i % 3]);
  }
  t.episode = [reward](std::size_t i, uint64_t) -> std::unique_ptr<RlEpisode> {
    return std::make_unique<OnePrompt>(pairs()[i].prompt, reward);
  };
  return t;
}

RlOptions small_options() {
  RlOptions o;
  o.iterations = 6;
  o.tasks_per_iteration = 6;
  o.group_size = 4;
  o.temperature = 1.5;
  o.max_new_tokens = 32;
  o.train.lora = true;
  o.train.lora_r = 4;
  o.train.lora_alpha = 8;
  o.train.lora_modules_to_save = false;
  o.train.learning_rate = 5e-3;
  o.train.warmup_ratio = 0;
  o.minibatches = 2;
  o.kl_coef = 0.02;
  o.eval_every = 0;
  o.checkpoint_every = 2;
  return o;
}

double mean_logprob(PumaModel& model, const std::string& answer, int kind) {
  std::vector<TrainPair> rows;
  for (std::size_t i = static_cast<std::size_t>(kind); i < pairs().size(); i += 3) rows.push_back({pairs()[i].prompt, answer});
  std::vector<double> lp = model.target_logprobs(rows);
  return std::accumulate(lp.begin(), lp.end(), 0.0) / static_cast<double>(lp.size());
}

void expect_same_model(PumaModel& a, PumaModel& b, double tolerance) {
  std::vector<TrainPair> rows = pairs();
  for (TrainPair& p : rows) p.target = kTools[2];
  std::vector<double> la = a.target_logprobs(rows), lb = b.target_logprobs(rows);
  for (std::size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], tolerance) << "pair " << i;
}

std::vector<nlohmann::json> curve(const fs::path& file, const std::string& kind) {
  std::vector<nlohmann::json> out;
  std::istringstream in(pwab::test::read_text(file));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == kind) out.push_back(j);
  }
  return out;
}

TEST(PumaRl, NothingMovesWhenThePolicyIsItsReferenceAndEveryRewardIsEqual) {
  pwab::test::TempDir dir;
  const fs::path sft = sft_model(dir.path(), 2);
  for (bool lora : {true, false}) {
    auto model = PumaModel::open(sft), reference = PumaModel::open(sft);
    RlOptions o = small_options();
    o.train.lora = lora;
    o.iterations = 2;
    o.kl_coef = 0.5;
    o.skip_tied_groups = false;  // every group is trained on: its advantages are 0, only the KL term is left
    const fs::path work = dir / (lora ? "lora" : "full");
    RlReport r = train_rl(*model, prompt_tasks([](const std::string&) { return 0.5; }), {}, work, o);
    EXPECT_EQ(r.iterations, 2);
    for (const auto& point : curve(work / "curve.jsonl", "train")) {
      EXPECT_NEAR(point["kl"].get<double>(), 0.0, 1e-6) << lora;
      EXPECT_EQ(point["tie_share"].get<double>(), 1.0);
      EXPECT_NEAR(point["reward"].get<double>(), 0.5, 1e-12);
      EXPECT_NEAR(point["clip_fraction"].get<double>(), 0.0, 1e-12);
      EXPECT_GT(point["trained_tokens"].get<double>(), 0);
    }
    expect_same_model(*model, *reference, 1e-6);
  }
}

TEST(PumaRl, ARewardForOneAnswerMakesItLikelier) {
  pwab::test::TempDir dir;
  auto model = PumaModel::open(sft_model(dir.path(), 8, /*undecided=*/true));
  // Reward the review tool whatever the request: on the search requests, where the model hesitates between the
  // search and the review tool, the review tool must become likelier.
  const double before = mean_logprob(*model, kTools[2], 0);
  RlOptions o = small_options();
  o.iterations = 12;
  o.tasks_per_iteration = 8;
  o.group_size = 6;
  o.kl_coef = 0;
  o.algo = llama::AdvantageEstimator::kRloo;
  o.temperature = 1.0;
  RlTasks tasks = prompt_tasks([](const std::string& c) { return c == kTools[2] ? 1.0 : 0.0; });
  RlReport r = train_rl(*model, tasks, tasks, dir / "rl", o);
  EXPECT_EQ(r.iterations, 12);
  const double after = mean_logprob(*model, kTools[2], 0);
  EXPECT_GT(after, before + 0.3) << before << " → " << after;
  EXPECT_GT(after, -0.35) << "the review tool is not yet the answer to search requests";
  ASSERT_TRUE(r.have_eval);
  EXPECT_GT(r.last_eval.reward, r.first_eval.reward);
  auto train = curve(dir / "rl" / "curve.jsonl", "train");
  ASSERT_EQ(train.size(), 12u);
  for (const char* key : {"reward_std", "group_reward_std", "tie_share", "kl", "entropy", "clip_fraction",
                          "completion_tokens", "rollouts_per_s", "tokens_per_s", "reward_add_product_review"})
    EXPECT_TRUE(train.back().contains(key)) << key;
  EXPECT_EQ(curve(dir / "rl" / "curve.jsonl", "eval").size(), 2u);  // before and after
}

TEST(PumaRl, AKilledOrCancelledRunResumesToTheWeightsOfAnUninterruptedOne) {
  pwab::test::TempDir dir;
  const fs::path sft = sft_model(dir.path());
  RlTasks tasks = prompt_tasks([](const std::string& c) { return c.find("review") != std::string::npos ? 1.0 : 0.2; });
  RlOptions o = small_options();
  auto whole = PumaModel::open(sft);
  const RlReport uninterrupted = train_rl(*whole, tasks, {}, dir / "whole", o);

  // Killed during iteration 5: nothing is saved then, the checkpoint of iteration 4 is where it resumes.
  RlTasks dying = tasks;
  auto made = std::make_shared<int>(0);
  const int per_iteration = o.tasks_per_iteration * o.group_size;
  dying.episode = [tasks, made, per_iteration](std::size_t i, uint64_t seed) {
    if (++*made > 4 * per_iteration) throw std::runtime_error("killed");
    return tasks.episode(i, seed);
  };
  auto first = PumaModel::open(sft);
  EXPECT_THROW(train_rl(*first, dying, {}, dir / "killed", o), std::runtime_error);
  auto second = PumaModel::open(sft);  // a fresh process starts like this
  RlReport rest = train_rl(*second, tasks, {}, dir / "killed", o);
  EXPECT_TRUE(rest.resumed);
  EXPECT_EQ(rest.iterations, 6);
  // the totals are the whole run's: the checkpoint carried those of iterations 1–4
  EXPECT_EQ(rest.episodes, 6 * per_iteration);
  EXPECT_EQ(rest.completions, uninterrupted.completions);
  EXPECT_EQ(rest.train_tokens, uninterrupted.train_tokens);
  expect_same_model(*whole, *second, 1e-5);
  EXPECT_EQ(curve(dir / "killed" / "curve.jsonl", "train").size(), 6u);  // each iteration once

  // Cancelled after 3 iterations (checkpointed then), resumed.
  RlOptions stop = o;
  stop.stop_after_iterations = 3;
  auto third = PumaModel::open(sft);
  RlReport part = train_rl(*third, tasks, {}, dir / "cancelled", stop);
  EXPECT_TRUE(part.cancelled);
  EXPECT_EQ(part.iterations, 3);
  auto fourth = PumaModel::open(sft);
  RlReport resumed = train_rl(*fourth, tasks, {}, dir / "cancelled", o);
  expect_same_model(*whole, *fourth, 1e-5);
  EXPECT_EQ(resumed.episodes, uninterrupted.episodes);
  EXPECT_GE(resumed.seconds, part.seconds);
}

TEST(PumaRl, TwoRanksTrainTheWeightsOfOneProcess) {
  pwab::test::TempDir dir;
  const fs::path sft = sft_model(dir.path());
  RlTasks tasks = prompt_tasks([](const std::string& c) { return c.find("review") != std::string::npos ? 1.0 : 0.0; });
  RlOptions o = small_options();
  o.iterations = 3;
  auto one = PumaModel::open(sft);
  train_rl(*one, tasks, {}, dir / "one", o);
  std::unique_ptr<PumaModel> replicas[2] = {PumaModel::open(sft), PumaModel::open(sft)};
  RlReport reports[2];
  const int port = pwab::test::free_port();
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        llama::DistEnv env;
        env.rank = r;
        env.world = 2;
        env.master_port = port;
        llama::ProcessGroup group(env, std::chrono::seconds(120));
        RlOptions mine = o;
        mine.train.group = &group;
        reports[r] = train_rl(*replicas[r], tasks, {}, dir / "two", mine);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  for (const RlReport& r : reports) {
    EXPECT_EQ(r.world, 2);
    EXPECT_EQ(r.episodes, 3 * o.tasks_per_iteration * o.group_size);  // every rank reports all ranks' episodes
  }
  expect_same_model(*replicas[0], *replicas[1], 1e-6);
  expect_same_model(*one, *replicas[0], 1e-4);
  auto single = curve(dir / "one" / "curve.jsonl", "train"), both = curve(dir / "two" / "curve.jsonl", "train");
  ASSERT_EQ(single.size(), both.size());
  for (std::size_t i = 0; i < single.size(); ++i)
    EXPECT_NEAR(single[i]["reward"].get<double>(), both[i]["reward"].get<double>(), 1e-9) << i;
}

// The agents' tiny world with fixed search and recommendation answers, for episodes played in the environment.
struct TinyWorld {
  data::Dataset ds = agents::fctest::tiny();
  agents::fctest::KeywordEmbedder embedder;
  agents::fctest::FixedSearch search{{"B0KETTLE02", "B0KETTLE01"}};
  agents::fctest::FixedRecommend recommend{{"B0SOCKS001", "B0MUG00001"}};
  env::Environment env{ds, &search, &recommend, embedder};
};

// Multi-turn episodes on the agents' tiny world: the puma agent's turns against the scripted user. Every trained
// token is one the model generated, in the order it generated them, and nothing of any prompt is trained, although
// later prompts show the earlier turns as text.
TEST(PumaRl, MultiTurnEpisodesTrainExactlyTheGeneratedTokens) {
  pwab::test::TempDir dir;
  TinyWorld tiny;
  const data::Dataset& ds = tiny.ds;
  agents::fctest::KeywordEmbedder& embedder = tiny.embedder;
  env::Environment& env = tiny.env;
  auto model = PumaModel::open(sft_model(dir.path(), 2));
  MultiTurnWorld world;
  world.env = &env;
  world.embedder = &embedder;
  world.memory.k = 3;
  world.memory.max_tokens = 40;
  world.counter = agents::tokenizer_token_counter(model->shared_tokenizer());
  world.max_steps = 4;
  std::vector<const data::Task*> tasks;
  for (const data::Task& t : ds.tasks(data::Split::kTest)) tasks.push_back(&t);
  RlTasks rl = multi_turn_rl_tasks(world, tasks);
  RlOptions o = small_options();
  o.iterations = 1;
  o.tasks_per_iteration = static_cast<int>(tasks.size());
  o.minibatches = 1;
  o.group_size = 3;
  o.save_rollouts = true;
  RlReport r = train_rl(*model, rl, {}, dir / "multi", o);
  EXPECT_EQ(r.episodes, static_cast<int64_t>(tasks.size() * 3));
  std::istringstream in(pwab::test::read_text(dir / "multi" / "rollouts.jsonl"));
  std::size_t episodes = 0, multi_turn = 0;
  const int32_t eos = model->tokenizer().eos_id();
  for (std::string line; std::getline(in, line); ++episodes) {
    auto e = nlohmann::json::parse(line);
    ASSERT_GE(e["turns"].size(), 1u);
    multi_turn += e["turns"].size() > 1;
    llama::RolloutGroup g;
    std::vector<int32_t> generated;
    for (const auto& turn : e["turns"]) {
      auto prompt = turn["prompt_ids"].get<std::vector<int32_t>>();
      auto ids = turn["completion_ids"].get<std::vector<int32_t>>();
      auto lp = turn["logprobs"].get<std::vector<float>>();
      ASSERT_EQ(lp.size(), ids.size());
      // the ids are what was sampled: they decode to the text the episode acted on (the EOS is no text)
      std::vector<int32_t> text_ids = ids;
      if (!text_ids.empty() && text_ids.back() == eos) text_ids.pop_back();
      EXPECT_EQ(model->tokenizer().decode(text_ids, true), turn["text"].get<std::string>());
      for (float x : lp) EXPECT_LE(x, 0.0f);
      llama::RolloutGroup one{prompt, {ids}, {lp}, {e["advantage"].get<double>()}};
      llama::PackedRollouts p = llama::pack_rollouts({&one}, 0);
      // the loss mask of the turn's row: exactly its completion
      EXPECT_EQ(p.labels, static_cast<int64_t>(ids.size()));
      EXPECT_EQ(p.row_tokens, static_cast<int64_t>(prompt.size() + ids.size() - 1));
      auto tokens = p.tokens;
      EXPECT_EQ(std::vector<int64_t>(tokens.data_ptr<int64_t>(), tokens.data_ptr<int64_t>() + tokens.numel()),
                std::vector<int64_t>(ids.begin(), ids.end()));
      // the first is predicted at the prompt's end, each later one at the token the model generated before it
      for (int64_t k = 0; k < p.labels; ++k) EXPECT_EQ(p.from[k].item<int64_t>(), k);
      EXPECT_EQ(p.completion_mask.sum().item<int64_t>(), static_cast<int64_t>(ids.size()) - 1);
      generated.insert(generated.end(), ids.begin(), ids.end());
    }
    EXPECT_FALSE(generated.empty());
  }
  EXPECT_EQ(episodes, tasks.size() * 3);
  EXPECT_GT(multi_turn, 0u) << "no episode went past its first turn";
}

// Single-turn episodes with the function first: every episode samples the function prompt, then the parameter
// prompt of the true tool; the function turns are trained on (as KL anchors) even when every sample was right.
// Every test task of `ds` as a single-turn example with the true tool and no memory.
std::vector<Example> test_examples(const data::Dataset& ds) {
  std::vector<Example> examples;
  for (const data::Task& t : ds.tasks(data::Split::kTest))
    examples.push_back({data::task_key(t), t.instruction, t.type,
                        agents::puma_param_prompt(t.instruction, "none", std::string(env::task_function(t.type))), "",
                        "none"});
  return examples;
}

// One iteration that plays every example `group` times in one minibatch, its rollouts saved.
RlOptions one_iteration_over(const std::vector<Example>& examples, int group) {
  RlOptions o = small_options();
  o.iterations = 1;
  o.tasks_per_iteration = static_cast<int>(examples.size());
  o.minibatches = 1;
  o.group_size = group;
  o.save_rollouts = true;
  return o;
}

TEST(PumaRl, SingleTurnEpisodesSampleTheFunctionAsATurnOfItsOwnReward) {
  pwab::test::TempDir dir;
  TinyWorld tiny;
  const data::Dataset& ds = tiny.ds;
  env::Environment& env = tiny.env;
  auto model = PumaModel::open(sft_model(dir.path(), 8));
  std::vector<Example> examples = test_examples(ds);
  RlOptions o = one_iteration_over(examples, 3);
  train_rl(*model, single_turn_rl_tasks(env, examples, /*with_function=*/true), {}, dir / "st", o);
  std::istringstream in(pwab::test::read_text(dir / "st" / "rollouts.jsonl"));
  int64_t function_tokens = 0;
  std::size_t episodes = 0;
  for (std::string line; std::getline(in, line); ++episodes) {
    auto e = nlohmann::json::parse(line);
    ASSERT_EQ(e["turns"].size(), 2u);
    const std::string function = agents::puma_function_from_completion(e["turns"][0]["text"].get<std::string>());
    EXPECT_FALSE(function.empty());
    function_tokens += static_cast<int64_t>(e["turns"][0]["completion_ids"].size());
  }
  EXPECT_EQ(episodes, examples.size() * 3);
  auto point = curve(dir / "st" / "curve.jsonl", "train").at(0);
  EXPECT_GE(point["trained_tokens"].get<int64_t>(), function_tokens);
}

// With distinct_reviews a review's reward is the benchmark's similarity times its distinct 3-gram share; other
// types, and reviews without the option, keep the benchmark's score.
TEST(PumaRl, DistinctReviewsScaleAReviewsRewardByItsDistinctTrigrams) {
  TinyWorld tiny;
  std::vector<Example> examples = test_examples(tiny.ds);
  const std::string once = "Great kettle, it boils fast and looks good on the counter. ";
  std::string thrice = once + once + once;
  auto reward = [&](bool distinct, std::size_t i, const std::string& parameter) {
    RlTasks tasks = single_turn_rl_tasks(tiny.env, examples, /*with_function=*/false, distinct);
    auto episode = tasks.episode(i, 7);
    EXPECT_TRUE(episode->next_prompt().has_value());
    episode->take(parameter);
    EXPECT_FALSE(episode->next_prompt().has_value());
    return episode->reward();
  };
  int reviews = 0, others = 0;
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const data::Task& task = task_of_key(tiny.ds, examples[i].task);
    for (const std::string& text : {once, thrice}) {
      const double plain = reward(false, i, text);
      EXPECT_DOUBLE_EQ(plain, score_parameter(tiny.env, task, examples[i].type, text));
      if (examples[i].type == data::TaskType::kReview) {
        ++reviews;
        EXPECT_GT(plain, 0.0);
        EXPECT_DOUBLE_EQ(reward(true, i, text), plain * distinct_ngram_share(text, 3));
      } else {
        ++others;
        EXPECT_DOUBLE_EQ(reward(true, i, text), plain);
      }
    }
    if (examples[i].type == data::TaskType::kReview) {
      EXPECT_LT(reward(true, i, thrice), reward(true, i, once));
    }
  }
  EXPECT_GT(reviews, 0);
  EXPECT_GT(others, 0);
}

TEST(PumaRl, CopySearchSamplesSearchQueriesFromThePromptsWordsOnly) {
  pwab::test::TempDir dir;
  TinyWorld tiny;
  const data::Dataset& ds = tiny.ds;
  auto model = PumaModel::open(sft_model(dir.path(), 2));
  // the vocabulary: the prompt's ids, and each word's alone, with and without its punctuation
  const std::string ask = "Find me a red kettle, please!";
  std::vector<int32_t> v = search_vocabulary(model->tokenizer(), ask);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(std::adjacent_find(v.begin(), v.end()), v.end());
  for (const std::string& part : {ask, std::string("kettle"), std::string("kettle,"), std::string("please")})
    for (int32_t id : model->tokenizer().encode(part, false, false))
      EXPECT_TRUE(std::binary_search(v.begin(), v.end(), id)) << part << " " << id;
  EXPECT_LT(v.size(), static_cast<std::size_t>(model->tokenizer().vocab_size()) / 4);

  std::vector<Example> examples = test_examples(ds);
  RlOptions o = one_iteration_over(examples, 4);
  o.kl_coef = 0;
  // Counts, over every episode's parameter turn, the tokens outside the prompt's vocabulary: search turns and others.
  auto outside = [&](bool copy) {
    RlOptions c = o;
    c.copy_search = copy;
    auto m = PumaModel::open(dir / "sft");
    const fs::path work = dir / (copy ? "copy" : "free");
    train_rl(*m, single_turn_rl_tasks(tiny.env, examples, /*with_function=*/true), {}, work, c);
    std::map<std::string, const Example*> by_key;
    for (const Example& e : examples) by_key[e.task] = &e;
    std::pair<int, int> n{0, 0};
    std::istringstream in(pwab::test::read_text(work / "rollouts.jsonl"));
    for (std::string line; std::getline(in, line);) {
      auto e = nlohmann::json::parse(line);
      const Example& ex = *by_key.at(e["task"].get<std::string>());
      std::vector<int32_t> allowed = search_vocabulary(m->tokenizer(), ex.prompt);
      for (int32_t id : e["turns"][1]["completion_ids"].get<std::vector<int32_t>>())
        if (id != m->tokenizer().eos_id() && !std::binary_search(allowed.begin(), allowed.end(), id))
          ++(ex.type == data::TaskType::kSearch ? n.first : n.second);
    }
    return n;
  };
  auto [copy_search, copy_other] = outside(true);
  EXPECT_EQ(copy_search, 0);  // every search query is made of the prompt's pieces
  EXPECT_GT(copy_other, 0);   // the other tools' parameters stay free
  auto [free_search, free_other] = outside(false);
  EXPECT_GT(free_search, 0);  // without it, the model writes pieces the prompt does not have
}

TEST(PumaRl, OptionsAreChecked) {
  pwab::test::TempDir dir;
  auto model = PumaModel::open(sft_model(dir.path(), 1));
  RlTasks tasks = prompt_tasks([](const std::string&) { return 0.0; });
  RlOptions o = small_options();
  o.group_size = 1;
  EXPECT_THROW(train_rl(*model, tasks, {}, dir / "a", o), UsageError);
  o = small_options();
  o.minibatches = 100;
  EXPECT_THROW(train_rl(*model, tasks, {}, dir / "b", o), UsageError);
  EXPECT_THROW(train_rl(*model, RlTasks{}, {}, dir / "c", small_options()), UsageError);
}

}  // namespace
}  // namespace pwab::puma
