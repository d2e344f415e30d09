#include "llm/openai_embedder.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "llm/chat.h"
#include "llm/wire.h"

namespace pwab::llm {
namespace {

using nlohmann::json;

std::size_t known_dim(const std::string& model) {
  if (model == "text-embedding-3-small" || model == "text-embedding-ada-002") return 1536;
  if (model == "text-embedding-3-large") return 3072;
  return 0;
}

void normalize(std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0) return;
  auto inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

// Parses an /embeddings reply for `n` inputs; "" on success.
std::string parse_embeddings(const std::string& body, std::size_t n, std::vector<std::vector<float>>& out,
                             int64_t& prompt_tokens) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "the body is not a JSON object";
  auto data = j.find("data");
  if (data == j.end() || !data->is_array()) return "no 'data' array in the reply";
  if (data->size() != n)
    return "the reply holds " + std::to_string(data->size()) + " embeddings for " + std::to_string(n) + " inputs";
  out.assign(n, {});
  for (std::size_t k = 0; k < n; ++k) {
    const json& item = (*data)[k];
    if (!item.is_object()) return "data[" + std::to_string(k) + "] is not an object";
    std::size_t index = k;
    if (auto it = item.find("index"); it != item.end()) {
      if (!it->is_number_unsigned() || it->get<std::size_t>() >= n)
        return "data[" + std::to_string(k) + "].index is not an input position";
      index = it->get<std::size_t>();
    }
    if (!out[index].empty()) return "two embeddings for input " + std::to_string(index);
    auto emb = item.find("embedding");
    if (emb == item.end() || !emb->is_array() || emb->empty())
      return "data[" + std::to_string(k) + "] has no 'embedding' array";
    std::vector<float>& v = out[index];
    v.reserve(emb->size());
    for (const json& x : *emb) {
      if (!x.is_number()) return "data[" + std::to_string(k) + "].embedding holds a non-number";
      v.push_back(x.get<float>());
    }
  }
  for (std::size_t i = 1; i < n; ++i)
    if (out[i].size() != out[0].size()) return "the embeddings differ in length";
  prompt_tokens = 0;
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object())
    if (auto pt = usage->find("prompt_tokens"); pt != usage->end() && pt->is_number_integer())
      prompt_tokens = pt->get<int64_t>();
  return {};
}

}  // namespace

OpenAIEmbedder::OpenAIEmbedder(std::shared_ptr<const Endpoint> endpoint, OpenAIEmbedderOptions options,
                               std::shared_ptr<ResponseCache> cache, CacheMode mode, Ledger* ledger)
    : endpoint_(std::move(endpoint)), options_(std::move(options)), cache_(std::move(cache)), mode_(mode),
      ledger_(ledger) {
  if (options_.model.empty()) throw UsageError("OpenAIEmbedder: the model name is empty");
  if (options_.batch_size < 1) throw UsageError("OpenAIEmbedder: batch_size must be at least 1");
  if (!endpoint_ && !(cache_ && mode_ == CacheMode::kReplay))
    throw UsageError("OpenAIEmbedder needs an endpoint unless replaying from a cache");
  dim_ = options_.dimensions ? options_.dimensions : known_dim(options_.model);
}

std::string OpenAIEmbedder::name() const {
  std::string n = "openai:" + options_.model;
  if (options_.dimensions) n += "/" + std::to_string(options_.dimensions);
  return n;
}

std::size_t OpenAIEmbedder::dim() const {
  {
    std::lock_guard lock(dim_mutex_);
    if (dim_) return dim_;
  }
  fetch({"dimension probe"});  // sets dim_
  std::lock_guard lock(dim_mutex_);
  return dim_;
}

std::vector<std::vector<float>> OpenAIEmbedder::embed(const std::vector<std::string>& texts) const {
  std::vector<std::string> wanted;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (trim(texts[i]).empty()) continue;
    wanted.push_back(texts[i]);
    where.push_back(i);
  }
  std::vector<std::vector<float>> fetched = fetch(wanted);
  std::vector<std::vector<float>> out(texts.size());
  for (std::size_t k = 0; k < where.size(); ++k) out[where[k]] = std::move(fetched[k]);
  if (where.size() < texts.size()) {
    std::size_t d = dim();
    for (auto& v : out)
      if (v.empty()) v.assign(d, 0.0f);
  }
  return out;
}

