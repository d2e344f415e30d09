// PumaModel's training loop (libtorch): SFT learns, an interrupted SFT resumes from its checkpoint and ends where
// an uninterrupted one does, DPO moves the policy towards the chosen answers with its reference cached, and the
// local completions backend answers raw-text requests only.
#include <gtest/gtest.h>

#include "core/error.h"
#include "puma/model.h"
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
  TrainReport r = model->dpo(prefs, dir / "dpo", o);
  EXPECT_EQ(r.steps, 24);
  EXPECT_TRUE(fs::exists(dir / "dpo" / "reference_logprobs.json"));
  EXPECT_GT(model->loss(rejected, 64) - model->loss(chosen, 64), margin_before + 0.1);
  EXPECT_THROW(model->dpo({}, dir / "dpo2", o), UsageError);
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
}

}  // namespace
}  // namespace pwab::puma
