#include "llm/wire.h"

#include <algorithm>

#include "core/json_depth.h"
#include "core/error.h"

namespace pwab::llm {
namespace {

using nlohmann::json;

constexpr std::size_t kExcerptBytes = 300;

std::string flatten_and_cut(std::string s, std::size_t max_bytes) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  if (s.size() <= max_bytes) return s;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  s.resize(cut);
  return s + "...";
}

std::string string_or_empty(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_string()) throw DataError(std::string("field '") + key + "' is not a string");
  return it->get<std::string>();
}

int64_t int_or_zero(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  return it->get<int64_t>();
}

}  // namespace

std::string redact_secret(std::string_view text, std::string_view secret) {
  std::string out(text);
  if (secret.empty()) return out;
  for (std::size_t pos = out.find(secret); pos != std::string::npos; pos = out.find(secret, pos))
    out.replace(pos, secret.size(), "[redacted]");
  return out;
}

std::string body_excerpt(std::string_view body, std::string_view secret) {
  if (body.empty()) return "(empty body)";
  std::string text(body);
  json j = parse_json_or_discarded(body);
  if (!j.is_discarded() && j.is_object()) {
    auto err = j.find("error");
    if (err != j.end() && err->is_object()) {
      auto msg = err->find("message");
      if (msg != err->end() && msg->is_string()) text = msg->get<std::string>();
    } else if (err != j.end() && err->is_string()) {
      text = err->get<std::string>();
    }
  }
  return flatten_and_cut(redact_secret(text, secret), kExcerptBytes);
}

json message_to_json(const Message& m) {
  json j = json::object();
  j["role"] = m.role;
  if (m.content.empty() && !m.tool_calls.empty()) {
    j["content"] = nullptr;
  } else {
    j["content"] = m.content;
  }
  if (!m.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCall& tc : m.tool_calls)
      calls.push_back({{"id", tc.id},
                       {"type", "function"},
                       {"function", {{"name", tc.name}, {"arguments", tc.arguments_json}}}});
    j["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) j["name"] = m.name;
  return j;
}

Message message_from_json(const json& j) {
  if (!j.is_object()) throw DataError("a message is not a JSON object");
  Message m;
  m.role = string_or_empty(j, "role");
  if (m.role.empty()) m.role = "assistant";
  m.content = string_or_empty(j, "content");
  m.tool_call_id = string_or_empty(j, "tool_call_id");
  m.name = string_or_empty(j, "name");
  auto calls = j.find("tool_calls");
  if (calls != j.end() && !calls->is_null()) {
    if (!calls->is_array()) throw DataError("field 'tool_calls' is not an array");
    for (const json& c : *calls) {
      if (!c.is_object()) throw DataError("a tool call is not a JSON object");
      ToolCall tc;
      tc.id = string_or_empty(c, "id");
      auto fn = c.find("function");
      if (fn == c.end() || !fn->is_object()) throw DataError("a tool call has no 'function' object");
      tc.name = string_or_empty(*fn, "name");
      auto args = fn->find("arguments");
      if (args != fn->end() && args->is_string()) {
        tc.arguments_json = args->get<std::string>();
      } else if (args != fn->end() && !args->is_null()) {
        tc.arguments_json = args->dump();  // some servers send the object itself
      }
      m.tool_calls.push_back(std::move(tc));
    }
  }
  return m;
}

std::string parse_chat_reply(const std::string& body, ChatResponse& out) {
  if (json_nests_deeper_than(body)) return "the body is refused: " + json_depth_message();
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return "the body is not JSON: " + flatten_and_cut(body, 120);
  if (!j.is_object()) return "the body is not a JSON object";
  if (auto err = j.find("error"); err != j.end() && !err->is_null()) return "error reply: " + body_excerpt(body, "");
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty()) return "no 'choices' in the reply";
  const json& choice = (*choices)[0];
  if (!choice.is_object()) return "choices[0] is not an object";
  auto msg = choice.find("message");
  if (msg == choice.end()) return "choices[0] has no 'message'";
  try {
    out.message = message_from_json(*msg);
    out.finish_reason = string_or_empty(choice, "finish_reason");
  } catch (const DataError& e) {
    return std::string("choices[0].message: ") + e.what();
  }
  out.message.role = "assistant";
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
    out.prompt_tokens = int_or_zero(*usage, "prompt_tokens");
    out.completion_tokens = int_or_zero(*usage, "completion_tokens");
  }
  return {};
}

namespace {

// The parts of a reply both APIs share: the first choice (checked) and the token usage.
std::string first_choice(const json& j, const json*& choice) {
  if (!j.is_object()) return "the body is not a JSON object";
  if (auto err = j.find("error"); err != j.end() && !err->is_null()) return "error reply: " + body_excerpt(j.dump(), "");
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty()) return "no 'choices' in the reply";
  choice = &(*choices)[0];
  if (!choice->is_object()) return "choices[0] is not an object";
  return {};
}

// Integers of a JSON array; false when it is not one.
bool read_ids(const json& j, std::vector<int32_t>& out) {
  if (!j.is_array()) return false;
  out.clear();
  out.reserve(j.size());
  for (const json& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) return false;
    out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return true;
}

