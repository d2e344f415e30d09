// /v1/completions and /v1/chat/completions over a ChatModel (completions.h): requests read and checked, chats
// rendered as ChatML, choices sampled one after the other, tool calls parsed back out of the text, token ids and
// log-probabilities reported as vLLM and OpenAI report them.
#include "serve/completions.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <variant>

#include "core/json_depth.h"
#include "core/json_writer.h"
#include "core/text.h"
#include "serve/net_server.h"

namespace pwab::serve {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;  // a chat's tools keep their keys' order: they are rendered as sent

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

std::string random_id(std::string_view prefix = "cmpl-") {
  uint64_t words[2] = {0, 0};
  if (::getrandom(words, sizeof words, 0) != static_cast<ssize_t>(sizeof words)) words[0] = static_cast<uint64_t>(std::time(nullptr));
  return fmt::format("{}{:016x}{:016x}", prefix, words[0], words[1]);
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
  bool prompt_words_only = false;  // pwab's own field: llm::ChatRequest::prompt_words_only
  std::optional<int> top_k;        // unset: the model's default (top-k 50); 0 or -1 (vLLM's "off"): every token
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
    } else if (key == "prompt_words_only") {
      if (!v.is_boolean()) return bad("'prompt_words_only' must be true or false");
      a.prompt_words_only = v.get<bool>();
    } else if (key == "top_k") {
      if (!v.is_null()) {
        int k = 0;
        problem = integer(-1, 1 << 30, k);
        a.top_k = std::max(k, 0);
      }
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


// ---- chat: the ChatML rendering, the tool-call parsing and the request ----

// json.dumps(value, ensure_ascii=False) as Python writes it (", " and ": ", keys in their order, floats as repr):
// what the chat template's `tojson` filter prints (transformers' chat_template_utils overrides Jinja's filter
// with exactly that call), so a tool's schema reads the same in both prompts.
void write_python_json(JsonWriter& w, const OJson& v) {
  switch (v.type()) {
    case OJson::value_t::object:
      w.begin_object();
      for (auto it = v.begin(); it != v.end(); ++it) {
        w.key(it.key());
        write_python_json(w, it.value());
      }
      w.end_object();
      break;
    case OJson::value_t::array:
      w.begin_array();
      for (const OJson& e : v) write_python_json(w, e);
      w.end_array();
      break;
    case OJson::value_t::string: w.value(v.get_ref<const std::string&>()); break;
    case OJson::value_t::boolean: w.value(v.get<bool>()); break;
    case OJson::value_t::number_integer: w.value(v.get<int64_t>()); break;
    case OJson::value_t::number_unsigned: w.raw(std::to_string(v.get<uint64_t>())); break;
    case OJson::value_t::number_float: w.value(v.get<double>()); break;
    default: w.null(); break;
  }
}

std::string python_json(const OJson& v) {
  std::string out;
  JsonWriter w(out);
  write_python_json(w, v);
  return out;
}

// A message's text: a string, null (""), or OpenAI's content parts of type "text" (joined by newlines, as vLLM
// joins them).
std::string message_text(const OJson& m, std::size_t index) {
  if (!m.contains("content") || m["content"].is_null()) return {};
  const OJson& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw UsageError(fmt::format("messages[{}].content must be a text or a list of text parts", index));
  std::string out;
  for (std::size_t k = 0; k < c.size(); ++k) {
    const OJson& part = c[k];
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      throw UsageError(fmt::format("messages[{}].content[{}]: only parts of type \"text\" are accepted (this model "
                                   "reads text)", index, k));
    if (k > 0) out += "\n";
    out += part["text"].get<std::string>();
  }
  return out;
}

std::string render(const OJson& messages, const OJson& tools) {
  if (!messages.is_array() || messages.empty()) throw UsageError("'messages' must be a non-empty list");
  if (!tools.is_null() && !tools.is_array()) throw UsageError("'tools' must be a list");
  std::string out;
  const auto role_of = [&](std::size_t i) -> std::string {
    const OJson& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw UsageError(fmt::format("messages[{}] must be an object with a \"role\"", i));
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system turn
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      throw UsageError(fmt::format("messages[{}]: role '{}' is not one of system, developer, user, assistant, tool",
                                   i, role));
    // The template renders only a first system message; a later one would vanish from the prompt unseen.
    if (role == "system" && i > 0)
      throw UsageError(fmt::format("messages[{}]: a system message may only come first", i));
    return role;
  };
  const bool first_is_system = role_of(0) == "system";
  const bool with_tools = tools.is_array() && !tools.empty();
  if (with_tools) {
    out += "<|im_start|>system\n";
    if (first_is_system) out += message_text(messages[0], 0) + "\n\n";
    out += "You may call these tools:\n<tools>";
    for (const OJson& tool : tools) {
      if (!tool.is_object()) throw UsageError("each of 'tools' must be an object");
      out += "\n" + python_json(tool);
    }
    out += "\n</tools>\nCall one as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.<|im_end|>\n";
  } else if (first_is_system) {
    out += "<|im_start|>system\n" + message_text(messages[0], 0) + "<|im_end|>\n";
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string role = role_of(i);
    const OJson& m = messages[i];
    if (role == "system") continue;
    if (role == "tool") {
      out += "<|im_start|>user\n<tool_response>\n" + message_text(m, i) + "\n</tool_response><|im_end|>\n";
    } else if (role == "assistant") {
      out += "<|im_start|>assistant\n" + message_text(m, i);
      if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
        const OJson& calls = m["tool_calls"];
        if (!calls.is_array()) throw UsageError(fmt::format("messages[{}].tool_calls must be a list", i));
        for (std::size_t k = 0; k < calls.size(); ++k) {
          const OJson* f = &calls[k];
          if (f->is_object() && f->contains("function")) f = &(*f)["function"];
          if (!f->is_object() || !f->contains("name") || !(*f)["name"].is_string() || !f->contains("arguments"))
            throw UsageError(fmt::format("messages[{}].tool_calls[{}] needs a function with a name and arguments", i, k));
          const OJson& args = (*f)["arguments"];
          out += "<tool_call>\n{\"name\": \"" + (*f)["name"].get<std::string>() + "\", \"arguments\": " +
                 (args.is_string() ? args.get<std::string>() : python_json(args)) + "}\n</tool_call>";
        }
      }
      out += "<|im_end|>\n";
    } else {
      if (!m.contains("content") || m["content"].is_null())
        throw UsageError(fmt::format("messages[{}]: a {} message needs content", i, role));
      out += "<|im_start|>" + role + "\n" + message_text(m, i) + "<|im_end|>\n";
    }
  }
  out += "<|im_start|>assistant\n";
  return out;
}

// What a chat request asks for, checked field by field.
struct ChatAsked {
  std::string prompt;
  int max_tokens = 0;
  double temperature = 1.0;
  int n = 1;
  int64_t seed = 0;
  bool logprobs = false;
  int top_logprobs = 0;
  bool return_token_ids = false;
  bool parse_tools = true;  // tool_choice "none": tools are neither offered nor parsed
  std::vector<std::string> stop;
  std::optional<int> top_k;  // as Asked::top_k
};

std::variant<ChatAsked, Refusal> read_chat_request(const HttpRequest& req, const std::string& name,
                                                   const CompletionsOptions& o) {
  if (json_nests_deeper_than(req.body)) return bad(json_depth_message());
  OJson body = OJson::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad("the body must be a JSON object");
  ChatAsked a;
  a.max_tokens = o.chat_max_tokens;
  std::optional<int> max_tokens, max_completion_tokens;
  OJson tools;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    const OJson& v = it.value();
    auto integer = [&](int lo, int hi) -> std::variant<int, Refusal> {
      if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        return bad(fmt::format("'{}' must be an integer from {} to {}", key, lo, hi));
      return static_cast<int>(v.get<int64_t>());
    };
    auto flag = [&](bool& out) -> std::optional<Refusal> {
      if (v.is_null()) return std::nullopt;
      if (!v.is_boolean()) return bad(fmt::format("'{}' must be true or false", key));
      out = v.get<bool>();
      return std::nullopt;
    };
    std::optional<Refusal> problem;
    if (key == "model") {
      if (!v.is_string()) return bad("'model' must be a string");
      if (v.get<std::string>() != name)
        return Refusal{404, "model_not_found", fmt::format("this server serves '{}', not '{}'", name, v.get<std::string>())};
    } else if (key == "messages") {
      // rendered below, once the tools are known
    } else if (key == "tools") {
      tools = v;
    } else if (key == "tool_choice") {
      if (v == "none") {
        a.parse_tools = false;
      } else if (!v.is_null() && v != "auto") {
        return bad("'tool_choice' must be \"auto\" or \"none\": this server cannot force a tool call");
      }
    } else if (key == "parallel_tool_calls") {
      bool ignored = true;  // every <tool_call> block of a reply is returned
      problem = flag(ignored);
    } else if (key == "max_tokens" || key == "max_completion_tokens") {
      if (v.is_null()) continue;
      auto r = integer(1, o.max_tokens_limit);
      if (auto* refusal = std::get_if<Refusal>(&r)) return *refusal;
      (key == "max_tokens" ? max_tokens : max_completion_tokens) = std::get<int>(r);
    } else if (key == "temperature") {
      if (v.is_null()) continue;
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 100) return bad("'temperature' must be a number from 0 to 100");
      a.temperature = v.get<double>();
    } else if (key == "n") {
      if (v.is_null()) continue;
      auto r = integer(1, o.max_n);
      if (auto* refusal = std::get_if<Refusal>(&r)) return *refusal;
      a.n = std::get<int>(r);
    } else if (key == "seed") {
      if (v.is_null()) continue;
      if (!v.is_number_integer() || v.get<int64_t>() < 0) return bad("'seed' must be a non-negative integer");
      a.seed = v.get<int64_t>();
    } else if (key == "logprobs") {
      problem = flag(a.logprobs);
    } else if (key == "top_logprobs") {
      if (v.is_null()) continue;
      auto r = integer(0, 20);  // OpenAI's range
      if (auto* refusal = std::get_if<Refusal>(&r)) return *refusal;
      a.top_logprobs = std::get<int>(r);
    } else if (key == "return_token_ids") {
      problem = flag(a.return_token_ids);
    } else if (key == "top_k") {  // vLLM's and llama.cpp's field
      if (v.is_null()) continue;
      auto r = integer(-1, 1 << 30);
      if (auto* refusal = std::get_if<Refusal>(&r)) return *refusal;
      a.top_k = std::max(std::get<int>(r), 0);
    } else if (key == "stop") {
      if (v.is_string()) {
        a.stop.push_back(v.get<std::string>());
      } else if (v.is_array() && v.size() <= 4) {
        for (const OJson& s : v) {
          if (!s.is_string()) return bad("'stop' must be a text or a list of up to 4 texts");
          a.stop.push_back(s.get<std::string>());
        }
      } else if (!v.is_null()) {
        return bad("'stop' must be a text or a list of up to 4 texts");
      }
      for (const std::string& s : a.stop)
        if (s.empty()) return bad("'stop' texts must not be empty");
    } else if (key == "stream" || key == "store") {
      if (!v.is_null() && v != false) return bad(fmt::format("'{}' is not supported: leave it false", key));
    } else if (key == "stream_options") {
      if (!v.is_null()) return bad("'stream_options' is not supported: this server does not stream");
    } else if (key == "top_p") {
      if (!v.is_null() && !(v.is_number() && v.get<double>() == 1.0)) return bad("'top_p' other than 1 is not supported");
    } else if (key == "frequency_penalty" || key == "presence_penalty") {
      if (!v.is_null() && !(v.is_number() && v.get<double>() == 0.0))
        return bad(fmt::format("'{}' other than 0 is not supported", key));
    } else if (key == "response_format") {
      if (!v.is_null() && !(v.is_object() && v.value("type", "") == "text"))
        return bad("'response_format' other than {\"type\": \"text\"} is not supported");
    } else if (key != "user" && key != "metadata") {
      return bad(fmt::format("unknown field '{}'", key));
    }
    if (problem) return *problem;
  }
  if (max_tokens && max_completion_tokens && *max_tokens != *max_completion_tokens)
    return bad("'max_tokens' and 'max_completion_tokens' disagree: give one");
  if (max_completion_tokens) a.max_tokens = *max_completion_tokens;
  if (max_tokens) a.max_tokens = *max_tokens;
  if (a.top_logprobs > 0 && !a.logprobs) return bad("'top_logprobs' needs \"logprobs\": true");
  if (!a.stop.empty() && (a.logprobs || a.return_token_ids))
    return bad("'stop' cannot go with 'logprobs' or 'return_token_ids': the text is cut at a stop text after "
               "generation, and the token ids would no longer match it");
  if (!body.contains("messages")) return bad("'messages' is required");
  // A reply is searched for tool calls only when tools were offered: without them a <tool_call> in the text is text.
  if (!tools.is_array() || tools.empty()) a.parse_tools = false;
  try {
    a.prompt = render(body["messages"], a.parse_tools ? tools : OJson());
  } catch (const UsageError& e) {
    return bad(e.what());
  }
  return a;
}

}  // namespace

