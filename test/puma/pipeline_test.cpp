// run_pipeline's control flow without training a model: the step list, the usage errors, the `until` stop, and
// the resume rule on the first two steps (tokenizer, prepare), which need no libtorch compute: a step done with
// the same settings is skipped, a changed setting redoes its step and every step after it.
#include "puma/pipeline.h"

#include <gtest/gtest.h>

#include "agents/fc_test_util.h"
#include "core/error.h"
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

struct World {
  data::Dataset ds = dataset();
  agents::fctest::KeywordEmbedder embedder;
  agents::fctest::FixedSearch search{{"B0KETTLE02", "B0KETTLE01"}};
  agents::fctest::FixedRecommend recommend{{"B0SOCKS001", "B0MUG00001"}};
  env::Environment env{ds, &search, &recommend, embedder};
  std::vector<std::string> log;

  PipelineContext context() {
    PipelineContext c;
    c.ds = &ds;
    c.embedder = &embedder;
    c.env = &env;
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
  EXPECT_EQ(pipeline_steps(), (Steps{"tokenizer", "prepare", "sft", "eval-sft", "sample", "score", "dpo", "eval-dpo"}));
  World w;
  pwab::test::TempDir dir;
  try {
    run_pipeline(w.context(), tiny_options(dir.path()), "train");
    FAIL() << "an unknown step ran";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown pipeline step 'train' (steps: tokenizer, prepare, sft, eval-sft, sample, "
                                     "score, dpo, eval-dpo)");
  }
  PipelineContext no_env = w.context();
  no_env.env = nullptr;
  EXPECT_THROW(run_pipeline(no_env, tiny_options(dir.path()), "prepare"), UsageError);
  PipelineOptions llm_labels = tiny_options(dir.path());
  llm_labels.search_labels = "llm";  // and no labeler in the context
  EXPECT_THROW(run_pipeline(w.context(), llm_labels, "prepare"), UsageError);
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
  for (const char* file : {"function_train.jsonl", "function_test.jsonl", "param_train.jsonl", "param_test.jsonl"})
    EXPECT_GT(fs::file_size(dir / "data" / file), 0u) << file;
  EXPECT_FALSE(fs::exists(dir / "sft")) << "the run went past `until`";
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
  o.tiny_vocab_size = 380;
  PipelineReport vocab_changed = run_pipeline(w.context(), o, "prepare");
  EXPECT_TRUE(vocab_changed.skipped_steps.empty());
  EXPECT_EQ(vocab_changed.ran_steps, (Steps{"tokenizer", "prepare"}));
}

}  // namespace
}  // namespace pwab::puma