// A choice's token ids ("token_ids", "prompt_token_ids": vLLM's return_token_ids) and the sampled tokens'
// log-probabilities (OpenAI's logprobs.token_logprobs), when the server sent them.
std::string read_token_trace(const json& choice, ChatResponse& out) {
  auto ids = choice.find("token_ids");
  if (ids == choice.end() || ids->is_null()) return {};
  TokenTrace t;
  if (!read_ids(*ids, t.completion_ids)) return "'token_ids' is not an array of token ids";
  if (auto p = choice.find("prompt_token_ids"); p != choice.end() && !p->is_null() && !read_ids(*p, t.prompt_ids))
    return "'prompt_token_ids' is not an array of token ids";
  if (auto lp = choice.find("logprobs"); lp != choice.end() && lp->is_object()) {
    auto values = lp->find("token_logprobs");
    if (values != lp->end() && values->is_array()) {
      for (const json& v : *values) t.logprobs.push_back(v.is_number() ? v.get<float>() : 0.0f);
      if (t.logprobs.size() != t.completion_ids.size())
        return "'logprobs.token_logprobs' has " + std::to_string(t.logprobs.size()) + " values for " +
               std::to_string(t.completion_ids.size()) + " token ids";
    }
  }
  out.tokens = std::move(t);
  return {};
}

void read_usage(const json& j, ChatResponse& out) {
  if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
    out.prompt_tokens = int_or_zero(*usage, "prompt_tokens");
    out.completion_tokens = int_or_zero(*usage, "completion_tokens");
  }
}

}  // namespace

std::string parse_completion_reply(const std::string& body, ChatResponse& out) {
  if (json_nests_deeper_than(body)) return "the body is refused: " + json_depth_message();
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return "the body is not JSON: " + flatten_and_cut(body, 120);
  const json* choice = nullptr;
  if (std::string problem = first_choice(j, choice); !problem.empty()) return problem;
  auto text = choice->find("text");
  if (text == choice->end() || !text->is_string()) return "choices[0] has no 'text' string";
  out.message = Message::assistant(text->get<std::string>());
  try {
    out.finish_reason = string_or_empty(*choice, "finish_reason");
  } catch (const DataError& e) {
    return std::string("choices[0]: ") + e.what();
  }
  // n > 1: every choice, ordered by its "index" when the server gives one (vLLM does; the order may differ)
  const json& choices = j["choices"];
  std::vector<std::pair<int64_t, std::string>> texts;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const json& c = choices[i];
    auto t = c.is_object() ? c.find("text") : c.end();
    if (!c.is_object() || t == c.end() || !t->is_string())
      return "choices[" + std::to_string(i) + "] has no 'text' string";
    auto idx = c.find("index");
    texts.emplace_back(idx != c.end() && idx->is_number_integer() ? idx->get<int64_t>() : static_cast<int64_t>(i),
                       t->get<std::string>());
  }
  std::stable_sort(texts.begin(), texts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (std::string problem = read_token_trace(*choice, out); !problem.empty()) return "choices[0]: " + problem;
  out.message = Message::assistant(texts[0].second);
  out.more_choices.clear();
  for (std::size_t i = 1; i < texts.size(); ++i) out.more_choices.push_back(texts[i].second);
  read_usage(j, out);
  return {};
}

std::string response_to_json(const ChatResponse& r) {
  json j = {{"message", message_to_json(r.message)},
            {"finish_reason", r.finish_reason},
            {"model", r.model},
            {"prompt_tokens", r.prompt_tokens},
            {"completion_tokens", r.completion_tokens},
            {"status", std::string(to_string(r.status))},
            {"problem", r.problem},
            {"attempts", r.attempts}};
  if (!r.more_choices.empty()) j["more_choices"] = r.more_choices;
  if (r.tokens)
    j["tokens"] = {{"prompt_ids", r.tokens->prompt_ids}, {"completion_ids", r.tokens->completion_ids},
                   {"logprobs", r.tokens->logprobs}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ChatResponse response_from_json(std::string_view text) {
  json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object()) throw DataError("a cached chat response is not a JSON object");
  ChatResponse r;
  auto msg = j.find("message");
  if (msg == j.end()) throw DataError("a cached chat response has no 'message'");
  r.message = message_from_json(*msg);
  r.finish_reason = string_or_empty(j, "finish_reason");
  r.model = string_or_empty(j, "model");
  r.prompt_tokens = int_or_zero(j, "prompt_tokens");
  r.completion_tokens = int_or_zero(j, "completion_tokens");
  r.status = parse_reply_status(string_or_empty(j, "status"));
  r.problem = string_or_empty(j, "problem");
  r.attempts = static_cast<int>(int_or_zero(j, "attempts"));
  if (auto t = j.find("tokens"); t != j.end() && t->is_object()) {
    TokenTrace trace;
    bool ok = read_ids(t->value("prompt_ids", json::array()), trace.prompt_ids) &&
              read_ids(t->value("completion_ids", json::array()), trace.completion_ids);
    const json lp = t->value("logprobs", json::array());
    ok = ok && lp.is_array();
    if (ok)
      for (const json& v : lp) trace.logprobs.push_back(v.is_number() ? v.get<float>() : 0.0f);
    if (!ok) throw DataError("a cached chat response's 'tokens' is malformed");
    r.tokens = std::move(trace);
  }
  if (auto more = j.find("more_choices"); more != j.end()) {
    if (!more->is_array()) throw DataError("a cached chat response's 'more_choices' is not an array");
    for (const json& t : *more) {
      if (!t.is_string()) throw DataError("a cached chat response's 'more_choices' holds a non-string");
      r.more_choices.push_back(t.get<std::string>());
    }
  }
  return r;
}

}  // namespace pwab::llm
