// The one libtorch translation unit of the PUMA pipeline: loading, generation, SFT and DPO loops.
#include "puma/model.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/sys.h"
#include "llama/config.h"
#include "llama/generate.h"
#include "llama/lora.h"
#include "llama/model.h"
#include "llama/train.h"

namespace pwab::puma {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

torch::Device parse_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available()) throw UsageError("device '" + name + "': this libtorch has no CUDA device");
    return torch::Device(name);
  }
  throw UsageError("device must be cpu or cuda[:N], not '" + name + "'");
}

// Copies the tokenizer files a model directory needs to be self-contained.
void copy_tokenizer_files(const fs::path& from_dir, const fs::path& to_dir) {
  if (from_dir.empty() || fs::equivalent(from_dir, to_dir)) return;
  for (const char* name : {"tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    if (fs::exists(from_dir / name)) fs::copy_file(from_dir / name, to_dir / name, fs::copy_options::overwrite_existing);
}

}  // namespace

struct PumaModel::Impl {
  llama::LlamaModel model{nullptr};
  std::shared_ptr<const tok::Tokenizer> tokenizer;
  fs::path tokenizer_dir;
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kFloat32;
  int64_t last_prompt_tokens = 0, last_generated_tokens = 0;

  std::vector<int32_t> prompt_ids(const std::string& prompt) const { return tokenizer->encode(prompt, true, false); }
  std::vector<int32_t> target_ids(const std::string& target) const {
    std::vector<int32_t> ids = tokenizer->encode(target, false, false);
    ids.push_back(tokenizer->eos_id());  // the EOS that ends a target is a trained label (D6)
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

PumaModel::PumaModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PumaModel::~PumaModel() = default;

std::unique_ptr<PumaModel> PumaModel::open(const fs::path& model_dir, const fs::path& adapter_dir,
                                           const ModelOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->device = parse_device(options.device);
  impl->dtype = llama::parse_dtype(options.dtype);
  impl->tokenizer = tok::load_tokenizer(model_dir);
  impl->tokenizer_dir = model_dir;
  llama::LoadOptions lo;
  lo.dtype = impl->dtype;
  lo.device = impl->device;
  impl->model = llama::load_model(model_dir, lo);
  if (!adapter_dir.empty()) {
    auto adapter = llama::LoraAdapter::load(impl->model, adapter_dir);
    adapter->merge();  // serving and further training start from the merged weights
  }
  impl->model->eval();
  return std::unique_ptr<PumaModel>(new PumaModel(std::move(impl)));
}

std::unique_ptr<PumaModel> PumaModel::create_tiny(const fs::path& tokenizer_dir, const TinyOptions& tiny,
                                                  const ModelOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->device = parse_device(options.device);
  impl->dtype = llama::parse_dtype(options.dtype);
  impl->tokenizer = tok::load_tokenizer(tokenizer_dir);
  impl->tokenizer_dir = tokenizer_dir;
  llama::LlamaConfig config = llama::tiny_config(impl->tokenizer->vocab_size());
  config.bos_token_id = impl->tokenizer->bos_id();
  config.eos_token_ids = {impl->tokenizer->eos_id()};
  config.max_position_embeddings = 2048;
  impl->model = llama::create_model(config, tiny.seed, torch::TensorOptions().dtype(impl->dtype).device(impl->device));
  return std::unique_ptr<PumaModel>(new PumaModel(std::move(impl)));
}

const tok::Tokenizer& PumaModel::tokenizer() const { return *impl_->tokenizer; }
std::shared_ptr<const tok::Tokenizer> PumaModel::shared_tokenizer() const { return impl_->tokenizer; }

int64_t PumaModel::n_parameters() const { return impl_->model->config().n_parameters(); }

std::string PumaModel::describe() const {
  const llama::LlamaConfig& c = impl_->model->config();
  return "llama " + std::to_string(n_parameters()) + " params, " + std::to_string(c.num_hidden_layers) +
         " layers, " + llama::dtype_name(impl_->dtype) + " on " + impl_->device.str() + ", tokenizer " +
         impl_->tokenizer->fingerprint();
}

int64_t PumaModel::last_prompt_tokens() const { return impl_->last_prompt_tokens; }
int64_t PumaModel::last_generated_tokens() const { return impl_->last_generated_tokens; }

std::vector<std::vector<std::string>> PumaModel::generate(const std::vector<std::string>& prompts,
                                                          const GenerateConfig& config) {
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  llama::GenerateOptions go;
  go.max_new_tokens = config.max_new_tokens;
  go.do_sample = config.sample;
  go.temperature = config.temperature;
  go.top_k = config.top_k;
  go.num_beams = config.num_beams;
  go.seed = config.seed;
  std::vector<std::vector<std::string>> out;
  impl_->last_prompt_tokens = impl_->last_generated_tokens = 0;
  const std::size_t step = static_cast<std::size_t>(std::max(1, config.batch_size));
  for (std::size_t start = 0; start < prompts.size(); start += step) {
    std::vector<std::vector<int32_t>> ids;
    for (std::size_t i = start; i < std::min(prompts.size(), start + step); ++i) {
      ids.push_back(impl_->prompt_ids(prompts[i]));
      impl_->last_prompt_tokens += static_cast<int64_t>(ids.back().size());
    }
    go.seed = derive_seed(config.seed, start);  // a prompt's draws do not depend on the batch it is in
    for (auto& candidates : llama::generate(*impl_->model, ids, go)) {
      std::vector<std::string> texts;
      for (const llama::Generation& g : candidates) {
        impl_->last_generated_tokens += static_cast<int64_t>(g.tokens.size());
        texts.push_back(impl_->tokenizer->decode(g.tokens, true));
      }
      out.push_back(std::move(texts));
    }
  }
  return out;
}

double PumaModel::loss(const std::vector<TrainPair>& pairs, int max_length) {
  if (pairs.empty()) return -1;
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  std::vector<llama::SequencePair> rows = impl_->encode_pairs(pairs);
  double total = 0;
  int64_t tokens = 0;
  for (std::size_t i = 0; i < rows.size(); i += 8) {
    std::vector<llama::SequencePair> chunk(rows.begin() + static_cast<std::ptrdiff_t>(i),
                                           rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), i + 8)));
    llama::TokenBatch b = impl_->batch(chunk, max_length);
    int64_t n = b.loss_mask.sum().item<int64_t>();
    total += llama::causal_lm_loss(*impl_->model, b).item<double>() * static_cast<double>(n);
    tokens += n;
  }
  return tokens ? total / static_cast<double>(tokens) : -1;
}

