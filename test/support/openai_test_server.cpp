#include "support/openai_test_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "core/hash.h"
#include "core/rng.h"

namespace pwab::test {
namespace {

using nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

ScriptedReply chat_reply(json message, std::string_view finish_reason, int prompt_tokens, int completion_tokens) {
  json body = {{"id", "chatcmpl-test"},
               {"object", "chat.completion"},
               {"created", 0},
               {"model", "test-model"},
               {"choices",
                json::array({{{"index", 0}, {"message", std::move(message)}, {"finish_reason", finish_reason}}})},
               {"usage",
                {{"prompt_tokens", prompt_tokens},
                 {"completion_tokens", completion_tokens},
                 {"total_tokens", prompt_tokens + completion_tokens}}}};
  ScriptedReply r;
  r.body = body.dump();
  return r;
}

}  // namespace

ScriptedReply ScriptedReply::text(std::string_view content, int prompt_tokens, int completion_tokens) {
  return chat_reply({{"role", "assistant"}, {"content", content}}, "stop", prompt_tokens, completion_tokens);
}

ScriptedReply ScriptedReply::completion(std::string_view text, int prompt_tokens, int completion_tokens) {
  json body = {{"id", "cmpl-test"},
               {"object", "text_completion"},
               {"model", "test-model"},
               {"choices", json::array({{{"index", 0}, {"text", text}, {"finish_reason", "stop"}}})},
               {"usage",
                {{"prompt_tokens", prompt_tokens},
                 {"completion_tokens", completion_tokens},
                 {"total_tokens", prompt_tokens + completion_tokens}}}};
  ScriptedReply r;
  r.body = body.dump();
  return r;
}

ScriptedReply ScriptedReply::tool_call(std::string_view name, std::string_view arguments, std::string_view id,
                                       int prompt_tokens, int completion_tokens) {
  json call = {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
  return chat_reply({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}}, "tool_calls",
                    prompt_tokens, completion_tokens);
}

ScriptedReply ScriptedReply::error(int status, std::string_view message) {
  ScriptedReply r;
  r.status = status;
  r.body = json{{"error", {{"message", message}, {"type", "test_error"}, {"code", nullptr}}}}.dump();
  return r;
}

ScriptedReply ScriptedReply::rate_limited(std::string_view retry_after) {
  ScriptedReply r = error(429, "Rate limit reached (test server)");
  r.headers.emplace_back("Retry-After", std::string(retry_after));
  return r;
}

ScriptedReply ScriptedReply::embeddings(const std::vector<std::vector<float>>& vectors, int prompt_tokens) {
  json data = json::array();
  for (std::size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vectors[i]}});
  ScriptedReply r;
  r.body = json{{"object", "list"},
                {"data", std::move(data)},
                {"model", "test-embedding"},
                {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}}
               .dump();
  return r;
}

ScriptedReply ScriptedReply::after(double seconds) const {
  ScriptedReply r = *this;
  r.delay_s = seconds;
  return r;
}

std::string ReceivedRequest::header(std::string_view name) const {
  std::string key = lower(name);
  for (const auto& [k, v] : headers)
    if (k == key) return v;
  return {};
}

