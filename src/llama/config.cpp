// LlamaConfig: config.json in and out (nlohmann::json; no torch).
#include "llama/config.h"
#include "core/json_depth.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"

namespace pwab::llama {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

//! Reads the config.json fields into a LlamaConfig; `where` prefixes every error ("model config <file>: ").
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  const json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const std::string& what) const { throw DataError(where_ + what); }

  void positive(const char* key, int64_t& field) const {
    const json* v = find(key);
    if (!v) return;  // absent or null: transformers' default
    if (!v->is_number_integer() || v->get<int64_t>() <= 0)
      fail("\"" + std::string(key) + "\" must be a positive integer, not " + v->dump());
    field = v->get<int64_t>();
  }
  void positive_number(const char* key, double& field) const {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number() || v->get<double>() <= 0)
      fail("\"" + std::string(key) + "\" must be a positive number, not " + v->dump());
    field = v->get<double>();
  }
  void token_id(const char* key, int64_t& field) const {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number_integer() || v->get<int64_t>() < 0)
      fail("\"" + std::string(key) + "\" must be a token id (a non-negative integer), not " + v->dump());
    field = v->get<int64_t>();
  }
  void boolean(const char* key, bool& field) const {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_boolean()) fail("\"" + std::string(key) + "\" must be true or false, not " + v->dump());
    field = v->get<bool>();
  }
  //! A feature the decoder does not implement must be absent, null or equal to `allowed`.
  void require(const char* key, const json& allowed, const std::string& why) const {
    const json* v = find(key);
    if (v && *v != allowed) fail("\"" + std::string(key) + "\" is " + v->dump() + ": " + why);
  }

  std::vector<int64_t> eos_ids() const {
    const json* v = find("eos_token_id");
    if (!v) return {2};
    std::vector<int64_t> ids;
    for (const json& e : v->is_array() ? *v : json::array({*v})) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0)
        fail("\"eos_token_id\" must be a token id or a list of them, not " + v->dump());
      ids.push_back(e.get<int64_t>());
    }
    return ids;
  }

  RopeScalingConfig rope_scaling() const {
    RopeScalingConfig r;
    const json* v = find("rope_scaling");
    if (!v) return r;
    if (!v->is_object()) fail("\"rope_scaling\" must be an object or null, not " + v->dump());
    std::string type;
    for (const char* key : {"rope_type", "type"})
      if (auto it = v->find(key); it != v->end() && it->is_string()) type = it->get<std::string>();
    if (type == "default") return r;
    if (type == "linear") {
      r.type = RopeScaling::kLinear;
    } else if (type == "llama3") {
      r.type = RopeScaling::kLlama3;
    } else {
      fail("unsupported rope_scaling type '" + type + "' (supported: linear, llama3; dynamic, yarn, longrope and " +
           "others are not implemented)");
    }
    ConfigReader inner(*v, where_ + "rope_scaling: ");
    inner.positive_number("factor", r.factor);
    if (r.type == RopeScaling::kLlama3) {
      inner.positive_number("low_freq_factor", r.low_freq_factor);
      inner.positive_number("high_freq_factor", r.high_freq_factor);
      inner.positive("original_max_position_embeddings", r.original_max_position_embeddings);
      if (!(r.high_freq_factor > r.low_freq_factor)) inner.fail("high_freq_factor must exceed low_freq_factor");
    }
    return r;
  }

 private:
  const json& j_;
  std::string where_;
};

}  // namespace

