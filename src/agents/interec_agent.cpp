// src/agents/interec_agent.cpp: InteRecAgent's prompts, profile rules, memory file and per-user ordering.
#include "agents/interec_agent.h"
#include "agents/agent_options.h"
#include "agents/llm_config.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>

#include "agents/fc_agent.h"
#include "agents/memory.h"
#include "agents/recmind_agent.h"
#include "core/json_depth.h"
#include "core/error.h"
#include "core/json_writer.h"
#include "core/py_format.h"
#include "core/sys.h"
#include "data/task_key.h"
#include "env/tools.h"
#include "env/agent.h"

namespace fs = std::filesystem;

namespace pwab::agents {

// ------------------------------------------------------------------------------------------------------------
// Profiles
// ------------------------------------------------------------------------------------------------------------

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
void add(std::vector<std::string>& v, const std::string& s) {
  if (!contains(v, s)) v.push_back(s);
}
void remove_all(std::vector<std::string>& v, const std::vector<std::string>& gone) {
  std::erase_if(v, [&](const std::string& s) { return contains(gone, s); });
}

}  // namespace

void apply_interec_update(InterecProfile& p, const InterecProfile& u) {
  remove_all(p.like, u.dislike);
  for (const auto& s : u.like) add(p.like, s);
  remove_all(p.dislike, u.like);
  for (const auto& s : u.dislike) add(p.dislike, s);
  for (const auto& s : u.expect) {
    // A repeated entry counts as added again: it moves to the end, so the cap keeps what was mentioned last.
    std::erase(p.expect, s);
    p.expect.push_back(s);
  }
  if (p.expect.size() > kInterecExpectCap)
    p.expect.erase(p.expect.begin(), p.expect.end() - static_cast<std::ptrdiff_t>(kInterecExpectCap));
}

InterecProfile heuristic_interec_profile(const data::Dataset& ds, data::UserId user) {
  std::vector<const data::Behaviour*> history;
  for (const auto& b : ds.user(user).behaviours)
    if (b.split == data::Split::kHistory) history.push_back(&b);
  if (history.size() > kInterecInitItems)
    history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(kInterecInitItems));
  InterecProfile p;
  for (const auto* b : history) {
    std::optional<double> rating = b->review.rating.number();
    if (!rating) continue;
    const std::string& asin = ds.product(b->product).parent_asin;
    if (*rating >= 4) {
      std::erase(p.dislike, asin);
      add(p.like, asin);
    } else if (*rating <= 2) {
      std::erase(p.like, asin);
      add(p.dislike, asin);
    }
  }
  return p;
}

// ------------------------------------------------------------------------------------------------------------
// Prompts (docs/decisions.md §4.5, our own words; keys, item ids, tool names and the exact layouts kept)
// ------------------------------------------------------------------------------------------------------------

std::string interec_system_prompt(data::Track track, int max_steps) {
  std::string p = fc_system_prompt(data::Track::kSingleTurn, 10);
  p = p.substr(0, p.find("Rules:\n") + 7);
  const int num = track == data::Track::kSingleTurn ? -1 : max_steps;
  p += "- Every request tells you the user's user_id and what that user is asking for.\n";
  p += "- Pick the tool best suited to the request and call it to locate the product wanted or to produce the review "
       "wanted.\n";
  p += "- Requests vary, and so does the tool that serves them; the right tool called with well-chosen input gives "
       "the best outcome.\n";
  p += "- A single request never needs more than one kind of tool.\n";
  p += "- You may talk with the user or call tools, but you have at most " + std::to_string(num) +
       " steps in total, and finishing in fewer is better.\n";
  p += "- Solve the user's task accurately and efficiently; spend your effort on good tool calls rather than on "
       "repeated replies to the user.\n";
  p += "- When you are sure your inputs to the task tools cannot get any better, you may finish the task by calling "
       "'stop'; finishing earlier scores better.\n";
  p += "- Once the user says the results are good enough for them, call 'stop' and reply no more.\n";
  p += "- Do not invent information that neither the user nor a tool gave you, and keep your own opinions and "
       "suggestions to yourself.\n";
  p += "- Each turn contains at most one tool call, and a turn is either a tool call or a message to the user, not "
       "both.\n";
  p += "- You are given a memory of the user made of their history and of what they like, dislike and expect "
       "(expect); let it guide your tool calls.\n";
  return p;
}

