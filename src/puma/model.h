// src/puma/model.h: a PUMA model — a LLaMA-architecture decoder with its tokenizer — as the training pipeline
// and the local backend use it: open or create, generate text, SFT, DPO, save (reference §5.3–§5.5, D6, D7).
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
#include <vector>

#include "llm/chat.h"
#include "tok/tokenizer.h"

namespace pwab::puma {

struct ModelOptions {
  std::string dtype = "float32";  //!< compute dtype: float32, bfloat16 (float16 on CUDA only)
  std::string device = "cpu";     //!< "cpu" or "cuda[:N]" with a CUDA build of libtorch
};

//! The tiny preset's architecture (llama::tiny_config): hidden 64, 2 layers, 4 heads, 2 key/value heads.
struct TinyOptions {
  uint64_t seed = 1;
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
  int64_t step = 0;   //!< optimizer steps done
  int64_t total = 0;  //!< optimizer steps planned
  int64_t epoch = 0;
  double loss = 0;    //!< mean loss since the last report
  double tokens_per_s = 0;
  double lr = 0;
};

struct TrainOptions {
  int epochs = 10;
  double learning_rate = 3e-4;
  int batch_size = 1;
  int accumulation_steps = 16;
  double warmup_ratio = 0.1;
  int max_length = 1280;  //!< tokens per row (prompt + target), longer rows are cut at the end
  double max_grad_norm = 1.0;
  uint64_t seed = 1;      //!< data order
  //! LoRA (r, alpha on q/k/v/o/gate/up/down, the original's modules_to_save) when true; all weights train when
  //! false (the tiny preset, which starts from random weights).
  bool lora = true;
  int lora_r = 16;
  double lora_alpha = 32;
  int checkpoint_every = 50;  //!< optimizer steps between checkpoints (and at every epoch end)
  double dpo_beta = 0.1;      //!< DPO only
  std::function<void(const TrainProgress&)> on_progress;  //!< called every few optimizer steps
  const std::atomic<bool>* cancel = nullptr;  //!< when set: checkpoint and stop (resumable)
  //! Stop (checkpointed, reported as cancelled) once this many optimizer steps are done: time-boxed runs; 0 = off.
  int64_t stop_after_steps = 0;
};

struct TrainReport {
  int64_t steps = 0;
  double train_loss = 0;  //!< mean loss of the last epoch
  double eval_loss = -1;  //!< mean loss on the evaluation pairs after training (-1 without any)
  double seconds = 0;
  bool cancelled = false;
  bool resumed = false;   //!< continued from a checkpoint
};

struct GenerateConfig {
  int max_new_tokens = 256;
  bool sample = false;
  double temperature = 1.0;
  int top_k = 50;
  int num_beams = 1;       //!< > 1: beam search returning num_beams distinct candidates (with sample: beam-sample)
  uint64_t seed = 0;
  int batch_size = 4;
};

class PumaModel {
 public:
  ~PumaModel();
  PumaModel(const PumaModel&) = delete;
  PumaModel& operator=(const PumaModel&) = delete;

  //! Loads a Hugging Face model directory (config.json, safetensors, tokenizer.model or tokenizer.json) and, when
  //! given, a PEFT LoRA adapter directory on top. DataError / UsageError name the file.
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
  //! Prompt and generated token counts of the last generate() call.
  int64_t last_prompt_tokens() const;
  int64_t last_generated_tokens() const;

  //! Supervised fine-tuning on `train` (loss on target tokens only, D6), checkpointing into `work_dir` and
  //! resuming from its checkpoint; eval loss on `eval` at the end. With options.lora the adapter is merged into
  //! the weights afterwards, so save() writes a plain model.
  TrainReport sft(const std::vector<TrainPair>& train, const std::vector<TrainPair>& eval,
                  const std::filesystem::path& work_dir, const TrainOptions& options);
  //! DPO (sigmoid loss, options.dpo_beta) against this model as it is now as the frozen reference: the reference
  //! log-probabilities are computed once and cached in `work_dir`; checkpoints and resume as sft().
  TrainReport dpo(const std::vector<PreferenceExample>& pairs, const std::filesystem::path& work_dir,
                  const TrainOptions& options);
  //! Mean per-token loss of the targets.
  double loss(const std::vector<TrainPair>& pairs, int max_length);

  //! Writes the model (config.json, safetensors) and its tokenizer files into `dir`.
  void save(const std::filesystem::path& dir) const;

 private:
  struct Impl;
  explicit PumaModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

//! Serves raw-text completions (ChatRequest::prompt) from a local PumaModel, so `pwab run --agent puma` runs without
//! a server: greedy at temperature 0 (or unset), sampling otherwise, max_tokens new tokens (default 256). Chat
//! requests with messages are a UsageError (the model is trained on raw prompts). Thread-safe (one generation at
//! a time).
std::unique_ptr<llm::ChatModel> local_chat_model(std::shared_ptr<PumaModel> model, std::string name);

}  // namespace pwab::puma