std::string render_chat_prompt(std::string_view messages_json, std::string_view tools_json) {
  OJson messages = OJson::parse(messages_json, nullptr, false);
  OJson tools = tools_json.empty() ? OJson() : OJson::parse(tools_json, nullptr, false);
  if (messages.is_discarded() || tools.is_discarded()) throw UsageError("render_chat_prompt: not valid JSON");
  return render(messages, tools);
}

ParsedReply parse_tool_calls(std::string_view text) {
  static constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  ParsedReply out;
  std::string rest;  // the text outside the parsed blocks
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t open = text.find(kOpen, at);
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos) break;  // cut off (max_tokens): left as text
    const std::string_view inside = trim(text.substr(open + kOpen.size(), close - open - kOpen.size()));
    Json call = json_nests_deeper_than(inside) ? Json() : Json::parse(inside, nullptr, false);
    const bool ok = call.is_object() && call.contains("name") && call["name"].is_string() &&
                    !call["name"].get<std::string>().empty() &&
                    (!call.contains("arguments") || call["arguments"].is_object() || call["arguments"].is_string());
    rest.append(text.substr(at, open - at));
    if (ok) {
      llm::ToolCall c;
      c.name = call["name"].get<std::string>();
      if (!call.contains("arguments")) {
        c.arguments_json = "{}";
      } else if (call["arguments"].is_string()) {
        c.arguments_json = call["arguments"].get<std::string>();  // already JSON text, as some models write it
      } else {
        c.arguments_json = dump_compact(call["arguments"]);
      }
      out.tool_calls.push_back(std::move(c));
    } else {
      rest.append(text.substr(open, close + kClose.size() - open));
    }
    at = close + kClose.size();
  }
  rest.append(text.substr(std::min(at, text.size())));
  out.content = out.tool_calls.empty() ? std::string(text) : std::string(trim(rest));
  return out;
}

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
    if (req.path == "/v1/chat/completions" && req.method == "POST") return chat(req);
    const bool post_route = req.path == "/v1/completions" || req.path == "/v1/chat/completions";
    if (req.path == "/health" || req.path == "/v1/models" || post_route) {
      HttpResponse res = openai_error(405, "method_not_allowed", fmt::format("{} {} is not allowed", req.method, req.path));
      res.set_header("Allow", post_route ? "POST" : "GET");
      return res;
    }
    return openai_error(404, "not_found", fmt::format("no route {} {} (this server answers /v1/completions, "
                                                      "/v1/chat/completions and /v1/models)", req.method, req.path));
  }

  // One choice of a request, drawn by the model (one request at a time), with the token trace it was asked for:
  // the response, or the 500 that answers a model that failed or left out what was asked.
  std::variant<llm::ChatResponse, HttpResponse> draw(const std::string& prompt, int max_tokens, double temperature,
                                                     int64_t seed, int sample, bool tokens, int top_logprobs,
                                                     bool prompt_words_only = false,
                                                     std::optional<int> top_k = std::nullopt) {
    llm::ChatRequest c;
    c.model = name;
    c.prompt = prompt;
    c.max_tokens = max_tokens;
    c.temperature = temperature;
    c.seed = seed;
    c.sample = sample;  // each choice its own draws
    c.return_tokens = tokens;
    c.top_logprobs = top_logprobs;
    c.prompt_words_only = prompt_words_only;
    c.top_k = top_k;
    llm::ChatResponse r;
    try {
      std::lock_guard lock(mu);
      r = model.chat(c);
    } catch (const std::exception& e) {
      return openai_error(500, "model_error", e.what());
    }
    if (tokens && !r.tokens) return openai_error(500, "model_error", "the model reported no token ids");
    if (top_logprobs > 0 && r.tokens->top_logprobs.size() != r.tokens->completion_ids.size())
      return openai_error(500, "model_error",
                          fmt::format("the model reported the most likely tokens of {} positions for {} tokens",
                                      r.tokens->top_logprobs.size(), r.tokens->completion_ids.size()));
    return r;
  }

  HttpResponse chat(const HttpRequest& req) {
    auto read = read_chat_request(req, name, options);
    if (auto* r = std::get_if<Refusal>(&read)) return openai_error(r->status, r->code, r->message);
    const ChatAsked& a = std::get<ChatAsked>(read);
    const bool tokens = a.logprobs || a.return_token_ids;
    Json choices = Json::array();
    int64_t prompt_tokens = 0, completion_tokens = 0;
    for (int i = 0; i < a.n; ++i) {
      auto drawn = draw(a.prompt, a.max_tokens, a.temperature, a.seed, i, tokens, a.top_logprobs, false, a.top_k);
      if (auto* failed = std::get_if<HttpResponse>(&drawn)) return std::move(*failed);
      llm::ChatResponse& r = std::get<llm::ChatResponse>(drawn);
      if (i == 0) prompt_tokens = r.prompt_tokens;
      completion_tokens += r.completion_tokens;
      std::string text = std::move(r.message.content);
      std::string finish = r.finish_reason;
      // Stop texts end the reply where the first of them begins (the model is not stopped early: it has no stop
      // strings, only its end-of-sequence token), and the stop text itself is left out, as OpenAI leaves it out.
      std::size_t cut = std::string::npos;
      for (const std::string& s : a.stop) cut = std::min(cut, text.find(s));
      if (cut != std::string::npos) {
        text.resize(cut);
        finish = "stop";
      }
      Json message = {{"role", "assistant"}, {"content", nullptr}};
      ParsedReply parsed = a.parse_tools ? parse_tool_calls(text) : ParsedReply{text, {}};
      if (!parsed.content.empty() || parsed.tool_calls.empty()) message["content"] = parsed.content;
      if (!parsed.tool_calls.empty()) {
        Json calls = Json::array();
        for (const llm::ToolCall& call : parsed.tool_calls)
          calls.push_back({{"id", random_id("call_").substr(0, 29)}, {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments_json}}}});
        message["tool_calls"] = std::move(calls);
        if (finish == "stop") finish = "tool_calls";
      }
      Json choice = {{"index", i}, {"message", std::move(message)}, {"finish_reason", finish}, {"logprobs", nullptr}};
      if (a.logprobs) {
        Json content = Json::array();
        for (std::size_t t = 0; t < r.tokens->completion_ids.size(); ++t) {
          Json top = Json::array();
          if (a.top_logprobs > 0)
            for (const auto& [id, lp] : r.tokens->top_logprobs[t])
              top.push_back({{"token", token_name(id)}, {"logprob", lp}, {"bytes", nullptr}});
          content.push_back({{"token", token_name(r.tokens->completion_ids[t])},
                             {"logprob", t < r.tokens->logprobs.size() ? r.tokens->logprobs[t] : 0.0f},
                             {"bytes", nullptr},
                             {"top_logprobs", std::move(top)}});
        }
        choice["logprobs"] = {{"content", std::move(content)}};
      }
      if (a.return_token_ids) {
        choice["token_ids"] = r.tokens->completion_ids;
        choice["prompt_token_ids"] = r.tokens->prompt_ids;
      }
      choices.push_back(std::move(choice));
    }
    return json_answer({{"id", random_id("chatcmpl-")},
                        {"object", "chat.completion"},
                        {"created", static_cast<int64_t>(std::time(nullptr))},
                        {"model", name},
                        {"choices", std::move(choices)},
                        {"usage", {{"prompt_tokens", prompt_tokens},
                                   {"completion_tokens", completion_tokens},
                                   {"total_tokens", prompt_tokens + completion_tokens}}}});
  }

  HttpResponse complete(const HttpRequest& req) {
    auto read = read_request(req, name, options);
    if (auto* r = std::get_if<Refusal>(&read)) return openai_error(r->status, r->code, r->message);
    const Asked& a = std::get<Asked>(read);
    const bool tokens = a.logprobs.has_value() || a.return_token_ids;
    Json choices = Json::array();
    int64_t prompt_tokens = 0, completion_tokens = 0;
    for (int i = 0; i < a.n; ++i) {
      auto drawn = draw(a.prompt, a.max_tokens, a.temperature, a.seed, i, tokens, a.logprobs.value_or(0),
                        a.prompt_words_only, a.top_k);
      if (auto* failed = std::get_if<HttpResponse>(&drawn)) return std::move(*failed);
      llm::ChatResponse& r = std::get<llm::ChatResponse>(drawn);
      if (i == 0) prompt_tokens = r.prompt_tokens;
      completion_tokens += r.completion_tokens;
      Json choice = {{"index", i}, {"text", r.message.content}, {"finish_reason", r.finish_reason}, {"logprobs", nullptr}};
      if (a.logprobs) {
        Json names = Json::array(), values = Json::array(), top = Json::array();
        for (std::size_t t = 0; t < r.tokens->completion_ids.size(); ++t) {
          const std::string token = token_name(r.tokens->completion_ids[t]);
          const float lp = t < r.tokens->logprobs.size() ? r.tokens->logprobs[t] : 0.0f;
          names.push_back(token);
          values.push_back(lp);
          // OpenAI's legacy shape: the k most likely tokens of the position, and the drawn one when not among them
          // (with logprobs 0, the drawn one alone).
          Json alternatives = Json::object();
          if (*a.logprobs > 0)
            for (const auto& [id, alt] : r.tokens->top_logprobs[t]) alternatives[token_name(id)] = alt;
          alternatives[token] = lp;
          top.push_back(std::move(alternatives));
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