namespace {

// The trainable tensors and how to finish: a LoRA adapter merged at the end, or every weight.
struct Trainables {
  std::unique_ptr<llama::LoraAdapter> adapter;
  std::vector<std::pair<std::string, torch::Tensor>> named;
  std::vector<torch::Tensor> tensors;
};

Trainables make_trainables(llama::LlamaModel& model, const TrainOptions& o) {
  Trainables t;
  if (o.lora) {
    llama::LoraConfig lc;
    lc.r = o.lora_r;
    lc.alpha = o.lora_alpha;
    lc.modules_to_save = llama::kPumaModulesToSave;
    lc.seed = o.seed;
    t.adapter = llama::LoraAdapter::attach(model, lc);
    t.named = t.adapter->named_parameters();
  } else {
    llama::set_base_trainable(*model, true);
    for (const auto& item : model->named_parameters()) t.named.emplace_back(item.key(), item.value());
  }
  for (const auto& [name, tensor] : t.named) t.tensors.push_back(tensor);
  return t;
}

void finish_trainables(llama::LlamaModel& model, Trainables& t) {
  if (t.adapter) t.adapter->merge();
  llama::set_base_trainable(*model, false);
}

// The order rows are visited in during an epoch: a fixed shuffle per (seed, epoch), so a resume sees the same order.
std::vector<std::size_t> epoch_order(std::size_t n, uint64_t seed, int64_t epoch) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  Rng rng(derive_seed(seed, static_cast<uint64_t>(epoch)));
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

// One generic loop for SFT and DPO: `micro_loss(rows)` returns the loss of a micro-batch of row indices and the
// tokens it covered.
using MicroLoss = std::function<std::pair<torch::Tensor, int64_t>(const std::vector<std::size_t>& rows)>;

TrainReport train_loop(llama::LlamaModel& model, Trainables& t, std::size_t n_rows, const MicroLoss& micro_loss,
                       const fs::path& work_dir, const TrainOptions& o) {
  TrainReport report;
  fs::create_directories(work_dir);
  const fs::path checkpoint = work_dir / "checkpoint.pt";
  const int64_t per_epoch_micro = static_cast<int64_t>((n_rows + o.batch_size - 1) / o.batch_size);
  const int64_t per_epoch_steps = (per_epoch_micro + o.accumulation_steps - 1) / o.accumulation_steps;
  const int64_t total_steps = std::max<int64_t>(1, per_epoch_steps * o.epochs);
  const int64_t warmup = static_cast<int64_t>(o.warmup_ratio * static_cast<double>(total_steps));

  torch::optim::AdamW optimizer(t.tensors, llama::hf_adamw_options(o.learning_rate));
  llama::AccumulationOptions ao;
  ao.accumulation_steps = o.accumulation_steps;
  ao.max_grad_norm = o.max_grad_norm;
  llama::GradientAccumulator acc(optimizer, t.tensors, ao);
  llama::TrainState state;
  if (fs::exists(checkpoint)) {
    state = llama::load_checkpoint(checkpoint, t.named, optimizer);
    acc.restore(state.micro_step, state.optimizer_step);
    report.resumed = true;
  }
  auto save = [&](int64_t epoch) {
    state.epoch = epoch;
    state.micro_step = acc.micro_steps();
    state.optimizer_step = acc.optimizer_steps();
    llama::save_checkpoint(checkpoint, t.named, optimizer, state);
  };
  model->train();
  auto start = Clock::now();
  auto last_report = start;
  double window_loss = 0, epoch_loss = 0;
  int64_t window_n = 0, window_tokens = 0, epoch_n = 0;
  for (int64_t epoch = state.epoch; epoch < o.epochs; ++epoch) {
    std::vector<std::size_t> order = epoch_order(n_rows, o.seed, epoch);
    const int64_t done_in_epoch = acc.micro_steps() - epoch * per_epoch_micro;  // > 0 only right after a resume
    epoch_loss = 0;
    epoch_n = 0;
    for (int64_t m = std::max<int64_t>(0, done_in_epoch); m < per_epoch_micro; ++m) {
      if (o.cancel && o.cancel->load()) {
        save(epoch);
        report.cancelled = true;
        report.steps = acc.optimizer_steps();
        return report;
      }
      std::vector<std::size_t> rows;
      for (int64_t k = m * o.batch_size; k < std::min<int64_t>((m + 1) * o.batch_size, static_cast<int64_t>(n_rows)); ++k)
        rows.push_back(order[static_cast<std::size_t>(k)]);
      llama::set_learning_rate(optimizer,
                               o.learning_rate * llama::linear_schedule(acc.optimizer_steps(), warmup, total_steps));
      auto [loss, tokens] = micro_loss(rows);
      const double value = loss.item<double>();
      const bool stepped = acc.backward(loss);
      window_loss += value, epoch_loss += value;
      ++window_n, ++epoch_n;
      window_tokens += tokens;
      if (stepped && o.checkpoint_every > 0 && acc.optimizer_steps() % o.checkpoint_every == 0) save(epoch);
      if (stepped && o.stop_after_steps > 0 && acc.optimizer_steps() >= o.stop_after_steps) {
        save(epoch);
        report.cancelled = true;
        report.steps = acc.optimizer_steps();
        return report;
      }
      auto now = Clock::now();
      if (o.on_progress && (stepped || m + 1 == per_epoch_micro) &&
          std::chrono::duration<double>(now - last_report).count() > 0.5) {
        double secs = std::chrono::duration<double>(now - last_report).count();
        o.on_progress({acc.optimizer_steps(), total_steps, epoch, window_loss / std::max<int64_t>(1, window_n),
                       static_cast<double>(window_tokens) / std::max(1e-9, secs),
                       o.learning_rate * llama::linear_schedule(acc.optimizer_steps(), warmup, total_steps)});
        last_report = now;
        window_loss = 0, window_n = 0, window_tokens = 0;
      }
    }
    acc.flush();
    save(epoch + 1);
  }
  model->eval();
  report.steps = acc.optimizer_steps();
  report.train_loss = epoch_n ? epoch_loss / static_cast<double>(epoch_n) : 0;
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

void check_train_options(const TrainOptions& o) {
  if (o.epochs < 0 || o.batch_size < 1 || o.accumulation_steps < 1 || o.learning_rate <= 0 || o.max_length < 8)
    throw UsageError("training options: epochs ≥ 0, batch size ≥ 1, accumulation ≥ 1, learning rate > 0 and "
                     "max length ≥ 8 are required");
}

}  // namespace

TrainReport PumaModel::sft(const std::vector<TrainPair>& train, const std::vector<TrainPair>& eval,
                           const fs::path& work_dir, const TrainOptions& options) {
  check_train_options(options);
  if (train.empty()) throw UsageError("sft: no training pairs");
  std::vector<llama::SequencePair> rows = impl_->encode_pairs(train);
  Trainables t = make_trainables(impl_->model, options);
  MicroLoss micro = [&](const std::vector<std::size_t>& idx) {
    std::vector<llama::SequencePair> chunk;
    for (std::size_t i : idx) chunk.push_back(rows[i]);
    llama::TokenBatch b = impl_->batch(chunk, options.max_length);
    return std::pair{llama::causal_lm_loss(*impl_->model, b), b.attention_mask.sum().item<int64_t>()};
  };
  TrainReport report = train_loop(impl_->model, t, rows.size(), micro, work_dir, options);
  if (report.cancelled) {
    if (t.adapter) t.adapter->detach();
    return report;
  }
  finish_trainables(impl_->model, t);
  report.eval_loss = loss(eval, options.max_length);
  return report;
}

TrainReport PumaModel::dpo(const std::vector<PreferenceExample>& pairs, const fs::path& work_dir,
                           const TrainOptions& options) {
  check_train_options(options);
  if (pairs.empty()) throw UsageError("dpo: no preference pairs");
  fs::create_directories(work_dir);
  std::vector<llama::SequencePair> chosen, rejected;
  std::string fingerprint;
  for (const PreferenceExample& p : pairs) {
    std::vector<int32_t> prompt = impl_->prompt_ids(p.prompt);
    chosen.push_back({prompt, impl_->target_ids(p.chosen)});
    rejected.push_back({prompt, impl_->target_ids(p.rejected)});
    fingerprint += p.prompt + '\x1f' + p.chosen + '\x1f' + p.rejected + '\x1e';
  }
  // The frozen reference: this model before training, its log-probabilities computed once and cached.
  const fs::path ref_file = work_dir / "reference_logprobs.json";
  const std::string key = to_hex(hash_bytes(fingerprint)) + "/" + std::to_string(options.max_length);
  std::vector<double> ref_c, ref_r;
  if (fs::exists(ref_file)) {
    nlohmann::json j = nlohmann::json::parse(read_file(ref_file), nullptr, false);
    if (!j.is_discarded() && j.value("key", "") == key) {
      ref_c = j["chosen"].get<std::vector<double>>();
      ref_r = j["rejected"].get<std::vector<double>>();
    }
  }
  if (ref_c.size() != pairs.size()) {
    torch::NoGradGuard no_grad;
    impl_->model->eval();
    ref_c.clear(), ref_r.clear();
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      auto lp = llama::sequence_logprobs(*impl_->model, impl_->batch({chosen[i], rejected[i]}, options.max_length));
      ref_c.push_back(lp[0].item<double>());
      ref_r.push_back(lp[1].item<double>());
    }
    write_file_atomic(ref_file, nlohmann::json{{"key", key}, {"chosen", ref_c}, {"rejected", ref_r}}.dump());
  }
  Trainables t = make_trainables(impl_->model, options);
  MicroLoss micro = [&](const std::vector<std::size_t>& idx) {
    std::vector<llama::SequencePair> rows;
    for (std::size_t i : idx) rows.push_back(chosen[i]);
    for (std::size_t i : idx) rows.push_back(rejected[i]);
    llama::TokenBatch b = impl_->batch(rows, options.max_length);
    torch::Tensor lp = llama::sequence_logprobs(*impl_->model, b);
    const int64_t n = static_cast<int64_t>(idx.size());
    std::vector<double> rc, rr;
    for (std::size_t i : idx) rc.push_back(ref_c[i]), rr.push_back(ref_r[i]);
    auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(impl_->device);
    torch::Tensor ref_chosen = torch::tensor(rc, torch::kFloat64).to(opts);
    torch::Tensor ref_rejected = torch::tensor(rr, torch::kFloat64).to(opts);
    torch::Tensor loss = llama::dpo_loss(lp.slice(0, 0, n), lp.slice(0, n, 2 * n), ref_chosen, ref_rejected,
                                         options.dpo_beta);
    return std::pair{loss, b.attention_mask.sum().item<int64_t>()};
  };
  TrainReport report = train_loop(impl_->model, t, pairs.size(), micro, work_dir, options);
  if (report.cancelled) {
    if (t.adapter) t.adapter->detach();
    return report;
  }
  finish_trainables(impl_->model, t);
  return report;
}

