// src/llama/lora.h: LoRA adapters for a LlamaModel, in PEFT's format.
//
// An adapter is its own object attached to a model (as llama.cpp's llama_adapter_lora): attach() gives each target
// projection a pair A [r, in] (kaiming-uniform, PEFT's default) and B [out, r] (zeros), so the model's output is
// unchanged until B trains, and forward() adds alpha/r · x·Aᵀ·Bᵀ (alpha/sqrt(r) with rsLoRA). Modules named in
// modules_to_save get a fully trainable copy of their weight instead (PEFT's modules_to_save; PUMA trains
// embed_tokens, lm_head and every norm this way). Every base weight is frozen while an adapter is attached.
//
// Names follow PEFT: target_modules match a module path equal to the name or ending in ".name" (a single string
// is a regular expression matched against the whole path); modules_to_save match paths ending in the name (so
// "norm" also selects the layer norms, as in PEFT). save() writes adapter_config.json and adapter_model.safetensors
// with PEFT's tensor names (`base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight`, modules_to_save
// weights under their plain names), which PeftModel.from_pretrained loads; load() reads what PEFT saves.
#pragma once
#include <torch/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llama/model.h"

namespace pwab::llama {

struct LoraConfig {
  int64_t r = 16;
  double alpha = 32.0;
  double dropout = 0.0;
  //! Names of the projections that get LoRA pairs (PEFT target_modules); a single entry starting with "re:" is a
  //! regular expression over the whole module path (PEFT's string form).
  std::vector<std::string> target_modules{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                          "down_proj"};
  std::vector<std::string> modules_to_save{};  //!< fully trained modules (see kPumaModulesToSave)
  bool use_rslora = false;                     //!< scale alpha / sqrt(r) instead of alpha / r
  torch::Dtype dtype = torch::kFloat32;        //!< dtype of the adapter's own tensors (float32 trains stably)
  uint64_t seed = 0;                           //!< initialisation of the A factors
  std::string base_model_name_or_path;         //!< recorded in adapter_config.json

  double scale() const;
  //! PEFT's adapter_config.json for this config.
  std::string to_json() const;
  //! Reads an adapter_config.json; throws pwab::DataError naming the file for a non-LoRA adapter or a feature
  //! this implementation lacks (DoRA, per-layer ranks, fan_in_fan_out, biases).
  static LoraConfig from_file(const std::filesystem::path& adapter_config_json);
};

//! The original PUMA training's modules_to_save (docs/decisions.md §5.3).
inline const std::vector<std::string> kPumaModulesToSave{"embed_tokens", "lm_head", "input_layernorm",
                                                          "post_attention_layernorm", "norm"};

class LoraAdapter {
 public:
  //! Attaches a fresh adapter to `model` and freezes the model's base weights. Throws pwab::UsageError if a target
  //! matches no projection, a target is not a projection, or the model already carries an adapter.
  static std::unique_ptr<LoraAdapter> attach(LlamaModel model, const LoraConfig& config);
  //! Loads a PEFT adapter directory (adapter_config.json + adapter_model.safetensors) onto `model`. Throws
  //! pwab::DataError naming the file and tensor for a missing, unexpected or mis-shaped tensor.
  static std::unique_ptr<LoraAdapter> load(LlamaModel model, const std::filesystem::path& adapter_dir);
  ~LoraAdapter();

  //! Writes adapter_config.json and adapter_model.safetensors (F32, or `dtype`) into `adapter_dir`.
  void save(const std::filesystem::path& adapter_dir, const std::string& dtype = "float32") const;
  //! Trainable tensors by PEFT name (what save() writes), in a fixed order.
  std::vector<std::pair<std::string, torch::Tensor>> named_parameters() const;
  //! The same tensors, for an optimizer.
  std::vector<torch::Tensor> parameters() const;
  int64_t n_parameters() const;

  //! Switches the adapter's effect on and off (DPO: the reference model is the model with it off).
  void set_enabled(bool enabled);
  bool enabled() const { return enabled_; }
  //! Folds the adapter into the base weights (W += scale·B·A; modules_to_save copies replace their weights) and
  //! detaches it; the base weights stay frozen. The adapter is empty afterwards.
  void merge();
  //! Removes the adapter without changing the base weights.
  void detach();
  bool attached() const { return !targets_.empty() || !saved_.empty(); }

  const LoraConfig& config() const { return config_; }
  //! Module paths with LoRA pairs / with trained copies.
  std::vector<std::string> target_paths() const;
  std::vector<std::string> saved_paths() const;

 private:
  LoraAdapter(LlamaModel model, LoraConfig config);
  LlamaModel model_;
  LoraConfig config_;
  std::vector<std::pair<std::string, Projection>> targets_;
  std::vector<std::pair<std::string, std::shared_ptr<WeightModule>>> saved_;
  bool enabled_ = true;
};

//! Makes every base weight of `model` trainable or frozen (full fine-tuning of a tiny model, or after merge()).
void set_base_trainable(LlamaModelImpl& model, bool trainable);

}  // namespace pwab::llama
