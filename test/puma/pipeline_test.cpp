// run_pipeline's control flow without training a model: the step list, the usage errors, the `until` stop, and
// the resume rule on the first two steps (tokenizer, prepare), which need no libtorch compute: a step done with
// the same settings is skipped, a changed setting redoes its step and every step after it.
#include "puma/pipeline.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <map>
#include <sstream>

#include "agents/fc_test_util.h"
#include "core/error.h"
#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace pwab::puma {
namespace {

namespace fs = std::filesystem;
using Steps = std::vector<std::string>;

// The agents' tiny dataset with each test task repeated as a train task (other words, so instructions stay unique).
data::Dataset dataset() {
  data::Dataset ds = agents::fctest::tiny();
  std::vector<data::Task> tests = ds.tasks(data::Split::kTest);
  for (data::Task t : tests) {
    t.split = data::Split::kTrain;
    t.index = static_cast<uint32_t>(ds.tasks(data::Split::kTrain).size());
    t.instruction = "Once more: " + t.instruction;
    ds.add_task(t);
  }
  return ds;
}

// A recommender that counts its calls: which environment a step's rewards came from.
class CountingRecommend final : public env::RecommendBackend {
 public:
  std::vector<std::string> recommend(const std::vector<std::string>&, int) const override {
    ++calls;
    return {"B0MUG00001"};
  }
  mutable std::atomic<int> calls{0};
};

struct World {
  data::Dataset ds = dataset();
  agents::fctest::KeywordEmbedder embedder;
  agents::fctest::FixedSearch search{{"B0KETTLE02", "B0KETTLE01"}};
  agents::fctest::FixedRecommend recommend{{"B0SOCKS001", "B0MUG00001"}};
  env::Environment env{ds, &search, &recommend, embedder};
  pwab::test::TempDir agent_cache;
  // the multi-turn data's teacher, as `pwab puma` gives it (assemble/training_session.cpp)
  std::unique_ptr<agents::AgentFactory> teacher =
      agents::make_agent_factory("heuristic", {}, agents::fctest::context_of(&ds, &embedder, agent_cache.path(), 1));
  std::vector<std::string> log;

