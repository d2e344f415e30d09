// The one libtorch translation unit of the PUMA pipeline: loading, generation, SFT and DPO loops.
#include "puma/model.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/sys.h"
#include "core/text.h"
#include "core/torch_runtime.h"
#include "llama/config.h"
#include "llama/distributed.h"
#include "llama/generate.h"
#include "llama/lora.h"
#include "llama/model.h"
#include "llama/rl_loss.h"
#include "llama/train.h"
#include "puma/model_impl.h"
#include "puma/train_scaffold.h"

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

// A DPO row pair: the prompt cut so that neither response is (options.max_prompt_length, then max_length).
struct EncodedPreference {
  llama::SequencePair chosen, rejected;
  bool prompt_cut = false;
};

std::vector<int32_t> cut_prompt(const std::vector<int32_t>& prompt, std::size_t keep, PromptTruncation how) {
  if (prompt.size() <= keep) return prompt;
  keep = std::max<std::size_t>(keep, 1);
  if (how == PromptTruncation::kKeepStart) return {prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(keep)};
  std::vector<int32_t> out{prompt.front()};  // the BOS token stays
  out.insert(out.end(), prompt.end() - static_cast<std::ptrdiff_t>(keep - 1), prompt.end());
  return out;
}

// The prompt cut so that neither response is: to options.max_prompt_length, then to fit max_length.
EncodedPreference encode_preference(const PumaModel::Impl& impl, const PreferenceExample& p, const TrainOptions& options) {
  std::vector<int32_t> prompt = impl.prompt_ids(p.prompt);
  std::vector<int32_t> c = impl.target_ids(p.chosen), r = impl.target_ids(p.rejected);
  std::size_t budget = prompt.size();
  if (options.max_prompt_length > 0) budget = std::min<std::size_t>(budget, options.max_prompt_length);
  const std::size_t longest = std::max(c.size(), r.size()), max_length = static_cast<std::size_t>(options.max_length);
  if (options.max_length > 0 && budget + longest > max_length) budget = max_length > longest ? max_length - longest : 1;
  EncodedPreference e;
  e.prompt_cut = budget < prompt.size();
  prompt = cut_prompt(prompt, budget, options.prompt_truncation);
  e.chosen = {prompt, std::move(c)};
  e.rejected = {std::move(prompt), std::move(r)};
  return e;
}

}  // namespace


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
  config.hidden_size = tiny.shape.hidden;
  config.num_hidden_layers = tiny.shape.layers;
  config.num_attention_heads = tiny.shape.heads;
  config.num_key_value_heads = tiny.shape.kv_heads;
  config.intermediate_size = tiny.shape.ffn;
  config.tie_word_embeddings = tiny.shape.tie_embeddings;
  config.bos_token_id = impl->tokenizer->bos_id();
  config.eos_token_ids = {impl->tokenizer->eos_id()};
  config.max_position_embeddings = 2048;
  impl->model = llama::create_model(config, tiny.seed, torch::TensorOptions().dtype(impl->dtype).device(impl->device));
  torch_init_threads(0);  // as load_model does: Debian's libtorch may detect one core and train single-threaded
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
  impl_->last_prompt_tokens = impl_->last_generated_tokens = 0;
  if (!config.prompt_seeds.empty() && config.prompt_seeds.size() != prompts.size())
    throw UsageError("generate: prompt_seeds must give one seed per prompt");
  if (!config.allowed_tokens.empty() && config.allowed_tokens.size() != prompts.size())
    throw UsageError("generate: allowed_tokens must give one list per prompt");
  std::vector<std::vector<int32_t>> all_ids;
  for (const std::string& p : prompts) {
    all_ids.push_back(impl_->prompt_ids(p));
    impl_->last_prompt_tokens += static_cast<int64_t>(all_ids.back().size());
  }
  // Greedy batches hold prompts of similar length (less padding, and similar outputs finish together); sampled
  // ones keep the given order, so that a prompt's draws depend on its position only.
  std::vector<std::size_t> order(prompts.size());
  std::iota(order.begin(), order.end(), 0);
  if (!config.sample && config.num_beams <= 1)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return all_ids[a].size() < all_ids[b].size(); });
  std::vector<std::vector<std::string>> out(prompts.size());
  const std::size_t step = static_cast<std::size_t>(std::max(1, config.batch_size));
  for (std::size_t start = 0; start < prompts.size(); start += step) {
    std::vector<std::vector<int32_t>> ids;
    for (std::size_t i = start; i < std::min(prompts.size(), start + step); ++i) ids.push_back(all_ids[order[i]]);
    go.seed = derive_seed(config.seed, start);  // row i of this batch draws from derive_seed(go.seed, i)
    go.row_seeds.clear();
    if (!config.prompt_seeds.empty())
      for (std::size_t i = start; i < std::min(prompts.size(), start + step); ++i)
        go.row_seeds.push_back(config.prompt_seeds.at(order[i]));
    go.allowed_tokens.clear();
    if (!config.allowed_tokens.empty())
      for (std::size_t i = start; i < std::min(prompts.size(), start + step); ++i)
        go.allowed_tokens.push_back(config.allowed_tokens.at(order[i]));
    std::size_t i = start;
    for (auto& candidates : llama::generate(*impl_->model, ids, go)) {
      std::vector<std::string> texts;
      for (const llama::Generation& g : candidates) {
        impl_->last_generated_tokens += static_cast<int64_t>(g.tokens.size());
        texts.push_back(impl_->tokenizer->decode(g.tokens, true));
      }
      out[order[i++]] = std::move(texts);
    }
  }
  return out;
}

