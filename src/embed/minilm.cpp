// The BERT encoder behind minilm.h. The only translation unit of pwab_embed_minilm that includes libtorch.
#include "embed/minilm.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
#include "core/hash.h"
#include "core/safetensors.h"
#include "core/sys.h"
#include "core/torch_runtime.h"

namespace pwab::embed {
namespace fs = std::filesystem;
using nlohmann::json;

// ---- config.json -----------------------------------------------------------------------------------------------

namespace {

json parse_json_file(const fs::path& path, std::string_view what) {
  if (!fs::exists(path)) throw DataError(std::string(what) + " " + path.string() + " does not exist");
  try {
    json j = json::parse(read_file(path));
    if (!j.is_object()) throw DataError(std::string(what) + " " + path.string() + ": not a JSON object");
    return j;
  } catch (const json::exception& e) {
    throw DataError(std::string(what) + " " + path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace

BertConfig BertConfig::from_file(const fs::path& config_json) {
  const json j = parse_json_file(config_json, "model config");
  const std::string where = "model config " + config_json.string() + ": ";
  BertConfig c;
  auto positive = [&](const char* key, int64_t& field) {
    auto it = j.find(key);
    if (it == j.end()) return;  // Hugging Face's default, as BertConfig
    if (!it->is_number_integer() || it->get<int64_t>() <= 0)
      throw DataError(where + "\"" + key + "\" must be a positive integer, not " + it->dump());
    field = it->get<int64_t>();
  };
  positive("vocab_size", c.vocab_size);
  positive("hidden_size", c.hidden_size);
  positive("num_hidden_layers", c.num_hidden_layers);
  positive("num_attention_heads", c.num_attention_heads);
  positive("intermediate_size", c.intermediate_size);
  positive("max_position_embeddings", c.max_position_embeddings);
  positive("type_vocab_size", c.type_vocab_size);
  if (auto it = j.find("layer_norm_eps"); it != j.end()) {
    if (!it->is_number() || it->get<double>() <= 0)
      throw DataError(where + "\"layer_norm_eps\" must be a positive number, not " + it->dump());
    c.layer_norm_eps = it->get<double>();
  }
  if (auto it = j.find("hidden_act"); it != j.end()) {
    if (!it->is_string()) throw DataError(where + "\"hidden_act\" must be a string");
    c.hidden_act = it->get<std::string>();
  }
  if (c.hidden_act != "gelu" && c.hidden_act != "gelu_new" && c.hidden_act != "gelu_pytorch_tanh" &&
      c.hidden_act != "relu")
    throw DataError(where + "unsupported \"hidden_act\" '" + c.hidden_act + "' (gelu, gelu_new, relu)");
  if (auto it = j.find("model_type"); it != j.end() && !(it->is_string() && it->get<std::string>() == "bert"))
    throw DataError(where + "\"model_type\" is " + it->dump() + ", only \"bert\" is supported");
  if (auto it = j.find("position_embedding_type");
      it != j.end() && !(it->is_string() && it->get<std::string>() == "absolute"))
    throw DataError(where + "\"position_embedding_type\" is " + it->dump() + ", only \"absolute\" is supported");
  if (c.hidden_size % c.num_attention_heads != 0)
    throw DataError(where + "hidden_size " + std::to_string(c.hidden_size) + " is not a multiple of " +
                    "num_attention_heads " + std::to_string(c.num_attention_heads));
  return c;
}

// ---- The model -------------------------------------------------------------------------------------------------

namespace {

struct Layer {
  torch::Tensor qkv_w, qkv_b;  // query, key and value stacked: one matmul
  torch::Tensor attn_out_w, attn_out_b, attn_ln_w, attn_ln_b;
  torch::Tensor inter_w, inter_b, out_w, out_b, out_ln_w, out_ln_b;
};

//! Reads tensors by their BertModel names, checking shapes, and hashes what it reads.
class WeightReader {
 public:
  WeightReader(const safetensors::TensorSet& set, Hasher& hasher) : set_(set), hasher_(hasher) {
    if (set.find("embeddings.word_embeddings.weight")) {
      prefix_ = "";
    } else if (set.find("bert.embeddings.word_embeddings.weight")) {
      prefix_ = "bert.";
    } else {
      throw DataError(set.source().string() +
                      ": no tensor 'embeddings.word_embeddings.weight' (nor 'bert.embeddings.word_embeddings.weight'); "
                      "not a BERT model");
    }
  }

  //! `alias` is the older name some checkpoints use (LayerNorm gamma/beta).
  torch::Tensor get(const std::string& name, std::vector<int64_t> shape, const std::string& alias = "") {
    const safetensors::TensorView* view = set_.find(prefix_ + name);
    if (!view && !alias.empty()) view = set_.find(prefix_ + alias);
    if (!view) throw DataError(set_.source().string() + ": missing tensor '" + prefix_ + name + "'");
    if (view->shape != shape) {
      std::string expected = "[";
      for (std::size_t i = 0; i < shape.size(); ++i) expected += (i ? ", " : "") + std::to_string(shape[i]);
      throw DataError(set_.source().string() + ": tensor '" + view->name + "' is " + view->describe() +
                      ", config.json implies shape " + expected + "]");
    }
    using safetensors::Dtype;
    if (view->dtype != Dtype::kF32 && view->dtype != Dtype::kF16 && view->dtype != Dtype::kBF16 &&
        view->dtype != Dtype::kF64)
      throw DataError(set_.source().string() + ": tensor '" + view->name + "' is " + view->describe() +
                      ", expected a floating-point dtype");
    hasher_.update(name).update(safetensors::to_string(view->dtype));
    for (int64_t d : view->shape) hasher_.update_u64(static_cast<uint64_t>(d));
    hasher_.update(std::string_view(reinterpret_cast<const char*>(view->bytes.data()), view->bytes.size()));
    auto t = torch::empty(shape, torch::kFloat32);
    if (view->dtype == Dtype::kF32) {
      if (!view->bytes.empty()) std::memcpy(t.data_ptr<float>(), view->bytes.data(), view->bytes.size());
    } else {
      auto values = view->to_floats();
      if (!values.empty()) std::memcpy(t.data_ptr<float>(), values.data(), values.size() * sizeof(float));
    }
    return t;
  }

 private:
  const safetensors::TensorSet& set_;
  Hasher& hasher_;
  std::string prefix_;
};

}  // namespace

struct MiniLMEmbedder::Impl {
  BertConfig config;
  MiniLMOptions options;
  WordPieceTokenizer tokenizer;
  std::string name;
  torch::Tensor word_emb, pos_emb, type_emb, emb_ln_w, emb_ln_b;
  std::vector<Layer> layers;
  mutable std::mutex mutex;

  Impl(BertConfig c, MiniLMOptions o, WordPieceTokenizer t)
      : config(std::move(c)), options(o), tokenizer(std::move(t)) {}

  torch::Tensor activation(const torch::Tensor& x) const {
    if (config.hidden_act == "gelu") return torch::gelu(x);
    if (config.hidden_act == "relu") return torch::relu(x);
    return torch::gelu(x, "tanh");
  }

  //! ids, mask: [batch, length] (int64, float 1/0) → mean-pooled, L2-normalized [batch, hidden]. `padded`: some
  //! row of the mask has zeros (otherwise the additive attention mask is all zeros and is skipped).
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& mask, bool padded) const {
    const int64_t batch = ids.size(0), length = ids.size(1), hidden = config.hidden_size;
    const int64_t heads = config.num_attention_heads, head_width = hidden / heads;
    const std::vector<int64_t> norm_shape{hidden};
    auto x = word_emb.index_select(0, ids.reshape({-1})).reshape({batch, length, hidden});
    x = x + pos_emb.narrow(0, 0, length).unsqueeze(0) + type_emb[0];  // token type 0 everywhere, as the original
    x = torch::layer_norm(x, norm_shape, emb_ln_w, emb_ln_b, config.layer_norm_eps);
    // Hugging Face's extended mask: 0 where attended, the lowest float where padded.
    auto mask_add = ((1.0 - mask) * std::numeric_limits<float>::lowest()).reshape({batch, 1, 1, length});
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_width));
    for (const auto& layer : layers) {
      auto qkv = torch::linear(x, layer.qkv_w, layer.qkv_b).reshape({batch, length, 3, heads, head_width});
      qkv = qkv.permute({2, 0, 3, 1, 4});  // [3, batch, heads, length, head_width]
      auto q = qkv[0], k = qkv[1], v = qkv[2];
      auto scores = torch::matmul(q, k.transpose(-1, -2)).mul_(scale);  // in place: scores are the big tensor
      if (padded) scores.add_(mask_add);
      auto context =
          torch::matmul(torch::softmax(scores, -1), v).permute({0, 2, 1, 3}).reshape({batch, length, hidden});
      auto attended = torch::layer_norm(torch::linear(context, layer.attn_out_w, layer.attn_out_b) + x, norm_shape,
                                        layer.attn_ln_w, layer.attn_ln_b, config.layer_norm_eps);
      auto inner = activation(torch::linear(attended, layer.inter_w, layer.inter_b));
      x = torch::layer_norm(torch::linear(inner, layer.out_w, layer.out_b) + attended, norm_shape, layer.out_ln_w,
                            layer.out_ln_b, config.layer_norm_eps);
    }
    // Mean pooling over the attention mask, then L2 normalization (sentence-transformers' recipe).
    auto m = mask.unsqueeze(-1);
    auto pooled = (x * m).sum(1) / m.sum(1).clamp_min(1e-9);
    return pooled / pooled.norm(2, {1}, true).clamp_min(1e-12);
  }
};

MiniLMEmbedder::MiniLMEmbedder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MiniLMEmbedder::~MiniLMEmbedder() = default;

std::unique_ptr<MiniLMEmbedder> MiniLMEmbedder::load(const fs::path& model_dir, MiniLMOptions options) {
  if (options.batch_size == 0 || options.max_batch_tokens == 0)
    throw UsageError("MiniLM: batch size and tokens per batch must be at least 1");
  if (!fs::exists(model_dir)) throw DataError("MiniLM model directory " + model_dir.string() + " does not exist");
  if (!fs::is_directory(model_dir))
    throw DataError("MiniLM model path " + model_dir.string() +
                    " is not a directory (expected a Hugging Face model "
                    "directory with config.json, model.safetensors and vocab.txt)");
  BertConfig config = BertConfig::from_file(model_dir / "config.json");

  // Tokenizer: uncased unless tokenizer_config.json says otherwise.
  WordPieceOptions wp;
  if (fs::exists(model_dir / "tokenizer_config.json")) {
    json tc = parse_json_file(model_dir / "tokenizer_config.json", "tokenizer config");
    if (auto it = tc.find("do_lower_case"); it != tc.end() && it->is_boolean()) wp.lowercase = it->get<bool>();
    wp.strip_accents = wp.lowercase;
    if (auto it = tc.find("strip_accents"); it != tc.end() && it->is_boolean()) wp.strip_accents = it->get<bool>();
    if (auto it = tc.find("tokenize_chinese_chars"); it != tc.end() && it->is_boolean())
      wp.tokenize_chinese_chars = it->get<bool>();
  }
  options.max_length =
      std::min<std::size_t>(options.max_length, static_cast<std::size_t>(config.max_position_embeddings));
  if (options.max_length < 2) throw UsageError("MiniLM: max_length must be at least 2");
  wp.max_length = options.max_length;
  const fs::path vocab_path = model_dir / "vocab.txt";
  if (!fs::exists(vocab_path)) throw DataError("MiniLM vocabulary " + vocab_path.string() + " does not exist");
  auto tokenizer = WordPieceTokenizer::from_file(vocab_path, wp);
  if (tokenizer.vocab_size() > static_cast<std::size_t>(config.vocab_size))
    throw DataError("MiniLM vocabulary " + vocab_path.string() + " has " + std::to_string(tokenizer.vocab_size()) +
                    " tokens, more than config.json's vocab_size " + std::to_string(config.vocab_size));

  auto impl = std::make_unique<Impl>(config, options, std::move(tokenizer));
  Hasher hasher;
  {
    auto set = safetensors::TensorSet::open(model_dir);
    WeightReader w(set, hasher);
    const int64_t h = config.hidden_size, inter = config.intermediate_size;
    impl->word_emb = w.get("embeddings.word_embeddings.weight", {config.vocab_size, h});
    impl->pos_emb = w.get("embeddings.position_embeddings.weight", {config.max_position_embeddings, h});
    impl->type_emb = w.get("embeddings.token_type_embeddings.weight", {config.type_vocab_size, h});
    impl->emb_ln_w = w.get("embeddings.LayerNorm.weight", {h}, "embeddings.LayerNorm.gamma");
    impl->emb_ln_b = w.get("embeddings.LayerNorm.bias", {h}, "embeddings.LayerNorm.beta");
    for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
      const std::string p = "encoder.layer." + std::to_string(i) + ".";
      Layer layer;
      layer.qkv_w =
          torch::cat({w.get(p + "attention.self.query.weight", {h, h}), w.get(p + "attention.self.key.weight", {h, h}),
                      w.get(p + "attention.self.value.weight", {h, h})});
      layer.qkv_b = torch::cat({w.get(p + "attention.self.query.bias", {h}), w.get(p + "attention.self.key.bias", {h}),
                                w.get(p + "attention.self.value.bias", {h})});
      layer.attn_out_w = w.get(p + "attention.output.dense.weight", {h, h});
      layer.attn_out_b = w.get(p + "attention.output.dense.bias", {h});
      layer.attn_ln_w = w.get(p + "attention.output.LayerNorm.weight", {h}, p + "attention.output.LayerNorm.gamma");
      layer.attn_ln_b = w.get(p + "attention.output.LayerNorm.bias", {h}, p + "attention.output.LayerNorm.beta");
      layer.inter_w = w.get(p + "intermediate.dense.weight", {inter, h});
      layer.inter_b = w.get(p + "intermediate.dense.bias", {inter});
      layer.out_w = w.get(p + "output.dense.weight", {h, inter});
      layer.out_b = w.get(p + "output.dense.bias", {h});
      layer.out_ln_w = w.get(p + "output.LayerNorm.weight", {h}, p + "output.LayerNorm.gamma");
      layer.out_ln_b = w.get(p + "output.LayerNorm.bias", {h}, p + "output.LayerNorm.beta");
      impl->layers.push_back(std::move(layer));
    }
  }  // the mapping is released here: the weights were copied into torch tensors