std::vector<float> OpenAITestServer::default_embedding(std::string_view text) {
  Rng rng(hash_bytes(text));
  std::vector<float> v(8);
  for (float& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

struct OpenAITestServer::Impl {
  httplib::Server svr;
  std::thread thread;
  int port = 0;
  mutable std::mutex mu;
  std::condition_variable wake;  // stalls wait on it, so that stop() cuts them short
  bool stopping = false;
  bool stopped = false;
  std::deque<ScriptedReply> chat_queue, embeddings_queue;
  Handler chat_handler;
  Handler embeddings_handler;
  std::vector<ReceivedRequest> log;
  int in_flight = 0;
  int max_in_flight = 0;

  void serve(const httplib::Request& req, httplib::Response& res, bool embeddings) {
    ReceivedRequest r;
    r.path = req.path;
    r.body = req.body;
    for (const auto& [k, v] : req.headers) r.headers.emplace_back(lower(k), v);
    ScriptedReply reply;
    bool scripted = false;
    Handler handler;
    {
      std::lock_guard lock(mu);
      log.push_back(r);
      max_in_flight = std::max(max_in_flight, ++in_flight);
      auto& queue = embeddings ? embeddings_queue : chat_queue;
      if (!queue.empty()) {
        reply = std::move(queue.front());
        queue.pop_front();
        scripted = true;
      }
      handler = embeddings ? embeddings_handler : chat_handler;
    }
    if (!scripted) {
      reply = handler ? handler(r)
                      : ScriptedReply::error(400, "openai test server: no scripted reply left for " + r.path);
    }
    if (reply.delay_s > 0) {
      std::unique_lock lock(mu);
      wake.wait_for(lock, std::chrono::duration<double>(reply.delay_s), [&] { return stopping; });
    }
    res.status = reply.status;
    for (const auto& [k, v] : reply.headers) res.set_header(k.c_str(), v);
    res.set_content(reply.body, "application/json");
    std::lock_guard lock(mu);
    --in_flight;
  }
};

OpenAITestServer::OpenAITestServer() : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.svr.new_task_queue = [] { return new httplib::ThreadPool(16); };
  // One request per connection: httplib 0.11 keeps an idle keep-alive connection's worker for the whole
  // keep-alive timeout, even through stop(); without keep-alive, stop() returns at once.
  s.svr.set_keep_alive_max_count(1);
  s.svr.set_tcp_nodelay(true);
  s.embeddings_handler = [](const ReceivedRequest& r) {
    json body = json::parse(r.body, nullptr, false);
    std::vector<std::string> inputs;
    if (!body.is_discarded() && body.contains("input")) {
      const json& in = body["input"];
      if (in.is_string()) inputs.push_back(in.get<std::string>());
      if (in.is_array())
        for (const json& x : in)
          if (x.is_string()) inputs.push_back(x.get<std::string>());
    }
    std::vector<std::vector<float>> vectors;
    int tokens = 0;
    for (const std::string& t : inputs) {
      vectors.push_back(default_embedding(t));
      tokens += 1 + static_cast<int>(t.size() / 4);
    }
    return ScriptedReply::embeddings(vectors, tokens);
  };
  s.svr.Post("/v1/chat/completions",
             [&s](const httplib::Request& req, httplib::Response& res) { s.serve(req, res, false); });
  s.svr.Post("/v1/completions",
             [&s](const httplib::Request& req, httplib::Response& res) { s.serve(req, res, false); });
  s.svr.Post("/v1/embeddings", [&s](const httplib::Request& req, httplib::Response& res) { s.serve(req, res, true); });
  s.port = s.svr.bind_to_any_port("127.0.0.1");
  if (s.port <= 0) throw std::runtime_error("openai test server: cannot bind a port on 127.0.0.1");
  s.thread = std::thread([&s] { s.svr.listen_after_bind(); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!s.svr.is_running()) {  // httplib 0.11 has no wait_until_ready()
    if (std::chrono::steady_clock::now() > deadline) {
      stop();
      throw std::runtime_error("openai test server: did not start");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

OpenAITestServer::~OpenAITestServer() { stop(); }

void OpenAITestServer::stop() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (s.stopped) return;
    s.stopped = true;
    s.stopping = true;
  }
  s.wake.notify_all();
  s.svr.stop();
  if (s.thread.joinable()) s.thread.join();
}

int OpenAITestServer::port() const { return impl_->port; }
std::string OpenAITestServer::base_url() const { return "http://127.0.0.1:" + std::to_string(impl_->port) + "/v1"; }

void OpenAITestServer::push(ScriptedReply reply) {
  std::lock_guard lock(impl_->mu);
  impl_->chat_queue.push_back(std::move(reply));
}

void OpenAITestServer::push_embeddings(ScriptedReply reply) {
  std::lock_guard lock(impl_->mu);
  impl_->embeddings_queue.push_back(std::move(reply));
}

void OpenAITestServer::set_chat_handler(Handler handler) {
  std::lock_guard lock(impl_->mu);
  impl_->chat_handler = std::move(handler);
}

void OpenAITestServer::set_embeddings_handler(Handler handler) {
  std::lock_guard lock(impl_->mu);
  impl_->embeddings_handler = std::move(handler);
}

std::vector<ReceivedRequest> OpenAITestServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log;
}

std::size_t OpenAITestServer::n_requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log.size();
}

std::size_t OpenAITestServer::n_pending() const {
  std::lock_guard lock(impl_->mu);
  return impl_->chat_queue.size() + impl_->embeddings_queue.size();
}

int OpenAITestServer::max_in_flight() const {
  std::lock_guard lock(impl_->mu);
  return impl_->max_in_flight;
}

}  // namespace pwab::test