std::vector<int32_t> PumaModel::encode_prompt(const std::string& prompt) const { return impl_->prompt_ids(prompt); }

std::vector<SampledCompletion> PumaModel::complete_ids(const std::vector<std::vector<int32_t>>& prompts,
                                                       const GenerateConfig& config) {
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  if (!config.prompt_seeds.empty() && config.prompt_seeds.size() != prompts.size())
    throw UsageError("complete_ids: prompt_seeds must give one seed per prompt");
  if (!config.allowed_tokens.empty() && config.allowed_tokens.size() != prompts.size())
    throw UsageError("complete_ids: allowed_tokens must give one list per prompt");
  llama::GenerateOptions go;
  go.max_new_tokens = config.max_new_tokens;
  go.do_sample = config.sample;
  go.temperature = config.temperature;
  go.top_k = config.top_k;
  go.top_logprobs = config.top_logprobs;
  std::vector<SampledCompletion> out;
  out.reserve(prompts.size());
  const std::size_t step = static_cast<std::size_t>(std::max(1, config.batch_size));
  const int32_t eos = impl_->tokenizer->eos_id();
  for (std::size_t start = 0; start < prompts.size(); start += step) {
    const std::size_t end = std::min(prompts.size(), start + step);
    std::vector<std::vector<int32_t>> ids(prompts.begin() + static_cast<std::ptrdiff_t>(start),
                                          prompts.begin() + static_cast<std::ptrdiff_t>(end));
    go.seed = derive_seed(config.seed, start);
    go.row_seeds.clear();
    if (!config.prompt_seeds.empty())
      go.row_seeds.assign(config.prompt_seeds.begin() + static_cast<std::ptrdiff_t>(start),
                          config.prompt_seeds.begin() + static_cast<std::ptrdiff_t>(end));
    go.allowed_tokens.clear();
    if (!config.allowed_tokens.empty())
      go.allowed_tokens.assign(config.allowed_tokens.begin() + static_cast<std::ptrdiff_t>(start),
                               config.allowed_tokens.begin() + static_cast<std::ptrdiff_t>(end));
    for (auto& generated : llama::generate(*impl_->model, ids, go)) {
      llama::Generation& g = generated.at(0);
      SampledCompletion c;
      c.text = impl_->tokenizer->decode(g.tokens, true);
      c.ids = std::move(g.tokens);
      if (g.eos) c.ids.push_back(eos);
      c.logprobs = std::move(g.logprobs);
      c.top_logprobs = std::move(g.top_logprobs);
      c.eos = g.eos;
      out.push_back(std::move(c));
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
    int64_t n = b.loss_mask.narrow(1, 1, b.loss_mask.size(1) - 1).sum().item<int64_t>();
    if (n == 0) continue;
    total += llama::causal_lm_loss(*impl_->model, b).item<double>() * static_cast<double>(n);
    tokens += n;
  }
  return tokens ? total / static_cast<double>(tokens) : -1;
}

std::vector<double> PumaModel::target_logprobs(const std::vector<TrainPair>& pairs) {
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  std::vector<double> out;
  for (const llama::SequencePair& row : impl_->encode_pairs(pairs))
    out.push_back(llama::sequence_logprobs(*impl_->model, impl_->batch({row}, 0))[0].item<double>());
  return out;
}

std::vector<float> PumaModel::logits(const std::string& text, int64_t* vocab) {
  torch::NoGradGuard no_grad;
  impl_->model->eval();
  std::vector<int32_t> ids = impl_->prompt_ids(text);
  auto input = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end())).unsqueeze(0);
  auto out = impl_->model->forward(input).squeeze(0).to(torch::kCPU, torch::kFloat32).contiguous();
  if (vocab) *vocab = out.size(1);
  return std::vector<float>(out.data_ptr<float>(), out.data_ptr<float>() + out.numel());
}