std::string interec_memory(const data::Dataset& ds, const data::Task& task, const InterecProfile& profile, int k) {
  std::string out = "\n\nWhat you know about this user:\nHistory:\n";
  auto items = last_memory(ds.visible_history(task), k);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const data::Product& p = ds.product(items[i]->product);
    if (i) out += "\n";
    out += "\n- Title: " + p.title + "\n- Parent Asin: " + p.parent_asin + "\n- Main Category: " + p.main_category +
           "\n- Rating: " + items[i]->review.rating.str() + "\n- Text: " + items[i]->review.text + "\n";
  }
  out += "\nLike:\n" + py::list_repr(profile.like);
  out += "\nDislike:\n" + py::list_repr(profile.dislike);
  out += "\nExpect:\n" + py::list_repr(profile.expect);
  return out;
}

std::string interec_init_prompt(const data::Dataset& ds, data::UserId user) {
  std::vector<const data::Behaviour*> history;
  for (const auto& b : ds.user(user).behaviours)
    if (b.split == data::Split::kHistory) history.push_back(&b);
  if (history.size() > kInterecInitItems)
    history.erase(history.begin(), history.end() - static_cast<std::ptrdiff_t>(kInterecInitItems));
  std::string items;
  for (const auto* b : history) {
    const data::Product& p = ds.product(b->product);
    items += "\nProduct:\n- Title: " + p.title + "\n- Parent ASIN: " + p.parent_asin +
             "\n- Categories: " + py::list_repr(p.categories) + "\nReview:\n- Your Rating: " + b->review.rating.str() +
             "\n- Your Review Text: " + b->review.text + "\n";
  }
  std::string out;
  out += "Describe this user as a profile drawn from their history.\n";
  out += "The profile holds two lists: like and dislike.\n";
  out += "Decide from each rating and review text whether the user liked or disliked the product; products you "
         "cannot place may be left out.\n";
  out += "Reply in JSON with exactly two keys, \"like\" and \"dislike\".\n";
  out += "Each entry of the lists is just the product's \"parent_asin\".\n";
  out += "Write nothing besides the JSON and give no explanation.\n";
  out += "\n";
  out += "The history to work from:\n";
  out += "History:\n";
  out += items;
  return out;
}

std::string interec_update_prompt(std::string_view conversation) {
  std::string out;
  out += "Work out the user's profile from the conversation below.\n";
  out += "A profile has three lists: like, dislike and expect.\n";
  out += "Reply with a JSON-formatted string.\n";
  out += "Two examples show what is wanted.\n";
  out += "\n> Conversations\n";
  out += "User: Earlier I bought ITEM-1, ITEM-2 and ITEM-3. This time I want something else.\n";
  out += "Assistent: Going by what you like, ITEM-17, ITEM-19 and ITEM-30 may suit you.\n";
  out += "User: None of those is right for me; please show me something else.\n";
  out += "Assistent: With that in mind, how about ITEM-5 or ITEM-100?\n";
  out += "User: ITEM-100 catches my eye. It might be a good fit.\n";
  out += "> Profiles\n";
  out += "{\"like\": [\"ITEM-100\"], \"dislike\": [\"ITEM-17\", \"ITEM-19\", \"ITEM-30\"], \"expect\": []}\n";
  out += "\n> Conversations\n";
  out += "User: ITEM-89, ITEM-11, ITEM-78 and ITEM-67 were favourites of mine. This time I want something else.\n";
  out += "Assistent: Going by what you like, ITEM-53 and ITEM-10 may suit you.\n";
  out += "User: ITEM-10 catches my eye, but it is not right for me.\n";
  out += "Assistent: With that in mind, how about ITEM-88 or ITEM-70?\n";
  out += "User: Neither is right for me; I am after something new, books for instance.\n";
  out += "> Profiles\n";
  out += "{\"like\": [], \"dislike\": [\"ITEM-10\", \"ITEM-88\", \"ITEM-70\"], \"expect\": [\"books\"]}\n";
  out += "\nUse only parent_asin values in like and dislike; expect may name products or categories.\n";
  out += "Now work out the profile for this conversation:\n";
  out += "> Conversation\n";
  out += conversation;
  return out;
}

