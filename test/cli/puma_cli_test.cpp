// `pwab puma` end to end as the real binary: the tiny preset's whole pipeline on the mini synthetic dataset (a
// from-scratch model over a vocabulary learnt from the data, SFT, beam-sampled candidates scored in the
// environment, DPO, the fast test), steps skipped when done and redone when their settings change, multi-turn online
// RL beside DPO, then the trained model serving the puma agent in `pwab run --local-model`.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cctype>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "support/test_support.h"

#include <fmt/format.h>

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

std::string stdout_of(const std::string& args) {
  TempDir out_dir;
  std::string cmd = std::string(PWAB_BINARY) + " " + args + " > " + (out_dir / "out").string() + " 2> /dev/null";
  std::system(cmd.c_str());
  return pwab::test::read_text(out_dir / "out");
}

//! Waits up to `seconds` for `ready`.
template <class Ready>
bool wait_until(double seconds, Ready ready) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ready();
}

// Data-parallel SFT as two processes, started the way torchrun starts them (RANK, WORLD_SIZE, MASTER_PORT): both
// train; rank 1 killed mid-run makes rank 0 exit soon with an error naming it instead of hanging; the same command
// as one process then resumes from rank 0's checkpoint (issue 20).
TEST(PumaCli, TwoRanksTrainAndARankKilledMidRunStopsTheOtherThenTheRunResumes) {
  TempDir dir;
  const std::string data = (dir / "mini").string(), out = (dir / "puma").string();
  ASSERT_EQ(run_binary("data synth --out " + data + " --scale mini --seed 5"), 0);
  ASSERT_EQ(run_binary("rec train " + data + " --epochs 2 --eval-every 0"), 0);
  const std::string common =
      " --data " + data + " --out " + out + " --train-limit 20 --embedder hashing --sft-epochs 3 --dist-timeout-s 60";
  std::string log;
  ASSERT_EQ(run_binary("puma prepare" + common, &log), 0) << log;
  const int port = pwab::test::free_port();
  auto rank = [&](int r) {  // "RANK=r ... exec pwab puma sft ...": the shell becomes pwab
    return fmt::format("RANK={} WORLD_SIZE=2 MASTER_PORT={} exec {} puma sft{} > {} 2>&1", r, port, PWAB_BINARY,
                       common, (dir / ("rank" + std::to_string(r) + ".log")).string());
  };
  // Rank 0 in the background with its exit status in a file; rank 1 exec'd, so that its pid is pwab's own.
  ASSERT_EQ(std::system(("(sh -c '" + rank(0) + "'; echo $? > " + (dir / "rank0.rc").string() + ") &").c_str()), 0);
  ASSERT_EQ(std::system(("sh -c '" + rank(1) + "' & echo $! > " + (dir / "rank1.pid").string()).c_str()), 0);
  ASSERT_TRUE(wait_until(10, [&] { return fs::exists(dir / "rank1.pid"); }));
  const pid_t rank1 = std::stoi(pwab::test::read_text(dir / "rank1.pid"));
  // Once rank 0 has checkpointed the first epoch, kill rank 1.
  const fs::path checkpoint = fs::path(out) / "sft" / "work" / "checkpoint.pt";
  ASSERT_TRUE(wait_until(300, [&] { return fs::exists(checkpoint) || fs::exists(dir / "rank0.rc"); }))
      << pwab::test::read_text(dir / "rank0.log");
  ASSERT_FALSE(fs::exists(dir / "rank0.rc")) << pwab::test::read_text(dir / "rank0.log");
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until(120, [&] { return fs::exists(dir / "rank0.rc") && !pwab::test::read_text(dir / "rank0.rc").empty(); }))
      << "rank 0 still runs after rank 1 was killed";
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(60));  // within the collective timeout
  EXPECT_NE(std::stoi(pwab::test::read_text(dir / "rank0.rc")), 0);
  const std::string rank0_log = pwab::test::read_text(dir / "rank0.log");
  EXPECT_TRUE(has(rank0_log, "rank 1 stopped or stopped answering")) << rank0_log;
  EXPECT_TRUE(has(pwab::test::read_text(dir / "rank1.log"), "rank 1 of 2 (torchrun, gloo)"));

  // The same command as one process continues from the checkpoint rank 0 wrote.
  ASSERT_EQ(run_binary("puma sft" + common, &log), 0) << log;
  Json trained = read_json(fs::path(out) / "sft" / "train.json");
  EXPECT_TRUE(trained["resumed"].get<bool>()) << trained.dump();
  EXPECT_EQ(trained["ranks"], 1);
}

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
  // The tiny preset trains every weight, in SFT and in DPO alike (the count TRL's benchmarks compare with).
  EXPECT_GT(trained["trainable_parameters"].get<int64_t>(), 100000) << trained.dump();
  EXPECT_EQ(read_json(fs::path(out) / "dpo" / "train.json")["trainable_parameters"], trained["trainable_parameters"]);
  // Every train example gave a pair or was a tie (docs/decisions.md D7); the pairs' prompts are the SFT data's.
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

  // Training rewards from a recommender that held the train purchases out (--reward-checkpoint): the score step is
  // redone with it and names it in its settings; a path without a checkpoint stops before any step.
  const std::string held = (dir / "held-out.pwab").string();
  ASSERT_EQ(run_binary("rec train " + data + " --hold-out-train --epochs 2 --eval-every 0 --out " + held, &log), 0)
      << log;
  const std::string score_step = "puma score" + train.substr(std::string("puma train").size()) + " --dpo-epochs 2";
  EXPECT_EQ(run_binary(score_step + " --reward-checkpoint " + (dir / "none.pwab").string(), &log), 1) << log;
  EXPECT_TRUE(has(log, "no recommender checkpoint at")) << log;
  ASSERT_EQ(run_binary(score_step + " --reward-checkpoint " + held, &log), 0) << log;
  EXPECT_TRUE(has(log, "sample: done before")) << log;
  EXPECT_TRUE(has(log, "score: running")) << log;
  EXPECT_TRUE(has(pwab::test::read_text(fs::path(out) / "dpo" / "score" / ".done"), held));

  // Multi-turn online RL end to end on the mini dataset, beside DPO in the same directory: the puma agent against
  // the scripted user; every rollout keeps the token ids it sampled with their log-probabilities.
  const std::string rl = "puma eval-rl --data " + data + " --out " + out +
                         " --train-limit 150 --test-limit 30 --samples 3 --embedder hashing --rl-track multi "
                         "--rl-iterations 2 --rl-tasks 4 --rl-group 2 --rl-max-steps 2 --rl-max-new-tokens 24 "
                         "--rl-eval-tasks 0 --rl-save-rollouts";
  ASSERT_EQ(run_binary(rl, &log), 0) << log;
  EXPECT_TRUE(has(log, "sft: done before")) << log;
  EXPECT_TRUE(has(log, "rl: running")) << log;
  EXPECT_TRUE(has(log, "RL model (fast test on the test split)")) << log;
  Json rl_report = read_json(fs::path(out) / "rl" / "train.json");
  EXPECT_EQ(rl_report["episodes"].get<int>(), 2 * 4 * 2) << rl_report.dump();
  std::ifstream rollouts(fs::path(out) / "rl" / "work" / "rollouts.jsonl");
  int episodes = 0, multi_turn = 0;
  for (std::string line; std::getline(rollouts, line); ++episodes) {
    Json e = Json::parse(line);
    EXPECT_TRUE(has(e["task"].get<std::string>(), "train/")) << line;
    multi_turn += e["turns"].size() > 2;
    EXPECT_EQ(e["format"], "pwab-rl-episode/1");
    for (const Json& turn : e["turns"]) {
      EXPECT_FALSE(turn["prompt_ids"].empty()) << line;
      EXPECT_EQ(turn["completion_ids"].size(), turn["logprobs"].size()) << line;
      // The loss mask covers prompt and completion, and trains the model's own tokens only.
      ASSERT_EQ(turn["loss_mask"].size(), turn["prompt_ids"].size() + turn["completion_ids"].size()) << line;
      int trained = 0;
      for (const Json& m : turn["loss_mask"]) trained += m.get<int>();
      EXPECT_EQ(trained, static_cast<int>(turn["completion_ids"].size())) << line;
      EXPECT_EQ(turn["loss_mask"][0], 0) << line;
    }
  }
  EXPECT_EQ(episodes, 16);
  EXPECT_GT(multi_turn, 0) << "no episode went past its first step";
  EXPECT_TRUE(fs::exists(fs::path(out) / "rl" / "eval" / "fast_test.json"));
  EXPECT_TRUE(fs::exists(fs::path(out) / "dpo" / "model" / "model.safetensors")) << "the DPO branch stays";

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

  // Token-exact rollouts of the agent: every completion (the function, then each parameter) as ids, mask and
  // sampling log-probabilities; the parameter's text is what the episode's action was made of.
  const std::string traced = (dir / "traced").string(), rollouts_file = (dir / "agent-rollouts.jsonl").string();
  ASSERT_EQ(run_binary("run --quiet --data " + data + " --agent puma --model puma-tiny --local-model " + out +
                           "/dpo/model --agent-opt tokenizer=" + out + "/dpo/model --agent-opt memory_tokens=192 "
                           "--memory-length 20 --agent-opt max_new_tokens=48 --embedder hashing --tasks 0:4 "
                           "--agent-opt rollouts=" + rollouts_file + " --out " + traced,
                       &log),
            0)
      << log;
  const std::string traced_records = pwab::test::read_text(fs::path(traced) / "results.jsonl");
  EXPECT_EQ(std::count(traced_records.begin(), traced_records.end(), '\n'), 4);
  std::ifstream agent_rollouts(rollouts_file);
  int functions = 0, parameters = 0;
  std::vector<int32_t> a_function_prompt;
  for (std::string line; std::getline(agent_rollouts, line);) {
    Json r = Json::parse(line);
    EXPECT_EQ(r["format"], "pwab-rollout/1");
    const bool function = r["kind"] == "function";
    (function ? functions : parameters)++;
    if (function && a_function_prompt.empty()) a_function_prompt = r["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_FALSE(r["completion_ids"].empty()) << line;
    const std::size_t n = r["prompt_ids"].size() + r["completion_ids"].size();
    ASSERT_EQ(r["loss_mask"].size(), n) << line;
    ASSERT_EQ(r["logprobs"].size(), n) << line;
    for (std::size_t i = r["prompt_ids"].size(); i < n; ++i) {
      EXPECT_EQ(r["loss_mask"][i], 1) << line;
      EXPECT_LE(r["logprobs"][i].get<double>(), 0.0) << line;
    }
  }
  EXPECT_EQ(functions, 4);  // one function completion per episode
  EXPECT_GE(parameters, 4);

  // Copy-constrained search queries: the flag is checked, is part of eval-sft's settings (the SFT model is kept,
  // its evaluation redone), and the agent asks the local model for them.
  EXPECT_EQ(run_binary(train + " --search-decoding nope", &log), 2) << log;
  EXPECT_TRUE(has(log, "--search-decoding must be free or copy")) << log;
  const std::string eval_copy = "puma eval-sft" + train.substr(std::string("puma train").size()) +
                                " --dpo-epochs 2 --search-decoding copy";
  ASSERT_EQ(run_binary(eval_copy, &log), 0) << log;
  EXPECT_TRUE(has(log, "sft: done before")) << log;
  EXPECT_TRUE(has(log, "eval-sft: running")) << log;
  EXPECT_TRUE(has(pwab::test::read_text(fs::path(out) / "sft" / "eval" / ".done"), "search_decoding"));
  const std::string copied = (dir / "copied").string();
  ASSERT_EQ(run_binary("run --quiet --data " + data + " --agent puma --model puma-tiny --local-model " + out +
                           "/dpo/model --agent-opt tokenizer=" + out + "/dpo/model --agent-opt memory_tokens=192 "
                           "--memory-length 20 --agent-opt max_new_tokens=48 --embedder hashing --tasks 0:6 "
                           "--agent-opt copy_search=true --out " + copied,
                       &log),
            0)
      << log;
  EXPECT_TRUE(has(pwab::test::read_text(fs::path(copied) / "manifest.json"), "copy_search")) << "manifest";

  // The same model over /v1/completions (`pwab lm serve`): greedy text as `pwab lm generate` writes it, and the
  // token ids and log-probabilities an engine sampling elsewhere checks its own against.
  {
    pwab::test::PwabProcess lm({"lm", "serve", "--model", out + "/dpo/model", "--name", "puma-tiny", "--port", "0"},
                               (dir / "lm-serve.log").string());
    ASSERT_EQ(lm.url().rfind("http://127.0.0.1:", 0), 0u) << pwab::test::read_text(dir / "lm-serve.log");
    httplib::Client client(lm.url());
    client.set_read_timeout(120, 0);
    const std::string prompt = "### Instruction:\nI need a charger\n### Tool:\n";
    auto answer = client.Post("/v1/completions",
                              Json{{"model", "puma-tiny"}, {"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0},
                                   {"logprobs", 0}, {"return_token_ids", true}}
                                  .dump(),
                              "application/json");
    ASSERT_TRUE(answer);
    ASSERT_EQ(answer->status, 200) << answer->body;
    Json c = Json::parse(answer->body)["choices"][0];
    std::string generated = stdout_of("lm generate --model " + out + "/dpo/model --max-new-tokens 8 --prompt '" +
                                      "### Instruction:\nI need a charger\n### Tool:\n'");
    while (!generated.empty() && generated.back() == '\n') generated.pop_back();
    EXPECT_EQ(c["text"], generated);
    EXPECT_EQ(c["token_ids"].size(), c["logprobs"]["token_logprobs"].size());
    EXPECT_FALSE(c["token_ids"].empty());
    EXPECT_EQ(c["logprobs"]["tokens"][0], "token_id:" + std::to_string(c["token_ids"][0].get<int>()));
    EXPECT_EQ(c["prompt_token_ids"][0], a_function_prompt.at(0));  // the same tokenizer, BOS first
    // Sampled choices: reproducible for a seed, each choice its own draws.
    Json sampled = {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 1.0}, {"n", 2}, {"seed", 3},
                    {"return_token_ids", true}};
    auto first = client.Post("/v1/completions", sampled.dump(), "application/json");
    auto second = client.Post("/v1/completions", sampled.dump(), "application/json");
    ASSERT_TRUE(first && second);
    EXPECT_EQ(Json::parse(first->body)["choices"], Json::parse(second->body)["choices"]);
    EXPECT_EQ(Json::parse(first->body)["choices"].size(), 2u);
    // "prompt_words_only" (the puma agent's copy_search, DPO's candidates server): every sampled token is one of
    // the prompt's own, or of one of its words read alone with or without the punctuation around it
    // (search_vocabulary.h), which the test collects over the same wire from the prompt ids the server reports.
    std::string query_prompt;  // a search task's parameter prompt, as the pipeline's evaluation reads it
    {
      std::istringstream lines(pwab::test::read_text(fs::path(out) / "data" / "param_test.jsonl"));
      for (std::string line; query_prompt.empty() && std::getline(lines, line);)
        if (Json e = Json::parse(line); e["type"] == "search") query_prompt = e["prompt"].get<std::string>();
    }
    ASSERT_FALSE(query_prompt.empty());
    auto prompt_ids = [&](const std::string& text) {
      auto r = client.Post("/v1/completions",
                           Json{{"prompt", text}, {"max_tokens", 1}, {"return_token_ids", true}}.dump(),
                           "application/json");
      EXPECT_TRUE(r && r->status == 200) << text;
      std::vector<int> ids = Json::parse(r->body)["choices"][0]["prompt_token_ids"].get<std::vector<int>>();
      return std::vector<int>(ids.begin() + 1, ids.end());  // BOS first
    };
    std::set<int> allowed;
    for (int id : prompt_ids(query_prompt)) allowed.insert(id);
    std::istringstream words(query_prompt);
    for (std::string w; words >> w;) {
      for (int id : prompt_ids(w)) allowed.insert(id);
      auto edge = [](char c) { return std::ispunct(static_cast<unsigned char>(c)) && c != '&' && c != '$' && c != '%'; };
      std::size_t a = 0, b = w.size();
      while (a < b && edge(w[a])) ++a;
      while (b > a && edge(w[b - 1])) --b;
      if (a < b && (a > 0 || b < w.size()))
        for (int id : prompt_ids(w.substr(a, b - a))) allowed.insert(id);
    }
    auto constrained = client.Post("/v1/completions",
                                   Json{{"prompt", query_prompt}, {"max_tokens", 12}, {"temperature", 1.5}, {"n", 4},
                                        {"seed", 11}, {"return_token_ids", true}, {"prompt_words_only", true}}
                                       .dump(),
                                   "application/json");
    ASSERT_TRUE(constrained);
    ASSERT_EQ(constrained->status, 200) << constrained->body;
    std::size_t tokens = 0;
    const Json constrained_body = Json::parse(constrained->body);
    for (const Json& choice : constrained_body["choices"]) {
      const std::vector<int> ids = choice["token_ids"].get<std::vector<int>>();
      for (std::size_t t = 0; t < ids.size(); ++t, ++tokens) {
        if (!(t + 1 == ids.size() && choice["finish_reason"] == "stop")) {  // the end-of-sequence token
          EXPECT_TRUE(allowed.count(ids[t])) << "token " << ids[t] << " of " << choice.dump();
        }
      }
    }
    EXPECT_GT(tokens, 0u) << constrained->body;
    // "top_k" (vLLM's field, which DPO's candidates server is sent) reaches the model: from the single most likely
    // token, a hot sample of any seed is the greedy text; anything but an integer from -1 is refused by name.
    for (int seed : {1, 2, 3}) {
      auto top1 = client.Post("/v1/completions",
                              Json{{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 1.5}, {"seed", seed},
                                   {"top_k", 1}}.dump(),
                              "application/json");
      ASSERT_TRUE(top1);
      ASSERT_EQ(top1->status, 200) << top1->body;
      EXPECT_EQ(Json::parse(top1->body)["choices"][0]["text"], generated) << "seed " << seed;
    }
    auto bad_top_k = client.Post("/v1/completions", Json{{"prompt", prompt}, {"top_k", "many"}}.dump(),
                                 "application/json");
    ASSERT_TRUE(bad_top_k);
    EXPECT_EQ(bad_top_k->status, 400);
    EXPECT_TRUE(has(bad_top_k->body, "'top_k'")) << bad_top_k->body;
    // DPO's candidates from this server (--sample-base-url): every preset sends top_k (50 here, -1 for every token)
    // and, on search prompts with copy decoding, prompt_words_only; the candidates arrive, DPO trains on them.
    const std::string served = (dir / "served-dpo").string();
    ASSERT_EQ(run_binary("puma eval-dpo --data " + data + " --out " + served + " --reuse-from " + out +
                             " --train-limit 150 --test-limit 30 --samples 3 --embedder hashing --sample-limit 12 "
                             "--dpo-eval-tasks 4 --sample-base-url " + lm.url() + "/v1 --sample-model puma-tiny",
                         &log),
              0)
        << log;
    EXPECT_TRUE(has(log, "sample: running")) << log;
    std::size_t sampled_tasks = 0;
    {
      std::istringstream lines(pwab::test::read_text(fs::path(served) / "dpo" / "sample" / "candidates.jsonl"));
      for (std::string line; std::getline(lines, line); ++sampled_tasks)
        EXPECT_EQ(Json::parse(line)["candidates"].size(), 3u) << line;
    }
    EXPECT_EQ(sampled_tasks, 12u);
    EXPECT_TRUE(fs::exists(fs::path(served) / "dpo" / "eval" / "fast_test.json"));
    EXPECT_EQ(lm.stop(), 0);
  }

  // Usage errors: the paper preset needs a base model; the local model answers raw completions only.
  EXPECT_EQ(run_binary("puma train --data " + data + " --out " + out + " --preset paper", &log), 2) << log;
  EXPECT_TRUE(has(log, "--base-model")) << log;
  EXPECT_EQ(run_binary("puma sft --data " + data + " --out " + out + " --search-labels gpt", &log), 2) << log;
}


