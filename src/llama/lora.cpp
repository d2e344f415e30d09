// LoRA adapters: attaching to the model's projections, PEFT's adapter files, merging.
#include "llama/lora.h"

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/sys.h"

namespace pwab::llama {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kPeftPrefix = "base_model.model.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

//! PEFT's target_modules rule: the whole path, or its last components after a dot; "re:<regex>" as a full match.
bool matches_target(const std::string& path, const std::string& target) {
  if (target.rfind("re:", 0) == 0) return std::regex_match(path, std::regex(target.substr(3)));
  return path == target || ends_with(path, "." + target);
}

std::string shape_string(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

// ---- config ------------------------------------------------------------------------------------------------------

double LoraConfig::scale() const {
  return use_rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
}

std::string LoraConfig::to_json() const {
  json targets = json::array();
  if (target_modules.size() == 1 && target_modules[0].rfind("re:", 0) == 0) {
    targets = target_modules[0].substr(3);  // PEFT's string form is a regular expression
  } else {
    for (const auto& t : target_modules) targets.push_back(t);
  }
  json j = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", base_model_name_or_path},
      {"r", r},
      {"lora_alpha", alpha},
      {"lora_dropout", dropout},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"target_modules", targets},
      {"modules_to_save", modules_to_save.empty() ? json(nullptr) : json(modules_to_save)},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"use_rslora", use_rslora},
      {"use_dora", false},
      {"layers_to_transform", nullptr},
      {"layers_pattern", nullptr},
      {"rank_pattern", json::object()},
      {"alpha_pattern", json::object()},
      {"revision", nullptr},
  };
  return j.dump(2) + "\n";
}