std::unique_ptr<PumaModel> PumaModel::copy() const {
  auto impl = std::make_unique<Impl>();
  impl->tokenizer = impl_->tokenizer;
  impl->tokenizer_dir = impl_->tokenizer_dir;
  impl->device = impl_->device;
  impl->dtype = impl_->dtype;
  impl->model = llama::LlamaModel(impl_->model->config(), torch::TensorOptions().dtype(impl->dtype).device(impl->device));
  {
    torch::NoGradGuard no_grad;
    auto from = impl_->model->checkpoint_weights();
    auto to = impl->model->checkpoint_weights();
    for (std::size_t i = 0; i < from.size(); ++i) to[i].second.copy_(from[i].second);
  }
  llama::set_base_trainable(*impl->model, false);
  impl->model->eval();
  return std::unique_ptr<PumaModel>(new PumaModel(std::move(impl)));
}

namespace detail {

Trainables make_trainables(llama::LlamaModel& model, const TrainOptions& o) {
  Trainables t;
  if (o.lora) {
    llama::LoraConfig lc;
    lc.r = o.lora_r;
    lc.alpha = o.lora_alpha;
    if (o.lora_modules_to_save) lc.modules_to_save = llama::kPumaModulesToSave;
    lc.seed = o.seed;
    lc.base_model_name_or_path = o.adapter_base_model;
    t.adapter = llama::LoraAdapter::attach(model, lc);
    t.named = t.adapter->named_parameters();
  } else {
    llama::set_base_trainable(*model, true);
    for (const auto& item : model->named_parameters()) t.named.emplace_back(item.key(), item.value());
  }
  for (const auto& [name, tensor] : t.named) t.tensors.push_back(tensor);
  return t;
}

void finish_trainables(llama::LlamaModel& model, Trainables& t, const TrainOptions& o) {
  if (t.adapter) {
    const bool lead = !o.group || o.group->rank() == 0;  // one writer of the adapter files
    if (!o.adapter_dir.empty() && lead) t.adapter->save(o.adapter_dir);
    t.adapter->merge();
  }
  llama::set_base_trainable(*model, false);
}

}  // namespace detail

using detail::finish_trainables;
using detail::make_trainables;
using detail::Trainables;

namespace {

// The order rows are visited in during an epoch: a fixed shuffle per (seed, epoch), so a resume sees the same order.
// With group_by_length, transformers' mega-batches: the shuffle is cut into runs of 50 batches, each run is sorted
// by length (longest first) and cut into batches, and the full batches are shuffled (a last partial batch stays last).
std::vector<std::size_t> epoch_order(const std::vector<int64_t>& lengths, const TrainOptions& o, int64_t epoch) {
  const std::size_t n = lengths.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  Rng rng(derive_seed(o.seed, static_cast<uint64_t>(epoch)));
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  if (!o.group_by_length || o.batch_size < 2) return order;
  const std::size_t batch = static_cast<std::size_t>(o.batch_size), mega = 50 * batch;
  for (std::size_t start = 0; start < n; start += mega) {
    auto first = order.begin() + static_cast<std::ptrdiff_t>(start);
    auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(n, start + mega));
    std::stable_sort(first, last, [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  }
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t start = 0; start < n; start += batch)
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(std::min(n, start + batch)));
  const std::size_t full = n / batch;
  for (std::size_t i = full; i > 1; --i) std::swap(batches[i - 1], batches[rng.below(i)]);
  order.clear();
  for (const auto& b : batches) order.insert(order.end(), b.begin(), b.end());
  return order;
}

// One micro-batch's loss, the tokens it covered, and its preference statistics (DPO; zeros for SFT).
struct MicroResult {
  torch::Tensor loss;
  int64_t tokens = 0;
  PreferenceStats prefs{};
  //! How many items the loss is a mean over (SFT: labelled tokens; DPO: pairs). Data-parallel ranks weigh their
  //! losses by it, so that their sum is the mean the whole micro-batch would give in one process.
  double weight = 1;
};
using MicroLoss = std::function<MicroResult(const std::vector<std::size_t>& rows)>;
// An evaluation point: the loss on the evaluation rows (all of them when `all`), and DPO statistics.
struct EvalResult {
  double loss = -1;
  PreferenceStats prefs{};
  bool have_prefs = false;
};
using Evaluate = std::function<EvalResult(bool all)>;

// The loss curve: one JSON object a line in work_dir/curve.jsonl. A resumed run drops the points past its
// checkpoint first, so no point is counted twice.
class Curve {
 public:
  Curve(fs::path file, bool dpo) : file_(std::move(file)), dpo_(dpo) {}
  void resume_at(int64_t step) { keep_log_until(file_, "step", step); }
  void start_fresh() {
    if (fs::exists(file_)) fs::remove(file_);
  }
  void add(nlohmann::json point, const PreferenceStats* prefs) {
    if (dpo_ && prefs) {
      point["margin"] = prefs->margin;
      point["accuracy"] = prefs->accuracy;
      point["chosen_reward"] = prefs->chosen_reward;
      point["rejected_reward"] = prefs->rejected_reward;
      if (point.value("kind", "") == "eval") point["kl"] = prefs->kl;
    }
    append_file(file_, point.dump() + "\n");
  }

