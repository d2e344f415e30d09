// LLM-path benchmarks against the loopback OpenAI-compatible server of the tests, which answers at once: what
// pwab itself costs per model call (request building, HTTP, JSON, cache-less client, ledger, records), not
// model time. llm/fc_multi_full: `pwab run --agent fc --track multi --user-sim llm --concurrency 32` on the full
// synthetic test split; each episode asks the user once, searches, and stops (3 agent steps, 1 user call).
// Prompt tokens reported by the server are the request's message characters / 4, so the token figures are an
// estimate of what a real model would bill for the same prompts (docs/llm.md "Cost per 100 tasks").
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "runner/results.h"
#include "support/openai_test_server.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;
using Json = nlohmann::json;

namespace {

//! Characters of every message's content / 4: the usual rough token count of English text.
int estimated_prompt_tokens(const Json& body) {
  std::size_t chars = 0;
  for (const auto& m : body["messages"])
    if (m.contains("content") && m["content"].is_string()) chars += m["content"].get<std::string>().size();
  if (body.contains("tools")) chars += body["tools"].dump().size();
  return static_cast<int>(chars / 4);
}

//! The agent asks once (multi-turn), then searches with words of the request, then stops; the user answers
//! with a fixed hint.
test::ScriptedReply instant_answer(const test::ReceivedRequest& r) {
  Json body = Json::parse(r.body);
  int prompt = estimated_prompt_tokens(body);
  if (!body.contains("tools")) return test::ScriptedReply::text("Something sturdy from a brand I know, please.", prompt, 12);
  int assistant_turns = 0;
  bool multi = false;
  std::string request;
  for (const auto& m : body["messages"]) {
    if (m["role"] == "assistant") ++assistant_turns;
    if (m["role"] == "system" && m["content"].get<std::string>().find("finish the task") != std::string::npos) multi = true;
    if (m["role"] == "user" && request.empty()) request = m["content"].get<std::string>();
  }
  if (multi && assistant_turns == 0) return test::ScriptedReply::text("Which brand or price range do you prefer?", prompt, 10);
  if (assistant_turns >= (multi ? 2 : 1)) return test::ScriptedReply::tool_call("stop", "{}", "call_2", prompt, 5);
  // The request's words after the user id, as the query (JSON-escaped).
  std::string query = request.substr(std::min(request.size(), request.find(':') + 1), 80);
  return test::ScriptedReply::tool_call("search_product_by_query", Json{{"query", query}}.dump(), "call_1", prompt, 20);
}

fs::path pwab_binary(const Context& ctx) { return ctx.self.parent_path().parent_path() / "pwab"; }
fs::path run_dir(const Context& ctx) { return ctx.out_dir / "llm" / "fc-multi"; }

std::unique_ptr<test::OpenAITestServer> server;

void fc_setup(const Context& ctx) {
  fs::path data = full_dataset_dir(ctx);
  std::string pwab = pwab_binary(ctx).string();
  if (!fs::exists(data / ".pwab-rec" / "sasrec.pwab"))
    time_command(pwab + " rec train " + data.string() + " --epochs 1 --eval-every 0 > /dev/null 2>&1");
  time_command(pwab + " index build " + data.string() + " > /dev/null 2>&1");
  if (!server) {
    server = std::make_unique<test::OpenAITestServer>();
    server->set_chat_handler(instant_answer);
  }
}

double fc_run(const Context& ctx, std::vector<Extra>& extras) {
  fs::remove_all(run_dir(ctx));
  std::string cmd = fmt::format(
      "OPENAI_API_KEY=none {} run --quiet --data {} --agent fc --memory last --model bench-model --base-url {} "
      "--embedder hashing --track multi --user-sim llm --concurrency 32 --max-in-flight 32 --out {} > /dev/null",
      pwab_binary(ctx).string(), full_dataset_dir(ctx).string(), server->base_url(), run_dir(ctx).string());
  double s = time_command(cmd);
  int64_t steps = 0;
  for (const auto& r : runner::read_records(run_dir(ctx))) steps += r.steps;
  extras.push_back({"agent_steps", static_cast<double>(steps), ""});
  extras.push_back({"agent_steps_per_hour", static_cast<double>(steps) / s * 3600.0, "/h"});
  return s;
}

std::string fc_check(const Context& ctx) {
  auto records = runner::read_records(run_dir(ctx));
  if (records.size() != 2174) return fmt::format("{} records, expected 2174", records.size());
  for (const auto& r : records) {
    if (!r.error.empty()) return "task " + r.task_key + " errored: " + r.error;
    if (r.steps != 3) return "task " + r.task_key + " ran " + std::to_string(r.steps) + " steps, expected 3";
  }
  return {};
}

const int kFc = add({
    "llm/fc_multi_full",
    "`pwab run --agent fc --track multi --user-sim llm --concurrency 32` on the full synthetic test split against "
    "the instant loopback server (target >= 50,000 agent steps/h)",
    3,
    fc_setup,
    fc_run,
    fc_check,
});

}  // namespace

