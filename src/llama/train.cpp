// Training utilities around the LLaMA model (train.h).
#include "llama/train.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/sys.h"

namespace pwab::llama {
namespace fs = std::filesystem;

// ---- batches and losses ------------------------------------------------------------------------------------------

TokenBatch make_batch(const std::vector<SequencePair>& rows, int64_t pad_id, int64_t max_length, Padding padding) {
  if (rows.empty()) throw UsageError("make_batch: no rows");
  std::vector<std::vector<int64_t>> ids(rows.size()), labels(rows.size());
  std::size_t length = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (int32_t t : rows[r].prompt) ids[r].push_back(t), labels[r].push_back(0);
    for (int32_t t : rows[r].target) ids[r].push_back(t), labels[r].push_back(1);
    if (max_length > 0 && ids[r].size() > static_cast<std::size_t>(max_length)) {
      ids[r].resize(static_cast<std::size_t>(max_length));
      labels[r].resize(static_cast<std::size_t>(max_length));
    }
    length = std::max(length, ids[r].size());
  }
  if (length == 0) throw UsageError("make_batch: every row is empty");
  const auto n = static_cast<int64_t>(rows.size()), len = static_cast<int64_t>(length);
  TokenBatch b{torch::full({n, len}, pad_id, torch::kInt64), torch::zeros({n, len}, torch::kInt64),
               torch::zeros({n, len}, torch::kInt64)};
  auto* id = b.input_ids.data_ptr<int64_t>();
  auto* attend = b.attention_mask.data_ptr<int64_t>();
  auto* loss = b.loss_mask.data_ptr<int64_t>();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::size_t offset = r * length + (padding == Padding::kLeft ? length - ids[r].size() : 0);
    for (std::size_t i = 0; i < ids[r].size(); ++i) {
      id[offset + i] = ids[r][i];
      attend[offset + i] = 1;
      loss[offset + i] = labels[r][i];
    }
  }
  return b;
}

namespace {

//! A batch's rows end to end without their padding (LlamaModelImpl::packed_hidden_states): the ids [1, Σ lengths],
//! each row's length, where its tokens start in the padded row and where they start in the packed one.
struct PackedRows {
  torch::Tensor ids;
  std::vector<int64_t> lengths, starts, offsets;
};

//! Empty when a row's tokens are not one run (the mask has a hole) or a row has none: the padded forward takes those.
std::optional<PackedRows> pack_rows(const TokenBatch& batch) {
  auto mask = batch.attention_mask.to(torch::kCPU, torch::kInt64).contiguous();
  auto ids = batch.input_ids.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t rows = mask.size(0), length = mask.size(1);
  const auto* m = mask.data_ptr<int64_t>();
  const auto* id = ids.data_ptr<int64_t>();
  PackedRows p;
  std::vector<int64_t> flat;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t first = -1, last = -1, count = 0;
    for (int64_t t = 0; t < length; ++t)
      if (m[r * length + t]) {
        if (first < 0) first = t;
        last = t;
        ++count;
      }
    if (count == 0 || last - first + 1 != count) return std::nullopt;
    p.offsets.push_back(static_cast<int64_t>(flat.size()));
    p.starts.push_back(first);
    p.lengths.push_back(count);
    flat.insert(flat.end(), id + r * length + first, id + r * length + last + 1);
  }
  p.ids = torch::tensor(flat, torch::kInt64).view({1, static_cast<int64_t>(flat.size())});
  return p;
}

}  // namespace

