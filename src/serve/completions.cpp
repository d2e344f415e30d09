// /v1/completions over a ChatModel (completions.h): requests read and checked, choices sampled one after the
// other, token ids and log-probabilities reported as vLLM and OpenAI report them.
#include "serve/completions.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <variant>

#include "core/json_depth.h"
#include "core/json_writer.h"
#include "serve/net_server.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;

struct Refusal {
  int status;
  std::string code, message;
};

HttpResponse openai_error(int status, std::string_view code, std::string_view message) {
  HttpResponse res;
  res.status = status;
  res.body = dump_compact({{"error", {{"message", message},
                                      {"type", status >= 500 ? "server_error" : "invalid_request_error"},
                                      {"code", code}}}}) +
             "\n";
  return res;
}

HttpResponse json_answer(const Json& body) {
  HttpResponse res;
  res.body = dump_compact(body) + "\n";
  return res;
}

std::string random_id() {
  uint64_t words[2] = {0, 0};
  if (::getrandom(words, sizeof words, 0) != static_cast<ssize_t>(sizeof words)) words[0] = static_cast<uint64_t>(std::time(nullptr));
  return fmt::format("cmpl-{:016x}{:016x}", words[0], words[1]);
}

//! "token_id:<id>", as vLLM's --return-tokens-as-token-ids names tokens.
std::string token_name(int32_t id) { return fmt::format("token_id:{}", id); }

// What a request asks for, checked field by field.
struct Asked {
  std::string prompt;
  int max_tokens = 16;
  double temperature = 1.0;
  int n = 1;
  int64_t seed = 0;
  std::optional<int> logprobs;
  bool return_token_ids = false;
};

Refusal bad(std::string message) { return {400, "invalid_request", std::move(message)}; }

std::variant<Asked, Refusal> read_request(const HttpRequest& req, const std::string& name,
                                          const CompletionsOptions& o) {
  if (json_nests_deeper_than(req.body)) return bad(json_depth_message());
  Json body = Json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad("the body must be a JSON object");
  Asked a;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    auto integer = [&](int lo, int hi, int& out) -> std::optional<Refusal> {
      if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        return bad(fmt::format("'{}' must be an integer from {} to {}", key, lo, hi));
      out = static_cast<int>(v.get<int64_t>());
      return std::nullopt;
    };
    std::optional<Refusal> problem;
    if (key == "model") {
      if (!v.is_string()) return bad("'model' must be a string");
      if (v.get<std::string>() != name)
        return Refusal{404, "model_not_found", fmt::format("this server serves '{}', not '{}'", name, v.get<std::string>())};
    } else if (key == "prompt") {
      const Json* text = v.is_array() && v.size() == 1 ? &v[0] : &v;
      if (!text->is_string())
        return bad("'prompt' must be one text (token-id prompts are not accepted: send the text the ids decode to)");
      a.prompt = text->get<std::string>();
    } else if (key == "max_tokens") {
      problem = integer(1, o.max_tokens_limit, a.max_tokens);
    } else if (key == "temperature") {
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 100) return bad("'temperature' must be a number from 0 to 100");
      a.temperature = v.get<double>();
    } else if (key == "n") {
      problem = integer(1, o.max_n, a.n);
    } else if (key == "seed") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) return bad("'seed' must be a non-negative integer");
      a.seed = v.get<int64_t>();
    } else if (key == "logprobs") {
      if (!v.is_null()) {
        int k = 0;
        problem = integer(0, 5, k);
        a.logprobs = k;
      }
    } else if (key == "return_token_ids") {
      if (!v.is_boolean()) return bad("'return_token_ids' must be true or false");
      a.return_token_ids = v.get<bool>();
    } else if (key == "stream" || key == "echo") {
      if (!v.is_null() && v != false) return bad(fmt::format("'{}' is not supported: leave it false", key));
    } else if (key == "stop") {
      if (!v.is_null() && !(v.is_array() && v.empty()))
        return bad("'stop' is not supported: a completion ends at the end-of-sequence token or max_tokens");
    } else if (key == "top_p") {
      if (!v.is_null() && !(v.is_number() && v.get<double>() == 1.0)) return bad("'top_p' other than 1 is not supported");
    } else if (key != "user") {
      return bad(fmt::format("unknown field '{}'", key));
    }
    if (problem) return *problem;
  }
  if (!body.contains("prompt")) return bad("'prompt' is required");
  return a;
}

}  // namespace

struct CompletionsServer::Impl final : RequestHandler {
  llm::ChatModel& model;
  std::string name;
  CompletionsOptions options;
  std::mutex mu;  // one generation at a time
  std::unique_ptr<NetServer> net;

  Impl(llm::ChatModel& m, std::string n, CompletionsOptions o) : model(m), name(std::move(n)), options(std::move(o)) {}

  std::optional<HttpResponse> screen(const HttpRequest& head) override {
    if (auto r = check_access(options.access, request_facts(head))) {
      HttpResponse res = openai_error(r->status, r->code, r->message);
      if (r->status == 401) res.set_header("WWW-Authenticate", "Bearer");
      return res;
    }
    return std::nullopt;
  }
  bool blocks(const HttpRequest& req) const override { return req.method == "POST"; }