std::string serialize_interec_conversation(const std::vector<llm::Message>& messages) {
  std::string out;
  for (std::size_t i = 1; i < messages.size(); ++i) {
    const llm::Message& m = messages[i];
    if (i > 1) out += "\n";
    if (m.role == "assistant") {
      out += "assistant:";
      if (!m.tool_calls.empty())
        out += "Function(arguments=" + py::str_repr(m.tool_calls[0].arguments_json) +
               ", name=" + py::str_repr(m.tool_calls[0].name) + ")";
      else
        out += m.content;
    } else {
      out += m.role + ":" + m.content;
    }
  }
  return out;
}

namespace {

std::optional<std::vector<std::string>> string_list(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return std::vector<std::string>{};
  const nlohmann::json& v = j.at(key);
  if (!v.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string()) return std::nullopt;
    add(out, e.get<std::string>());
  }
  return out;
}

}  // namespace

std::optional<InterecProfile> parse_interec_profile(std::string_view text, bool from_first_brace) {
  std::string s(text);
  if (from_first_brace) {
    auto p = s.find('{');
    if (p == std::string::npos) return std::nullopt;
    s = s.substr(p);
  }
  for (std::string_view fence : {"```json", "```"})
    for (auto p = s.find(fence); p != std::string::npos; p = s.find(fence)) s.erase(p, fence.size());
  std::erase(s, '\n');
  nlohmann::json j = parse_json_or_discarded(s);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto like = string_list(j, "like"), dislike = string_list(j, "dislike"), expect = string_list(j, "expect");
  if (!like || !dislike || !expect) return std::nullopt;
  return InterecProfile{std::move(*like), std::move(*dislike), std::move(*expect)};
}

// ------------------------------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------------------------------

InterecOptions parse_interec_options(const AgentOptions& options, int run_max_steps) {
  OptionReader r("interecagent", options);
  InterecOptions o;
  r.memory({"interecagent"});  // its only memory: the profile
  o.memory_length = r.memory_length(10);
  o.init = r.choice("interec_init", o.init, {{"llm", InterecInit::kLlm}, {"heuristic", InterecInit::kHeuristic}});
  if (auto file = r.path("interec_memory")) o.memory_file = *file;
  o.max_steps = r.integer("max_steps", run_max_steps, 1, kMaxOptionCount);
  r.finish();
  return o;
}

// ------------------------------------------------------------------------------------------------------------
// The agent: the shared conversation plus the update when the episode is over
// ------------------------------------------------------------------------------------------------------------

class InterecAgentFactory::Agent final : public ToolChatAgent {
 public:
  Agent(const InterecAgentFactory& factory, const data::Task& task, bool planned, bool owns_update,
        InterecProfile snapshot, std::unique_ptr<llm::ChatModel> model)
      : ToolChatAgent(
            [&factory, snapshot = std::move(snapshot)](const data::Task& t, data::Track track, llm::ChatModel&) {
              return SystemPrompt{factory.system_message(t, track, snapshot)};
            },
            factory.context_.llm, factory.tools_json_, std::move(model)),
        factory_(factory),
        task_(task),
        planned_(planned),
        owns_update_(owns_update),
        exceptions_(std::uncaught_exceptions()) {}

  // The runner destroys the agent right after its episode: the update happens here. During unwinding (the
  // episode threw) the turn is released without one.
  ~Agent() override {
    const bool failed = std::uncaught_exceptions() > exceptions_ || messages().empty();
    factory_.finish(task_, planned_, owns_update_, &messages(), failed);
  }

