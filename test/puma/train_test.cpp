// PumaModel's training loop (libtorch): SFT learns, an interrupted SFT resumes from its checkpoint and ends where
// an uninterrupted one does, DPO moves the policy towards the chosen answers with its reference cached, and the
// local completions backend answers raw-text requests only.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>


#include "core/error.h"
#include "llama/distributed.h"
#include "puma/model.h"
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

TrainOptions options() {
  TrainOptions o;
  o.lora = false;
  o.epochs = 8;
  o.learning_rate = 5e-3;
  o.batch_size = 4;
  o.accumulation_steps = 1;
  o.warmup_ratio = 0.1;
  o.max_length = 64;
  return o;
}

TEST(PumaTrain, SftLearnsAndAnInterruptedRunResumesToTheSameModel) {
  pwab::test::TempDir dir;
  fs::path tok = vocabulary(dir.path());
  auto whole = PumaModel::create_tiny(tok);
  const double before = whole->loss(pairs(), 64);
  TrainReport r = whole->sft(pairs(), pairs(), dir / "whole", options());
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.steps, 96);  // 12 batches of 4 per epoch, 8 epochs
  EXPECT_LT(r.eval_loss, before * 0.5) << before;

  TrainOptions stop = options();
  stop.stop_after_steps = 37;  // mid-epoch 4
  auto first = PumaModel::create_tiny(tok);
  TrainReport part = first->sft(pairs(), {}, dir / "split", stop);
  EXPECT_TRUE(part.cancelled);
  EXPECT_EQ(part.steps, 37);
  EXPECT_TRUE(fs::exists(dir / "split" / "checkpoint.pt"));
  auto second = PumaModel::create_tiny(tok);  // a fresh process would start like this
  TrainReport rest = second->sft(pairs(), {}, dir / "split", options());
  EXPECT_TRUE(rest.resumed);
  EXPECT_EQ(rest.steps, 96);
  EXPECT_NEAR(second->loss(pairs(), 64), whole->loss(pairs(), 64), 1e-4);

  // The trained model names the tools greedily, and saves to a directory that opens again.
  GenerateConfig g;
  g.max_new_tokens = 40;
  auto out = whole->generate({pairs()[0].prompt, pairs()[1].prompt}, g);
  EXPECT_EQ(out[0][0], kTools[0]);
  EXPECT_EQ(out[1][0], kTools[1]);
  whole->save(dir / "saved");
  auto reopened = PumaModel::open(dir / "saved");
  EXPECT_EQ(reopened->generate({pairs()[2].prompt}, g)[0][0], kTools[2]);
}

TEST(PumaTrain, DpoPrefersTheChosenAnswersAndCachesTheReference) {
  pwab::test::TempDir dir;
  fs::path tok = vocabulary(dir.path());
  auto model = PumaModel::create_tiny(tok);
  model->sft(pairs(), {}, dir / "sft", options());
  // Prefer the review tool for every prompt: the policy's preference must move that way.
  std::vector<PreferenceExample> prefs;
  for (const TrainPair& p : pairs()) prefs.push_back({p.prompt, kTools[2], kTools[0]});
  std::vector<TrainPair> chosen, rejected;
  for (const auto& p : prefs) chosen.push_back({p.prompt, p.chosen}), rejected.push_back({p.prompt, p.rejected});
  const double margin_before = model->loss(rejected, 64) - model->loss(chosen, 64);
  TrainOptions o = options();
  o.epochs = 2;
  o.learning_rate = 1e-3;
  TrainReport r = model->dpo(prefs, {}, dir / "dpo", o);
  EXPECT_EQ(r.steps, 24);
  EXPECT_TRUE(fs::exists(dir / "dpo" / "reference_logprobs.json"));
  EXPECT_GT(model->loss(rejected, 64) - model->loss(chosen, 64), margin_before + 0.1);
  EXPECT_THROW(model->dpo({}, {}, dir / "dpo2", o), UsageError);
}

//! Runs `body(rank, group)` for two ranks at once, each a thread with its own Gloo group on loopback.
template <class Body>
void on_two_ranks(Body body) {
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
        body(r, group);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

void expect_same_model(PumaModel& a, PumaModel& b, double tolerance) {
  std::vector<double> la = a.target_logprobs(pairs()), lb = b.target_logprobs(pairs());
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], tolerance) << "pair " << i;
}