namespace {

// Token use per task of each GPT baseline row on 200 tasks of the full synthetic test split, from the prompts pwab
// actually sends (characters / 4) and the scripted replies: the basis of docs/llm.md "Cost per 100 tasks".
fs::path tokens_dir(const Context& ctx, const std::string& name) { return ctx.out_dir / "llm" / "tokens" / name; }

double tokens_run(const Context& ctx, std::vector<Extra>& extras) {
  double total = 0;
  for (std::string track : {"single", "multi"})
    for (std::string memory : {"none", "random", "last", "relevant", "taskspec"}) {
      std::string name = track + "-" + memory;
      fs::remove_all(tokens_dir(ctx, name));
      total += time_command(fmt::format(
          "OPENAI_API_KEY=none {} run --quiet --data {} --agent fc --memory {} --model gpt-4o-mini --base-url {} "
          "--embedder hashing --track {} {} --tasks 0:200 --concurrency 8 --out {} > /dev/null",
          pwab_binary(ctx).string(), full_dataset_dir(ctx).string(), memory, server->base_url(), track,
          track == "multi" ? "--user-sim llm" : "", tokens_dir(ctx, name).string()));
      int64_t agent_prompt = 0, agent_completion = 0, user_prompt = 0, user_completion = 0;
      auto records = runner::read_records(tokens_dir(ctx, name));
      for (const auto& r : records) {
        Json u = Json::parse(r.usage_json);
        agent_prompt += u["agent"]["prompt_tokens"].get<int64_t>();
        agent_completion += u["agent"]["completion_tokens"].get<int64_t>();
        user_prompt += u["user"]["prompt_tokens"].get<int64_t>();
        user_completion += u["user"]["completion_tokens"].get<int64_t>();
      }
      double n = static_cast<double>(records.size());
      extras.push_back({name + "_agent_prompt_per_task", static_cast<double>(agent_prompt) / n, "tok"});
      extras.push_back({name + "_agent_completion_per_task", static_cast<double>(agent_completion) / n, "tok"});
      if (track == "multi") {
        extras.push_back({name + "_user_prompt_per_task", static_cast<double>(user_prompt) / n, "tok"});
        extras.push_back({name + "_user_completion_per_task", static_cast<double>(user_completion) / n, "tok"});
      }
    }
  return total;
}

std::string tokens_check(const Context& ctx) {
  for (std::string name : {"single-none", "multi-relevant"})
    if (runner::read_records(tokens_dir(ctx, name)).size() != 200) return name + ": not 200 records";
  return {};
}

const int kTokens = add({
    "llm/fc_tokens_per_task",
    "prompt and completion tokens per task of each fc memory row (single and multi-turn) on 200 full-split tasks, "
    "prompts measured as characters / 4, replies scripted (the basis of the cost table in docs/llm.md)",
    1,
    fc_setup,
    tokens_run,
    tokens_check,
});

}  // namespace