 private:
  fs::path file_;
  bool dpo_;
};

// What a micro-batch measured on this rank, summed over the ranks in one collective: the loss and preference
// statistics weighted by this rank's share, the tokens, and a stop flag (a rank asked to stop stops them all at the
// same step).
struct MicroSums {
  double weighted_loss = 0, weight = 0, tokens = 0, margin = 0, accuracy = 0, chosen_reward = 0, rejected_reward = 0,
         stop = 0;
  std::vector<double> values() const {
    return {weighted_loss, weight, tokens, margin, accuracy, chosen_reward, rejected_reward, stop};
  }
  void assign(const std::vector<double>& v) {
    weighted_loss = v.at(0), weight = v.at(1), tokens = v.at(2), margin = v.at(3), accuracy = v.at(4);
    chosen_reward = v.at(5), rejected_reward = v.at(6), stop = v.at(7);
  }
};

// Running means of a window of micro-batches.
struct Window {
  double loss = 0, margin = 0, accuracy = 0, chosen = 0, rejected = 0;
  int64_t n = 0, tokens = 0;
  void add(double l, const MicroResult& r) {
    loss += l, margin += r.prefs.margin, accuracy += r.prefs.accuracy;
    chosen += r.prefs.chosen_reward, rejected += r.prefs.rejected_reward;
    ++n, tokens += r.tokens;
  }
  PreferenceStats prefs() const {
    const double d = static_cast<double>(std::max<int64_t>(1, n));
    return {loss / d, margin / d, accuracy / d, chosen / d, rejected / d, 0};
  }
  double mean_loss() const { return loss / static_cast<double>(std::max<int64_t>(1, n)); }
};

