// src/agents/heuristic_agent.cpp: option parsing, the factory, and the per-episode state machine of the heuristic.
#include "core/sys.h"
#include "agents/heuristic_agent.h"
#include "agents/agent_options.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_writer.h"
#include "core/text.h"
#include "env/tools.h"

namespace fs = std::filesystem;

namespace pwab::agents {

// ------------------------------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------------------------------

HeuristicOptions parse_heuristic_options(const AgentOptions& options, int run_max_steps) {
  OptionReader r("heuristic", options);
  HeuristicOptions o;
  o.memory = r.memory({"taskspec", "none"}) == "taskspec";
  o.memory_length = r.memory_length(10);
  o.relevance = r.relevance(o.relevance);
  o.max_steps = r.integer("max_steps", run_max_steps, 1, kMaxOptionCount);
  o.review_from_memory = r.flag("review_from_memory", o.review_from_memory);
  o.recommend_questions = r.integer("recommend_questions", o.recommend_questions, 0, kMaxOptionCount);
  HeuristicPolicy& p = o.policy;
  p.search_memory_brand = r.flag("search_memory_brand", p.search_memory_brand);
  p.search_brand_votes = r.integer("search_brand_votes", p.search_brand_votes, 1, kMaxOptionCount);
  p.search_brand_min_overlap = r.integer("search_brand_min_overlap", p.search_brand_min_overlap, 0, kMaxOptionCount);
  p.search_brand_min_count = r.integer("search_brand_min_count", p.search_brand_min_count, 1, kMaxOptionCount);
  p.recommend_same_category = r.flag("recommend_same_category", p.recommend_same_category);
  p.recommend_max_items = r.integer("recommend_max_items", p.recommend_max_items, 1, kMaxOptionCount);
  p.review_own_phrasing = r.flag("review_own_phrasing", p.review_own_phrasing);
  p.review_habits = r.flag("review_habits", p.review_habits);
  p.review_verdict = r.flag("review_verdict", p.review_verdict);
  r.finish();
  return o;
}

// ------------------------------------------------------------------------------------------------------------
// The agent
// ------------------------------------------------------------------------------------------------------------

struct HeuristicAgentFactory::Shared {
  const data::Dataset& ds;
  const embed::Embedder* embedder;
  const FunctionClassifier& classifier;
  const BehaviourVectors* vectors;
  const HeuristicOptions& options;
};

namespace {

env::AgentStep action(std::string_view name, std::string arguments_json) {
  return {{std::string(name), std::move(arguments_json)}, 0, 0};
}

std::string json_object(std::string_view key, std::string_view value) {
  std::string out;
  JsonWriter(out).begin_object().key(key).value(value).end_object();
  return out;
}

//! The product a review task is about, as the first observation shows it ("- Parent Asin: <asin>").
const data::Product* product_in_observation(const data::Dataset& ds, std::string_view observation) {
  constexpr std::string_view kMarker = "- Parent Asin: ";
  auto p = observation.find(kMarker);
  if (p == std::string_view::npos) return nullptr;
  auto e = observation.find('\n', p);
  std::string_view asin = trim(observation.substr(p + kMarker.size(), e == std::string_view::npos ? e : e - p - kMarker.size()));
  auto id = ds.find_product(asin);
  return id ? &ds.product(*id) : nullptr;
}

//! When the user says the agent used the wrong tool, the tool they describe ("find ... with a search",
//! "recommend something", "write a review"); empty otherwise.
std::string corrected_function(std::string_view reply) {
  std::string lr = ascii_lower(reply);
  if (lr.find("not what i asked") == std::string::npos) return {};
  if (lr.find("review") != std::string::npos) return std::string(env::kAddReview);
  if (lr.find("recommend") != std::string::npos) return std::string(env::kRecommend);
  if (lr.find("search") != std::string::npos || lr.find("find") != std::string::npos) return std::string(env::kSearch);
  return {};
}

class HeuristicAgent final : public env::Agent {
 public:
  explicit HeuristicAgent(const HeuristicAgentFactory::Shared& shared) : s_(shared) {}

  void begin(const data::Task& task, const std::string& first_observation, data::Track track) override {
    // Only the instruction, the user and the time are read from the task: never its target.
    instruction_ = task.instruction;
    track_ = track;
    set_function(s_.classifier.predict(instruction_).function);
    reviewed_ = product_in_observation(s_.ds, first_observation);
    if (s_.options.memory) {
      history_ = s_.ds.visible_history(task.user, task.timestamp);
      RelevanceOptions ro{s_.options.memory_length, s_.options.relevance, s_.vectors};
      memory_ = relevant_items(s_.ds, task.user, history_, instruction_, *s_.embedder, ro);
    }
  }

  env::AgentStep next(const std::string& observation) override {
    ++steps_;
    if (track_ == data::Track::kSingleTurn || phase_ == Phase::kFirstCall) return call();
    if (phase_ == Phase::kAfterCall) return ask_or_stop();
    return read_reply(observation);
  }

 private:
  enum class Phase { kFirstCall, kAfterCall, kAfterQuestion };

  void set_function(std::string function) {
    function_ = std::move(function);
    type_ = env::task_type_of_function(function_).value_or(data::TaskType::kSearch);
  }

  env::AgentStep call() {
    phase_ = Phase::kAfterCall;
    last_arguments_ = arguments();
    return action(function_, last_arguments_);
  }

  //! After a call: ask for feedback while a reply can still be used (it needs one more step).
  env::AgentStep ask_or_stop() {
    if (steps_ + 1 > s_.options.max_steps) return action(env::kStop, "{}");
    int budget = type_ == data::TaskType::kRecommend ? s_.options.recommend_questions : s_.options.max_steps;
    if (static_cast<int>(asked_.size()) >= budget) return action(env::kStop, "{}");
    std::string q = next_question(type_, clues_, asked_, instruction_names_brand(instruction_, memory_));
    asked_.push_back(q);
    phase_ = Phase::kAfterQuestion;
    return action(env::kRespond, json_object("content", q));
  }