 private:
  const InterecAgentFactory& factory_;
  const data::Task& task_;
  bool planned_, owns_update_;
  int exceptions_;
};

// ------------------------------------------------------------------------------------------------------------
// The factory
// ------------------------------------------------------------------------------------------------------------

namespace {

std::string_view init_name(InterecInit i) { return i == InterecInit::kLlm ? "llm" : "heuristic"; }

}  // namespace

InterecAgentFactory::InterecAgentFactory(InterecOptions options, const AgentContext& context)
    : options_(std::move(options)), context_(context), tools_json_(env::tools_json(/*include_product_details=*/false)) {
  if (!context_.llm.open)
    throw UsageError("the interecagent agent needs --model (and an OpenAI-compatible endpoint), or --replay with a "
                     "recorded --llm-cache");
  if (!context_.ds) throw UsageError("interecagent agent: no dataset");
  // In a run, the memory lives in the run directory unless a file is given, so --resume picks it up.
  if (options_.memory_file.empty() && !context_.run_dir.empty())
    options_.memory_file = context_.run_dir / "interec_memory.json";
  if (!options_.memory_file.empty() && fs::exists(options_.memory_file)) load();
}

InterecAgentFactory::~InterecAgentFactory() = default;

void InterecAgentFactory::load() {
  const std::string where = "interecagent agent: memory file " + options_.memory_file.string();
  std::string text;
  try {
    text = read_file(options_.memory_file);
  } catch (const Error& e) {
    throw UsageError(where + ": " + e.what());
  }
  nlohmann::json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object() || j.value("version", "") != kInterecMemoryVersion)
    throw UsageError(where + " is not a " + std::string(kInterecMemoryVersion) + " file");
  if (j.value("interec_init", "") != init_name(options_.init))
    throw UsageError(where + " was initialized with interec_init=" + j.value("interec_init", std::string("?")) +
                     ", not " + std::string(init_name(options_.init)));
  try {
    for (auto it = j.at("users").begin(); it != j.at("users").end(); ++it) {
      auto user = context_.ds->find_user(it.key());
      if (!user) throw UsageError(where + ": unknown user " + it.key());
      auto p = parse_interec_profile(it.value().dump(), false);
      if (!p) throw UsageError(where + ": bad profile of user " + it.key());
      profiles_[*user] = std::move(*p);
    }
    for (const auto& k : j.at("applied")) applied_.insert(k.get<std::string>());
    const nlohmann::json& s = j.at("stats");
    stats_.n_init_llm = s.at("n_init_llm");
    stats_.n_init_invalid = s.at("n_init_invalid");
    stats_.n_init_failed = s.at("n_init_failed");
    stats_.n_updates = s.at("n_updates");
    stats_.n_update_invalid = s.at("n_update_invalid");
    stats_.n_update_failed = s.at("n_update_failed");
    stats_.n_episode_errors = s.at("n_episode_errors");
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(where + ": " + e.what());
  }
}

std::string InterecAgentFactory::memory_json() const {
  std::lock_guard lock(mu_);
  return memory_json_locked();
}

std::string InterecAgentFactory::memory_json_locked() const {
  nlohmann::ordered_json j;
  j["version"] = kInterecMemoryVersion;
  j["interec_init"] = init_name(options_.init);
  std::map<std::string, const InterecProfile*> by_id;  // sorted by user id: the same file whatever the order
  for (const auto& [user, p] : profiles_) by_id[context_.ds->user(user).id] = &p;
  nlohmann::ordered_json users = nlohmann::ordered_json::object();
  for (const auto& [id, p] : by_id) users[id] = {{"like", p->like}, {"dislike", p->dislike}, {"expect", p->expect}};
  j["users"] = std::move(users);
  std::vector<std::string> applied(applied_.begin(), applied_.end());
  std::sort(applied.begin(), applied.end(), [](const std::string& a, const std::string& b) {
    // By split name, then index as a number (keys of tasks this agent ran; any other text sorts as text).
    const auto ka = data::parse_task_key(a), kb = data::parse_task_key(b);
    if (!ka || !kb) return a < b;
    return std::pair(data::to_string(ka->split), ka->index) < std::pair(data::to_string(kb->split), kb->index);
  });
  j["applied"] = applied;
  j["stats"] = {{"n_init_llm", stats_.n_init_llm},           {"n_init_invalid", stats_.n_init_invalid},
                {"n_init_failed", stats_.n_init_failed},     {"n_updates", stats_.n_updates},
                {"n_update_invalid", stats_.n_update_invalid}, {"n_update_failed", stats_.n_update_failed},
                {"n_episode_errors", stats_.n_episode_errors}};
  return j.dump(1) + "\n";
}