LabelledPositions labelled_positions(LlamaModelImpl& model, const TokenBatch& batch) {
  const int64_t rows = batch.input_ids.size(0), length = batch.input_ids.size(1);
  const auto dev = model.device();
  // position t predicts token t + 1; a labelled token at t + 1 makes t a scored position
  auto scored = batch.loss_mask.narrow(1, 1, length - 1).to(torch::kCPU).contiguous();
  auto where = scored.nonzero();  // [labels, 2]: row, t
  auto row = where.select(1, 0).contiguous(), pos = where.select(1, 1).contiguous();
  auto tokens = batch.input_ids.to(torch::kCPU).index({row, pos + 1}).to(dev, torch::kInt64);
  // Packed (docs/llama.md, "Training"): the rows without their padding, the same numbers at the cost of the real
  // tokens only. A scored position must be one of its row's tokens, as every label after a prompt's first token is.
  // The last layer then runs for each row's tokens from its first scored position on (the prompt's last token, and
  // the target's), the keys and values of the whole row: nothing reads the rest of the prompt's last-layer output.
  std::optional<PackedRows> packed = pack_rows(batch);
  torch::Tensor picked;
  if (packed) {
    const auto n_rows = packed->lengths.size();
    const auto* r = row.data_ptr<int64_t>();
    const auto* t = pos.data_ptr<int64_t>();
    // first[k]: row k's first scored position in its own tokens (its last token when it has none, as when
    // max_length cut its whole target off)
    std::vector<int64_t> first(n_rows);
    for (std::size_t k = 0; k < n_rows; ++k) first[k] = packed->lengths[k] - 1;
    for (int64_t i = 0; i < row.size(0); ++i) {
      const auto k = static_cast<std::size_t>(r[i]);
      if (t[i] < packed->starts[k]) {
        packed.reset();
        break;
      }
      first[k] = std::min(first[k], t[i] - packed->starts[k]);
    }
    if (packed) {
      std::vector<int64_t> tails(n_rows), kept_offsets(n_rows);
      int64_t kept = 0;
      for (std::size_t k = 0; k < n_rows; ++k) {
        tails[k] = packed->lengths[k] - first[k];
        kept_offsets[k] = kept;
        kept += tails[k];
      }
      std::vector<int64_t> at(static_cast<std::size_t>(row.size(0)));
      for (std::size_t i = 0; i < at.size(); ++i) {
        const auto k = static_cast<std::size_t>(r[i]);
        at[i] = kept_offsets[k] + t[i] - packed->starts[k] - first[k];
      }
      auto hidden = model.packed_hidden_states(packed->ids, packed->lengths, tails);  // [1, Σ tails, hidden]
      picked = hidden[0].index_select(0, torch::tensor(at, torch::kInt64).to(dev));
    }
  }
  if (!picked.defined()) {
    auto hidden = model.hidden_states(batch.input_ids, batch.attention_mask);
    picked = hidden.reshape({rows * length, hidden.size(-1)}).index_select(0, (row * length + pos).to(dev));
  }
  return {torch::log_softmax(model.logits(picked), -1), tokens, row.to(dev)};
}

namespace {

//! The log-probability of every labelled token and the row it belongs to.
std::pair<torch::Tensor, torch::Tensor> labelled_logprobs(LlamaModelImpl& model, const TokenBatch& batch) {
  LabelledPositions at = labelled_positions(model, batch);
  return {at.log_probs.gather(1, at.tokens.unsqueeze(-1)).squeeze(-1), at.rows};
}

}  // namespace

int64_t label_count(const TokenBatch& batch) {
  const int64_t length = batch.input_ids.size(1);
  return length < 2 ? 0 : batch.loss_mask.narrow(1, 1, length - 1).sum().item<int64_t>();
}

torch::Tensor sequence_logprobs(LlamaModelImpl& model, const TokenBatch& batch) {
  auto sums = torch::zeros({batch.input_ids.size(0)}, torch::TensorOptions().device(model.device()));
  if (label_count(batch) == 0) return sums;
  auto [logp, row] = labelled_logprobs(model, batch);
  return sums.index_add(0, row, logp);
}

torch::Tensor causal_lm_loss(LlamaModelImpl& model, const TokenBatch& batch) {
  if (batch.input_ids.size(1) < 2) throw UsageError("causal_lm_loss: rows need at least two tokens");
  // no label at all (every target cut off by max_length): a zero loss that backward() accepts
  if (label_count(batch) == 0) return torch::zeros({}, torch::TensorOptions().device(model.device()).requires_grad(true));
  return -labelled_logprobs(model, batch).first.mean();
}