// One generic loop for SFT and DPO.
TrainReport train_loop(const std::string& phase, llama::LlamaModel& model, Trainables& t,
                       const std::vector<int64_t>& lengths, const MicroLoss& micro_loss, const Evaluate& evaluate,
                       const fs::path& work_dir, const TrainOptions& o) {
  TrainReport report;
  for (const auto& tensor : t.tensors) report.trainable_parameters += tensor.numel();
  fs::create_directories(work_dir);
  const std::size_t n_rows = lengths.size();
  const fs::path checkpoint = work_dir / "checkpoint.pt";
  const int64_t per_epoch_micro = static_cast<int64_t>((n_rows + o.batch_size - 1) / o.batch_size);
  const int64_t per_epoch_steps = (per_epoch_micro + o.accumulation_steps - 1) / o.accumulation_steps;
  const int64_t total_steps = std::max<int64_t>(1, per_epoch_steps * o.epochs);
  const int64_t warmup = static_cast<int64_t>(o.warmup_ratio * static_cast<double>(total_steps));
  Curve curve(work_dir / "curve.jsonl", phase == "dpo");

  // Data-parallel (o.group): every rank runs this loop on the same schedule; rank 0 (the lead) alone writes.
  llama::ProcessGroup* group = o.group;
  const bool lead = !group || group->rank() == 0;
  torch::optim::AdamW optimizer(t.tensors, llama::hf_adamw_options(o.learning_rate));
  llama::AccumulationOptions ao;
  ao.accumulation_steps = o.accumulation_steps;
  ao.max_grad_norm = o.max_grad_norm;
  if (group) ao.reduce_gradients = [group](std::vector<torch::Tensor>& grads) { group->all_reduce_sum(grads); };
  llama::GradientAccumulator acc(optimizer, t.tensors, ao);
  llama::TrainState state;
  // Every rank resumes from the same checkpoint (the work directory is shared) or none does.
  if (resumes_from(checkpoint, group, phase)) {
    state = llama::load_checkpoint(checkpoint, t.named, optimizer);
    acc.restore(state.micro_step, state.optimizer_step);
    report.resumed = true;
    if (lead) curve.resume_at(state.optimizer_step);
  } else if (lead) {
    curve.start_fresh();
  }
  if (group) group->broadcast(t.tensors, 0);  // one starting point for every replica
  auto save = [&](int64_t epoch) {
    state.epoch = epoch;
    state.micro_step = acc.micro_steps();
    state.optimizer_step = acc.optimizer_steps();
    if (lead) llama::save_checkpoint(checkpoint, t.named, optimizer, state);
  };
  auto lr_now = [&] { return o.learning_rate * llama::linear_schedule(acc.optimizer_steps(), warmup, total_steps); };
  auto eval_point = [&](int64_t epoch, bool all) {
    if (!lead) return EvalResult{};  // the lead evaluates; the others go on to the next collective
    EvalResult e = evaluate(all);
    if (e.loss < 0 && !e.have_prefs) return e;
    curve.add({{"step", acc.optimizer_steps()}, {"epoch", epoch}, {"kind", "eval"}, {"loss", e.loss}},
              e.have_prefs ? &e.prefs : nullptr);
    model->train();
    return e;
  };
  if (!report.resumed && o.eval_every > 0) eval_point(0, false);  // where training starts from
  model->train();
  auto start = Clock::now();
  auto last_report = start;
  Window window, log_window;
  double epoch_loss = 0;
  int64_t epoch_n = 0;
  auto comm_report = [&] {
    if (!group) return;
    report.world = group->world();
    report.comm_seconds = group->stats().seconds;
    report.bytes_all_reduced = group->stats().bytes_all_reduced;
  };
  auto stop = [&](int64_t epoch) {
    comm_report();
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    report.tokens_per_s = static_cast<double>(report.tokens) / std::max(1e-9, report.seconds);
    save(epoch);
    report.cancelled = true;
    report.steps = acc.optimizer_steps();
    return report;
  };
  for (int64_t epoch = state.epoch; epoch < o.epochs; ++epoch) {
    std::vector<std::size_t> order = epoch_order(lengths, o, epoch);
    const int64_t done_in_epoch = acc.micro_steps() - epoch * per_epoch_micro;  // > 0 only right after a resume
    epoch_loss = 0;
    epoch_n = 0;
    for (int64_t m = std::max<int64_t>(0, done_in_epoch); m < per_epoch_micro; ++m) {
      if (!group && o.cancel && o.cancel->load()) return stop(epoch);
      std::vector<std::size_t> rows;
      for (int64_t k = m * o.batch_size; k < std::min<int64_t>((m + 1) * o.batch_size, static_cast<int64_t>(n_rows)); ++k)
        rows.push_back(order[static_cast<std::size_t>(k)]);
      llama::set_learning_rate(optimizer, lr_now());
      MicroResult r;
      double value = 0;
      if (!group) {
        r = micro_loss(rows);
        value = r.loss.item<double>();
      } else {
        // This rank's share: every world-th row of the micro-batch. The ranks' losses are weighed so that the
        // summed gradient is the one of the whole micro-batch's mean loss.
        std::vector<std::size_t> mine;
        for (std::size_t k = static_cast<std::size_t>(group->rank()); k < rows.size(); k += group->world())
          mine.push_back(rows[k]);
        if (mine.empty()) {
          r.loss = torch::zeros({}, torch::TensorOptions().requires_grad(true));
          r.weight = 0;
        } else {
          r = micro_loss(mine);
        }
        const double w = r.weight, local = r.loss.item<double>();
        const bool cancelling = o.cancel && o.cancel->load();
        MicroSums sums{local * w,
                       w,
                       static_cast<double>(r.tokens),
                       r.prefs.margin * w,
                       r.prefs.accuracy * w,
                       r.prefs.chosen_reward * w,
                       r.prefs.rejected_reward * w,
                       cancelling ? 1.0 : 0.0};
        sums.assign(group->all_reduce_sum(sums.values()));
        if (sums.stop > 0) return stop(epoch);  // a rank was asked to stop: all stop at the same step
        const double total = sums.weight;
        r.loss = r.loss * (total > 0 ? w / total : 0.0);
        value = total > 0 ? sums.weighted_loss / total : 0;
        r.tokens = static_cast<int64_t>(sums.tokens);
        if (total > 0)
          r.prefs = {0, sums.margin / total, sums.accuracy / total, sums.chosen_reward / total,
                     sums.rejected_reward / total, 0};
      }
      const bool stepped = acc.backward(r.loss) || (m + 1 == per_epoch_micro && acc.flush());
      window.add(value, r), log_window.add(value, r);
      epoch_loss += value, ++epoch_n;
      report.tokens += r.tokens;
      if (!stepped) continue;
      const int64_t step = acc.optimizer_steps();
      if (lead && o.log_every > 0 && step % o.log_every == 0) {
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        PreferenceStats p = log_window.prefs();
        curve.add({{"step", step}, {"epoch", epoch}, {"kind", "train"}, {"loss", log_window.mean_loss()},
                   {"lr", lr_now()}, {"grad_norm", acc.last_grad_norm()},
                   {"tokens_per_s", static_cast<double>(report.tokens) / std::max(1e-9, secs)}},
                  &p);
        log_window = Window{};
      }
      if (o.eval_every > 0 && step % o.eval_every == 0 && step < total_steps) eval_point(epoch, false);
      if (o.checkpoint_every > 0 && step % o.checkpoint_every == 0) save(epoch);
      if (o.stop_after_steps > 0 && step >= o.stop_after_steps) return stop(epoch);
      auto now = Clock::now();
      if (lead && o.on_progress && std::chrono::duration<double>(now - last_report).count() > 0.5) {
        double secs = std::chrono::duration<double>(now - last_report).count();
        o.on_progress({phase, step, total_steps, epoch, window.mean_loss(),
                       static_cast<double>(window.tokens) / std::max(1e-9, secs), lr_now()});
        last_report = now;
        window = Window{};
      }
    }
    save(epoch + 1);
  }
  comm_report();
  report.steps = acc.optimizer_steps();
  report.train_loss = epoch_n ? epoch_loss / static_cast<double>(epoch_n) : 0;
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.tokens_per_s = static_cast<double>(report.tokens) / std::max(1e-9, report.seconds);
  model->eval();
  EvalResult e = eval_point(o.epochs, true);
  report.eval_loss = e.loss;
  report.eval_preferences = e.prefs;
  report.have_eval_preferences = e.have_prefs;
  model->eval();
  return report;
}