// The rest of issue 18's surface on the mini dataset: the paper preset's recipe check, a LoRA pipeline whose PEFT
// adapter serves on top of its base model, no SFT with --sft-epochs 0, the exchange formats, the original's fast
// test on the pipeline's own prediction files, `pwab lm`, the report and the ablation tables.
TEST(PumaCli, PaperRecipeAdaptersExchangeFastTestLmAndAblation) {
  TempDir dir;
  const std::string data = (dir / "mini").string(), out = (dir / "tiny").string();
  ASSERT_EQ(run_binary("data synth --out " + data + " --scale mini --seed 5"), 0);
  ASSERT_EQ(run_binary("rec train " + data + " --epochs 2 --eval-every 0"), 0);
  const std::string small = " --train-limit 40 --test-limit 12 --embedder hashing --sft-epochs 3";
  std::string log;
  ASSERT_EQ(run_binary("puma train --data " + data + " --out " + out + small + " --samples 3", &log), 0) << log;

  // --preset paper is the paper's recipe or says what is missing; --accept-deviations opts out.
  EXPECT_EQ(run_binary("puma train --data " + data + " --out " + (dir / "p").string() + " --preset paper --base-model " +
                           out + "/sft/model",
                       &log),
            2)
      << log;
  EXPECT_TRUE(has(log, "--search-labels llm")) << log;
  EXPECT_TRUE(has(log, "--embedder minilm:DIR")) << log;
  EXPECT_TRUE(has(log, "--accept-deviations")) << log;
  // The paper preset on the tiny model as its base: LoRA training saves PEFT adapters beside the merged models.
  const std::string paper = (dir / "paper").string();
  ASSERT_EQ(run_binary("puma train --data " + data + " --out " + paper + " --preset paper --accept-deviations "
                           "--base-model " + out + "/sft/model --train-limit 16 --test-limit 6 --embedder hashing "
                           "--sft-epochs 1 --dpo-epochs 1 --grad-accum 4 --samples 2 --max-new-tokens 12 "
                           "--memory-tokens 192 --max-length 384 --dpo-max-length 320 --dpo-max-prompt-length 256 "
                           "--lora-r 4 --lora-alpha 8",
                       &log),
            0)
      << log;
  for (const char* f : {"sft/adapter/adapter_config.json", "sft/adapter/adapter_model.safetensors",
                        "sft/model/model.safetensors"})
    EXPECT_TRUE(fs::exists(fs::path(paper) / f)) << f;
  Json adapter = read_json(fs::path(paper) / "sft" / "adapter" / "adapter_config.json");
  EXPECT_EQ(adapter["r"], 4);
  EXPECT_EQ(adapter["modules_to_save"].size(), 5u);
  // base + adapter scores a completion as the merged model does
  const std::string prompt = "\"### Instruction:Find a kettle\n\n### Tool:\n\"", completion = "search_product_by_query";
  Json merged = Json::parse(stdout_of("lm score --model " + paper + "/sft/model --prompt " + prompt + " --completion " +
                                      completion));
  Json adapted = Json::parse(stdout_of("lm score --model " + out + "/sft/model --adapter " + paper +
                                       "/sft/adapter --prompt " + prompt + " --completion " + completion));
  EXPECT_NEAR(merged["logprob"].get<double>(), adapted["logprob"].get<double>(), 1e-3) << merged << adapted;
  EXPECT_EQ(merged["tokens"], adapted["tokens"]);
  // and serves the puma agent in-process
  ASSERT_EQ(run_binary("run --quiet --data " + data + " --agent puma --model puma --local-model " + out +
                           "/sft/model --local-adapter " + paper + "/sft/adapter --agent-opt memory_tokens=192 "
                           "--memory-length 20 --agent-opt max_new_tokens=12 --embedder hashing --tasks 0:3 --out " +
                           (dir / "runs-adapter").string(),
                       &log),
            0)
      << log;
  EXPECT_TRUE(has(pwab::test::read_text(dir / "runs-adapter" / "manifest.json"), "adapter")) << "manifest";
  EXPECT_EQ(run_binary("run --data " + data + " --agent puma --model puma --local-adapter " + paper + "/sft/adapter",
                       &log),
            2)
      << log;

  // --sft-epochs 0 is no SFT: the base model goes on unchanged.
  ASSERT_EQ(run_binary("puma sft --data " + data + " --out " + (dir / "nosft").string() +
                           " --train-limit 40 --test-limit 12 --embedder hashing --sft-epochs 0",
                       &log),
            0)
      << log;
  EXPECT_EQ(read_json(dir / "nosft" / "sft" / "train.json")["steps"], 0);

  // Export for the other engines.
  for (const char* format : {"trl", "llamafactory", "original"})
    EXPECT_EQ(run_binary("puma export --out " + out + " --to " + (dir / format).string() + " --format " + format, &log),
              0)
        << log;
  Json info = read_json(dir / "llamafactory" / "dataset_info.json");
  EXPECT_EQ(info["puma_dpo"]["ranking"], true);
  EXPECT_EQ(read_json(dir / "original" / "param_data.json")["train"].size(), 40u);
  EXPECT_EQ(run_binary("puma export --out " + out + " --to " + (dir / "x").string() + " --format csv", &log), 2) << log;

  // The original's fast test on the pipeline's own prediction files gives the pipeline's per-task scores.
  const std::string scored = (dir / "fast.json").string();
  ASSERT_EQ(run_binary("puma fast-test --data " + data + " --functions " + out + "/dpo/eval/functions.json --params " +
                           out + "/dpo/eval/params.json --embedder hashing --json " + scored,
                       &log),
            0)
      << log;
  EXPECT_TRUE(has(log, "Tool Accuracy Avg")) << log;
  EXPECT_TRUE(has(log, "have no prediction in the files")) << log;  // only the first 12 test tasks were evaluated
  Json fast = read_json(scored);
  std::istringstream scores(pwab::test::read_text(fs::path(out) / "dpo" / "eval" / "scores.jsonl"));
  std::size_t i = 0;
  for (std::string line; std::getline(scores, line); ++i) {
    Json t = Json::parse(line);
    EXPECT_EQ(fast["tasks"][i]["task"], t["task"]);
    EXPECT_NEAR(fast["tasks"][i]["r"].get<double>(), t["r"].get<double>(), 1e-9) << t;
  }
  EXPECT_EQ(i, 12u);
  EXPECT_EQ(run_binary("puma fast-test --data " + data + " --params " + out + "/dpo/eval/params.json --dpo-out " +
                           (dir / "dpo_scores.json").string() + " --embedder hashing",
                       &log),
            0)
      << log;
  EXPECT_EQ(read_json(dir / "dpo_scores.json").size(), 12u);

  // `pwab lm`: generation and a usage error.
  EXPECT_EQ(run_binary("lm generate --model " + out + "/sft/model --prompt " + prompt + " --max-new-tokens 16", &log), 0)
      << log;
  // The model is small and briefly trained: a function name begins, it need not be spelled out in 16 tokens.
  EXPECT_TRUE(has(log, "search_product") || has(log, "add_product") || has(log, "get_recommend")) << log;
  EXPECT_EQ(run_binary("lm generate --model " + out + "/sft/model --samples 2 --prompt x", &log), 2) << log;
  EXPECT_EQ(run_binary("lm score --model " + (dir / "missing").string() + " --prompt a --completion b", &log), 1) << log;

  // The report, rebuilt from the files.
  EXPECT_TRUE(has(stdout_of("puma report --out " + out), "# PUMA pipeline report"));

  // Tables 5 and 6 on a slice of the data, finished steps reused.
  const std::string ablation = (dir / "ablation").string();
  ASSERT_EQ(run_binary("puma ablate --data " + data + " --out " + ablation +
                           " --train-limit 30 --test-limit 10 --embedder hashing --sft-epochs 1 --samples 2 "
                           "--memory-lengths 96,192 --bootstrap 100",
                       &log),
            0)
      << log;
  EXPECT_TRUE(has(log, "reused")) << log;
  for (const char* row : {"| PUMA |", "| w/o Task-specific Memory |", "| w/o SFT |", "| w/o DPO |", "| 96 |", "| 192 |"})
    EXPECT_TRUE(has(log, row)) << row << "\n" << log;
  EXPECT_TRUE(fs::exists(fs::path(ablation) / "ablation.json"));
  EXPECT_TRUE(fs::exists(fs::path(ablation) / "wo-sft" / "seed-1" / "dpo" / "eval" / "scores.jsonl"));
}

}  // namespace