void InterecAgentFactory::save_locked() const {
  if (options_.memory_file.empty()) return;
  // Written under the lock, so a later state can never be overwritten by an earlier one.
  write_file_atomic(options_.memory_file, memory_json_locked());
}

std::string InterecAgentFactory::config_json() const {
  const LlmAccess& llm = context_.llm;
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("agent").value("interecagent");
  write_llm_config(w, llm);
  w.key("memory").value("interecagent");
  w.key("memory_length").value(options_.memory_length);
  w.key("prompts").value(kInterecPromptsVersion);
  w.key("max_steps").value(options_.max_steps);
  w.key("interec_init").value(init_name(options_.init));
  w.end_object();
  return out;
}

void InterecAgentFactory::plan(const std::vector<const data::Task*>& tasks) {
  std::lock_guard lock(mu_);
  queues_.clear();
  for (const auto* t : tasks) {
    std::string key = data::task_key(*t);
    if (!applied_.count(key)) queues_[t->user].push_back(std::move(key));
  }
  planned_ = true;
}

void InterecAgentFactory::ensure_default_plan_locked(data::Split split) const {
  if (planned_) return;
  for (const auto& t : context_.ds->tasks(split)) {
    std::string key = data::task_key(t);
    if (!applied_.count(key)) queues_[t.user].push_back(std::move(key));
  }
  planned_ = true;
}

InterecProfile InterecAgentFactory::profile(data::UserId user) const {
  std::lock_guard lock(mu_);
  auto it = profiles_.find(user);
  return it == profiles_.end() ? InterecProfile{} : it->second;
}

bool InterecAgentFactory::applied(const std::string& task_key) const {
  std::lock_guard lock(mu_);
  return applied_.count(task_key) > 0;
}

InterecStats InterecAgentFactory::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::string InterecAgentFactory::system_message(const data::Task& task, data::Track track,
                                                const InterecProfile& profile) const {
  return interec_system_prompt(track, options_.max_steps) +
         interec_memory(*context_.ds, task, profile, options_.memory_length);
}