LlamaConfig LlamaConfig::from_json(const std::string& text, const std::string& label) {
  const std::string where = "model config " + label + ": ";
  json j;
  if (json_nests_deeper_than(text)) throw DataError(where + json_depth_message());
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw DataError(where + "not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw DataError(where + "not a JSON object");
  ConfigReader r(j, where);
  r.require("model_type", "llama", "only \"llama\" models are supported");
  r.require("hidden_act", "silu", "only the SiLU (SwiGLU) activation of LLaMA is supported");
  r.require("attention_bias", false, "attention projections with biases are not supported");
  r.require("mlp_bias", false, "MLP projections with biases are not supported");
  LlamaConfig c;
  r.positive("vocab_size", c.vocab_size);
  r.positive("hidden_size", c.hidden_size);
  r.positive("intermediate_size", c.intermediate_size);
  r.positive("num_hidden_layers", c.num_hidden_layers);
  r.positive("num_attention_heads", c.num_attention_heads);
  r.positive("num_key_value_heads", c.num_key_value_heads);
  r.positive("head_dim", c.head_dim);
  r.positive("max_position_embeddings", c.max_position_embeddings);
  r.positive_number("rms_norm_eps", c.rms_norm_eps);
  r.positive_number("rope_theta", c.rope_theta);
  r.positive_number("initializer_range", c.initializer_range);
  c.rope_scaling = r.rope_scaling();
  r.boolean("tie_word_embeddings", c.tie_word_embeddings);
  r.token_id("bos_token_id", c.bos_token_id);
  r.token_id("pad_token_id", c.pad_token_id);
  c.eos_token_ids = r.eos_ids();
  if (const json* v = r.find("torch_dtype")) {
    if (!v->is_string()) r.fail("\"torch_dtype\" must be a string, not " + v->dump());
    c.torch_dtype = v->get<std::string>();
    if (c.torch_dtype != "float32" && c.torch_dtype != "float16" && c.torch_dtype != "bfloat16")
      r.fail("unsupported \"torch_dtype\" '" + c.torch_dtype + "' (float32, float16, bfloat16)");
  }
  try {
    c.validate(label);
  } catch (const UsageError& e) {
    throw DataError(e.what());
  }
  return c;
}

LlamaConfig LlamaConfig::from_file(const fs::path& config_json) {
  if (!fs::exists(config_json)) throw DataError("model config " + config_json.string() + " does not exist");
  return from_json(read_file(config_json), config_json.string());
}

void LlamaConfig::validate(const std::string& label) const {
  const std::string where = "model config " + label + ": ";
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0) throw UsageError(where + name + " must be positive, not " + std::to_string(v));
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(num_hidden_layers, "num_hidden_layers");
  positive(num_attention_heads, "num_attention_heads");
  positive(max_position_embeddings, "max_position_embeddings");
  if (head_dim <= 0 && hidden_size % num_attention_heads != 0)
    throw UsageError(where + "hidden_size " + std::to_string(hidden_size) + " is not a multiple of " +
                     "num_attention_heads " + std::to_string(num_attention_heads));
  if (num_attention_heads % n_kv_heads() != 0)
    throw UsageError(where + "num_attention_heads " + std::to_string(num_attention_heads) +
                     " is not a multiple of num_key_value_heads " + std::to_string(n_kv_heads()));
  if (head_width() % 2 != 0)
    throw UsageError(where + "the head width " + std::to_string(head_width()) + " must be even (rotary pairs)");
  if (!(rms_norm_eps > 0) || !(rope_theta > 0))
    throw UsageError(where + "rms_norm_eps and rope_theta must be positive");
  for (int64_t id : eos_token_ids)
    if (id < 0 || id >= vocab_size) throw UsageError(where + "eos_token_id " + std::to_string(id) + " out of range");
  if (bos_token_id < 0 || bos_token_id >= vocab_size || pad_token_id >= vocab_size)
    throw UsageError(where + "bos_token_id / pad_token_id out of the vocabulary");
}

std::string LlamaConfig::to_json() const {
  json j = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_act", "silu"},
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"intermediate_size", intermediate_size},
      {"num_hidden_layers", num_hidden_layers},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", n_kv_heads()},
      {"max_position_embeddings", max_position_embeddings},
      {"rms_norm_eps", rms_norm_eps},
      {"rope_theta", rope_theta},
      {"tie_word_embeddings", tie_word_embeddings},
      {"bos_token_id", bos_token_id},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"initializer_range", initializer_range},
      {"torch_dtype", torch_dtype},
      {"use_cache", true},
  };
  if (head_dim > 0) j["head_dim"] = head_dim;
  j["eos_token_id"] = eos_token_ids.size() == 1 ? json(eos_token_ids[0]) : json(eos_token_ids);
  j["pad_token_id"] = pad_token_id >= 0 ? json(pad_token_id) : json(nullptr);
  if (rope_scaling.type == RopeScaling::kNone) {
    j["rope_scaling"] = nullptr;
  } else if (rope_scaling.type == RopeScaling::kLinear) {
    // "type": the key every transformers version reads (before 4.43 it had to be exactly {type, factor})
    j["rope_scaling"] = {{"type", "linear"}, {"factor", rope_scaling.factor}};
  } else {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", rope_scaling.factor},
                         {"low_freq_factor", rope_scaling.low_freq_factor},
                         {"high_freq_factor", rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", rope_scaling.original_max_position_embeddings}};
  }
  return j.dump(2) + "\n";
}

void LlamaConfig::write(const fs::path& config_json) const { write_file_atomic(config_json, to_json()); }

int64_t LlamaConfig::n_parameters() const {
  const int64_t q = num_attention_heads * head_width(), kv = n_kv_heads() * head_width();
  const int64_t per_layer =
      hidden_size * (q + 2 * kv) + q * hidden_size + 3 * hidden_size * intermediate_size + 2 * hidden_size;
  const int64_t embed = vocab_size * hidden_size;
  return embed * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * per_layer + hidden_size;
}

LlamaConfig tiny_config(int64_t vocab_size) {
  LlamaConfig c;
  c.vocab_size = vocab_size;
  c.hidden_size = 64;
  c.intermediate_size = 172;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 512;
  c.rms_norm_eps = 1e-5;
  c.bos_token_id = vocab_size > 1 ? 1 : 0;
  c.eos_token_ids = {vocab_size > 2 ? 2 : 0};
  return c;
}

}  // namespace pwab::llama