  //! After a question: stop when satisfied, call again when the reply changed the call, else ask once more.
  env::AgentStep read_reply(const std::string& reply) {
    if (std::string f = corrected_function(reply); !f.empty() && f != function_) {
      set_function(f);
      return call();
    }
    fold_reply(reply, type_, clues_);
    if (clues_.satisfied) return action(env::kStop, "{}");
    if (arguments() != last_arguments_) {
      idle_replies_ = 0;
      return call();
    }
    // Nothing new: one more question unless the user has run out of things to say.
    if (clues_.exhausted || ++idle_replies_ >= 2) return action(env::kStop, "{}");
    phase_ = Phase::kAfterCall;
    return ask_or_stop();
  }

  std::string arguments() const {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    switch (type_) {
      case data::TaskType::kSearch:
        w.key("query").value(build_search_query(instruction_, memory_, clues_, s_.options.policy));
        break;
      case data::TaskType::kRecommend:
        w.key("product_sequence").string_array(build_recommend_sequence(s_.ds, history_, memory_, clues_, s_.options.policy));
        break;
      case data::TaskType::kReview:
        w.key("review").value(build_review(instruction_, reviewed_, review_sources(), s_.ds, clues_, s_.options.policy));
        break;
    }
    w.end_object();
    return out;
  }

  //! The past reviews whose phrasing the review reuses, in the order build_review prefers the last ones: the
  //! whole visible history with the memory items moved to the end, most relevant last (or the memory items
  //! alone, in time order).
  std::vector<const data::Behaviour*> review_sources() const {
    std::vector<const data::Behaviour*> out;
    if (s_.options.review_from_memory) {
      std::vector<const MemoryItem*> items;
      for (const auto& m : memory_) items.push_back(&m);
      std::sort(items.begin(), items.end(), [](const MemoryItem* a, const MemoryItem* b) { return a->position < b->position; });
      for (const auto* m : items) out.push_back(m->behaviour);
      return out;
    }
    auto in_memory = [&](const data::Behaviour* b) {
      return std::any_of(memory_.begin(), memory_.end(), [&](const MemoryItem& m) { return m.behaviour == b; });
    };
    for (const auto* b : history_)
      if (!in_memory(b)) out.push_back(b);
    for (auto it = memory_.rbegin(); it != memory_.rend(); ++it) out.push_back(it->behaviour);
    return out;
  }

  const HeuristicAgentFactory::Shared& s_;
  std::string instruction_;
  data::Track track_ = data::Track::kSingleTurn;
  std::string function_;
  data::TaskType type_ = data::TaskType::kSearch;
  const data::Product* reviewed_ = nullptr;
  std::vector<const data::Behaviour*> history_;  // empty for the no-memory variant
  std::vector<MemoryItem> memory_;
  Clues clues_;
  std::vector<std::string> asked_;
  std::string last_arguments_;
  Phase phase_ = Phase::kFirstCall;
  int steps_ = 0;
  int idle_replies_ = 0;
};

}  // namespace

// ------------------------------------------------------------------------------------------------------------
// The factory
// ------------------------------------------------------------------------------------------------------------

HeuristicAgentFactory::HeuristicAgentFactory(HeuristicOptions options, const AgentContext& context)
    : options_(std::move(options)), context_(context) {
  if (!context_.ds) throw UsageError("heuristic agent: no dataset");
  if (options_.memory && !context_.embedder) throw UsageError("heuristic agent: task-specific memory needs an embedder");
  fs::path cache = context_.cache_dir.empty() ? private_cache_dir("agents") : context_.cache_dir;
  classifier_ = FunctionClassifier::open_or_train(*context_.ds, cache);
  if (options_.memory && options_.relevance == RelevanceText::kCompact)
    vectors_ = std::make_unique<BehaviourVectors>(*context_.ds, *context_.embedder);
  shared_.reset(new Shared{*context_.ds, context_.embedder, *classifier_, vectors_.get(), options_});
}

HeuristicAgentFactory::~HeuristicAgentFactory() = default;

std::string HeuristicAgentFactory::config_json() const {
  const HeuristicPolicy& p = options_.policy;
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("agent").value("heuristic");
  w.key("memory").value(options_.memory ? "taskspec" : "none");
  w.key("memory_length").value(options_.memory_length);
  w.key("relevance").value(options_.relevance == RelevanceText::kCompact ? "compact" : "full");
  w.key("max_steps").value(options_.max_steps);
  w.key("review_from_memory").value(options_.review_from_memory);
  w.key("recommend_questions").value(options_.recommend_questions);
  w.key("search_memory_brand").value(p.search_memory_brand);
  w.key("search_brand_votes").value(p.search_brand_votes);
  w.key("search_brand_min_overlap").value(p.search_brand_min_overlap);
  w.key("search_brand_min_count").value(p.search_brand_min_count);
  w.key("recommend_same_category").value(p.recommend_same_category);
  w.key("recommend_max_items").value(p.recommend_max_items);
  w.key("review_own_phrasing").value(p.review_own_phrasing);
  w.key("review_habits").value(p.review_habits);
  w.key("review_verdict").value(p.review_verdict);
  w.key("function_classifier").value(classifier_->description());
  w.key("embedder").value(context_.embedder ? context_.embedder->name() : std::string());
  w.end_object();
  return out;
}

std::unique_ptr<env::Agent> HeuristicAgentFactory::make(const data::Task&) const {
  return std::make_unique<HeuristicAgent>(*shared_);
}

}  // namespace pwab::agents