void check_train_options(const TrainOptions& o) {
  if (o.epochs < 0 || o.batch_size < 1 || o.accumulation_steps < 1 || o.learning_rate <= 0 || o.max_length < 8 ||
      o.max_prompt_length < 0 || o.lora_r < 1 || o.lora_alpha <= 0 || o.dpo_beta <= 0 || o.rpo_alpha < 0)
    throw UsageError("training options: epochs ≥ 0, batch size ≥ 1, accumulation ≥ 1, learning rate > 0, max length "
                     "≥ 8, max prompt length ≥ 0, LoRA r ≥ 1 and alpha > 0, beta > 0 and rpo alpha ≥ 0 are required");
}

// At most `limit` rows spread evenly over `rows` (all when limit is 0): an intermediate evaluation point that sees
// every kind of example the evaluation set holds.
template <typename T>
std::vector<T> spread_subset(const std::vector<T>& rows, int limit) {
  if (limit <= 0 || rows.size() <= static_cast<std::size_t>(limit)) return rows;
  std::vector<T> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(limit); ++i) out.push_back(rows[i * rows.size() / limit]);
  return out;
}

int64_t row_length(const llama::SequencePair& row, int max_length) {
  const auto n = static_cast<int64_t>(row.prompt.size() + row.target.size());
  return max_length > 0 ? std::min<int64_t>(n, max_length) : n;
}

}  // namespace

TrainReport PumaModel::sft(const std::vector<TrainPair>& train, const std::vector<TrainPair>& eval,
                           const fs::path& work_dir, const TrainOptions& options) {
  check_train_options(options);
  if (train.empty()) throw UsageError("sft: no training pairs");
  TrainReport report;
  if (options.epochs == 0) {  // no SFT: the model stays as it is
    report.eval_loss = loss(eval, options.max_length);
    return report;
  }
  std::vector<llama::SequencePair> rows = impl_->encode_pairs(train);
  std::vector<int64_t> lengths;
  for (const auto& r : rows) lengths.push_back(row_length(r, options.max_length));
  Trainables t = make_trainables(impl_->model, options);
  MicroLoss micro = [&](const std::vector<std::size_t>& idx) {
    std::vector<llama::SequencePair> chunk;
    for (std::size_t i : idx) chunk.push_back(rows[i]);
    llama::TokenBatch b = impl_->batch(chunk, options.max_length);
    MicroResult r{llama::causal_lm_loss(*impl_->model, b), b.attention_mask.sum().item<int64_t>()};
    r.weight = static_cast<double>(llama::label_count(b));
    return r;
  };
  Evaluate evaluate = [&](bool all) {
    EvalResult e;
    if (eval.empty()) return e;
    e.loss = loss(all ? eval : spread_subset(eval, options.eval_limit), options.max_length);
    return e;
  };
  report = train_loop("sft", impl_->model, t, lengths, micro, evaluate, work_dir, options);
  for (const auto& r : rows) report.truncated_rows += row_length(r, 0) > options.max_length;
  if (report.cancelled) {
    if (t.adapter) t.adapter->detach();
    return report;
  }
  finish_trainables(impl_->model, t, options);
  return report;
}

PreferenceStats PumaModel::preference_stats(const std::vector<PreferenceExample>& pairs, PumaModel& reference,
                                            const TrainOptions& options) {
  return preference_stats_impl(pairs, &reference, {}, options);
}