// Data-parallel training (llama/distributed.h): two ranks, each with its own model, taking every other row of each
// micro-batch, end with the weights one process gets from the whole micro-batches: SFT with every weight trained,
// then DPO through a LoRA adapter, which rank 0 alone writes.
TEST(PumaTrain, TwoRanksTrainTheWeightsOfOneProcess) {
  pwab::test::TempDir dir;
  fs::path tok = vocabulary(dir.path());
  TrainOptions o = options();
  o.epochs = 2;
  o.batch_size = 4;
  o.accumulation_steps = 2;
  auto one = PumaModel::create_tiny(tok);
  TrainReport single = one->sft(pairs(), {}, dir / "one", o);
  std::unique_ptr<PumaModel> replicas[2] = {PumaModel::create_tiny(tok), PumaModel::create_tiny(tok)};
  TrainReport reports[2];
  on_two_ranks([&](int r, llama::ProcessGroup& group) {
    TrainOptions mine = o;
    mine.group = &group;
    reports[r] = replicas[r]->sft(pairs(), {}, dir / "two", mine);
  });
  for (const TrainReport& r : reports) {
    EXPECT_EQ(r.steps, single.steps);
    EXPECT_EQ(r.world, 2);
    EXPECT_EQ(r.tokens, single.tokens);  // every rank reports the whole batches' tokens
    EXPECT_NEAR(r.train_loss, single.train_loss, 1e-4 * std::abs(single.train_loss));
    EXPECT_GT(r.bytes_all_reduced, 0);
  }
  expect_same_model(*replicas[0], *replicas[1], 1e-6);  // the replicas never diverge
  expect_same_model(*one, *replicas[0], 1e-4);           // and train as one process does, to float tolerance
  EXPECT_TRUE(fs::exists(dir / "two" / "checkpoint.pt"));

  // DPO through a LoRA adapter, from the models SFT left.
  std::vector<PreferenceExample> prefs;
  for (const TrainPair& p : pairs()) prefs.push_back({p.prompt, kTools[2], kTools[0]});
  TrainOptions d = options();
  d.epochs = 1;
  d.learning_rate = 1e-3;
  d.batch_size = 4;
  d.lora = true;
  d.lora_r = 4;
  d.adapter_dir = dir / "adapter-one";
  one->dpo(prefs, {}, dir / "dpo-one", d);
  on_two_ranks([&](int r, llama::ProcessGroup& group) {
    TrainOptions mine = d;
    mine.group = &group;
    mine.adapter_dir = dir / "adapter-two";
    replicas[r]->dpo(prefs, {}, dir / "dpo-two", mine);
  });
  expect_same_model(*replicas[0], *replicas[1], 1e-6);
  expect_same_model(*one, *replicas[0], 1e-4);
  EXPECT_TRUE(fs::exists(dir / "adapter-two" / "adapter_model.safetensors"));
}

// The steps of curve.jsonl of one kind, in file order.
std::vector<int64_t> curve_steps(const fs::path& file, const std::string& kind) {
  std::vector<int64_t> steps;
  std::istringstream in(pwab::test::read_text(file));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == kind) steps.push_back(j["step"].get<int64_t>());
  }
  return steps;
}

TEST(PumaTrain, CurvesGroupingZeroEpochsAndAResumeThatCountsNothingTwice) {
  pwab::test::TempDir dir;
  fs::path tok = vocabulary(dir.path());
  TrainOptions o = options();
  o.group_by_length = true;
  o.log_every = 4;
  o.eval_every = 24;
  o.eval_limit = 8;
  o.stop_after_steps = 30;
  auto model = PumaModel::create_tiny(tok);
  TrainReport part = model->sft(pairs(), pairs(), dir / "sft", o);
  EXPECT_TRUE(part.cancelled);
  o.stop_after_steps = 0;
  auto resumed = PumaModel::create_tiny(tok);
  TrainReport r = resumed->sft(pairs(), pairs(), dir / "sft", o);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.steps, 96);
  EXPECT_GT(r.tokens_per_s, 0);
  std::vector<int64_t> train = curve_steps(dir / "sft" / "curve.jsonl", "train");
  EXPECT_EQ(train.size(), 24u);  // every 4th step of 96, each once although steps 29-30 ran twice
  EXPECT_TRUE(std::is_sorted(train.begin(), train.end()));
  EXPECT_EQ(curve_steps(dir / "sft" / "curve.jsonl", "eval"), (std::vector<int64_t>{0, 24, 48, 72, 96}));

  // 0 epochs: no training, the model as it was.
  auto untouched = PumaModel::create_tiny(tok);
  const double before = untouched->loss(pairs(), 64);
  TrainOptions none = options();
  none.epochs = 0;
  TrainReport zero = untouched->sft(pairs(), pairs(), dir / "none", none);
  EXPECT_EQ(zero.steps, 0);
  EXPECT_DOUBLE_EQ(untouched->loss(pairs(), 64), before);
  EXPECT_NEAR(zero.eval_loss, before, 1e-9);
}