std::unique_ptr<env::Agent> InterecAgentFactory::make(const data::Task& task) const {
  const std::string key = data::task_key(task);
  std::unique_lock lock(mu_);
  ensure_default_plan_locked(task.split);
  std::deque<std::string>& queue = queues_[task.user];
  const bool planned = std::find(queue.begin(), queue.end(), key) != queue.end();
  started_.insert(key);
  if (planned) {
    // Wait for the turn. Earlier planned tasks that never reach make() within kInterecGraceSeconds are not part
    // of this invocation (a range, a shard, a record the memory file does not know): the runner hands tasks out
    // in order and calls make() at once, so a real predecessor is always started by then. They are dropped
    // from the queue instead of being waited for forever.
    auto since = std::chrono::steady_clock::now();
    while (queue.front() != key) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (queue.front() == key) break;
      if (std::chrono::steady_clock::now() - since < std::chrono::duration<double>(kInterecGraceSeconds)) continue;
      for (auto it = queue.begin(); *it != key;) {
        if (!started_.count(*it)) it = queue.erase(it);
        else ++it;
      }
      since = std::chrono::steady_clock::now();
    }
  }
  const bool owns_update = !applied_.count(key);
  const bool need_init = !profiles_.count(task.user);
  lock.unlock();

  try {
    if (need_init) {
      InterecProfile p;
      InterecStats delta;
      if (options_.init == InterecInit::kHeuristic) {
        p = heuristic_interec_profile(*context_.ds, task.user);
      } else {
        // One call per user, booked under the task that needed it (role other), before its episode.
        ++delta.n_init_llm;
        llm::ChatRequest req;
        req.model = context_.llm.model;
        req.messages = {llm::Message::system(interec_init_prompt(*context_.ds, task.user))};
        req.temperature = 0.0;
        req.max_tokens = 5000;
        req.seed = context_.llm.seed;
        try {
          auto model = context_.llm.open(key, llm::Role::kOther);
          if (!model) throw UsageError("interecagent agent: the run's LLM access gave no model");
          auto parsed = parse_interec_profile(model->chat(req).message.content, /*from_first_brace=*/true);
          if (parsed) p = std::move(*parsed);
          else ++delta.n_init_invalid;
        } catch (const llm::InfraError&) {
          ++delta.n_init_failed;  // the user starts with an empty profile
        }
        p.expect.clear();  // docs/decisions.md §4.5: the initial profile has "expect": []
      }
      lock.lock();
      if (profiles_.emplace(task.user, std::move(p)).second) {
        stats_.n_init_llm += delta.n_init_llm;
        stats_.n_init_invalid += delta.n_init_invalid;
        stats_.n_init_failed += delta.n_init_failed;
      }
      lock.unlock();
    }
    InterecProfile snapshot = profile(task.user);
    auto model = context_.llm.open(key, llm::Role::kAgent);
    if (!model) throw UsageError("interecagent agent: the run's LLM access gave no model");
    return std::make_unique<Agent>(*this, task, planned, owns_update, std::move(snapshot), std::move(model));
  } catch (...) {
    if (lock.owns_lock()) lock.unlock();
    finish(task, planned, false, nullptr, /*episode_failed=*/true);
    throw;
  }
}

void InterecAgentFactory::finish(const data::Task& task, bool planned, bool owns_update,
                                 const std::vector<llm::Message>* messages, bool episode_failed) const {
  const std::string key = data::task_key(task);
  enum class Outcome { kNone, kApplied, kInvalid, kCallFailed } outcome = Outcome::kNone;
  InterecProfile update;
  if (!episode_failed && owns_update && messages) {
    try {
      llm::ChatRequest req;
      req.model = context_.llm.model;
      req.messages = {llm::Message::system(interec_update_prompt(serialize_interec_conversation(*messages)))};
      req.seed = context_.llm.seed;  // temperature: the service default, as the original
      auto model = context_.llm.open(key, llm::Role::kOther);
      if (!model) throw UsageError("no model");
      auto parsed = parse_interec_profile(model->chat(req).message.content, /*from_first_brace=*/false);
      if (parsed) {
        update = std::move(*parsed);
        outcome = Outcome::kApplied;
      } else {
        outcome = Outcome::kInvalid;
      }
    } catch (...) {
      outcome = Outcome::kCallFailed;  // a destructor must not throw: counted in the file instead
    }
  }
  std::lock_guard lock(mu_);
  try {
    switch (outcome) {
      case Outcome::kApplied:
        apply_interec_update(profiles_[task.user], update);
        ++stats_.n_updates;
        break;
      case Outcome::kInvalid: ++stats_.n_update_invalid; break;
      case Outcome::kCallFailed: ++stats_.n_update_failed; break;
      case Outcome::kNone:
        if (episode_failed) ++stats_.n_episode_errors;
        break;
    }
    if (outcome != Outcome::kNone) applied_.insert(key);
    if (planned) {
      auto& queue = queues_[task.user];
      if (!queue.empty() && queue.front() == key) queue.pop_front();
      else std::erase(queue, key);
    }
    save_locked();
  } catch (const std::exception& e) {
    std::cerr << "interecagent: cannot save the memory file: " << e.what() << "\n";
  }
  cv_.notify_all();
}

}  // namespace pwab::agents