PreferenceStats PumaModel::preference_stats_impl(const std::vector<PreferenceExample>& pairs, PumaModel* reference,
                                                 const std::function<void(bool)>& use_reference,
                                                 const TrainOptions& options) {
  PreferenceStats s;
  if (pairs.empty()) return s;
  torch::NoGradGuard no_grad;
  const bool was_training = impl_->model->is_training();
  impl_->model->eval();
  double kl_sum = 0;
  int64_t kl_n = 0;
  for (const PreferenceExample& p : pairs) {
    EncodedPreference e = encode_preference(*impl_, p, options);
    llama::TokenBatch b = impl_->batch({e.chosen, e.rejected}, 0);
    llama::LabelledPositions pol = llama::labelled_positions(*impl_->model, b);
    llama::LabelledPositions ref;
    if (reference) {
      ref = llama::labelled_positions(*reference->impl_->model, b);
    } else {
      use_reference(true);
      ref = llama::labelled_positions(*impl_->model, b);
      use_reference(false);
    }
    auto sums = [](const llama::LabelledPositions& at) {
      auto picked = at.log_probs.gather(1, at.tokens.unsqueeze(-1)).squeeze(-1);
      return torch::zeros({2}, picked.options()).index_add(0, at.rows, picked);
    };
    auto pol_lp = sums(pol), ref_lp = sums(ref);
    const double dc = (pol_lp[0] - ref_lp[0]).item<double>(), dr = (pol_lp[1] - ref_lp[1]).item<double>();
    const double margin = dc - dr;
    s.margin += margin;
    s.accuracy += margin > 0 ? 1.0 : 0.0;
    s.chosen_reward += options.dpo_beta * dc;
    s.rejected_reward += options.dpo_beta * dr;
    s.loss += std::log1p(std::exp(-options.dpo_beta * margin));  // −log σ(β · margin)
    auto kl = (pol.log_probs.exp() * (pol.log_probs - ref.log_probs)).sum(-1);
    kl_sum += kl.sum().item<double>();
    kl_n += kl.size(0);
  }
  const double n = static_cast<double>(pairs.size());
  s.loss /= n, s.margin /= n, s.accuracy /= n, s.chosen_reward /= n, s.rejected_reward /= n;
  s.kl = kl_n ? kl_sum / static_cast<double>(kl_n) : 0;
  if (was_training) impl_->model->train();
  return s;
}