  PipelineContext context() {
    PipelineContext c;
    c.ds = &ds;
    c.embedder = &embedder;
    c.env = &env;
    c.dialogue_teacher = teacher.get();
    c.log = [this](const std::string& line) { log.push_back(line); };
    return c;
  }
  bool logged(const std::string& line) const { return std::find(log.begin(), log.end(), line) != log.end(); }
};

PipelineOptions tiny_options(const fs::path& out) {
  PipelineOptions o = PipelineOptions::tiny_preset();
  o.out = out;
  o.tiny_vocab_size = 400;  // the tiny dataset's text: at least its 317 characters and specials
  return o;
}

TEST(PumaPipeline, StepsInOrderAndUsageErrors) {
  EXPECT_EQ(pipeline_steps(), (Steps{"tokenizer", "prepare", "sft", "eval-sft", "sample", "score", "dpo", "eval-dpo",
                                     "rl", "eval-rl"}));
  EXPECT_EQ(pipeline_branch("score"), "dpo");
  EXPECT_EQ(pipeline_branch("eval-rl"), "rl");
  EXPECT_EQ(pipeline_branch("sft"), "");
  EXPECT_THROW(parse_align("ppo"), UsageError);
  World w;
  pwab::test::TempDir dir;
  try {
    run_pipeline(w.context(), tiny_options(dir.path()), "train");
    FAIL() << "an unknown step ran";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown pipeline step 'train' (steps: tokenizer, prepare, sft, eval-sft, sample, "
                                     "score, dpo, eval-dpo, rl, eval-rl)");
  }
  PipelineContext no_env = w.context();
  no_env.env = nullptr;
  EXPECT_THROW(run_pipeline(no_env, tiny_options(dir.path()), "prepare"), UsageError);
  PipelineOptions llm_labels = tiny_options(dir.path());
  llm_labels.search_labels = "llm";  // and no labeler in the context
  EXPECT_THROW(run_pipeline(w.context(), llm_labels, "prepare"), UsageError);
  PipelineContext no_teacher = w.context();
  no_teacher.dialogue_teacher = nullptr;  // the tiny preset asks for multi-turn examples
  try {
    run_pipeline(no_teacher, tiny_options(dir.path()), "prepare");
    ADD_FAILURE() << "multi-turn data without a teacher";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a teacher agent"), std::string::npos) << e.what();
  }
  PipelineOptions all_held_out = tiny_options(dir.path());
  all_held_out.holdout = 2000;  // the cpu preset's, on a dataset with fewer train tasks: SFT would have none
  try {
    run_pipeline(w.context(), all_held_out, "prepare");
    ADD_FAILURE() << "a holdout of every train task ran";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--holdout 2000 would keep all"), std::string::npos) << e.what();
  }
  // A reward checkpoint the assembly did not open, or a reward environment no setting names.
  PipelineOptions unopened = tiny_options(dir.path());
  unopened.reward_checkpoint = dir / "held-out.pwab";
  EXPECT_THROW(run_pipeline(w.context(), unopened, "prepare"), UsageError);
  PipelineOptions multi_distinct = tiny_options(dir.path());
  multi_distinct.rl_track = data::Track::kMultiTurn;
  multi_distinct.rl_distinct_reviews = true;  // a single-turn review reward's shaping, on whole episodes
  try {
    run_pipeline(w.context(), multi_distinct, "prepare");
    ADD_FAILURE() << "review shaping on multi-turn episodes ran";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--rl-distinct-reviews"), std::string::npos) << e.what();
  }
  PipelineContext unnamed = w.context();
  unnamed.reward_env = &w.env;
  EXPECT_THROW(run_pipeline(unnamed, tiny_options(dir.path()), "prepare"), UsageError);
  EXPECT_FALSE(fs::exists(dir / "base")) << "a usage error must come before any step";
}

TEST(PumaPipeline, StopsAtUntilAndResumesByTheSettings) {
  World w;
  pwab::test::TempDir dir;
  PipelineOptions o = tiny_options(dir.path());

  PipelineReport first = run_pipeline(w.context(), o, "prepare");
  EXPECT_EQ(first.ran_steps, (Steps{"tokenizer", "prepare"}));
  EXPECT_TRUE(first.skipped_steps.empty());
  EXPECT_FALSE(first.have_sft || first.cancelled);
  EXPECT_TRUE(fs::exists(dir / "base" / "tokenizer.model"));
  for (const char* file : {"function_train.jsonl", "function_test.jsonl", "param_train.jsonl", "param_test.jsonl",
                           "dialogue_train.jsonl"})
    EXPECT_GT(fs::file_size(dir / "data" / file), 0u) << file;
  EXPECT_FALSE(fs::exists(dir / "sft")) << "the run went past `until`";
  // The tiny preset's multi-turn examples: the teacher's steps after its first, counted in the data report.
  auto data_report = nlohmann::json::parse(pwab::test::read_text(dir / "data" / "report.json"));
  const auto dialogue = read_examples(dir / "data" / "dialogue_train.jsonl");
  EXPECT_EQ(data_report["dialogue"]["examples"].get<std::size_t>(), dialogue.size());
  EXPECT_EQ(data_report["dialogue"]["episodes"].get<std::size_t>(), w.ds.tasks(data::Split::kTrain).size());
  EXPECT_GT(data_report["dialogue"]["stops"].get<int>(), 0);
  for (const Example& e : dialogue) EXPECT_NE(e.prompt.find("Conversation so far:"), std::string::npos);
  EXPECT_TRUE(w.logged("tokenizer: running") && w.logged("prepare: running"));

  // The same settings: both skipped, nothing rewritten.
  auto stamp = fs::last_write_time(dir / "data" / "param_train.jsonl");
  w.log.clear();
  PipelineReport again = run_pipeline(w.context(), o, "prepare");
  EXPECT_EQ(again.skipped_steps, (Steps{"tokenizer", "prepare"}));
  EXPECT_TRUE(again.ran_steps.empty());
  EXPECT_EQ(fs::last_write_time(dir / "data" / "param_train.jsonl"), stamp);
  EXPECT_TRUE(w.logged("prepare: done before with the same settings, skipped"));

  // `until` = the first step stops there.
  EXPECT_EQ(run_pipeline(w.context(), o, "tokenizer").skipped_steps, (Steps{"tokenizer"}));

  // A prepare setting redoes prepare only; a tokenizer setting redoes both (prepare depends on it).
  o.prepare.memory.k = 3;
  PipelineReport prepare_changed = run_pipeline(w.context(), o, "prepare");
  EXPECT_EQ(prepare_changed.skipped_steps, (Steps{"tokenizer"}));
  EXPECT_EQ(prepare_changed.ran_steps, (Steps{"prepare"}));
  // Another recommender behind the environment remakes the teacher's multi-turn examples: its fingerprint is a
  // setting of the step that makes them.
  PipelineContext retrained = w.context();
  retrained.recommender_fingerprint = "0123456789abcdef";
  PipelineReport recommender_changed = run_pipeline(retrained, o, "prepare");
  EXPECT_EQ(recommender_changed.ran_steps, (Steps{"prepare"}));
  EXPECT_NE(pwab::test::read_text(dir / "data" / ".done").find("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(run_pipeline(retrained, o, "prepare").skipped_steps, (Steps{"tokenizer", "prepare"}));
  o.tiny_vocab_size = 380;
  PipelineReport vocab_changed = run_pipeline(w.context(), o, "prepare");
  EXPECT_TRUE(vocab_changed.skipped_steps.empty());
  EXPECT_EQ(vocab_changed.ran_steps, (Steps{"tokenizer", "prepare"}));
}

// The whole pipeline on the tiny world with the DPO candidates sampled through an OpenAI-compatible server on
// loopback (n samples per prompt, as vLLM answers), backed by the SFT model itself; a second pipeline takes over
// the finished steps of the first (reuse_from) and redoes only what its settings change.
TEST(PumaPipeline, EveryStepWithServerSamplingAndReuse) {
  World w;
  pwab::test::TempDir dir;
  PipelineOptions o = tiny_options(dir / "full");
  o.sft.epochs = 6;
  o.sft.learning_rate = 5e-3;
  o.sft.eval_every = 4;
  o.samples = 3;
  o.max_new_tokens = 12;
  o.dpo_eval_tasks = 4;
  o.dpo.eval_every = 1;
  o.dpo.log_every = 1;

  agents::fctest::ServerLlm llm;
  std::unique_ptr<PumaModel> served;
  std::vector<int> n_asked;
  std::vector<std::pair<std::string, bool>> words_only;  // each request's prompt and "prompt_words_only"
  llm.server.set_chat_handler([&](const pwab::test::ReceivedRequest& r) {
    auto body = nlohmann::json::parse(r.body);
    if (!served) served = PumaModel::open(dir / "full" / "sft" / "model");
    GenerateConfig g;
    g.sample = true;
    g.temperature = body.at("temperature").get<double>();
    g.max_new_tokens = body.at("max_tokens").get<int>();
    g.seed = body.at("seed").get<uint64_t>();
    const int n = body.at("n").get<int>();
    n_asked.push_back(n);
    words_only.emplace_back(body.at("prompt").get<std::string>(), body.value("prompt_words_only", false));
    g.batch_size = n;
    auto out = served->generate(std::vector<std::string>(static_cast<std::size_t>(n), body.at("prompt")), g);
    nlohmann::json choices = nlohmann::json::array();
    for (int i = n - 1; i >= 0; --i)  // out of order: the client orders by index
      choices.push_back({{"index", i}, {"text", out[static_cast<std::size_t>(i)][0]}, {"finish_reason", "stop"}});
    pwab::test::ScriptedReply reply;
    reply.body = nlohmann::json{{"choices", choices}, {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 5}}}}.dump();
    return reply;
  });
  PipelineContext ctx = w.context();
  ctx.sample_model = llm.http.get();
  ctx.sample_model_name = "puma-sft";
  PipelineReport r = run_pipeline(ctx, o);
  EXPECT_EQ(r.ran_steps, (Steps{"tokenizer", "prepare", "sft", "eval-sft", "sample", "score", "dpo", "eval-dpo"}));
  EXPECT_TRUE(r.have_sft && r.have_dpo);
  const std::size_t train_tasks = w.ds.tasks(data::Split::kTrain).size(), test_tasks = w.ds.tasks(data::Split::kTest).size();
  EXPECT_EQ(n_asked.size(), train_tasks + std::min<std::size_t>(4, test_tasks));
  for (int n : n_asked) EXPECT_EQ(n, 3);
  for (const auto& [prompt, flag] : words_only) EXPECT_FALSE(flag) << "free decoding sent the constraint";
  std::istringstream candidates(pwab::test::read_text(dir / "full" / "dpo" / "sample" / "candidates.jsonl"));
  std::size_t lines = 0;
  for (std::string line; std::getline(candidates, line); ++lines)
    EXPECT_EQ(nlohmann::json::parse(line)["candidates"].size(), 3u) << line;
  EXPECT_EQ(lines, train_tasks);
  EXPECT_EQ(r.candidates.tasks, static_cast<int>(train_tasks));
  EXPECT_EQ(r.candidates.pairs + r.candidates.tie_tasks, static_cast<int>(train_tasks));
  auto sample_report = nlohmann::json::parse(pwab::test::read_text(dir / "full" / "dpo" / "sample" / "report.json"));
  EXPECT_EQ(sample_report["source"], "server puma-sft");
  // The report gathers every step: the SFT curve with eval points, the fast tests, the candidates.
  auto report = nlohmann::json::parse(pwab::test::read_text(dir / "full" / "report.json"));
  EXPECT_GT(report["sft_curve"].size(), 2u);
  EXPECT_FALSE(report["fast_test"]["sft"].is_null());
  EXPECT_FALSE(report["fast_test"]["dpo"].is_null());
  EXPECT_GE(report["seconds"]["sft"].get<double>(), 0.0);
  EXPECT_NE(pwab::test::read_text(dir / "full" / "report.md").find("## SFT"), std::string::npos);
  for (const char* f : {"sft/eval/scores.jsonl", "dpo/eval/scores.jsonl", "options.json"})
    EXPECT_TRUE(fs::exists(dir / "full" / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "full" / "rl")) << "--align dpo ran the RL branch";

  // The RL branch in the same directory: the shared steps are skipped, only rl and eval-rl run, and the report
  // compares RL with SFT and with DPO. Changing a DPO setting afterwards redoes the DPO branch, never RL.
  o.rl.iterations = 3;
  o.rl.tasks_per_iteration = 4;
  o.rl.group_size = 3;
  o.rl.max_new_tokens = 12;
  o.rl_eval_tasks = 3;
  PipelineReport with_rl = run_pipeline(ctx, o, "eval-rl");
  EXPECT_EQ(with_rl.ran_steps, (Steps{"rl", "eval-rl"}));
  EXPECT_EQ(with_rl.skipped_steps, (Steps{"tokenizer", "prepare", "sft", "eval-sft"}));
  EXPECT_TRUE(with_rl.have_rl);
  for (const char* f : {"rl/model/model.safetensors", "rl/train.json", "rl/work/curve.jsonl", "rl/eval/scores.jsonl"})
    EXPECT_TRUE(fs::exists(dir / "full" / f)) << f;
  report = nlohmann::json::parse(pwab::test::read_text(dir / "full" / "report.json"));
  EXPECT_FALSE(report["rl_minus_sft"].is_null());
  EXPECT_FALSE(report["rl_minus_dpo"].is_null());
  EXPECT_EQ(report["rl_curve"].size(), 3u + 2u);  // 3 iterations, greedy evaluations before and after
  EXPECT_NE(pwab::test::read_text(dir / "full" / "report.md").find("## RL"), std::string::npos);

  // Training rewards from a reward environment (--reward-checkpoint): the score and rl steps are redone with it,
  // their train tasks scored there, while the DPO test pairs and RL's evaluation stay on the benchmark's.
  CountingRecommend reward_recommend;
  env::Environment reward_env{w.ds, &w.search, &reward_recommend, w.embedder};
  PipelineContext rewarded = ctx;
  rewarded.reward_env = &reward_env;
  PipelineOptions ro = o;
  ro.reward_checkpoint = dir / "held-out.pwab";
  PipelineReport rl_rewarded = run_pipeline(rewarded, ro, "eval-rl");
  EXPECT_EQ(rl_rewarded.ran_steps, (Steps{"rl", "eval-rl"}));
  const int rl_calls = reward_recommend.calls.load();
  EXPECT_GT(rl_calls, 0) << "RL's train episodes were not scored on the reward environment";
  ro.align = "dpo";
  PipelineReport score_rewarded = run_pipeline(rewarded, ro, "score");
  EXPECT_EQ(score_rewarded.ran_steps, (Steps{"score"}));
  EXPECT_GT(reward_recommend.calls.load(), rl_calls) << "the DPO train pairs were not scored on the reward environment";
  EXPECT_NE(pwab::test::read_text(dir / "full" / "dpo" / "score" / ".done").find("held-out.pwab"), std::string::npos);
  // The checkpoint by content too: the same path retrained in place (another fingerprint) redoes the score step.
  rewarded.reward_fingerprint = "0123456789abcdef";
  EXPECT_EQ(run_pipeline(rewarded, ro, "score").ran_steps, (Steps{"score"}));
  EXPECT_EQ(run_pipeline(rewarded, ro, "score").ran_steps, Steps{});
  rewarded.reward_fingerprint = "fedcba9876543210";
  EXPECT_EQ(run_pipeline(rewarded, ro, "score").ran_steps, (Steps{"score"}));
  // Without it again: both are redone on the environment's recommender.
  EXPECT_EQ(run_pipeline(ctx, o, "eval-rl").ran_steps, (Steps{"rl", "eval-rl"}));
  EXPECT_EQ(run_pipeline(ctx, o, "score").ran_steps, (Steps{"score"}));

  o.dpo.learning_rate *= 2;
  o.align = "dpo";
  PipelineReport dpo_again = run_pipeline(ctx, o);
  EXPECT_EQ(dpo_again.ran_steps, (Steps{"dpo", "eval-dpo"}));
  PipelineReport rl_again = run_pipeline(ctx, o, "eval-rl");
  EXPECT_EQ(rl_again.ran_steps, Steps{});
  o.align = "rl";  // `train` with --align rl: the RL branch only
  PipelineReport align_rl = run_pipeline(ctx, o);
  EXPECT_EQ(align_rl.skipped_steps, (Steps{"tokenizer", "prepare", "sft", "eval-sft", "rl", "eval-rl"}));
  EXPECT_FALSE(align_rl.have_dpo);
  o.align = "dpo";

  // A variant without memory: tokenizer reused, everything from prepare on redone; evaluated with given functions.
  PipelineOptions v = o;
  v.out = dir / "no-memory";
  v.reuse_from = dir / "full";
  v.prepare.memory.k = 0;
  v.function_file = dir / "full" / "dpo" / "eval" / "functions.json";
  ctx.sample_model = nullptr;  // in-process sampling this time
  w.log.clear();
  PipelineReport variant = run_pipeline(ctx, v, "eval-sft");
  EXPECT_EQ(variant.skipped_steps, (Steps{"tokenizer"}));
  EXPECT_EQ(variant.ran_steps, (Steps{"prepare", "sft", "eval-sft"}));
  EXPECT_TRUE(w.logged("tokenizer: done with the same settings in " + (dir / "full").string() + ", reused"));
  for (const Example& e : read_examples(dir / "no-memory" / "data" / "param_train.jsonl"))
    EXPECT_EQ(e.memory, "none") << e.task;
  auto given = nlohmann::json::parse(pwab::test::read_text(v.function_file));
  auto used = nlohmann::json::parse(pwab::test::read_text(dir / "no-memory" / "sft" / "eval" / "functions.json"));
  EXPECT_EQ(given, used);
  // A variant with the same settings as the full run takes over every step.
  PipelineOptions same = o;
  same.out = dir / "same";
  same.reuse_from = dir / "full";
  PipelineReport reused = run_pipeline(ctx, same, "sft");
  EXPECT_EQ(reused.skipped_steps, (Steps{"tokenizer", "prepare", "sft"}));
  EXPECT_TRUE(fs::exists(dir / "same" / "sft" / "model" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "same" / "sft" / "eval")) << "a later step's folder came along";

  // Copy-constrained search queries with a candidates server: each search prompt asks the server for the prompt's
  // words only (`pwab lm serve` honours it), the other prompts do not; eval-sft and sample are redone.
  PipelineOptions copy = o;
  copy.copy_search = true;
  ctx.sample_model = llm.http.get();
  n_asked.clear();
  words_only.clear();
  EXPECT_EQ(run_pipeline(ctx, copy, "sample").ran_steps, (Steps{"eval-sft", "sample"}));
  std::map<std::string, data::TaskType> type_of;
  for (const char* split : {"param_train.jsonl", "param_test.jsonl"})
    for (const Example& e : read_examples(dir / "full" / "data" / split)) type_of[e.prompt] = e.type;
  ASSERT_EQ(words_only.size(), n_asked.size());
  std::size_t searches = 0;
  for (const auto& [prompt, flag] : words_only) {
    ASSERT_TRUE(type_of.count(prompt)) << prompt;
    EXPECT_EQ(flag, type_of[prompt] == data::TaskType::kSearch) << prompt;
    searches += flag;
  }
  EXPECT_GT(searches, 0u);
}

}  // namespace
}  // namespace pwab::puma
