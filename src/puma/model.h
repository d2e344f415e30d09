// src/puma/model.h: a PUMA model — a LLaMA-architecture decoder with its tokenizer — as the training pipeline
// and the local backend use it: open or create, generate text, SFT, DPO, save (docs/decisions.md §5.3–§5.5, D6, D7).
//
// The header is torch-free so the pipeline and the CLI compile fast; everything torch lives in model.cpp. Text
// goes in and out: prompts are encoded with BOS, targets end with EOS, and only target tokens are labels (D6).
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llm/chat.h"
#include "tok/tokenizer.h"

namespace pwab::llama {
class ProcessGroup;
}  // namespace pwab::llama

namespace pwab::puma {

struct ModelOptions {
  std::string dtype = "float32";  //!< compute dtype: float32, bfloat16 (float16 on CUDA only)
  std::string device = "cpu";     //!< "cpu" or "cuda[:N]" with a CUDA build of libtorch
};

//! The architecture of a model trained from scratch (the tiny and cpu presets): a LLaMA decoder of this size over
//! the tokenizer's vocabulary. The defaults are the tiny preset's (llama::tiny_config).
struct ModelShape {
  int64_t hidden = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t ffn = 172;  //!< SwiGLU width
  //! The output layer shares the embedding table (tie_word_embeddings): writing a token means pointing at its
  //! embedding, which makes copying words from the prompt far easier for a small model (LLaMA-2 does not tie).
  bool tie_embeddings = false;
};

struct TinyOptions {
  uint64_t seed = 1;
  ModelShape shape{};
};

//! A prompt and what the model should write after it.
struct TrainPair {
  std::string prompt;
  std::string target;
};
//! A DPO preference: one prompt, a preferred and a dispreferred continuation.
struct PreferenceExample {
  std::string prompt;
  std::string chosen;
  std::string rejected;
};

//! What one training progress report says (for the progress line).
struct TrainProgress {
  std::string phase;  //!< "sft" or "dpo"
  int64_t step = 0;   //!< optimizer steps done
  int64_t total = 0;  //!< optimizer steps planned
  int64_t epoch = 0;
  double loss = 0;    //!< mean loss since the last report
  double tokens_per_s = 0;
  double lr = 0;
};

//! Which part of a too-long DPO prompt survives (TRL's truncation_mode): its end (with the BOS token kept), or its
//! start.
enum class PromptTruncation { kKeepEnd, kKeepStart };

struct TrainOptions {
  int epochs = 10;  //!< 0 = no training (the model is returned as it is: "w/o SFT")
  double learning_rate = 3e-4;
  int batch_size = 1;
  int accumulation_steps = 16;
  double warmup_ratio = 0.1;
  int max_length = 1280;  //!< SFT: tokens per row (prompt + target), longer rows are cut at the end
  double max_grad_norm = 1.0;
  uint64_t seed = 1;      //!< data order
  //! Rows of similar length share micro-batches (transformers' group_by_length: shuffled mega-batches of 50
  //! batches, each sorted by length), so less of each step is padding. Off = plain shuffling (the original).
  bool group_by_length = false;
  //! LoRA (r, alpha on q/k/v/o/gate/up/down) when true; all weights train when false (the from-scratch presets).
  bool lora = true;
  int lora_r = 16;
  double lora_alpha = 32;
  //! With LoRA, also train full copies of embed_tokens, lm_head and the norms (the original's modules_to_save).
  bool lora_modules_to_save = true;
  //! With LoRA: the trained adapter is also written here in PEFT's layout (adapter_config.json,
  //! adapter_model.safetensors) before it is merged; empty = not saved.
  std::filesystem::path adapter_dir;
  std::string adapter_base_model;  //!< base_model_name_or_path recorded in adapter_config.json
  int checkpoint_every = 50;  //!< optimizer steps between checkpoints (and at every epoch end)
  int log_every = 10;         //!< optimizer steps between training points of the curve (work_dir/curve.jsonl)
  int eval_every = 0;         //!< optimizer steps between evaluation points of the curve; 0 = at the end only
  int eval_limit = 256;       //!< evaluation rows (pairs) used at intermediate points; 0 = all (the end uses all)
  // DPO only:
  double dpo_beta = 0.1;
  //! Prompts are cut to this many tokens (0 = no limit) and never the response: when prompt + response exceed
  //! max_length the prompt is cut further (the original: TRL's max_prompt_length 768, max_length 1024).
  int max_prompt_length = 0;
  PromptTruncation prompt_truncation = PromptTruncation::kKeepEnd;
  //! Adds rpo_alpha × the mean token NLL of the chosen response to the DPO loss (TRL's rpo_alpha); 0 = plain DPO.
  double rpo_alpha = 0;
  std::function<void(const TrainProgress&)> on_progress;  //!< called every few optimizer steps
  const std::atomic<bool>* cancel = nullptr;  //!< when set: checkpoint and stop (resumable)
  //! Stop (checkpointed, reported as cancelled) once this many optimizer steps are done: time-boxed runs; 0 = off.
  int64_t stop_after_steps = 0;
  //! Data-parallel training (llama/distributed.h): every rank of the group calls sft()/dpo() with the same data
  //! and options, takes its share of the rows of every micro-batch, and the gradients are summed before each step,
  //! so N ranks train as one process would on the same batches. Rank 0 alone writes checkpoints, the curve and
  //! the adapter, and evaluates. Null = one process.
  llama::ProcessGroup* group = nullptr;
};

//! DPO's view of a set of preference pairs under the policy and the frozen reference.
struct PreferenceStats {
  double loss = 0;             //!< mean sigmoid DPO loss
  double margin = 0;           //!< mean (πc − ρc) − (πr − ρr), in nats
  double accuracy = 0;         //!< share of pairs with a positive margin
  double chosen_reward = 0;    //!< mean β (πc − ρc)
  double rejected_reward = 0;  //!< mean β (πr − ρr)
  double kl = 0;               //!< mean per-token KL(policy ‖ reference) of the next-token distributions over the
                               //!< response positions of the pairs
};

struct TrainReport {
  int64_t steps = 0;
  double train_loss = 0;  //!< mean loss of the last epoch
  double eval_loss = -1;  //!< mean loss on the evaluation pairs after training (-1 without any)
  PreferenceStats eval_preferences;  //!< DPO: on the evaluation pairs after training (when there are any)
  bool have_eval_preferences = false;
  double seconds = 0;
  int64_t tokens = 0;     //!< tokens processed (padding excluded) in this run of the loop
  double tokens_per_s = 0;
  bool cancelled = false;
  bool resumed = false;   //!< continued from a checkpoint
  int64_t truncated_rows = 0;  //!< rows cut to max_length (SFT) or whose prompt was cut (DPO)
  int world = 1;                 //!< ranks that trained (tokens and tokens_per_s count all of them)
  double comm_seconds = 0;       //!< data-parallel: this rank's time in collectives
  int64_t bytes_all_reduced = 0; //!< data-parallel: gradient bytes this rank all-reduced
  double reference_seconds = 0;  //!< DPO: computing the reference log-probabilities before the loop (0: cached)
  int64_t trainable_parameters = 0;  //!< the optimizer's elements: every weight, or LoRA's A/B + modules_to_save
};

struct GenerateConfig {
  int max_new_tokens = 256;
  bool sample = false;
  double temperature = 1.0;
  int top_k = 50;
  int num_beams = 1;       //!< > 1: beam search returning num_beams distinct candidates (with sample: beam-sample)
  uint64_t seed = 0;
  //! When set, one seed per prompt: prompt i draws from it whatever batch it lands in (sampling per task).
  std::vector<uint64_t> prompt_seeds;
  int batch_size = 4;
  //! complete_ids: also the this-many most likely tokens at each position (llama::GenerateOptions::top_logprobs).
  int top_logprobs = 0;
  //! When set, one list per prompt: the tokens that prompt's continuation may use, EOS always among them; an empty
  //! list leaves it free (llama::GenerateOptions::allowed_tokens; search_vocabulary.h builds the lists).
  std::vector<std::vector<int32_t>> allowed_tokens;
};

//! A continuation as the model drew it (PumaModel::complete_ids): what online RL trains on, token for token.
struct SampledCompletion {
  std::vector<int32_t> ids;     //!< the generated tokens, the final EOS included when the model wrote one
  std::vector<float> logprobs;  //!< one per id: its log-probability under the sampling distribution (logits at
                                //!< the temperature, before top-k), llama::Generation::logprobs
  //! With GenerateConfig::top_logprobs = k: per id, the k most likely tokens of the same distribution, with their
  //! log-probabilities, most likely first (llama::Generation::top_logprobs).
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
  std::string text;             //!< the ids decoded without special tokens
  bool eos = false;             //!< ended by EOS (else cut at max_new_tokens)
};

class PumaModel {
 public:
  ~PumaModel();
  PumaModel(const PumaModel&) = delete;
  PumaModel& operator=(const PumaModel&) = delete;

