#include "llm/response_cache.h"

#include <sqlite3.h>

#include <cstring>
#include <ctime>
#include <mutex>

#include "core/hash.h"
#include "core/sys.h"
#include "llm/wire.h"

namespace pwab::llm {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "pwab-llm-cache/1";

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chat(
  key TEXT PRIMARY KEY,
  model TEXT NOT NULL,
  request TEXT NOT NULL,
  response TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  created_utc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS embedding(
  key TEXT PRIMARY KEY,
  model TEXT NOT NULL,
  request TEXT NOT NULL,
  vector BLOB NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  created_utc TEXT NOT NULL);
)sql";

std::string excerpt(std::string_view s, std::size_t n) {
  std::string out(s.substr(0, n));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s.size() > n ? out + "..." : out;
}

}  // namespace

std::string_view to_string(CacheMode m) {
  switch (m) {
    case CacheMode::kRecord:
      return "record";
    case CacheMode::kReplay:
      return "replay";
    case CacheMode::kRefresh:
      return "refresh";
  }
  return "record";
}

CacheMode parse_cache_mode(std::string_view s) {
  if (s == "record") return CacheMode::kRecord;
  if (s == "replay") return CacheMode::kReplay;
  if (s == "refresh") return CacheMode::kRefresh;
  throw UsageError("unknown LLM cache mode '" + std::string(s) + "' (record, replay, refresh)");
}

std::string cache_key(std::string_view canonical_request) {
  Hasher a, b;
  a.update("pwab-llm-cache/a\n").update(canonical_request);
  b.update("pwab-llm-cache/b\n").update(canonical_request);
  return a.hex() + b.hex();
}

struct ResponseCache::State {
  fs::path file;
  sqlite3* db = nullptr;
  mutable std::mutex mu;
  sqlite3_stmt* get_chat = nullptr;
  sqlite3_stmt* put_chat[2] = {nullptr, nullptr};  // [keep first, replace]
  sqlite3_stmt* get_embedding = nullptr;
  sqlite3_stmt* put_embedding[2] = {nullptr, nullptr};

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("LLM cache " + file.string() + ": " + what + ": " + (db ? sqlite3_errmsg(db) : "cannot open"));
  }
  void check(int rc, const std::string& what) const {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) fail(what);
  }
  void exec(const char* sql, const std::string& what) const {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      throw Error("LLM cache " + file.string() + ": " + what + ": " + msg);
    }
  }
  sqlite3_stmt* prepare(const char* sql) const {
    sqlite3_stmt* st = nullptr;
    check(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), "preparing a statement");
    return st;
  }
  // Runs a write statement whose parameters are bound; resets it whatever happens.
  void step_write(sqlite3_stmt* st, const std::string& what) const {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) fail(what);
  }
  ~State() {
    for (sqlite3_stmt* st : {get_chat, put_chat[0], put_chat[1], get_embedding, put_embedding[0], put_embedding[1]})
      sqlite3_finalize(st);
    if (db) sqlite3_close(db);
  }
};

namespace {
void bind_text(sqlite3_stmt* st, int i, std::string_view s) {
  sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}
std::string column_text(sqlite3_stmt* st, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(st, i))) : std::string();
}
}  // namespace

ResponseCache::ResponseCache(const fs::path& dir, bool must_exist) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.file = dir / kCacheFile;
  if (must_exist) {
    if (!fs::exists(s.file))
      throw UsageError("no LLM cache at " + s.file.string() + " (record one with --llm-cache before --replay)");
  } else {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("LLM cache: cannot create directory " + dir.string() + ": " + ec.message());
  }
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (must_exist ? 0 : SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(s.file.c_str(), &s.db, flags, nullptr) != SQLITE_OK) s.fail("opening");
  sqlite3_busy_timeout(s.db, 30000);  // other processes (shards) writing the same file
  s.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "setting WAL mode");
  s.exec(kSchema, "creating the tables");
  {
    sqlite3_stmt* st = s.prepare("SELECT value FROM meta WHERE name = 'format'");
    int rc = sqlite3_step(st);
    std::string format = rc == SQLITE_ROW ? column_text(st, 0) : std::string();
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) s.fail("reading the format");
    if (format.empty()) {
      s.exec((std::string("INSERT OR IGNORE INTO meta VALUES('format', '") + kFormat + "')").c_str(),
             "writing the format");
    } else if (format != kFormat) {
      throw Error("LLM cache " + s.file.string() + " has format '" + format + "', this build reads '" + kFormat + "'");
    }
  }
  s.get_chat = s.prepare("SELECT request, response FROM chat WHERE key = ?1");
  const char* put_chat_sql = "INTO chat(key, model, request, response, prompt_tokens, completion_tokens, created_utc) "
                             "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)";
  s.put_chat[0] = s.prepare((std::string("INSERT OR IGNORE ") + put_chat_sql).c_str());
  s.put_chat[1] = s.prepare((std::string("INSERT OR REPLACE ") + put_chat_sql).c_str());
  s.get_embedding = s.prepare("SELECT request, vector, prompt_tokens FROM embedding WHERE key = ?1");
  const char* put_emb_sql = "INTO embedding(key, model, request, vector, prompt_tokens, created_utc) "
                            "VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
  s.put_embedding[0] = s.prepare((std::string("INSERT OR IGNORE ") + put_emb_sql).c_str());
  s.put_embedding[1] = s.prepare((std::string("INSERT OR REPLACE ") + put_emb_sql).c_str());
}

ResponseCache::~ResponseCache() = default;