torch::Tensor dpo_loss(const torch::Tensor& policy_chosen, const torch::Tensor& policy_rejected,
                       const torch::Tensor& reference_chosen, const torch::Tensor& reference_rejected, double beta) {
  auto margin = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected);
  return -torch::log_sigmoid(beta * margin).mean();
}

// ---- optimizer ---------------------------------------------------------------------------------------------------

torch::optim::AdamWOptions hf_adamw_options(double lr) {
  return torch::optim::AdamWOptions(lr).betas({0.9, 0.999}).eps(1e-8).weight_decay(0.0);
}

double linear_schedule(int64_t step, int64_t warmup, int64_t total) {
  if (step < warmup) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
  return std::max(0.0, static_cast<double>(total - step) / static_cast<double>(std::max<int64_t>(1, total - warmup)));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

// ---- mixed precision ---------------------------------------------------------------------------------------------

AutocastGuard::AutocastGuard(torch::Device device, torch::Dtype dtype, bool enabled) {
  if (!enabled || !device.is_cuda()) return;
  active_ = true;
  // PyTorch 2.x names the device of each autocast setting; 1.13 (Debian's) had only the CUDA ones.
#if TORCH_VERSION_MAJOR >= 2
  previous_ = at::autocast::is_autocast_enabled(at::kCUDA);
  previous_dtype_ = at::autocast::get_autocast_dtype(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, dtype);
#else
  previous_ = at::autocast::is_enabled();
  previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
  at::autocast::set_enabled(true);
  at::autocast::set_autocast_gpu_dtype(dtype);
#endif
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR >= 2
  at::autocast::set_autocast_enabled(at::kCUDA, previous_);
  at::autocast::set_autocast_dtype(at::kCUDA, previous_dtype_);
#else
  at::autocast::set_enabled(previous_);
  at::autocast::set_autocast_gpu_dtype(previous_dtype_);
#endif
}

LossScaler::LossScaler(bool enabled, double initial_scale, int64_t growth_interval)
    : enabled_(enabled), scale_(initial_scale), growth_interval_(growth_interval) {}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }

bool LossScaler::unscale(const std::vector<torch::Tensor>& params) {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  torch::Tensor bad;
  for (const auto& p : params) {
    auto g = p.grad();
    if (!g.defined()) continue;
    g.mul_(1.0 / scale_);
    auto b = torch::logical_not(torch::isfinite(g).all());
    bad = bad.defined() ? bad.logical_or(b) : b;
  }
  const bool overflow = bad.defined() && bad.item<bool>();
  if (overflow) {
    scale_ = std::max(1.0, scale_ * 0.5);
    clean_steps_ = 0;
  } else if (++clean_steps_ >= growth_interval_) {
    scale_ *= 2.0;
    clean_steps_ = 0;
  }
  return !overflow;
}

GradientAccumulator::GradientAccumulator(torch::optim::Optimizer& optimizer, std::vector<torch::Tensor> params,
                                         AccumulationOptions options, LossScaler* scaler)
    : optimizer_(optimizer), params_(std::move(params)), options_(options), scaler_(scaler) {
  if (options_.accumulation_steps < 1) throw UsageError("gradient accumulation steps must be at least 1");
}

bool GradientAccumulator::backward(const torch::Tensor& loss) {
  auto scaled = loss / static_cast<double>(options_.accumulation_steps);
  if (scaler_) scaled = scaler_->scale(scaled);
  scaled.backward();
  ++pending_;
  ++micro_steps_;
  return pending_ == options_.accumulation_steps ? apply() : false;
}

bool GradientAccumulator::flush() {
  if (pending_ == 0) return false;
  if (pending_ < options_.accumulation_steps) {
    // The gradients were divided by accumulation_steps; average over the micro-batches actually seen.
    torch::NoGradGuard no_grad;
    const double fix = static_cast<double>(options_.accumulation_steps) / static_cast<double>(pending_);
    for (auto& p : params_)
      if (p.grad().defined()) p.grad().mul_(fix);
  }
  return apply();
}