  //! Loads a Hugging Face model directory (config.json, safetensors, tokenizer.model or tokenizer.json) and, when
  //! given, a PEFT LoRA adapter directory on top (merged into the weights). DataError / UsageError name the file.
  static std::unique_ptr<PumaModel> open(const std::filesystem::path& model_dir,
                                         const std::filesystem::path& adapter_dir = {}, const ModelOptions& = {});
  //! A from-scratch model of the tiny preset's shape over the tokenizer in `tokenizer_dir`.
  static std::unique_ptr<PumaModel> create_tiny(const std::filesystem::path& tokenizer_dir, const TinyOptions& = {},
                                                const ModelOptions& = {});

  const tok::Tokenizer& tokenizer() const;
  std::shared_ptr<const tok::Tokenizer> shared_tokenizer() const;
  //! "llama <params> params, <layers> layers, <dtype> on <device>, tokenizer <fingerprint>".
  std::string describe() const;
  int64_t n_parameters() const;

  //! Continuations of each prompt: one with greedy / sampling, num_beams with beam search (best first),
  //! decoded without special tokens. Thread-compatible (one call at a time).
  std::vector<std::vector<std::string>> generate(const std::vector<std::string>& prompts,
                                                 const GenerateConfig& config);
  //! A prompt's token ids as generate() encodes it (BOS added).
  std::vector<int32_t> encode_prompt(const std::string& prompt) const;
  //! One continuation of each prompt (given as token ids) with its ids and log-probabilities, for RL: sampled
  //! when config.sample (config.prompt_seeds, when set, gives each prompt its own draws), greedy otherwise. Equal
  //! prompts of a batch are computed once. Thread-compatible.
  std::vector<SampledCompletion> complete_ids(const std::vector<std::vector<int32_t>>& prompts,
                                              const GenerateConfig& config);
  //! Prompt and generated token counts of the last generate() call.
  int64_t last_prompt_tokens() const;
  int64_t last_generated_tokens() const;