  // The name identifies the numbers: weights (hashed as read), vocabulary, and the config fields used.
  for (std::size_t i = 0; i < impl->tokenizer.vocab_size(); ++i)
    hasher.update(impl->tokenizer.id_to_token(static_cast<int32_t>(i))).update("\n");
  hasher.update(config.hidden_act).update(std::to_string(config.layer_norm_eps)).update_u64(config.num_attention_heads);
  hasher.update_u64(wp.lowercase).update_u64(wp.strip_accents).update_u64(wp.tokenize_chinese_chars);
  hasher.update_u64(options.max_length);
  fs::path dir = fs::absolute(model_dir).lexically_normal();
  std::string base = dir.filename().string();
  if (base.empty()) base = dir.parent_path().filename().string();
  impl->name = "minilm:" + base + "/" + std::to_string(config.hidden_size) + "@" + hasher.hex().substr(0, 8);

  if (options.n_threads >= 0) torch_init_threads(options.n_threads);
  return std::unique_ptr<MiniLMEmbedder>(new MiniLMEmbedder(std::move(impl)));
}

std::string MiniLMEmbedder::name() const { return impl_->name; }
std::size_t MiniLMEmbedder::dim() const { return static_cast<std::size_t>(impl_->config.hidden_size); }
const WordPieceTokenizer& MiniLMEmbedder::tokenizer() const { return impl_->tokenizer; }
const BertConfig& MiniLMEmbedder::config() const { return impl_->config; }
const MiniLMOptions& MiniLMEmbedder::options() const { return impl_->options; }

std::vector<std::vector<float>> MiniLMEmbedder::embed(const std::vector<std::string>& texts) const {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(texts.size());
  for (const auto& t : texts) ids.push_back(impl_->tokenizer.encode(t));
  return embed_ids(ids);
}

std::vector<std::vector<float>> MiniLMEmbedder::embed_ids(const std::vector<std::vector<int32_t>>& ids) const {
  const Impl& m = *impl_;
  const auto vocab = m.config.vocab_size;
  for (const auto& seq : ids) {
    if (seq.empty() || seq.size() > m.options.max_length)
      throw UsageError("MiniLM: a token sequence must have 1 to " + std::to_string(m.options.max_length) + " ids");
    for (int32_t id : seq)
      if (id < 0 || id >= vocab) throw UsageError("MiniLM: token id " + std::to_string(id) + " out of range");
  }
  // Longest first, so each batch pads as little as possible; ties keep the input order.
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ids[a].size() > ids[b].size(); });

  const std::size_t hidden = dim();
  std::vector<std::vector<float>> out(ids.size());
  std::lock_guard lock(m.mutex);
  torch::InferenceMode inference;
  for (std::size_t start = 0, n = 0; start < order.size(); start += n) {
    const std::size_t length = ids[order[start]].size();  // the longest of this batch
    n = std::clamp<std::size_t>(m.options.max_batch_tokens / length, 1, m.options.batch_size);
    n = std::min(n, order.size() - start);
    auto batch_ids =
        torch::full({static_cast<int64_t>(n), static_cast<int64_t>(length)}, m.tokenizer.pad_id(), torch::kInt64);
    auto mask = torch::zeros({static_cast<int64_t>(n), static_cast<int64_t>(length)}, torch::kFloat32);
    auto* id_data = batch_ids.data_ptr<int64_t>();
    auto* mask_data = mask.data_ptr<float>();
    bool padded = false;
    for (std::size_t r = 0; r < n; ++r) {
      const auto& seq = ids[order[start + r]];
      padded = padded || seq.size() < length;
      for (std::size_t c = 0; c < seq.size(); ++c) {
        id_data[r * length + c] = seq[c];
        mask_data[r * length + c] = 1.0f;
      }
    }
    auto pooled = m.forward(batch_ids, mask, padded).contiguous();
    const float* p = pooled.data_ptr<float>();
    for (std::size_t r = 0; r < n; ++r) out[order[start + r]].assign(p + r * hidden, p + (r + 1) * hidden);
  }
  return out;
}

}  // namespace pwab::embed