const fs::path& ResponseCache::file() const { return state_->file; }

std::optional<std::string> ResponseCache::get_chat(const std::string& key, std::string_view canonical_request) const {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  bind_text(s.get_chat, 1, key);
  int rc = sqlite3_step(s.get_chat);
  std::optional<std::string> out;
  if (rc == SQLITE_ROW && column_text(s.get_chat, 0) == canonical_request) out = column_text(s.get_chat, 1);
  sqlite3_reset(s.get_chat);
  sqlite3_clear_bindings(s.get_chat);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) s.fail("reading a chat response");
  return out;
}

void ResponseCache::put_chat(const std::string& key, std::string_view model, std::string_view canonical_request,
                             std::string_view response_json, int64_t prompt_tokens, int64_t completion_tokens,
                             bool replace) {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  sqlite3_stmt* st = s.put_chat[replace ? 1 : 0];
  bind_text(st, 1, key);
  bind_text(st, 2, model);
  bind_text(st, 3, canonical_request);
  bind_text(st, 4, response_json);
  sqlite3_bind_int64(st, 5, prompt_tokens);
  sqlite3_bind_int64(st, 6, completion_tokens);
  bind_text(st, 7, utc_now_iso());
  s.step_write(st, "storing a chat response");
}

std::optional<ResponseCache::StoredEmbedding> ResponseCache::get_embedding(const std::string& key,
                                                                           std::string_view canonical_request) const {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  sqlite3_stmt* st = s.get_embedding;
  bind_text(st, 1, key);
  int rc = sqlite3_step(st);
  std::optional<StoredEmbedding> out;
  if (rc == SQLITE_ROW && column_text(st, 0) == canonical_request) {
    StoredEmbedding e;
    const void* blob = sqlite3_column_blob(st, 1);
    auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(st, 1));
    e.vector.resize(bytes / sizeof(float));
    if (blob && !e.vector.empty()) std::memcpy(e.vector.data(), blob, e.vector.size() * sizeof(float));
    e.prompt_tokens = sqlite3_column_int64(st, 2);
    out = std::move(e);
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) s.fail("reading an embedding");
  return out;
}

void ResponseCache::put_embedding(const std::string& key, std::string_view model, std::string_view canonical_request,
                                  const std::vector<float>& vector, int64_t prompt_tokens, bool replace) {
  State& s = *state_;
  std::lock_guard lock(s.mu);
  sqlite3_stmt* st = s.put_embedding[replace ? 1 : 0];
  bind_text(st, 1, key);
  bind_text(st, 2, model);
  bind_text(st, 3, canonical_request);
  sqlite3_bind_blob(st, 4, vector.data(), static_cast<int>(vector.size() * sizeof(float)), SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 5, prompt_tokens);
  bind_text(st, 6, utc_now_iso());
  s.step_write(st, "storing an embedding");
}

namespace {
std::size_t count_rows(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  std::size_t n = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = static_cast<std::size_t>(sqlite3_column_int64(st, 0));
  sqlite3_finalize(st);
  return n;
}
}  // namespace

std::size_t ResponseCache::n_chat() const {
  std::lock_guard lock(state_->mu);
  return count_rows(state_->db, "SELECT COUNT(*) FROM chat");
}

std::size_t ResponseCache::n_embedding() const {
  std::lock_guard lock(state_->mu);
  return count_rows(state_->db, "SELECT COUNT(*) FROM embedding");
}

CachedChatModel::CachedChatModel(std::shared_ptr<ChatModel> inner, std::shared_ptr<ResponseCache> cache,
                                 CacheMode mode)
    : inner_(std::move(inner)), cache_(std::move(cache)), mode_(mode) {
  if (!cache_) throw UsageError("CachedChatModel needs a cache");
  if (!inner_ && mode_ != CacheMode::kReplay) throw UsageError("CachedChatModel needs a model unless replaying");
}

std::string CachedChatModel::describe() const {
  std::string inner = inner_ ? inner_->describe() : std::string("(no model)");
  return inner + ", cache " + std::string(to_string(mode_)) + " " + cache_->file().string();
}

int64_t CachedChatModel::n_hits() const { return hits_.load(); }
int64_t CachedChatModel::n_misses() const { return misses_.load(); }

ChatResponse CachedChatModel::chat(const ChatRequest& request) {
  const std::string canonical = canonical_request_json(request);
  const std::string key = cache_key(canonical);
  if (mode_ != CacheMode::kRefresh) {
    if (auto hit = cache_->get_chat(key, canonical)) {
      ChatResponse r;
      try {
        r = response_from_json(*hit);
      } catch (const DataError& e) {
        throw DataError("LLM cache " + cache_->file().string() + ", key " + key + ": " + e.what());
      }
      r.from_cache = true;
      r.attempts = 0;
      ++hits_;
      return r;
    }
    if (mode_ == CacheMode::kReplay) {
      std::string last = request.messages.empty() ? std::string() : request.messages.back().content;
      throw ReplayMissError("--replay: the LLM cache " + cache_->file().string() +
                            " holds no response for a request to model '" + request.model + "' (key " + key + ", " +
                            std::to_string(request.messages.size()) + " messages, last: \"" + excerpt(last, 80) +
                            "\"); the replayed run asked something the recorded run did not");
    }
  }
  ChatResponse r = inner_->chat(request);
  ++misses_;
  cache_->put_chat(key, request.model, canonical, response_to_json(r), r.prompt_tokens, r.completion_tokens,
                   mode_ == CacheMode::kRefresh);
  return r;
}

}  // namespace pwab::llm
