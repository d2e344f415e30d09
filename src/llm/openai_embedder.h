// src/llm/openai_embedder.h: embed::Embedder over an OpenAI-compatible /embeddings endpoint.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "embed/embedder.h"
#include "llm/endpoint.h"
#include "llm/ledger.h"
#include "llm/response_cache.h"

namespace pwab::llm {

struct OpenAIEmbedderOptions {
  std::string model = "text-embedding-3-small";
  //! Sent as "dimensions" when > 0 (text-embedding-3 models shorten their vectors); also the reported dim().
  std::size_t dimensions = 0;
  //! Texts per request.
  std::size_t batch_size = 64;
};

//! Texts are sent in batches to ENDPOINT/embeddings with the endpoint's retries and in-flight cap; vectors come
//! back L2-normalized, in input order. An empty (or all-whitespace) text gets a zero vector without a request,
//! as embed::Embedder specifies. With a cache, each text is stored under its own key (model, dimensions,
//! text), so a replay hits whatever the batching; in kReplay mode nothing is sent and a missing text throws
//! ReplayMissError. With a ledger, each request's tokens are recorded under Role::kOther and no task.
//! Thread-safe.
class OpenAIEmbedder final : public embed::Embedder {
 public:
  //! `endpoint` may be null only with a cache in kReplay mode.
  OpenAIEmbedder(std::shared_ptr<const Endpoint> endpoint, OpenAIEmbedderOptions options,
                 std::shared_ptr<ResponseCache> cache = nullptr, CacheMode mode = CacheMode::kRecord,
                 Ledger* ledger = nullptr);

  //! "openai:<model>" or "openai:<model>/<dimensions>".
  std::string name() const override;
  //! options.dimensions when set; else the known size of the model (text-embedding-3-small 1536,
  //! text-embedding-3-large 3072, text-embedding-ada-002 1536); else the size of the first vector received
  //! (embedding one probe text if none was received yet).
  std::size_t dim() const override;
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const override;

 private:
  std::vector<std::vector<float>> fetch(const std::vector<std::string>& texts) const;
  std::shared_ptr<const Endpoint> endpoint_;
  OpenAIEmbedderOptions options_;
  std::shared_ptr<ResponseCache> cache_;
  CacheMode mode_;
  Ledger* ledger_;
  mutable std::mutex dim_mutex_;
  mutable std::size_t dim_ = 0;
};

}  // namespace pwab::llm