LoraConfig LoraConfig::from_file(const fs::path& path) {
  const std::string where = "adapter config " + path.string() + ": ";
  if (!fs::exists(path)) throw DataError("adapter config " + path.string() + " does not exist");
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw DataError(where + "not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw DataError(where + "not a JSON object");
  auto get = [&](const char* key) -> const json* {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  auto reject = [&](const char* key, const json& allowed, const char* why) {
    const json* v = get(key);
    if (v && *v != allowed) throw DataError(where + "\"" + key + "\" is " + v->dump() + ": " + why);
  };
  reject("peft_type", "LORA", "only LoRA adapters are supported");
  reject("bias", "none", "adapters with trained biases are not supported");
  reject("fan_in_fan_out", false, "fan_in_fan_out (Conv1D layouts) does not apply to LLaMA");
  reject("use_dora", false, "DoRA is not supported");
  reject("rank_pattern", json::object(), "per-module ranks are not supported");
  reject("alpha_pattern", json::object(), "per-module alphas are not supported");
  reject("layers_to_transform", nullptr, "layer selection is not supported");
  // Newer PEFT releases (0.15 to 0.21) added these; each changes what the weights mean, so an adapter that uses one
  // is refused rather than loaded as a plain LoRA.
  reject("lora_bias", false, "LoRA biases (lora_B with a bias) are not supported");
  reject("use_qalora", false, "QALoRA is not supported");
  auto reject_nonempty = [&](const char* key, const char* why) {
    const json* v = get(key);
    if (v && !v->empty()) throw DataError(where + "\"" + key + "\" is " + v->dump() + ": " + why);
  };
  reject_nonempty("trainable_token_indices", "trainable token embeddings are not supported");
  reject_nonempty("target_parameters", "LoRA on nn.Parameter targets is not supported");
  reject_nonempty("exclude_modules", "exclude_modules is not supported");
  reject_nonempty("alora_invocation_tokens", "activated LoRA (aLoRA) is not supported");
  LoraConfig c;
  const json* r = get("r");
  if (!r || !r->is_number_integer() || r->get<int64_t>() <= 0)
    throw DataError(where + "\"r\" must be a positive integer");
  c.r = r->get<int64_t>();
  const json* alpha = get("lora_alpha");
  if (!alpha || !alpha->is_number()) throw DataError(where + "\"lora_alpha\" must be a number");
  c.alpha = alpha->get<double>();
  if (const json* d = get("lora_dropout"); d && d->is_number()) c.dropout = d->get<double>();
  if (const json* rs = get("use_rslora"); rs && rs->is_boolean()) c.use_rslora = rs->get<bool>();
  if (const json* b = get("base_model_name_or_path"); b && b->is_string())
    c.base_model_name_or_path = b->get<std::string>();
  const json* targets = get("target_modules");
  if (!targets) throw DataError(where + "\"target_modules\" is missing");
  c.target_modules.clear();
  if (targets->is_string()) {
    c.target_modules.push_back("re:" + targets->get<std::string>());
  } else if (targets->is_array()) {
    for (const auto& t : *targets) {
      if (!t.is_string()) throw DataError(where + "\"target_modules\" must hold strings");
      c.target_modules.push_back(t.get<std::string>());
    }
  } else {
    throw DataError(where + "\"target_modules\" must be a list of names or a regular expression");
  }
  if (const json* m = get("modules_to_save")) {
    if (!m->is_array()) throw DataError(where + "\"modules_to_save\" must be a list of names or null");
    for (const auto& t : *m) {
      if (!t.is_string()) throw DataError(where + "\"modules_to_save\" must hold strings");
      c.modules_to_save.push_back(t.get<std::string>());
    }
  }
  return c;
}

// ---- attaching ---------------------------------------------------------------------------------------------------

LoraAdapter::LoraAdapter(LlamaModel model, LoraConfig config) : model_(std::move(model)), config_(std::move(config)) {}
LoraAdapter::~LoraAdapter() = default;

void set_base_trainable(LlamaModelImpl& model, bool trainable) {
  for (auto& [name, w] : model.checkpoint_weights()) w.requires_grad_(trainable);
}

std::unique_ptr<LoraAdapter> LoraAdapter::attach(LlamaModel model, const LoraConfig& config) {
  if (config.r <= 0) throw UsageError("LoRA: r must be positive, not " + std::to_string(config.r));
  if (config.dropout < 0 || config.dropout >= 1) throw UsageError("LoRA: dropout must be in [0, 1)");
  if (config.target_modules.empty() && config.modules_to_save.empty())
    throw UsageError("LoRA: no target_modules and no modules_to_save");
  std::unique_ptr<LoraAdapter> adapter(new LoraAdapter(model, config));
  const auto modules = model->weight_modules();
  for (const auto& [path, m] : modules) {
    auto* p = dynamic_cast<ProjectionImpl*>(m.get());
    if ((p && p->has_lora()) || m->trained_copy().defined())
      throw UsageError("LoRA: the model already carries an adapter (on '" + path + "'); merge or detach it first");
  }
  std::set<std::string> matched;
  uint64_t index = 0;
  for (const auto& [path, m] : modules) {
    ++index;
    bool is_target = false, is_saved = false;
    for (const auto& t : config.target_modules)
      if (matches_target(path, t)) {
        matched.insert(t);
        is_target = true;
      }
    for (const auto& t : config.modules_to_save) is_saved = is_saved || ends_with(path, t);
    if (is_target && is_saved)
      throw UsageError("LoRA: module '" + path + "' is both a LoRA target and in modules_to_save");
    if (is_target) {
      auto proj = std::dynamic_pointer_cast<ProjectionImpl>(m);
      if (!proj)
        throw UsageError("LoRA: target '" + path + "' is not a linear projection (LoRA on embeddings and norms is " +
                         "not supported; list it in modules_to_save instead)");
      proj->add_lora(config.r, config.scale(), config.dropout, config.dtype, derive_seed(config.seed, index));
      adapter->targets_.emplace_back(path, Projection(proj));
    } else if (is_saved) {
      m->add_trained_copy(config.dtype);
      adapter->saved_.emplace_back(path, m);
    }
  }
  for (const auto& t : config.target_modules)
    if (!matched.count(t)) {
      adapter->detach();
      throw UsageError("LoRA: target module '" + t + "' matches no projection of the model");
    }
  set_base_trainable(*model, false);
  return adapter;
}

void LoraAdapter::set_enabled(bool enabled) {
  for (auto& [path, p] : targets_) p->set_adapter_enabled(enabled);
  for (auto& [path, m] : saved_) m->set_adapter_enabled(enabled);
  enabled_ = enabled;
}

void LoraAdapter::merge() {
  for (auto& [path, p] : targets_) p->drop_lora(true);
  for (auto& [path, m] : saved_) m->drop_trained_copy(true);
  detach();
}

void LoraAdapter::detach() {
  for (auto& [path, p] : targets_) {
    p->drop_lora(false);
    p->set_adapter_enabled(true);
  }
  for (auto& [path, m] : saved_) {
    m->drop_trained_copy(false);
    m->set_adapter_enabled(true);
  }
  targets_.clear();
  saved_.clear();
}

std::vector<std::string> LoraAdapter::target_paths() const {
  std::vector<std::string> out;
  for (const auto& [path, p] : targets_) out.push_back(path);
  return out;
}

std::vector<std::string> LoraAdapter::saved_paths() const {
  std::vector<std::string> out;
  for (const auto& [path, m] : saved_) out.push_back(path);
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> LoraAdapter::named_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& [path, p] : targets_) {
    out.emplace_back(kPeftPrefix + path + ".lora_A.weight", p->lora_A());
    out.emplace_back(kPeftPrefix + path + ".lora_B.weight", p->lora_B());
  }
  for (const auto& [path, m] : saved_) out.emplace_back(kPeftPrefix + path + ".weight", m->trained_copy());
  return out;
}

std::vector<torch::Tensor> LoraAdapter::parameters() const {
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t LoraAdapter::n_parameters() const {
  int64_t n = 0;
  for (auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

// ---- files -------------------------------------------------------------------------------------------------------

void LoraAdapter::save(const fs::path& adapter_dir, const std::string& dtype_name_) const {
  const torch::Dtype dtype = parse_dtype(dtype_name_);
  std::vector<safetensors::TensorData> tensors;
  for (const auto& [name, t] : named_parameters()) tensors.push_back(to_safetensors(name, t, dtype));
  fs::create_directories(adapter_dir);
  safetensors::write_file(adapter_dir / "adapter_model.safetensors", tensors, {{"format", "pt"}});
  write_file_atomic(adapter_dir / "adapter_config.json", config_.to_json());
}

std::unique_ptr<LoraAdapter> LoraAdapter::load(LlamaModel model, const fs::path& adapter_dir) {
  if (!fs::is_directory(adapter_dir))
    throw DataError("adapter directory " + adapter_dir.string() + " does not exist or is not a directory");
  LoraConfig config = LoraConfig::from_file(adapter_dir / "adapter_config.json");
  const fs::path weights = adapter_dir / "adapter_model.safetensors";
  if (!fs::exists(weights)) {
    const bool pickle = fs::exists(adapter_dir / "adapter_model.bin");
    const std::string hint =
        pickle ? " (adapter_model.bin is a pickle: re-save the adapter with safe_serialization=True)" : "";
    throw DataError("adapter weights " + weights.string() + " do not exist" + hint);
  }
  auto file = safetensors::File::open(weights);
  auto adapter = attach(model, config);
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : adapter->named_parameters()) {
    const safetensors::TensorView* view = file.find(name);
    if (!view) throw DataError(weights.string() + ": missing tensor '" + name + "' " + shape_string(t.sizes()));
    if (at::IntArrayRef(view->shape) != t.sizes())
      throw DataError(weights.string() + ": tensor '" + name + "' is " + view->describe() + ", the model and " +
                      "adapter_config.json imply " + shape_string(t.sizes()));
    using safetensors::Dtype;
    if (view->dtype != Dtype::kF32 && view->dtype != Dtype::kF16 && view->dtype != Dtype::kBF16 &&
        view->dtype != Dtype::kF64)
      throw DataError(weights.string() + ": tensor '" + name + "' is " + view->describe() +
                      ", expected a floating-point dtype");
    std::vector<float> values = view->to_floats();
    t.copy_(torch::from_blob(values.data(), t.sizes(), torch::kFloat32));
    used.insert(name);
  }
  for (const auto& v : file.tensors())
    if (!used.count(v.name))
      throw DataError(weights.string() + ": unexpected tensor '" + v.name + "': no such adapter weight for this " +
                      "model and adapter_config.json");
  return adapter;
}

}  // namespace pwab::llama
