// src/agents/recmind_agent.cpp: RecMind's prompts, memory and factory.
#include "agents/recmind_agent.h"
#include "agents/agent_options.h"
#include "agents/llm_config.h"

#include "agents/fc_agent.h"
#include "agents/memory.h"
#include "core/error.h"
#include "core/json_writer.h"
#include "env/tools.h"
#include "env/agent.h"

namespace pwab::agents {

// ------------------------------------------------------------------------------------------------------------
// Prompts (docs/decisions.md §4.4, our own words; tool names exact)
// ------------------------------------------------------------------------------------------------------------

namespace {

//! The opening line, blank line and "Rules:\n" the fc prompts start with.
std::string opening() {
  std::string p = fc_system_prompt(data::Track::kSingleTurn, 10);
  return p.substr(0, p.find("Rules:\n") + 7);
}

constexpr std::string_view kRuleRequest = "- Every request tells you the user's user_id and what that user is asking for.\n";
constexpr std::string_view kRulePickTool =
    "- Pick the tool best suited to the request and call it to locate the product wanted or to produce the review "
    "wanted.\n";
constexpr std::string_view kRuleFullMemory =
    "- You are given a memory of the user that lists all of their past purchases and reviews; let it guide your "
    "tool calls.\n";

}  // namespace

std::string recmind_system_prompt(data::Track track, int max_steps) {
  std::string p = opening();
  p += kRuleRequest;
  p += kRulePickTool;
  if (track == data::Track::kSingleTurn) {
    p += "- Requests vary, and so does the tool that serves them; the right tool called with well-chosen input gives "
         "the best outcome.\n";
    p += "- There is no dialogue with the user: derive the best tool call you can from the request as given.\n";
    p += "- Before the final task call you may look up products from the user's history with "
         "get_product_details_by_asin to learn more about them.\n";
    p += "- A call to search_product_by_query, get_recommendations_by_history or add_product_review ends the task at "
         "once.\n";
    p += kRuleFullMemory;
    return p;
  }
  p += "- The request decides which of search_product_by_query, get_recommendations_by_history or "
       "add_product_review you need.\n";
  p += "- The right tool called with well-chosen input gives the best outcome.\n";
  p += "- You may talk with the user or call tools, but you have at most " + std::to_string(max_steps) +
       " steps in total, and finishing in fewer is better.\n";
  p += "- Solve the user's task accurately and efficiently; spend your effort on good tool calls rather than on "
       "repeated replies to the user.\n";
  p += "- Before a task tool (search_product_by_query, get_recommendations_by_history or add_product_review) you "
       "may call get_product_details_by_asin to learn more about products from the user's history.\n";
  p += "- When you are sure your inputs to the task tools cannot get any better, you may finish the task by calling "
       "'stop'; finishing earlier scores better.\n";
  p += "- Once the user says the results are good enough for them, call 'stop' and reply no more.\n";
  p += "- Do not invent information that neither the user nor a tool gave you, and keep your own opinions and "
       "suggestions to yourself.\n";
  p += "- Each turn contains at most one tool call, and a turn is either a tool call or a message to the user, not "
       "both.\n";
  p += kRuleFullMemory;
  return p;
}

std::string recmind_memory_item(const data::Product& p, const data::Review& r, std::size_t i) {
  std::string out = "\nMEMORY " + std::to_string(i) + ":\nProduct:\n";
  out += "- Title: " + p.title + "\n";
  out += "- Parent Asin: " + p.parent_asin + "\n";
  out += "- Main Category: " + p.main_category + "\n";
  out += "Review:\n";
  out += "- Rating: " + r.rating.str() + "\n";
  out += "- Text: " + r.text + "\n";
  out += "- Timestamp: " + std::to_string(r.timestamp) + "\n";
  return out;
}

std::string_view recmind_memory_header() {
  return "\nAll that you know about this user (every purchase and review they have made):\n\n";
}

std::string recmind_memory(const data::Dataset& ds, const data::Task& task, int k) {
  std::string out(recmind_memory_header());
  auto items = last_memory(ds.visible_history(task), k);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += "\n";
    out += recmind_memory_item(ds.product(items[i]->product), items[i]->review, i);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// Options and factory
// ------------------------------------------------------------------------------------------------------------

RecMindOptions parse_recmind_options(const AgentOptions& options, int run_max_steps) {
  OptionReader r("recmind", options);
  RecMindOptions o;
  r.memory({"recmind"});  // its only memory: the latest purchases
  o.memory_length = r.memory_length(10);
  o.max_steps = r.integer("max_steps", run_max_steps, 1, kMaxOptionCount);
  r.finish();
  return o;
}

RecMindAgentFactory::RecMindAgentFactory(RecMindOptions options, const AgentContext& context)
    : options_(options), context_(context), tools_json_(env::tools_json(/*include_product_details=*/true)) {
  if (!context_.llm.open)
    throw UsageError("the recmind agent needs --model (and an OpenAI-compatible endpoint), or --replay with a "
                     "recorded --llm-cache");
  if (!context_.ds) throw UsageError("recmind agent: no dataset");
}

std::string RecMindAgentFactory::config_json() const {
  const LlmAccess& llm = context_.llm;
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("agent").value("recmind");
  write_llm_config(w, llm);
  w.key("memory").value("recmind");
  w.key("memory_length").value(options_.memory_length);
  w.key("prompts").value(kRecMindPromptsVersion);
  w.key("max_steps").value(options_.max_steps);
  w.end_object();
  return out;
}

std::string RecMindAgentFactory::system_message(const data::Task& task, data::Track track) const {
  return recmind_system_prompt(track, options_.max_steps) + recmind_memory(*context_.ds, task, options_.memory_length);
}

std::unique_ptr<env::Agent> RecMindAgentFactory::make(const data::Task& task) const {
  auto model = context_.llm.open(data::task_key(task), llm::Role::kAgent);
  if (!model) throw UsageError("recmind agent: the run's LLM access gave no model");
  return std::make_unique<ToolChatAgent>(
      [this](const data::Task& t, data::Track track, llm::ChatModel&) { return SystemPrompt{system_message(t, track)}; },
      context_.llm, tools_json_, std::move(model));
}

}  // namespace pwab::agents
