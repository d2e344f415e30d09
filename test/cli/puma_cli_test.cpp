// `pwab puma` end to end as the real binary: the tiny preset's whole pipeline on the mini synthetic dataset (a
// from-scratch model over a vocabulary learnt from the data, SFT, beam-sampled candidates scored in the
// environment, DPO, the fast test), steps skipped when done and redone when their settings change, then the trained
// model serving the puma agent in `pwab run --local-model`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using pwab::test::TempDir;
using Json = nlohmann::json;
namespace fs = std::filesystem;

int run_binary(const std::string& args, std::string* errors = nullptr) {
  TempDir out_dir;
  std::string cmd = std::string(PWAB_BINARY) + " " + args + " > " + (out_dir / "out").string() + " 2> " +
                    (out_dir / "err").string();
  int status = std::system(cmd.c_str());
  if (errors) *errors = pwab::test::read_text(out_dir / "err") + pwab::test::read_text(out_dir / "out");
  return WEXITSTATUS(status);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Json read_json(const fs::path& file) { return Json::parse(pwab::test::read_text(file)); }

TEST(PumaCli, TinyPipelineEndToEndResumableThenServesTheAgent) {
  TempDir dir;
  const std::string data = (dir / "mini").string(), out = (dir / "puma").string();
  ASSERT_EQ(run_binary("data synth --out " + data + " --scale mini --seed 5"), 0);
  ASSERT_EQ(run_binary("rec train " + data + " --epochs 2 --eval-every 0"), 0);
  const std::string train = "puma train --data " + data + " --out " + out +
                            " --train-limit 150 --test-limit 30 --samples 3 --embedder hashing";
  std::string log;
  ASSERT_EQ(run_binary(train, &log), 0) << log;
  EXPECT_TRUE(has(log, "SFT model (fast test on the test split)")) << log;
  EXPECT_TRUE(has(log, "DPO model (fast test on the test split)")) << log;

  // The SFT model identifies the task function (the bar: function accuracy ≥ 0.9).
  Json sft = read_json(fs::path(out) / "sft" / "eval" / "fast_test.json");
  EXPECT_EQ(sft["overall"]["total"], 30);
  EXPECT_GE(sft["overall"]["function_acc"].get<double>(), 0.9) << sft.dump();
  Json trained = read_json(fs::path(out) / "sft" / "train.json");
  EXPECT_LT(trained["eval_loss"].get<double>(), 6.0) << trained.dump();  // far below log(vocab) = 7.6
  // Every train example gave a pair or was a tie (D7); the pairs' prompts are the SFT data's.
  Json score = read_json(fs::path(out) / "dpo" / "score" / "report.json");
  EXPECT_EQ(score["pairs"].get<int>() + score["tie_tasks"].get<int>(), 150) << score.dump();
  for (const char* file : {"sft/model/config.json", "sft/model/tokenizer.model", "dpo/model/model.safetensors",
                           "dpo/eval/functions.json", "dpo/eval/params.json", "data/param_train.jsonl"})
    EXPECT_TRUE(fs::exists(fs::path(out) / file)) << file;

  // Done steps are skipped; a changed DPO setting redoes DPO and what follows only.
  ASSERT_EQ(run_binary(train, &log), 0) << log;
  for (const char* step : {"tokenizer", "prepare", "sft", "eval-sft", "sample", "score", "dpo", "eval-dpo"})
    EXPECT_TRUE(has(log, std::string(step) + ": done before")) << step << "\n" << log;
  ASSERT_EQ(run_binary(train + " --dpo-epochs 2", &log), 0) << log;
  EXPECT_TRUE(has(log, "score: done before")) << log;
  EXPECT_TRUE(has(log, "dpo: running")) << log;
  EXPECT_TRUE(has(log, "eval-dpo: running")) << log;

  // The trained model serves the puma agent in-process.
  const std::string runs = (dir / "runs").string();
  ASSERT_EQ(run_binary("run --quiet --data " + data + " --agent puma --model puma-tiny --local-model " + out +
                           "/dpo/model --agent-opt tokenizer=" + out + "/dpo/model --agent-opt memory_tokens=192 "
                           "--memory-length 20 --agent-opt max_new_tokens=48 --embedder hashing --tasks 0:6 --out " +
                           runs,
                       &log),
            0)
      << log;
  std::string records = pwab::test::read_text(fs::path(runs) / "results.jsonl");
  EXPECT_EQ(std::count(records.begin(), records.end(), '\n'), 6);
  EXPECT_TRUE(has(pwab::test::read_text(fs::path(runs) / "manifest.json"), "local_model")) << "manifest";

  // Usage errors: the paper preset needs a base model; the local model answers raw completions only.
  EXPECT_EQ(run_binary("puma train --data " + data + " --out " + out + " --preset paper", &log), 2) << log;
  EXPECT_TRUE(has(log, "--base-model")) << log;
  EXPECT_EQ(run_binary("puma sft --data " + data + " --out " + out + " --search-labels gpt", &log), 2) << log;
}

}  // namespace