TEST(PumaTrain, LoraAdapterSavedInPeftLayoutLoadsToTheMergedModel) {
  pwab::test::TempDir dir;
  fs::path tok = vocabulary(dir.path());
  auto model = PumaModel::create_tiny(tok);
  model->save(dir / "base");
  TrainOptions o = options();
  o.lora = true;
  o.lora_r = 4;
  o.lora_alpha = 8;
  o.epochs = 2;
  o.adapter_dir = dir / "adapter";
  o.adapter_base_model = "base";
  model->sft(pairs(), {}, dir / "work", o);
  model->save(dir / "merged");
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors"}) EXPECT_TRUE(fs::exists(dir / "adapter" / f));
  auto config = nlohmann::json::parse(pwab::test::read_text(dir / "adapter" / "adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["base_model_name_or_path"], "base");
  auto merged = PumaModel::open(dir / "merged");
  auto adapted = PumaModel::open(dir / "base", dir / "adapter");
  auto base = PumaModel::open(dir / "base");
  const std::string text = pairs()[5].prompt + kTools[2];
  int64_t vocab = 0;
  std::vector<float> a = merged->logits(text, &vocab), b = adapted->logits(text), c = base->logits(text);
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0, moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(a[i] - b[i])));
    moved = std::max(moved, double(std::abs(a[i] - c[i])));
  }
  EXPECT_LT(max_diff, 1e-5);
  EXPECT_GT(moved, 1e-2);  // the adapter changed the model
  EXPECT_EQ(vocab, 320);
}

TEST(PumaTrain, DpoReportsMarginAccuracyAndKlOnEvaluationPairsAndNeverCutsTheResponse) {
  pwab::test::TempDir dir;
  fs::path tok = vocabulary(dir.path());
  auto model = PumaModel::create_tiny(tok);
  model->sft(pairs(), {}, dir / "sft", options());
  std::vector<PreferenceExample> prefs, eval;
  for (std::size_t i = 0; i < pairs().size(); ++i)
    (i % 4 == 3 ? eval : prefs).push_back({pairs()[i].prompt, kTools[2], kTools[0]});
  auto reference = model->copy();
  TrainOptions o = options();
  o.epochs = 2;
  o.learning_rate = 1e-3;
  o.eval_every = 6;
  o.log_every = 3;
  o.max_prompt_length = 6;  // cuts every prompt (keeping BOS and its end), never the responses
  TrainReport r = model->dpo(prefs, eval, dir / "dpo", o);
  EXPECT_EQ(r.truncated_rows, static_cast<int64_t>(prefs.size()));
  ASSERT_TRUE(r.have_eval_preferences);
  EXPECT_GT(r.eval_preferences.margin, 0.1);
  EXPECT_GT(r.eval_preferences.accuracy, 0.5);
  EXPECT_GT(r.eval_preferences.kl, 0.0);
  EXPECT_GT(r.eval_preferences.chosen_reward, r.eval_preferences.rejected_reward);
  // The first evaluation point is the reference itself: margin and KL 0.
  std::istringstream in(pwab::test::read_text(dir / "dpo" / "curve.jsonl"));
  std::string first;
  std::getline(in, first);
  auto j = nlohmann::json::parse(first);
  EXPECT_EQ(j["kind"], "eval");
  EXPECT_NEAR(j["kl"].get<double>(), 0.0, 1e-6);
  EXPECT_NEAR(j["margin"].get<double>(), 0.0, 1e-4);
  EXPECT_GT(curve_steps(dir / "dpo" / "curve.jsonl", "train").size(), 2u);
  // The same statistics from outside, against the frozen copy of the SFT model.
  PreferenceStats s = model->preference_stats(eval, *reference, o);
  EXPECT_NEAR(s.margin, r.eval_preferences.margin, 1e-3);
  EXPECT_NEAR(s.kl, r.eval_preferences.kl, 1e-4);
}

