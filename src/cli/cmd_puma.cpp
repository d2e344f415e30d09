// `pwab puma train|prepare|sft|eval-sft|sample|score|dpo|eval-dpo`: PUMA's training pipeline (src/puma/pipeline.h).
// Every subcommand runs the pipeline up to its step, skipping the steps already done with the same settings, so
// `pwab puma train` after an interruption continues where it stopped.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <optional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "cli/llm_setup.h"
#include "core/error.h"
#include "core/sys.h"
#include "data/loader.h"
#include "assemble/services.h"
#include "puma/ablate.h"
#include "core/text.h"
#include "llama/rl.h"
#include "puma/exchange.h"
#include "puma/pipeline.h"
#include "puma/scoring.h"
#include "assemble/training_session.h"

namespace pwab::cli {
namespace {

struct PumaArgs {
  std::string data, out, preset = "tiny", base_model, embedder = "fasttext", checkpoint, index_dir;
  std::string search_labels = "heuristic", device = "cpu", dtype = "float32", sft_mode, function_file, sft_weights;
  std::string reuse_from, align, rl_algo, rl_track, rl_types, rl_loss_norm, reward_checkpoint;
  std::optional<int> sample_top_k, rl_iterations, rl_tasks, rl_group, rl_top_k, rl_max_new_tokens, rl_inner_epochs, rl_minibatches,
      rl_eval_every, rl_eval_tasks, rl_max_steps, rl_lora_r;
  std::optional<double> rl_lr, rl_kl, rl_clip, rl_clip_high, rl_temperature, rl_warmup;
  std::optional<bool> rl_lora, rl_skip_tied, rl_function, rl_distinct_reviews;
  bool rl_save_rollouts = false;
  double dist_timeout_s = 300;
  int train_limit = 0, test_limit = 0, top_k = 10;
  std::optional<int> holdout;
  std::optional<int> samples, sft_epochs, dpo_epochs, memory_tokens, memory_k, grad_accum, sft_batch, dpo_batch,
      max_length, dpo_max_length, dpo_max_prompt_length, lora_r, sample_limit, dpo_eval_tasks, max_new_tokens, vocab,
      hidden, layers, heads, kv_heads, ffn, recommend_length, recommend_memory_tokens;
  std::string recommend_memory, search_decoding;
  std::optional<double> sft_lr, dpo_lr, beta, lora_alpha, rpo_alpha, sample_temperature;
  bool accept_deviations = false;
  std::optional<bool> tie_embeddings;
  uint64_t seed = 1;
  std::string sample_base_url, sample_model, sample_api_key_env = "NONE";
  LlmFlags llm;
};

std::atomic<bool> g_cancel{false};
extern "C" void on_puma_sigint(int) { g_cancel.store(true); }

// --preset paper is the paper's recipe: LLM search labels and MiniLM for memory and review rewards. Anything else
// is refused unless the user accepts the deviation by name.
void check_paper_recipe(const PumaArgs& a) {
  if (a.preset != "paper" || a.accept_deviations) return;
  std::vector<std::string> wrong;
  if (a.search_labels != "llm")
    wrong.push_back("--search-labels llm --model gpt-4o-mini (the paper labels search tasks with gpt-4o-mini)");
  if (a.embedder.rfind("minilm:", 0) != 0)
    wrong.push_back("--embedder minilm:DIR (all-MiniLM-L6-v2 ranks the memory and scores reviews in the paper)");
  if (wrong.empty()) return;
  std::string message = "--preset paper is the paper's recipe, which also needs:";
  for (const std::string& w : wrong) message += "\n  " + w;
  message += "\nor pass --accept-deviations to train with these settings anyway (recorded in options.json).";
  throw UsageError(message);
}

// --align and the --rl-* flags over the preset's RL settings.
void apply_rl_flags(const PumaArgs& a, puma::PipelineOptions& o) {
  if (!a.align.empty()) o.align = puma::parse_align(a.align);
  puma::RlOptions& r = o.rl;
  r.train.seed = a.seed;
  if (!a.rl_algo.empty()) {  // llama::parse_advantage_estimator lives in the torch plugin
    if (a.rl_algo != "grpo" && a.rl_algo != "rloo") throw UsageError("--rl-algo must be grpo or rloo, not '" + a.rl_algo + "'");
    r.algo = a.rl_algo == "grpo" ? llama::AdvantageEstimator::kGrpo : llama::AdvantageEstimator::kRloo;
  }
  if (!a.rl_loss_norm.empty()) {
    if (a.rl_loss_norm != "sequence" && a.rl_loss_norm != "token")
      throw UsageError("--rl-loss-norm must be sequence or token, not '" + a.rl_loss_norm + "'");
    r.per_sequence = a.rl_loss_norm == "sequence";
  }
  if (!a.rl_track.empty()) {
    auto track = data::parse_track(a.rl_track);
    if (!track) throw UsageError("--rl-track must be single or multi");
    o.rl_track = *track;
  }
  if (!a.rl_types.empty()) {
    o.rl_types.clear();
    for (const std::string& t : split_trim(a.rl_types, ',')) {
      auto type = data::parse_task_type(t);
      if (!type) throw UsageError("--rl-types takes search, recommend and review, not '" + t + "'");
      o.rl_types.push_back(*type);
    }
  }
  if (a.rl_iterations) r.iterations = *a.rl_iterations;
  if (a.rl_tasks) r.tasks_per_iteration = *a.rl_tasks;
  if (a.rl_group) r.group_size = *a.rl_group;
  if (a.rl_top_k) r.top_k = *a.rl_top_k;
  if (a.rl_max_new_tokens) r.max_new_tokens = *a.rl_max_new_tokens;
  if (a.rl_inner_epochs) r.inner_epochs = *a.rl_inner_epochs;
  if (a.rl_minibatches) r.minibatches = *a.rl_minibatches;
  if (a.rl_eval_every) r.eval_every = *a.rl_eval_every;
  if (a.rl_eval_tasks) o.rl_eval_tasks = *a.rl_eval_tasks;
  if (a.rl_max_steps) o.rl_max_steps = *a.rl_max_steps;
  if (a.rl_lora_r) r.train.lora_r = *a.rl_lora_r;
  if (a.rl_lr) r.train.learning_rate = *a.rl_lr;
  if (a.rl_kl) r.kl_coef = *a.rl_kl;
  if (a.rl_clip) r.clip_low = *a.rl_clip;
  if (a.rl_clip) r.clip_high = r.clip_low;
  if (a.rl_clip_high) r.clip_high = *a.rl_clip_high;
  if (a.rl_temperature) r.temperature = *a.rl_temperature;
  if (a.rl_warmup) r.train.warmup_ratio = *a.rl_warmup;
  if (a.rl_lora) r.train.lora = *a.rl_lora;
  if (a.rl_skip_tied) r.skip_tied_groups = *a.rl_skip_tied;
  if (a.rl_function) o.rl_function = *a.rl_function;
  if (a.rl_distinct_reviews) o.rl_distinct_reviews = *a.rl_distinct_reviews;
  r.save_rollouts = a.rl_save_rollouts;
}

puma::PipelineOptions pipeline_options(const PumaArgs& a) {
  puma::PipelineOptions o = puma::PipelineOptions::preset_named(a.preset);
  if (a.preset == "paper" && a.base_model.empty())
    throw UsageError("--preset paper fine-tunes a base model: give --base-model DIR (e.g. Llama-2-7b-chat-hf)");
  check_paper_recipe(a);
  if (a.search_labels != "heuristic" && a.search_labels != "llm")
    throw UsageError("--search-labels must be heuristic or llm, not '" + a.search_labels + "'");
  o.out = a.out;
  o.base_model = a.base_model;
  o.dist_timeout_s = a.dist_timeout_s;
  o.seed = a.seed;
  o.sft.seed = o.dpo.seed = a.seed;
  o.model.device = a.device;
  o.model.dtype = a.dtype;
  o.train_limit = a.train_limit;
  o.test_limit = a.test_limit;
  o.search_labels = a.search_labels;
  o.function_file = a.function_file;
  o.reuse_from = a.reuse_from;
  if (!a.sft_mode.empty()) o.sft_mode = puma::parse_sft_mode(a.sft_mode);
  if (a.samples) o.samples = *a.samples;
  if (a.sft_epochs) o.sft.epochs = *a.sft_epochs;
  if (a.dpo_epochs) o.dpo.epochs = *a.dpo_epochs;
  if (a.sft_lr) o.sft.learning_rate = *a.sft_lr;
  if (a.dpo_lr) o.dpo.learning_rate = *a.dpo_lr;
  if (a.memory_tokens) o.prepare.memory.max_tokens = *a.memory_tokens;
  if (a.memory_k) o.prepare.memory.k = *a.memory_k;
  if (a.grad_accum) o.sft.accumulation_steps = o.dpo.accumulation_steps = *a.grad_accum;
  if (a.sft_batch) o.sft.batch_size = *a.sft_batch;
  if (a.dpo_batch) o.dpo.batch_size = *a.dpo_batch;
  if (a.max_length) o.sft.max_length = *a.max_length;
  if (a.dpo_max_length) o.dpo.max_length = *a.dpo_max_length;
  if (a.dpo_max_prompt_length) o.dpo.max_prompt_length = *a.dpo_max_prompt_length;
  if (a.beta) o.dpo.dpo_beta = *a.beta;
  if (a.lora_r) o.sft.lora_r = o.dpo.lora_r = *a.lora_r;
  if (a.lora_alpha) o.sft.lora_alpha = o.dpo.lora_alpha = *a.lora_alpha;
  if (a.rpo_alpha) o.dpo.rpo_alpha = *a.rpo_alpha;
  if (a.sample_temperature) o.sample_temperature = *a.sample_temperature;
  if (a.sample_top_k) o.sample_top_k = *a.sample_top_k;
  if (a.sample_limit) o.sample_limit = *a.sample_limit;
  if (a.dpo_eval_tasks) o.dpo_eval_tasks = *a.dpo_eval_tasks;
  if (a.max_new_tokens) o.max_new_tokens = *a.max_new_tokens;
  if (a.recommend_length) o.prepare.recommend_length = *a.recommend_length;
  if (!a.recommend_memory.empty())
    o.prepare.memory.recommend_layout = agents::parse_recommend_layout(a.recommend_memory, "--recommend-memory");
  if (a.recommend_memory_tokens) o.prepare.memory.recommend_max_tokens = *a.recommend_memory_tokens;
  if (!a.sft_weights.empty()) o.sft_weights = puma::parse_sft_weights(a.sft_weights, o.sft_weights);
  if (a.holdout) o.holdout = *a.holdout;
  // absolute, so that the steps' settings name the same file from any working directory
  if (!a.reward_checkpoint.empty()) o.reward_checkpoint = std::filesystem::absolute(a.reward_checkpoint);
  if (!a.search_decoding.empty()) {
    if (a.search_decoding != "free" && a.search_decoding != "copy")
      throw UsageError("--search-decoding must be free or copy, not '" + a.search_decoding + "'");
    o.copy_search = a.search_decoding == "copy";
  }
  apply_rl_flags(a, o);
  const bool shaped = a.vocab || a.hidden || a.layers || a.heads || a.kv_heads || a.ffn || a.tie_embeddings;
  if (shaped && !a.base_model.empty())
    throw UsageError("--vocab, --hidden, --layers, --heads, --kv-heads and --ffn shape a model trained from scratch; "
                     "--base-model brings its own");
  if (a.vocab) o.tiny_vocab_size = *a.vocab;
  if (a.hidden) o.shape.hidden = *a.hidden;
  if (a.layers) o.shape.layers = *a.layers;
  if (a.heads) o.shape.heads = *a.heads;
  if (a.kv_heads) o.shape.kv_heads = *a.kv_heads;
  if (a.ffn) o.shape.ffn = *a.ffn;
  if (a.tie_embeddings) o.shape.tie_embeddings = *a.tie_embeddings;
  o.validate();  // the library checks every value, before anything is loaded
  return o;
}

// Where the data and its services are (the pipeline settings are set by the caller).
assemble::TrainingConfig training_config(const PumaArgs& a) {
  assemble::TrainingConfig c;
  c.data = a.data;
  c.index_dir = a.index_dir;
  c.checkpoint = a.checkpoint;
  c.embedder = a.embedder;
  c.top_k = a.top_k;
  return c;
}

std::string progress_text(const puma::TrainProgress& p) {
  return fmt::format("{} step {}/{} epoch {} loss {:.4f} lr {:.2e} {:.0f} tokens/s", p.phase, p.step, p.total,
                     p.epoch + 1, p.loss, p.lr, p.tokens_per_s);
}

// The pipeline's log and status on stderr, a progress line while stderr is a terminal, and Ctrl-C asking the
// pipeline to checkpoint and stop; the destructor gives SIGINT back and clears the progress line.
struct TerminalHooks {
  bool tty = isatty(STDERR_FILENO);
  assemble::TrainingHooks hooks;
  TerminalHooks() {
    hooks.status = stderr_status();
    hooks.log = [](const std::string& line) { std::cerr << "puma: " << line << "\n"; };
    hooks.progress = [tty = tty](const puma::TrainProgress& p) {
      if (tty) std::cerr << "\r\033[K" << progress_text(p) << std::flush;
    };
    g_cancel.store(false);
    std::signal(SIGINT, on_puma_sigint);
    hooks.cancel = &g_cancel;
  }
  ~TerminalHooks() {
    std::signal(SIGINT, SIG_DFL);
    if (tty) std::cerr << "\r\033[K";
  }
  TerminalHooks(const TerminalHooks&) = delete;
  TerminalHooks& operator=(const TerminalHooks&) = delete;
};

void print_report(const puma::PipelineReport& r, const std::string& out) {
  auto section = [](const char* name, const puma::FastTestResult& t) {
    std::cout << name << " (fast test on the test split):\n" << t.table();
  };
  if (r.have_sft) section("SFT model", r.sft);
  if (r.have_dpo) {
    const puma::CandidateStats& c = r.candidates;
    std::cout << fmt::format("DPO: {} preference pairs from {} train tasks ({} tied, no pair; mean reward spread "
                             "{:.3f})\n",
                             r.preference_pairs, c.tasks, r.tie_tasks, c.mean_spread);
    section("DPO model", r.dpo);
  }
  if (r.have_rl) section("RL model", r.rl);
  std::cout << "Report (curves, candidates, times): " << (std::filesystem::path(out) / "report.md").string() << "\n";
}

void run_puma(const PumaArgs& a, const std::string& until) {
  assemble::TrainingConfig config = training_config(a);
  config.pipeline = pipeline_options(a);
  config.until = until;
  LlmSetup models = make_llm_setup(a.llm, /*need_agent=*/a.search_labels == "llm", /*need_user=*/false);
  LlmSetup sampler;
  if (!a.sample_base_url.empty() || !a.sample_model.empty()) {
    if (a.sample_base_url.empty() || a.sample_model.empty())
      throw UsageError("sampling from a server needs both --sample-base-url URL and --sample-model NAME");
    LlmFlags f = a.llm;
    f.model = a.sample_model;
    f.local_model.clear();
    f.base_url = a.sample_base_url;
    f.api_key_env = a.sample_api_key_env;
    sampler = make_llm_setup(f, /*need_agent=*/true, /*need_user=*/false);
    config.sample_model = sampler.agent_model;
    config.sample_model_name = a.sample_model;
  }
  TerminalHooks terminal;
  puma::PipelineReport report = assemble::run_training(config, models, terminal.hooks);
  if (report.cancelled) throw Error("interrupted; run the same command again to continue from the checkpoint");
  if (report.rank > 0) {  // a data-parallel rank other than 0: it trained; rank 0 reports
    std::cerr << fmt::format("pwab: rank {} of {} done; rank 0 writes the results to {}\n", report.rank, report.world,
                             a.out);
    return;
  }
  print_report(report, a.out);
}

// `pwab puma ablate`: Tables 5 and 6 (puma/ablate.h) with the same training flags as `train`.
struct AblateArgs {
  PumaArgs train;
  int seeds = 1, bootstrap = 1000;
  bool rl_rows = true;
  std::string tables = "5,6";
  std::vector<int> memory_lengths;
};

void run_ablate(const AblateArgs& a) {
  puma::AblationOptions o;
  o.base = pipeline_options(a.train);
  o.out = a.train.out;
  o.seeds = a.seeds;
  o.table5 = a.tables.find('5') != std::string::npos;
  o.table6 = a.tables.find('6') != std::string::npos;
  o.rl_rows = a.rl_rows;
  if (a.tables != "5" && a.tables != "6" && a.tables != "5,6" && a.tables != "6,5")
    throw UsageError("--tables takes 5, 6 or 5,6");
  o.memory_lengths = a.memory_lengths;
  o.bootstrap.resamples = a.bootstrap;
  if (a.seeds < 1) throw UsageError("--seeds takes an integer ≥ 1");
  assemble::TrainingConfig config = training_config(a.train);
  config.pipeline = o.base;
  LlmSetup models = make_llm_setup(a.train.llm, /*need_agent=*/a.train.search_labels == "llm", /*need_user=*/false);
  TerminalHooks terminal;
  assemble::TrainingSession session(config, models, terminal.hooks);
  std::string md = puma::run_ablation(
      [&session](const puma::PipelineOptions& p, const std::string& until) { return session.run(p, until); }, o,
      terminal.hooks.log);
  std::cout << md;
}

void add_puma_options(CLI::App& cmd, PumaArgs& a) {
  add_shared_option(cmd, "--data", a.data)->required();
  add_shared_option(cmd, "--out", a.out, "pipeline")->required();
  cmd.add_option("--preset", a.preset, "tiny (a small model from scratch, minutes), cpu (the CPU experiment: learns "
                                       "to write queries, < 1 h on 2 cores) or paper (the original's settings, "
                                       "docs/decisions.md §5; needs --base-model)")->capture_default_str();
  cmd.add_option("--base-model", a.base_model, "Hugging Face LLaMA directory to fine-tune (with LoRA)");
  add_shared_option(cmd, "--embedder", a.embedder)
      ->capture_default_str();
  add_shared_option(cmd, "--checkpoint", a.checkpoint);
  add_shared_option(cmd, "--index-dir", a.index_dir);
  cmd.add_option("--search-labels", a.search_labels, "Search pseudo-labels: heuristic, or llm (with --model)")
      ->capture_default_str();
  cmd.add_flag("--accept-deviations", a.accept_deviations,
               "With --preset paper: train without LLM search labels or the MiniLM embedder anyway");
  cmd.add_option("--device", a.device, "cpu or cuda[:N]")->capture_default_str();
  cmd.add_option("--dtype", a.dtype, "float32 or bfloat16 (float16 on CUDA)")->capture_default_str();
  cmd.add_option("--train-limit", a.train_limit, "Use the first N train tasks only (0 = all)");
  cmd.add_option("--test-limit", a.test_limit, "Evaluate on the first N test tasks only (0 = all)");
  cmd.add_option("--vocab", a.vocab, "From-scratch presets: sentencepiece vocabulary size learnt from the data");
  cmd.add_option("--hidden", a.hidden, "From-scratch presets: hidden width of the model");
  cmd.add_option("--layers", a.layers, "From-scratch presets: decoder layers");
  cmd.add_option("--heads", a.heads, "From-scratch presets: attention heads");
  cmd.add_option("--kv-heads", a.kv_heads, "From-scratch presets: key/value heads (grouped-query attention)");
  cmd.add_option("--ffn", a.ffn, "From-scratch presets: SwiGLU width");
  cmd.add_option("--tie-embeddings", a.tie_embeddings, "From-scratch presets: true = the output layer shares the "
                                                       "embedding table (default: the preset's)");
  cmd.add_option("--recommend-length", a.recommend_length, "ASINs in a recommendation label (the original: 30)");
  cmd.add_option("--sft-weights", a.sft_weights, "How often each kind of example enters the SFT data, e.g. "
                                                 "function=0.25,search=3 (kinds: function, search, recommend, review, "
                                                 "dialogue; "
                                                 "default: the preset's)");
  cmd.add_option("--memory-k", a.memory_k, "Behaviours retrieved into the memory (0 = no memory; default: preset)");
  cmd.add_option("--memory-tokens", a.memory_tokens, "Memory token budget, BOS included (default: the preset's)");
  cmd.add_option("--recommend-memory", a.recommend_memory, "How the recommendation memory shows an item: full "
                                                            "(title, category, ASIN; the original's), asins (one "
                                                            "'ASIN (category)' line) or numbered (one 'N (category)' "
                                                            "line; the model answers with the numbers); default: the "
                                                            "preset's");
  cmd.add_option("--recommend-memory-tokens", a.recommend_memory_tokens,
                 "Token budget of the recommendation memory, BOS included (0 = --memory-tokens; default: preset)");
  add_shared_option(cmd, "--sft-mode", a.sft_mode);
  cmd.add_option("--sft-epochs", a.sft_epochs, "SFT epochs; 0 = no SFT (default: the preset's)");
  cmd.add_option("--sft-lr", a.sft_lr, "SFT learning rate (paper preset: 3e-4 as the original's script; the "
                                       "paper's text says 4e-3)");
  cmd.add_option("--sft-batch", a.sft_batch, "SFT rows per micro-batch (default: the preset's)");
  cmd.add_option("--max-length", a.max_length, "SFT tokens per row, longer rows cut at the end");
  cmd.add_option("--grad-accum", a.grad_accum, "Gradient accumulation steps of SFT and DPO: the effective batch is "
                                               "batch × accumulation (the original: 1 × 16 on 4 GPUs = 64)");
  cmd.add_option("--lora-r", a.lora_r, "LoRA rank (default 16)");
  cmd.add_option("--lora-alpha", a.lora_alpha, "LoRA alpha (default 32)");
  add_shared_option(cmd, "--samples", a.samples, "dpo");
  cmd.add_option("--sample-temperature", a.sample_temperature, "Sampling temperature of the candidates");
  cmd.add_option("--sample-top-k", a.sample_top_k, "Candidates drawn from the K most likely tokens (0 = every token; "
                 "default 50)");
  cmd.add_option("--sample-limit", a.sample_limit, "Sample candidates for the first N train tasks only (0 = all)");
  add_shared_option(cmd, "--max-new-tokens", a.max_new_tokens, "puma");
  cmd.add_option("--sample-base-url", a.sample_base_url,
                 "Sample the candidates from this OpenAI-compatible server (/v1/completions, n per prompt: vLLM)");
  cmd.add_option("--sample-model", a.sample_model, "The model name the sampling server serves");
  cmd.add_option("--sample-api-key-env", a.sample_api_key_env, "Variable holding the sampling server's key (NONE: "
                                                               "no key)")->capture_default_str();
  cmd.add_option("--dpo-eval-tasks", a.dpo_eval_tasks, "Test tasks sampled for DPO's evaluation pairs (eval loss, "
                                                       "margin, KL; default: the preset's)");
  cmd.add_option("--dpo-epochs", a.dpo_epochs, "DPO epochs; 0 = no DPO (default: the preset's)");
  cmd.add_option("--dpo-lr", a.dpo_lr, "DPO learning rate (default: the preset's)");
  cmd.add_option("--dpo-batch", a.dpo_batch, "DPO pairs per micro-batch (default: the preset's)");
  cmd.add_option("--beta", a.beta, "DPO beta (default 0.1)");
  cmd.add_option("--rpo-alpha", a.rpo_alpha, "Add this weight × the chosen response's NLL to the DPO loss (TRL's "
                                             "rpo_alpha; default: the preset's)");
  cmd.add_option("--dpo-max-length", a.dpo_max_length, "DPO tokens per row (paper preset: 1024)");
  cmd.add_option("--dpo-max-prompt-length", a.dpo_max_prompt_length,
                 "DPO prompts cut to this many tokens keeping their end; the response is never cut (paper: 768)");
  cmd.add_option("--function-file", a.function_file, "Evaluate with these function predictions ({instruction: "
                                                     "tool}) instead of the model's own");
  cmd.add_option("--reuse-from", a.reuse_from, "Take over the steps this other pipeline directory finished with the "
                                               "same settings (hard links) instead of running them again");
  cmd.add_option("--holdout", a.holdout, "Hold the last N train tasks out of SFT for the second stage: DPO's "
                                         "candidates and RL's episodes come from them (0 = every task in both; "
                                         "default: the preset's)");
  cmd.add_option("--reward-checkpoint", a.reward_checkpoint,
                 "SASRec checkpoint behind the training rewards (DPO's train pairs, RL's train episodes) instead of "
                 "--checkpoint, e.g. one from `pwab rec train DATA --hold-out-train --out FILE`; evaluations keep "
                 "--checkpoint (docs/recommender.md)");
  cmd.add_option("--search-decoding", a.search_decoding,
                 "Search queries: copy (only the prompt's own words, docs/puma.md \"Copy-constrained search queries\") "
                 "or free (any token); default: the preset's");
  cmd.add_option("--align", a.align, "The second stage after SFT: dpo (the paper's, default), rl (online RL on the "
                                     "environment's reward) or none");
  cmd.add_option("--rl-algo", a.rl_algo, "RL advantages: grpo (centred and scaled by the group's spread) or rloo "
                                         "(leave-one-out mean); default: the preset's");
  cmd.add_option("--rl-iterations", a.rl_iterations, "RL iterations (default: the preset's)");
  cmd.add_option("--rl-tasks", a.rl_tasks, "RL train tasks per iteration, B (default: the preset's)");
  cmd.add_option("--rl-group", a.rl_group, "RL episodes per task, G ≥ 2 (default: the preset's)");
  cmd.add_option("--rl-temperature", a.rl_temperature, "RL sampling temperature (default 1.0)");
  cmd.add_option("--rl-top-k", a.rl_top_k, "RL sampling top-k (0 = whole vocabulary; default: the preset's)");
  cmd.add_option("--rl-max-new-tokens", a.rl_max_new_tokens, "RL tokens per completion (default: --max-new-tokens)");
  cmd.add_option("--rl-lr", a.rl_lr, "RL learning rate (default: the preset's)");
  cmd.add_option("--rl-warmup", a.rl_warmup, "RL warm-up share of the optimizer steps (default: the preset's)");
  cmd.add_option("--rl-kl", a.rl_kl, "RL KL penalty to the SFT model, β of the k3 estimator (default: the preset's)");
  cmd.add_option("--rl-clip", a.rl_clip, "RL ratio clip ε: [1 − ε, 1 + ε] (default 0.2)");
  cmd.add_option("--rl-clip-high", a.rl_clip_high, "RL upper clip ε_high when it differs from --rl-clip (DAPO)");
  cmd.add_option("--rl-loss-norm", a.rl_loss_norm, "RL objective averaged per sequence (each completion weighs the "
                                                   "same; default) or per token");
  cmd.add_option("--rl-inner-epochs", a.rl_inner_epochs, "RL passes over each iteration's rollouts (default 1)");
  cmd.add_option("--rl-minibatches", a.rl_minibatches, "RL optimizer steps per pass (default: the preset's)");
  cmd.add_option("--rl-lora", a.rl_lora, "RL trains a LoRA adapter (true) or every weight (false; default: the "
                                         "preset's)");
  cmd.add_option("--rl-lora-r", a.rl_lora_r, "RL LoRA rank (default: the preset's)");
  cmd.add_option("--rl-skip-tied", a.rl_skip_tied, "RL leaves tasks whose episodes all scored the same out of the "
                                                   "update (default true)");
  cmd.add_option("--rl-function", a.rl_function, "Single-turn RL also samples the function prompt, rewarded by "
                                                 "function accuracy and held by the KL term (default true)");
  cmd.add_option("--rl-distinct-reviews", a.rl_distinct_reviews,
                 "Single-turn RL scores a review by its similarity times its share of distinct word 3-grams, so that "
                 "repeating a sentence does not pay (default false; evaluations keep the benchmark's score)");
  cmd.add_option("--rl-track", a.rl_track, "RL episodes: single (parameter prompts, default) or multi (the puma "
                                           "agent against the scripted user)");
  cmd.add_option("--rl-types", a.rl_types, "RL task types, e.g. search,review (default: all three)");
  cmd.add_option("--rl-eval-every", a.rl_eval_every, "RL iterations between greedy evaluations (default: preset's)");
  cmd.add_option("--rl-eval-tasks", a.rl_eval_tasks, "Test tasks of the RL curve's greedy reward (0 = none)");
  cmd.add_option("--rl-max-steps", a.rl_max_steps, "Multi-turn RL: the step cap of an episode (default 10)");
  cmd.add_flag("--rl-save-rollouts", a.rl_save_rollouts, "RL also writes every episode's token ids, sampling "
                                                         "log-probabilities, reward and advantage to "
                                                         "rl/work/rollouts.jsonl");
  add_shared_option(cmd, "--seed", a.seed, "training")->capture_default_str();
  cmd.add_option("--dist-timeout-s", a.dist_timeout_s,
                 "Started as several processes (srun -n N, torchrun): the most seconds a rank waits for the others "
                 "in one collective before it fails, naming the rank that stopped")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  add_llm_flags(cmd, a.llm);
}

// `pwab puma fast-test`: the original test.py on prediction files made anywhere (its layout), scored by pwab.
struct FastTestArgs {
  std::string data, functions, params, embedder = "fasttext", checkpoint, index_dir, split = "test", json_out, dpo_out;
  int top_k = 10;
};

void run_fast_test(const FastTestArgs& a) {
  if (a.split != "test" && a.split != "train") throw UsageError("--split must be test or train");
  if (a.dpo_out.empty() && a.functions.empty())
    throw UsageError("give --functions FILE (and --params FILE), or --params FILE --dpo-out FILE for test.py's DPO mode");
  if (a.params.empty()) throw UsageError("give --params FILE (the original's {instruction: [parameter, ...]} file)");
  data::Dataset ds = data::load_dataset(a.data);
  assemble::DatasetEnvironment world = assemble::open_environment(ds, a.data, {a.index_dir, a.checkpoint, stderr_status()},
                                                        assemble::open_embedder(a.embedder, ds, a.data), a.top_k);
  std::vector<const data::Task*> tasks;
  for (const data::Task& t : ds.tasks(a.split == "test" ? data::Split::kTest : data::Split::kTrain)) tasks.push_back(&t);
  puma::Predictions params = puma::read_predictions(a.params);
  if (!a.dpo_out.empty()) {
    // test.py --evaluate_dpo: every candidate of every task with the true type's scorer
    write_file_atomic(a.dpo_out, puma::score_all_candidates_json(*world.environment, tasks, params));
    std::cerr << "puma fast-test: scored the candidates of " << params.size() << " instructions into " << a.dpo_out << "\n";
    if (a.functions.empty()) return;
  }
  puma::Predictions functions = puma::read_predictions(a.functions);
  std::size_t missing = 0;
  for (const data::Task* t : tasks) missing += !functions.count(t->instruction) || !params.count(t->instruction);
  puma::FastTestResult r = puma::fast_test_candidates(*world.environment, tasks, functions, params);
  std::cout << r.table();
  if (missing)
    std::cerr << fmt::format("puma fast-test: {} of {} {} tasks have no prediction in the files (scored 0)\n", missing,
                             tasks.size(), a.split);
  if (!a.json_out.empty()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [type, row] : r.by_type)
      j[type] = {{"total", row.total}, {"function_acc", row.function_acc}, {"result_acc", row.result_acc}};
    j["overall"] = {{"total", r.overall.total}, {"function_acc", r.overall.function_acc},
                    {"result_acc", r.overall.result_acc}};
    nlohmann::json tasks_json = nlohmann::json::array();
    for (const puma::FastTestTask& t : r.tasks)
      tasks_json.push_back({{"task", t.task}, {"type", std::string(data::to_string(t.type))}, {"function", t.function},
                            {"f", t.f}, {"r", t.r}});
    j["tasks"] = tasks_json;
    write_file_atomic(a.json_out, j.dump(2) + "\n");
  }
}

// `pwab puma export`: the pipeline's SFT examples and preference pairs for TRL, LLaMA-Factory or the original.
struct ExportArgs {
  std::string out, to, format, sft_mode = "function_param";
};

void run_export(const ExportArgs& a) {
  puma::ExportFormat format = puma::parse_export_format(a.format);
  puma::SftMode mode = puma::parse_sft_mode(a.sft_mode);
  puma::TrainingData d = puma::read_training_data(a.out);
  auto files = puma::export_training_data(d, format, mode, a.to);
  std::cout << fmt::format("exported {} SFT train rows, {} test rows and {} + {} preference pairs as {}:\n",
                           puma::sft_rows(d.function_train, d.param_train, mode).size(),
                           puma::sft_rows(d.function_test, d.param_test, mode).size(), d.dpo_train.size(),
                           d.dpo_test.size(), a.format);
  for (const auto& f : files) std::cout << "  " << f.string() << "\n";
  if (d.dpo_train.empty())
    std::cerr << "puma export: no preference pairs yet (run `pwab puma score` first); the DPO files are empty\n";
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
      {"rl", "rl"},
      {"eval-rl", "eval-rl"},
  };
  auto aa = std::make_shared<AblateArgs>();
  auto* ab = puma->add_subcommand("ablate", "The paper's Table 5 (PUMA, w/o task-specific memory, w/o SFT, w/o DPO) "
                                            "and Table 6 (memory lengths) on this dataset and preset, with intervals "
                                            "and paired differences; finished steps are reused");
  add_puma_options(*ab, aa->train);
  ab->add_option("--seeds", aa->seeds, "Train every row with K seeds (--seed, --seed + 1, ...): mean and spread")
      ->capture_default_str();
  ab->add_option("--tables", aa->tables, "Which tables: 5, 6 or 5,6")->capture_default_str();
  ab->add_option("--memory-lengths", aa->memory_lengths, "Table 6's memory budgets in tokens (default: 256 512 768 "
                                                          "for --preset paper, else a quarter, half and all of the "
                                                          "preset's)")->delimiter(',');
  add_shared_option(*ab, "--bootstrap", aa->bootstrap)->capture_default_str();
  ab->add_option("--rl-rows", aa->rl_rows, "Table 5 also trains the rows SFT + RL and RL without SFT (the RL branch "
                                           "of the PUMA and w/o SFT pipelines)")->capture_default_str();
  ab->callback([aa] { run_ablate(*aa); });