bool GradientAccumulator::apply() {
  if (options_.reduce_gradients) {
    std::vector<torch::Tensor> grads;
    for (auto& p : params_) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    options_.reduce_gradients(grads);
  }
  const bool finite = scaler_ ? scaler_->unscale(params_) : true;
  if (finite) {
    if (options_.max_grad_norm > 0)
      last_grad_norm_ = torch::nn::utils::clip_grad_norm_(params_, options_.max_grad_norm);
    optimizer_.step();
    ++optimizer_steps_;
  } else {
    ++skipped_steps_;
  }
  optimizer_.zero_grad();
  pending_ = 0;
  return finite;
}

void GradientAccumulator::restore(int64_t micro_steps, int64_t optimizer_steps) {
  micro_steps_ = micro_steps;
  optimizer_steps_ = optimizer_steps;
  pending_ = 0;
}

// ---- checkpoints -------------------------------------------------------------------------------------------------

void save_checkpoint(const fs::path& file, const std::vector<std::pair<std::string, torch::Tensor>>& params,
                     const torch::optim::Optimizer& optimizer, const TrainState& state) {
  torch::serialize::OutputArchive archive;
  std::string names;
  for (std::size_t i = 0; i < params.size(); ++i) {
    archive.write("param_" + std::to_string(i), params[i].second.detach().to(torch::kCPU));
    names += params[i].first + "\n";
  }
  archive.write("param_names", c10::IValue(names));
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  nlohmann::json s = {{"epoch", state.epoch},
                      {"micro_step", state.micro_step},
                      {"optimizer_step", state.optimizer_step},
                      {"loss_scale", state.loss_scale},
                      {"extra", state.extra_json}};
  archive.write("state", c10::IValue(s.dump()));
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  const fs::path tmp = create_temp_beside(file, "tmp");  // exclusively ours: never written through a planted link
  archive.save_to(tmp.string());
  fs::rename(tmp, file);
}

TrainState load_checkpoint(const fs::path& file, const std::vector<std::pair<std::string, torch::Tensor>>& params,
                           torch::optim::Optimizer& optimizer) {
  if (!fs::exists(file)) throw DataError("training checkpoint " + file.string() + " does not exist");
  const std::string where = "training checkpoint " + file.string() + ": ";
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(file.string());
    c10::IValue names_value;
    archive.read("param_names", names_value);
    std::vector<std::string> names;
    const std::string joined = names_value.toStringRef();
    for (std::size_t start = 0, end; (end = joined.find('\n', start)) != std::string::npos; start = end + 1)
      names.push_back(joined.substr(start, end - start));
    if (names.size() != params.size())
      throw DataError(where + "holds " + std::to_string(names.size()) + " trainable tensors, the model has " +
                      std::to_string(params.size()) + " (a different adapter configuration?)");
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (names[i] != params[i].first)
        throw DataError(where + "tensor " + std::to_string(i) + " is '" + names[i] + "', the model's is '" +
                        params[i].first + "'");
      torch::Tensor t;
      archive.read("param_" + std::to_string(i), t);
      if (t.sizes() != params[i].second.sizes())
        throw DataError(where + "tensor '" + names[i] + "' has a different shape than the model's");
      params[i].second.copy_(t);
    }
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    c10::IValue state_value;
    archive.read("state", state_value);
    auto s = nlohmann::json::parse(state_value.toStringRef());
    TrainState state;
    state.epoch = s.at("epoch").get<int64_t>();
    state.micro_step = s.at("micro_step").get<int64_t>();
    state.optimizer_step = s.at("optimizer_step").get<int64_t>();
    state.loss_scale = s.at("loss_scale").get<double>();
    state.extra_json = s.at("extra").get<std::string>();
    return state;
  } catch (const c10::Error& e) {
    throw DataError(where + "unreadable (" + std::string(e.what_without_backtrace()) + ")");
  } catch (const nlohmann::json::exception& e) {
    throw DataError(where + "bad state record (" + e.what() + ")");
  }
}

}  // namespace pwab::llama