TEST(PumaTrain, LocalBackendAnswersRawCompletionsOnly) {
  pwab::test::TempDir dir;
  std::shared_ptr<PumaModel> model = PumaModel::create_tiny(vocabulary(dir.path()));
  auto chat = local_chat_model(model, "tiny");
  llm::ChatRequest req;
  req.model = "tiny";
  req.prompt = pairs()[0].prompt;
  req.max_tokens = 5;
  llm::ChatResponse r = chat->chat(req);
  EXPECT_EQ(r.model, "tiny");
  EXPECT_GT(r.prompt_tokens, 5);
  EXPECT_LE(r.completion_tokens, 5);
  EXPECT_EQ(chat->chat(req).message.content, r.message.content);  // greedy: the same text
  llm::ChatRequest messages;
  messages.model = "tiny";
  messages.messages.push_back(llm::Message::user("hello"));
  EXPECT_THROW(chat->chat(messages), UsageError);
  EXPECT_NE(chat->describe().find("local tiny"), std::string::npos);
  // prompt_words_only: the completion's tokens are the prompt's (search_vocabulary.h), sampled or greedy
  llm::ChatRequest copy = req;
  copy.prompt_words_only = true;
  copy.max_tokens = 12;
  copy.return_tokens = true;
  const std::vector<int32_t> allowed = search_vocabulary(model->tokenizer(), *copy.prompt);
  int outside_free = 0;
  for (double temperature : {0.0, 1.5}) {
    copy.temperature = req.temperature = temperature;
    for (int64_t seed = 0; seed < 4; ++seed) {
      copy.seed = req.seed = seed;
      const llm::ChatResponse constrained = chat->chat(copy);
      ASSERT_TRUE(constrained.tokens);
      for (int32_t id : constrained.tokens->completion_ids)
        EXPECT_TRUE(id == model->tokenizer().eos_id() || std::binary_search(allowed.begin(), allowed.end(), id)) << id;
      req.return_tokens = true;
      const llm::ChatResponse free = chat->chat(req);
      ASSERT_TRUE(free.tokens);
      for (int32_t id : free.tokens->completion_ids)
        outside_free += id != model->tokenizer().eos_id() && !std::binary_search(allowed.begin(), allowed.end(), id);
    }
  }
  EXPECT_GT(outside_free, 0);  // the untrained model, free, writes other pieces
}

// Requests from many threads at once are generated in shared batches (local_model.cpp), and each gets what it gets
// alone: greedy and sampled (each from its own seed), with two new-token budgets that never share a batch.
TEST(PumaTrain, LocalBackendBatchesConcurrentRequestsAndAnswersEachAsAlone) {
  pwab::test::TempDir dir;
  std::shared_ptr<PumaModel> model = PumaModel::create_tiny(vocabulary(dir.path()));
  auto chat = local_chat_model(model, "tiny", 4);
  std::vector<llm::ChatRequest> requests;
  for (int i = 0; i < 12; ++i) {
    llm::ChatRequest r;
    r.model = "tiny";
    r.prompt = pairs()[static_cast<std::size_t>(i) % pairs().size()].prompt + std::string(static_cast<std::size_t>(i % 3), ' ');
    r.max_tokens = i % 4 == 3 ? 3 : 6;
    if (i % 2) {
      r.temperature = 1.0;
      r.seed = 100 + i;
    }
    r.return_tokens = true;
    requests.push_back(r);
  }
  std::vector<llm::ChatResponse> alone;
  for (const auto& r : requests) alone.push_back(chat->chat(r));
  std::vector<llm::ChatResponse> together(requests.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] { together[i] = chat->chat(requests[i]); });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const llm::TokenTrace& a = *alone[i].tokens;
    const llm::TokenTrace& b = *together[i].tokens;
    EXPECT_EQ(a.prompt_ids, b.prompt_ids) << i;
    EXPECT_LE(static_cast<int>(b.completion_ids.size()), *requests[i].max_tokens + 1) << i;
    // The same tokens; a batch's float rounding may only flip an exact tie of the random model, which shows as the
    // two draws having the same log-probability where they part.
    std::size_t k = 0;
    while (k < a.completion_ids.size() && k < b.completion_ids.size() && a.completion_ids[k] == b.completion_ids[k]) {
      EXPECT_NEAR(a.logprobs[k], b.logprobs[k], 1e-4) << i << " token " << k;
      ++k;
    }
    if (k < a.completion_ids.size() || k < b.completion_ids.size()) {
      ASSERT_TRUE(k < a.completion_ids.size() && k < b.completion_ids.size()) << i;
      EXPECT_NEAR(a.logprobs[k], b.logprobs[k], 1e-4) << i << ": request " << i << " parts at token " << k;
    } else {
      EXPECT_EQ(alone[i].message.content, together[i].message.content) << i;
      EXPECT_EQ(alone[i].completion_tokens, together[i].completion_tokens) << i;
    }
  }
}

}  // namespace
}  // namespace pwab::puma
