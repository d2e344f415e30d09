// `pwab puma train|prepare|sft|eval-sft|sample|score|dpo|eval-dpo`: PUMA's training pipeline (src/puma/pipeline.h).
// Every subcommand runs the pipeline up to its step, skipping the steps already done with the same settings, so
// `pwab puma train` after an interruption continues where it stopped.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/llm_setup.h"
#include "core/error.h"
#include "puma/pipeline.h"
#include "puma/run.h"

namespace pwab::cli {
namespace {

struct PumaArgs {
  std::string data, out, preset = "tiny", base_model, embedder = "fasttext", checkpoint, index_dir;
  std::string search_labels = "heuristic", device = "cpu", dtype = "float32";
  int train_limit = 0, test_limit = 0, samples = 0, sft_epochs = 0, dpo_epochs = 0, memory_tokens = 0, top_k = 10;
  double sft_lr = 0, dpo_lr = 0;
  uint64_t seed = 1;
  LlmFlags llm;
};

std::atomic<bool> g_cancel{false};
extern "C" void on_puma_sigint(int) { g_cancel.store(true); }

puma::PipelineOptions pipeline_options(const PumaArgs& a) {
  if (a.preset != "tiny" && a.preset != "paper") throw UsageError("--preset must be tiny or paper, not '" + a.preset + "'");
  if (a.preset == "paper" && a.base_model.empty())
    throw UsageError("--preset paper fine-tunes a base model: give --base-model DIR (e.g. Llama-2-7b-chat-hf)");
  puma::PipelineOptions o = a.preset == "tiny" ? puma::PipelineOptions::tiny_preset() : puma::PipelineOptions::paper_preset();
  o.out = a.out;
  o.base_model = a.base_model;
  o.seed = a.seed;
  o.sft.seed = o.dpo.seed = a.seed;
  o.model.device = a.device;
  o.model.dtype = a.dtype;
  o.train_limit = a.train_limit;
  o.test_limit = a.test_limit;
  o.search_labels = a.search_labels;
  if (a.samples > 0) o.samples = a.samples;
  if (a.sft_epochs > 0) o.sft.epochs = a.sft_epochs;
  if (a.dpo_epochs > 0) o.dpo.epochs = a.dpo_epochs;
  if (a.sft_lr > 0) o.sft.learning_rate = a.sft_lr;
  if (a.dpo_lr > 0) o.dpo.learning_rate = a.dpo_lr;
  if (a.memory_tokens > 0) o.prepare.memory.max_tokens = a.memory_tokens;
  if (a.search_labels != "heuristic" && a.search_labels != "llm")
    throw UsageError("--search-labels must be heuristic or llm, not '" + a.search_labels + "'");
  return o;
}

std::string progress_text(const puma::TrainProgress& p) {
  return fmt::format("step {}/{} epoch {} loss {:.4f} lr {:.2e} {:.0f} tokens/s", p.step, p.total, p.epoch + 1,
                     p.loss, p.lr, p.tokens_per_s);
}

void print_report(const puma::PipelineReport& r) {
  auto section = [](const char* name, const puma::FastTestResult& t) {
    std::cout << name << " (fast test on the test split):\n" << t.table();
  };
  if (r.have_sft) section("SFT model", r.sft);
  if (r.have_dpo) {
    std::cout << fmt::format("DPO: {} preference pairs ({} train tasks tied, no pair)\n", r.preference_pairs,
                             r.tie_tasks);
    section("DPO model", r.dpo);
  }
}

void run_puma(const PumaArgs& a, const std::string& until) {
  puma::TrainingConfig config{a.data, a.index_dir, a.checkpoint, a.embedder, a.top_k, pipeline_options(a), until};
  LlmSetup models = make_llm_setup(a.llm, /*need_agent=*/a.search_labels == "llm", /*need_user=*/false);
  const bool tty = isatty(STDERR_FILENO);
  puma::TrainingHooks hooks;
  hooks.status = stderr_status();
  hooks.log = [](const std::string& line) { std::cerr << "puma: " << line << "\n"; };
  hooks.progress = [tty](const puma::TrainProgress& p) {
    if (tty) std::cerr << "\r\033[K" << progress_text(p) << std::flush;
  };
  g_cancel.store(false);
  std::signal(SIGINT, on_puma_sigint);
  hooks.cancel = &g_cancel;
  puma::PipelineReport report = puma::run_training(config, models, hooks);
  std::signal(SIGINT, SIG_DFL);
  if (tty) std::cerr << "\r\033[K";
  if (report.cancelled) throw Error("interrupted; run the same command again to continue from the checkpoint");
  print_report(report);
}

void add_puma_options(CLI::App& cmd, PumaArgs& a) {
  cmd.add_option("--data", a.data, "Dataset directory")->required();
  cmd.add_option("--out", a.out, "Pipeline directory (created; re-running continues it)")->required();
  cmd.add_option("--preset", a.preset, "tiny (a small model from scratch, CPU) or paper (§5 settings, needs "
                                       "--base-model)")->capture_default_str();
  cmd.add_option("--base-model", a.base_model, "Hugging Face LLaMA directory to fine-tune (with LoRA)");
  cmd.add_option("--embedder", a.embedder, "Memory retrieval and review rewards: fasttext | minilm:DIR | hashing")
      ->capture_default_str();
  cmd.add_option("--checkpoint", a.checkpoint, "SASRec checkpoint (default: DATA's)");
  cmd.add_option("--index-dir", a.index_dir, "BM25 index directory (default: DATA/.pwab-index)");
  cmd.add_option("--search-labels", a.search_labels, "Search pseudo-labels: heuristic, or llm (with --model)")
      ->capture_default_str();
  cmd.add_option("--device", a.device, "cpu or cuda[:N]")->capture_default_str();
  cmd.add_option("--dtype", a.dtype, "float32 or bfloat16 (float16 on CUDA)")->capture_default_str();
  cmd.add_option("--train-limit", a.train_limit, "Use the first N train tasks only (0 = all)");
  cmd.add_option("--test-limit", a.test_limit, "Evaluate on the first N test tasks only (0 = all)");
  cmd.add_option("--samples", a.samples, "DPO candidates per train task (default: the preset's)");
  cmd.add_option("--sft-epochs", a.sft_epochs, "SFT epochs (default: the preset's)");
  cmd.add_option("--sft-lr", a.sft_lr, "SFT learning rate (default: the preset's)");
  cmd.add_option("--dpo-epochs", a.dpo_epochs, "DPO epochs (default: the preset's)");
  cmd.add_option("--dpo-lr", a.dpo_lr, "DPO learning rate (default: the preset's)");
  cmd.add_option("--memory-tokens", a.memory_tokens, "Memory token budget (default: the preset's)");
  cmd.add_option("--seed", a.seed, "Seed of initialisation, data order and sampling")->capture_default_str();
  add_llm_flags(cmd, a.llm);
}

}  // namespace

void add_puma_commands(CLI::App& app) {
  auto* puma = app.add_subcommand("puma", "PUMA training: prepare, SFT, sampling, scoring, DPO, evaluation");
  puma->require_subcommand(1);
  std::vector<std::pair<std::string, std::string>> commands = {
      {"train", ""},
      {"tokenizer", "tokenizer"},
      {"prepare", "prepare"},
      {"sft", "sft"},
      {"eval-sft", "eval-sft"},
      {"sample", "sample"},
      {"score", "score"},
      {"dpo", "dpo"},
      {"eval-dpo", "eval-dpo"},
  };
  for (const auto& [name, until] : commands) {
    auto a = std::make_shared<PumaArgs>();
    std::string help = name == "train" ? "Every step, skipping those already done"
                                       : "The pipeline up to the " + name + " step (earlier done steps are skipped)";
    auto* cmd = puma->add_subcommand(name, help);
    add_puma_options(*cmd, *a);
    cmd->callback([a, step = until] { run_puma(*a, step); });
  }
}

}  // namespace pwab::cli
