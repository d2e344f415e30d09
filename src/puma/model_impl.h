// src/puma/model_impl.h: the torch side of a PumaModel (model.h), shared by the translation units that train it:
// model.cpp (generation, SFT, DPO) and rl_trainer.cpp (online RL). Nothing else includes it: it pulls in libtorch.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llama/lora.h"
#include "llama/model.h"
#include "llama/train.h"
#include "puma/model.h"
#include "tok/tokenizer.h"

namespace pwab::puma {

struct PumaModel::Impl {
  llama::LlamaModel model{nullptr};
  std::shared_ptr<const tok::Tokenizer> tokenizer;
  std::filesystem::path tokenizer_dir;
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kFloat32;
  int64_t last_prompt_tokens = 0, last_generated_tokens = 0;

  std::vector<int32_t> prompt_ids(const std::string& prompt) const { return tokenizer->encode(prompt, true, false); }
  std::vector<int32_t> target_ids(const std::string& target) const {
    std::vector<int32_t> ids = tokenizer->encode(target, false, false);
    ids.push_back(tokenizer->eos_id());  // the EOS that ends a target is a trained label (docs/decisions.md D6)
    return ids;
  }
  std::vector<llama::SequencePair> encode_pairs(const std::vector<TrainPair>& pairs) const {
    std::vector<llama::SequencePair> out;
    out.reserve(pairs.size());
    for (const TrainPair& p : pairs) out.push_back({prompt_ids(p.prompt), target_ids(p.target)});
    return out;
  }
  int64_t pad_id() const { return tokenizer->pad_id() >= 0 ? tokenizer->pad_id() : tokenizer->eos_id(); }
  llama::TokenBatch batch(const std::vector<llama::SequencePair>& rows, int max_length) const {
    llama::TokenBatch b = llama::make_batch(rows, pad_id(), max_length);
    b.input_ids = b.input_ids.to(device);
    b.attention_mask = b.attention_mask.to(device);
    b.loss_mask = b.loss_mask.to(device);
    return b;
  }
};

namespace detail {

//! The tensors a training run updates: a LoRA adapter (saved and merged at the end) or every weight.
struct Trainables {
  std::unique_ptr<llama::LoraAdapter> adapter;
  std::vector<std::pair<std::string, torch::Tensor>> named;
  std::vector<torch::Tensor> tensors;
};

//! Attaches a LoRA adapter (o.lora: r, alpha, modules_to_save, seed) or makes every weight trainable.
Trainables make_trainables(llama::LlamaModel& model, const TrainOptions& o);
//! The end of a finished run: the adapter saved into o.adapter_dir (by rank 0) and merged; the weights frozen.
void finish_trainables(llama::LlamaModel& model, Trainables& t, const TrainOptions& o);

}  // namespace detail
}  // namespace pwab::puma