  //! Supervised fine-tuning on `train` (loss on target tokens only, docs/decisions.md D6), checkpointing into
  //! `work_dir` and resuming from its checkpoint; eval loss on `eval` at the end (and every eval_every steps). The loss
  //! curve goes to work_dir/curve.jsonl (one JSON object a point: step, epoch, kind "train" or "eval", loss, lr,
  //! grad_norm, tokens_per_s). With options.lora the adapter is saved (adapter_dir) and merged into the weights
  //! afterwards, so save() writes a plain model.
  TrainReport sft(const std::vector<TrainPair>& train, const std::vector<TrainPair>& eval,
                  const std::filesystem::path& work_dir, const TrainOptions& options);
  //! DPO (sigmoid loss, options.dpo_beta) against this model as it is now as the frozen reference: the reference
  //! log-probabilities are computed once and cached in `work_dir`; checkpoints, resume and the curve as sft(). The
  //! curve's points also hold margin, accuracy, chosen_reward, rejected_reward (training batches) and, at the
  //! evaluation points on `eval`, the same on the evaluation pairs plus kl (PreferenceStats).
  TrainReport dpo(const std::vector<PreferenceExample>& pairs, const std::vector<PreferenceExample>& eval,
                  const std::filesystem::path& work_dir, const TrainOptions& options);
  //! PreferenceStats of `pairs` for this model against `reference` (beta as in DPO; max lengths as `options`).
  PreferenceStats preference_stats(const std::vector<PreferenceExample>& pairs, PumaModel& reference,
                                   const TrainOptions& options);
  //! Mean per-token loss of the targets.
  double loss(const std::vector<TrainPair>& pairs, int max_length);
  //! Σ log p(target tokens, EOS included | prompt) of each pair (no length limit): `pwab lm score`.
  std::vector<double> target_logprobs(const std::vector<TrainPair>& pairs);
  //! The next-token logits [positions × vocab] of the text's tokens (BOS added), row-major float32: for checks.
  std::vector<float> logits(const std::string& text, int64_t* vocab = nullptr);

  //! Writes the model (config.json, safetensors) and its tokenizer files into `dir`.
  void save(const std::filesystem::path& dir) const;
  //! A second model with the same weights and tokenizer (a frozen reference).
  std::unique_ptr<PumaModel> copy() const;

  //! The torch side (puma/model_impl.h), for the translation units that train the model (rl_trainer.cpp).
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit PumaModel(std::unique_ptr<Impl> impl);
  //! preference_stats against `reference`, or (null) against this model switched by use_reference(true/false).
  PreferenceStats preference_stats_impl(const std::vector<PreferenceExample>& pairs, PumaModel* reference,
                                        const std::function<void(bool)>& use_reference, const TrainOptions& options);
  std::unique_ptr<Impl> impl_;
};

//! Serves raw-text completions (ChatRequest::prompt) from a local PumaModel, so `pwab run --agent puma` runs without
//! a server: greedy at temperature 0 (or unset), sampling otherwise (each request from its own seed + sample),
//! max_tokens new tokens (default 256). Chat requests with messages are a UsageError (the model is trained on raw
//! prompts). Thread-safe: requests that arrive from several threads while a generation runs are generated together
//! in the next one, up to `max_batch` rows (local_model.cpp), and each gets the completion it would get alone.
std::unique_ptr<llm::ChatModel> local_chat_model(std::shared_ptr<PumaModel> model, std::string name,
                                                 int max_batch = 64);

}  // namespace pwab::puma