TrainReport PumaModel::dpo(const std::vector<PreferenceExample>& pairs, const std::vector<PreferenceExample>& eval,
                           const fs::path& work_dir, const TrainOptions& options) {
  check_train_options(options);
  if (pairs.empty()) throw UsageError("dpo: no preference pairs");
  fs::create_directories(work_dir);
  TrainReport report;
  std::vector<EncodedPreference> rows;
  std::vector<int64_t> lengths;
  std::string fingerprint;
  for (const PreferenceExample& p : pairs) {
    EncodedPreference e = encode_preference(*impl_, p, options);
    report.truncated_rows += e.prompt_cut;
    lengths.push_back(static_cast<int64_t>(e.chosen.prompt.size() +
                                           std::max(e.chosen.target.size(), e.rejected.target.size())));
    rows.push_back(std::move(e));
    fingerprint += p.prompt + '\x1f' + p.chosen + '\x1f' + p.rejected + '\x1e';
  }
  // The frozen reference: this model before training, its log-probabilities computed once and cached.
  const fs::path ref_file = work_dir / "reference_logprobs.json";
  const std::string key = to_hex(hash_bytes(fingerprint)) + "/" + std::to_string(options.max_length) + "/" +
                          std::to_string(options.max_prompt_length) + "/" +
                          (options.prompt_truncation == PromptTruncation::kKeepEnd ? "end" : "start");
  std::vector<double> ref_c, ref_r;
  if (fs::exists(ref_file)) {
    nlohmann::json j = nlohmann::json::parse(read_file(ref_file), nullptr, false);
    if (!j.is_discarded() && j.value("key", "") == key) {
      ref_c = j["chosen"].get<std::vector<double>>();
      ref_r = j["rejected"].get<std::vector<double>>();
    }
  }
  // A pair's chosen and rejected answers share their prompt: the prompt is computed once for both (a prefix
  // batch, llama/rl_loss.h), which for PUMA's long prompts and short answers nearly halves DPO's work. `some`
  // are indices into rows; returns the policy's Σ log p of their chosen and of their rejected answers.
  auto pair_logprobs = [&](const std::vector<std::size_t>& some) {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<std::vector<int32_t>>> answers;
    for (std::size_t i : some) {
      prompts.push_back(rows[i].chosen.prompt);
      answers.push_back({rows[i].chosen.target, rows[i].rejected.target});
    }
    torch::Tensor lp = llama::shared_prompt_logprobs(*impl_->model, prompts, answers, impl_->pad_id())
                           .view({static_cast<int64_t>(some.size()), 2});
    return std::pair<torch::Tensor, torch::Tensor>{lp.select(1, 0), lp.select(1, 1)};
  };
  if (ref_c.size() != pairs.size()) {
    const auto ref_start = std::chrono::steady_clock::now();
    torch::NoGradGuard no_grad;
    impl_->model->eval();
    ref_c.clear(), ref_r.clear();
    // In batches of the training micro-batch's size, rows of similar length together (less padding).
    std::vector<std::size_t> order(rows.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
    ref_c.assign(rows.size(), 0.0), ref_r.assign(rows.size(), 0.0);
    const auto per_batch = static_cast<std::size_t>(std::max(1, options.batch_size));
    for (std::size_t start = 0; start < order.size(); start += per_batch) {
      std::vector<std::size_t> some(order.begin() + static_cast<std::ptrdiff_t>(start),
                                    order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + per_batch)));
      const auto [c, r] = pair_logprobs(some);
      const auto cc = c.to(torch::kCPU, torch::kFloat64).contiguous(), rc = r.to(torch::kCPU, torch::kFloat64).contiguous();
      for (std::size_t k = 0; k < some.size(); ++k) {
        ref_c[some[k]] = cc.data_ptr<double>()[k];
        ref_r[some[k]] = rc.data_ptr<double>()[k];
      }
    }
    if (!options.group || options.group->rank() == 0)  // every rank computes them; one writes them
      write_file_atomic(ref_file, nlohmann::json{{"key", key}, {"chosen", ref_c}, {"rejected", ref_r}}.dump());
    report.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ref_start).count();
  }
  // The reference model for the evaluation points (KL needs whole distributions, not cached sums). With LoRA the
  // reference is this model with the adapter switched off; with all weights trained, a frozen copy. A resumed run
  // rebuilds it from the model it was given, which is the reference (training state lives in the checkpoint).
  std::unique_ptr<PumaModel> frozen = !eval.empty() && !options.lora ? copy() : nullptr;
  Trainables t = make_trainables(impl_->model, options);
  MicroLoss micro = [&](const std::vector<std::size_t>& idx) {
    std::vector<std::size_t> some(idx.begin(), idx.end());
    const auto [pc, pr] = pair_logprobs(some);
    const int64_t n = static_cast<int64_t>(idx.size());
    std::vector<double> rc, rr;
    for (std::size_t i : idx) rc.push_back(ref_c[i]), rr.push_back(ref_r[i]);
    auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(impl_->device);
    torch::Tensor ref_chosen = torch::tensor(rc, torch::kFloat64).to(opts);
    torch::Tensor ref_rejected = torch::tensor(rr, torch::kFloat64).to(opts);
    torch::Tensor loss = llama::dpo_loss(pc, pr, ref_chosen, ref_rejected, options.dpo_beta);
    int64_t row_tokens = 0;  // the two rows' tokens, as separate rows would hold them
    std::vector<double> chosen_lengths;
    for (std::size_t i : idx) {
      row_tokens += static_cast<int64_t>(rows[i].chosen.prompt.size() + rows[i].chosen.target.size() +
                                         rows[i].rejected.prompt.size() + rows[i].rejected.target.size());
      chosen_lengths.push_back(static_cast<double>(rows[i].chosen.target.size()));
    }
    if (options.rpo_alpha > 0) {
      // the chosen answer's NLL per token; its first token is predicted from the prompt, so every token counts
      auto chosen_tokens = torch::tensor(chosen_lengths, torch::kFloat64).to(opts).clamp_min(1.0);
      loss = loss + options.rpo_alpha * (-(pc / chosen_tokens).mean());
    }
    MicroResult r{loss, row_tokens};
    r.weight = static_cast<double>(n);  // a mean over pairs
    torch::NoGradGuard no_grad;
    auto dc = (pc - ref_chosen).detach(), dr = (pr - ref_rejected).detach();
    auto margin = dc - dr;
    r.prefs.margin = margin.mean().item<double>();
    r.prefs.accuracy = (margin > 0).to(torch::kFloat32).mean().item<double>();
    r.prefs.chosen_reward = options.dpo_beta * dc.mean().item<double>();
    r.prefs.rejected_reward = options.dpo_beta * dr.mean().item<double>();
    return r;
  };
  Evaluate evaluate = [&](bool all) {
    EvalResult e;
    if (eval.empty()) return e;
    std::vector<PreferenceExample> some = all ? eval : spread_subset(eval, options.eval_limit);
    if (t.adapter) {  // the reference is this model with the adapter switched off
      e.prefs = preference_stats_impl(some, nullptr, [&](bool reference) { t.adapter->set_enabled(!reference); },
                                      options);
    } else {
      e.prefs = preference_stats_impl(some, frozen.get(), {}, options);
    }
    e.loss = e.prefs.loss;
    e.have_prefs = true;
    return e;
  };
  report = [&] {
    TrainReport r = train_loop("dpo", impl_->model, t, lengths, micro, evaluate, work_dir, options);
    r.truncated_rows = report.truncated_rows;
    r.reference_seconds = report.reference_seconds;
    return r;
  }();
  if (report.cancelled) {
    if (t.adapter) t.adapter->detach();
    return report;
  }
  finish_trainables(impl_->model, t, options);
  return report;
}

void PumaModel::save(const fs::path& dir) const {
  fs::create_directories(dir);
  llama::save_model(*impl_->model, dir);
  copy_tokenizer_files(impl_->tokenizer_dir, dir);
}

}  // namespace pwab::puma
