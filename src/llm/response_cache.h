// src/llm/response_cache.h: the record/replay cache of model requests (`--llm-cache DIR`, `--replay`).
//
// Every model request (agent, user simulator, judge, embeddings) is keyed by a hash of its canonical form
// (llm::canonical_request_json: model, messages, tools, sampling parameters and sample index, keys sorted; not
// the endpoint, not the API key) and stored with its response in DIR/llm-cache.sqlite3. A recorded run can
// then be re-run at zero cost with --replay, which fails loudly on any request the cache does not hold.
// SQLite in WAL mode: concurrent writers from worker threads (and from several processes, e.g. shards)
// are safe, and a killed run keeps every response stored before the kill. docs/llm.md "Record/replay cache".
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"

namespace pwab::llm {

inline constexpr const char* kCacheFile = "llm-cache.sqlite3";

//! How a cache-fronted model uses the cache.
enum class CacheMode {
  kRecord,   //!< a hit is replayed; a miss is sent and its response stored (the default with --llm-cache)
  kReplay,   //!< a hit is replayed; a miss throws ReplayMissError; nothing is ever sent (--replay)
  kRefresh,  //!< always sent; the response replaces the stored one
};
std::string_view to_string(CacheMode m);
//! "record" / "replay" / "refresh"; UsageError otherwise.
CacheMode parse_cache_mode(std::string_view s);

//! 32 hex digits: the cache key of a canonical request text (two independent 64-bit hashes).
std::string cache_key(std::string_view canonical_request);

//! One SQLite file of stored responses. Thread-safe; one instance per run is shared by every model.
class ResponseCache {
 public:
  //! Opens DIR/llm-cache.sqlite3, creating DIR and the file unless `must_exist` (replay), in which case a
  //! missing file is a UsageError. Throws pwab::Error naming the file when it cannot be opened or holds
  //! another format.
  explicit ResponseCache(const std::filesystem::path& dir, bool must_exist = false);
  ~ResponseCache();
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  const std::filesystem::path& file() const;

  //! The stored response JSON for `key` when its stored request equals `canonical_request`.
  std::optional<std::string> get_chat(const std::string& key, std::string_view canonical_request) const;
  //! Stores (replace = overwrite an existing entry, else keep the first one stored).
  void put_chat(const std::string& key, std::string_view model, std::string_view canonical_request,
                std::string_view response_json, int64_t prompt_tokens, int64_t completion_tokens, bool replace);

  struct StoredEmbedding {
    std::vector<float> vector;
    int64_t prompt_tokens = 0;
  };
  std::optional<StoredEmbedding> get_embedding(const std::string& key, std::string_view canonical_request) const;
  void put_embedding(const std::string& key, std::string_view model, std::string_view canonical_request,
                     const std::vector<float>& vector, int64_t prompt_tokens, bool replace);

  //! Entries stored (chat, embedding).
  std::size_t n_chat() const;
  std::size_t n_embedding() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

//! A ChatModel in front of another, recording and replaying through a ResponseCache. `inner` may be null in
//! kReplay mode. Replayed responses have from_cache = true and attempts = 0. InfraErrors are never stored
//! (a resumed run asks again); a kInvalidToolArguments reply is stored like any other, so a replay
//! reproduces it. Thread-safe.
class CachedChatModel final : public ChatModel {
 public:
  CachedChatModel(std::shared_ptr<ChatModel> inner, std::shared_ptr<ResponseCache> cache, CacheMode mode);

  ChatResponse chat(const ChatRequest& request) override;
  //! "<inner>, cache <mode> <file>"
  std::string describe() const override;

  //! Requests answered from the cache / sent to the inner model so far.
  int64_t n_hits() const;
  int64_t n_misses() const;

 private:
  std::shared_ptr<ChatModel> inner_;
  std::shared_ptr<ResponseCache> cache_;
  CacheMode mode_;
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
};

}  // namespace pwab::llm