std::vector<std::vector<float>> OpenAIEmbedder::fetch(const std::vector<std::string>& texts) const {
  std::vector<std::vector<float>> out(texts.size());
  std::vector<std::string> canon(texts.size()), keys(texts.size());
  std::vector<std::size_t> missing;
  int64_t cached_tokens = 0;
  std::size_t n_cached = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (cache_) {
      json c = {{"kind", "embedding"}, {"model", options_.model}, {"dimensions", options_.dimensions},
                {"input", texts[i]}};
      canon[i] = c.dump(-1, ' ', false, json::error_handler_t::replace);
      keys[i] = cache_key(canon[i]);
      if (mode_ != CacheMode::kRefresh) {
        if (auto hit = cache_->get_embedding(keys[i], canon[i])) {
          out[i] = std::move(hit->vector);
          cached_tokens += hit->prompt_tokens;
          ++n_cached;
          continue;
        }
        if (mode_ == CacheMode::kReplay)
          throw ReplayMissError("--replay: the LLM cache " + cache_->file().string() +
                                " holds no embedding of a text for model '" + options_.model + "' (key " + keys[i] +
                                ")");
      }
    }
    missing.push_back(i);
  }
  if (ledger_ && n_cached) ledger_->record("", Role::kOther, options_.model, cached_tokens, 0, true);

  for (std::size_t start = 0; start < missing.size(); start += options_.batch_size) {
    std::size_t end = std::min(missing.size(), start + options_.batch_size);
    json input = json::array();
    std::size_t total_chars = 0;
    for (std::size_t k = start; k < end; ++k) {
      input.push_back(texts[missing[k]]);
      total_chars += texts[missing[k]].size();
    }
    json body = {{"model", options_.model}, {"input", std::move(input)}, {"encoding_format", "float"}};
    if (options_.dimensions) body["dimensions"] = options_.dimensions;
    std::vector<std::vector<float>> vectors;
    int64_t prompt_tokens = 0;
    const std::size_t n = end - start;
    Endpoint::BodyCheck check = [&](const std::string& text) {
      return parse_embeddings(text, n, vectors, prompt_tokens);
    };
    try {
      endpoint_->post_json("/embeddings", body.dump(-1, ' ', false, json::error_handler_t::replace), check);
    } catch (const InfraError& e) {
      throw InfraError("embedding model '" + options_.model + "': " + e.what(), e.http_status(), e.attempts());
    }
    if (options_.dimensions && vectors[0].size() != options_.dimensions)
      throw InfraError("embedding model '" + options_.model + "' returned " + std::to_string(vectors[0].size()) +
                           "-dimensional vectors, " + std::to_string(options_.dimensions) + " were asked for",
                       200, 1);
    {
      std::lock_guard lock(dim_mutex_);
      if (!dim_) dim_ = vectors[0].size();
    }
    if (ledger_) ledger_->record("", Role::kOther, options_.model, prompt_tokens, 0, false);
    int64_t tokens_left = prompt_tokens;
    for (std::size_t k = start; k < end; ++k) {
      std::size_t i = missing[k];
      std::vector<float>& v = vectors[k - start];
      normalize(v);
      if (cache_) {
        // The batch's tokens shared out by text length (the API reports one total per request).
        int64_t share = k + 1 == end || total_chars == 0
                            ? tokens_left
                            : static_cast<int64_t>(static_cast<double>(prompt_tokens) *
                                                   static_cast<double>(texts[i].size()) / total_chars);
        share = std::min(share, tokens_left);
        tokens_left -= share;
        cache_->put_embedding(keys[i], options_.model, canon[i], v, share, mode_ == CacheMode::kRefresh);
      }
      out[i] = std::move(v);
    }
  }
  return out;
}

}  // namespace pwab::llm