  HttpResponse handle(const HttpRequest& req) override {
    if (req.path == "/health" && req.method == "GET") return json_answer({{"status", "ok"}, {"model", name}});
    if (req.path == "/v1/models" && req.method == "GET")
      return json_answer({{"object", "list"},
                          {"data", {{{"id", name}, {"object", "model"}, {"owned_by", "pwab"}, {"root", name}}}}});
    if (req.path == "/v1/completions" && req.method == "POST") return complete(req);
    if (req.path == "/health" || req.path == "/v1/models" || req.path == "/v1/completions") {
      HttpResponse res = openai_error(405, "method_not_allowed", fmt::format("{} {} is not allowed", req.method, req.path));
      res.set_header("Allow", req.path == "/v1/completions" ? "POST" : "GET");
      return res;
    }
    return openai_error(404, "not_found", fmt::format("no route {} {} (this server answers /v1/completions and "
                                                      "/v1/models)", req.method, req.path));
  }

  HttpResponse complete(const HttpRequest& req) {
    auto read = read_request(req, name, options);
    if (auto* r = std::get_if<Refusal>(&read)) return openai_error(r->status, r->code, r->message);
    const Asked& a = std::get<Asked>(read);
    const bool tokens = a.logprobs.has_value() || a.return_token_ids;
    Json choices = Json::array();
    int64_t prompt_tokens = 0, completion_tokens = 0;
    for (int i = 0; i < a.n; ++i) {
      llm::ChatRequest c;
      c.model = name;
      c.prompt = a.prompt;
      c.max_tokens = a.max_tokens;
      c.temperature = a.temperature;
      c.seed = a.seed;
      c.sample = i;  // each choice its own draws
      c.return_tokens = tokens;
      llm::ChatResponse r;
      try {
        std::lock_guard lock(mu);
        r = model.chat(c);
      } catch (const std::exception& e) {
        return openai_error(500, "model_error", e.what());
      }
      if (i == 0) prompt_tokens = r.prompt_tokens;
      completion_tokens += r.completion_tokens;
      Json choice = {{"index", i}, {"text", r.message.content}, {"finish_reason", r.finish_reason}, {"logprobs", nullptr}};
      if (tokens && !r.tokens) return openai_error(500, "model_error", "the model reported no token ids");
      if (a.logprobs) {
        Json names = Json::array(), values = Json::array(), top = Json::array();
        for (std::size_t t = 0; t < r.tokens->completion_ids.size(); ++t) {
          const std::string token = token_name(r.tokens->completion_ids[t]);
          const float lp = t < r.tokens->logprobs.size() ? r.tokens->logprobs[t] : 0.0f;
          names.push_back(token);
          values.push_back(lp);
          top.push_back({{token, lp}});
        }
        choice["logprobs"] = {{"tokens", std::move(names)}, {"token_logprobs", std::move(values)},
                              {"top_logprobs", std::move(top)}};
      }
      if (a.return_token_ids) {
        choice["token_ids"] = r.tokens->completion_ids;
        choice["prompt_token_ids"] = r.tokens->prompt_ids;
      }
      choices.push_back(std::move(choice));
    }
    return json_answer({{"id", random_id()},
                        {"object", "text_completion"},
                        {"created", static_cast<int64_t>(std::time(nullptr))},
                        {"model", name},
                        {"choices", std::move(choices)},
                        {"usage", {{"prompt_tokens", prompt_tokens},
                                   {"completion_tokens", completion_tokens},
                                   {"total_tokens", prompt_tokens + completion_tokens}}}});
  }

  std::unique_ptr<WsSession> upgrade(const HttpRequest& req, HttpResponse& refusal) override {
    refusal = openai_error(404, "not_found", fmt::format("no WebSocket at {}", req.path));
    return nullptr;
  }

  HttpResponse transport_error(int status, std::string_view code, std::string_view message) override {
    HttpResponse res = openai_error(status, code, message);
    res.close = true;
    return res;
  }
};

CompletionsServer::CompletionsServer(llm::ChatModel& model, std::string name, CompletionsOptions options)
    : impl_(std::make_unique<Impl>(model, std::move(name), std::move(options))) {
  Impl& s = *impl_;
  if (!is_loopback_host(s.options.host) && s.options.access.token.empty())
    throw UsageError(fmt::format("listening on {} reaches other machines: give a bearer token (--token or "
                                 "PWAB_SERVE_TOKEN), or listen on 127.0.0.1",
                                 s.options.host));
  NetOptions net;
  net.host = s.options.host;
  net.port = s.options.port;
  net.max_body_bytes = s.options.max_body_bytes;
  net.blocking_threads = 16;  // requests wait their turn for the model
  s.net = std::make_unique<NetServer>(s, net);
}

CompletionsServer::~CompletionsServer() { stop(); }
int CompletionsServer::port() const { return impl_->net->port(); }
std::string CompletionsServer::url() const { return fmt::format("http://{}:{}", impl_->options.host, port()); }
void CompletionsServer::start() { impl_->net->start(); }
void CompletionsServer::stop() { impl_->net->stop(); }

}  // namespace pwab::serve