  auto fa = std::make_shared<FastTestArgs>();
  auto* ft = puma->add_subcommand("fast-test", "Score prediction files in the original's layout (its test.py): "
                                              "{instruction: [tool]} and {instruction: [parameter, ...]}");
  add_shared_option(*ft, "--data", fa->data)->required();
  ft->add_option("--functions", fa->functions, "Function predictions {instruction: tool or [tool, ...]}");
  ft->add_option("--params", fa->params, "Parameter predictions {instruction: parameter or [parameter, ...]}");
  add_shared_option(*ft, "--split", fa->split)->capture_default_str();
  add_shared_option(*ft, "--embedder", fa->embedder)->capture_default_str();
  add_shared_option(*ft, "--checkpoint", fa->checkpoint);
  add_shared_option(*ft, "--index-dir", fa->index_dir);
  add_shared_option(*ft, "--json", fa->json_out, "file");
  ft->add_option("--dpo-out", fa->dpo_out, "test.py's DPO mode: write {instruction: {candidate: score}} for every "
                                           "candidate of --params, scored with the task's true type");
  ft->callback([fa] { run_fast_test(*fa); });

  auto ea = std::make_shared<ExportArgs>();
  auto* ex = puma->add_subcommand("export", "Write a pipeline's SFT data and preference pairs for TRL, LLaMA-Factory "
                                            "or the original scripts");
  add_shared_option(*ex, "--out", ea->out, "pipeline")->required();
  ex->add_option("--to", ea->to, "Directory to write into")->required();
  add_shared_option(*ex, "--format", ea->format, "export")->required();
  add_shared_option(*ex, "--sft-mode", ea->sft_mode)->capture_default_str();
  ex->callback([ea] { run_export(*ea); });

  auto report_dir = std::make_shared<std::string>();
  auto* rep = puma->add_subcommand("report", "Rewrite and print a pipeline directory's report (report.md, "
                                             "report.json): curves, candidate statistics, fast tests");
  add_shared_option(*rep, "--out", *report_dir, "pipeline")->required();
  rep->callback([report_dir] { std::cout << puma::write_pipeline_report(*report_dir); });

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