void PumaModel::save(const fs::path& dir) const {
  fs::create_directories(dir);
  llama::save_model(*impl_->model, dir);
  copy_tokenizer_files(impl_->tokenizer_dir, dir);
}

// ------------------------------------------------------------------------------------------------------------
// The local backend
// ------------------------------------------------------------------------------------------------------------

namespace {

class LocalChatModel final : public llm::ChatModel {
 public:
  LocalChatModel(std::shared_ptr<PumaModel> model, std::string name) : model_(std::move(model)), name_(std::move(name)) {}

  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    if (!request.prompt)
      throw UsageError("the local PUMA model answers raw-text completions only (the puma agent's requests), not "
                       "chat messages");
    GenerateConfig g;
    g.max_new_tokens = request.max_tokens.value_or(256);
    double temperature = request.temperature.value_or(0.0);
    g.sample = temperature > 0;
    g.temperature = g.sample ? temperature : 1.0;
    g.seed = static_cast<uint64_t>(request.seed.value_or(0)) + static_cast<uint64_t>(request.sample);
    g.batch_size = 1;
    std::lock_guard<std::mutex> lock(mu_);
    std::string text = model_->generate({*request.prompt}, g).at(0).at(0);
    llm::ChatResponse r;
    r.message = llm::Message::assistant(std::move(text));
    r.finish_reason = "stop";
    r.model = request.model;
    r.prompt_tokens = model_->last_prompt_tokens();
    r.completion_tokens = model_->last_generated_tokens();
    r.attempts = 1;
    return r;
  }
  std::string describe() const override { return "local " + name_ + " (" + model_->describe() + ")"; }

 private:
  std::shared_ptr<PumaModel> model_;
  std::string name_;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<llm::ChatModel> local_chat_model(std::shared_ptr<PumaModel> model, std::string name) {
  if (!model) throw UsageError("local_chat_model: no model");
  return std::make_unique<LocalChatModel>(std::move(model), std::move(name));
}

}  // namespace pwab::puma
