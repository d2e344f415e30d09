// src/sim/llm_user.cpp: the LLM user's prompt (pwab's own wording, the original's layout) and dialogue.
#include "sim/llm_user.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "data/render.h"
#include "sim/leaks.h"

namespace pwab::sim {
namespace {

// --- the profile's archetype phrases (docs/decisions.md §3.4: same traits as the original's tables, own wording) -

struct LevelPhrases {
  const char* high;
  const char* medium;
  const char* low;
};

constexpr LevelPhrases kPricePhrases{
    "a deal hunter: cost weighs heavily on every purchase and you always look for the lowest price.",
    "a balanced buyer who keeps an eye on the price while also weighing quality and features.",
    "a shopper who puts quality and features first and treats the price as secondary.",
};

constexpr LevelPhrases kDiversityPhrases{
    "an adventurous shopper, eager to discover all sorts of products across many different categories. You like "
    "getting recommendations, you buy a broad mix of items whose ratings vary widely, and the ratings you give often "
    "differ from the average. Your reviews are detailed and enthusiastic and show an unconventional taste and a love "
    "of variety.",
    "a moderately curious shopper who enjoys trying something new but still values the familiar. Targeted "
    "recommendations are welcome; you buy a moderate number of items that are well rated by a fair number of "
    "people, and your reviews mix detailed comments with brief, practical notes.",
    "a cautious, selective shopper who sticks to tried-and-tested products and seldom goes for novelties. You buy "
    "relatively few items and favour highly rated ones with many ratings. The ratings you give usually sit close to "
    "the average or a little above it, and your reviews are measured and about products you already know.",
};

constexpr LevelPhrases kInteractionPhrases{
    "a conversationalist who loves detail and enjoys discussing every side of a product or service at length. You "
    "write long reviews, value thorough assistance and are happy to keep a conversation going for many turns.",
    "a middle-of-the-road communicator who balances brevity with detail. You prefer clear communication but go into "
    "more depth when it is needed. Your reviews mix quick remarks with some detailed points, especially when a "
    "product stirs strong feelings in you.",
    "a no-frills communicator who values simplicity and efficiency above all. You prefer quick, direct exchanges "
    "and write brief reviews that stick to a product's essentials.",
};

std::string trim_lower(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  std::string out(s.substr(b, e - b));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

//! The phrase for a High / Medium / Low value, or null for anything else (the original has no entry for it).
const char* level_phrase(const LevelPhrases& phrases, std::string_view value) {
  std::string v = trim_lower(value);
  if (v == "high") return phrases.high;
  if (v == "medium") return phrases.medium;
  if (v == "low") return phrases.low;
  return nullptr;
}

llm::ChatModel& checked(const std::unique_ptr<llm::ChatModel>& model) {
  if (!model) throw UsageError("the LLM user simulator was given no chat model");
  return *model;
}

bool is_blank(std::string_view s) {
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

// --- the system prompt (docs/decisions.md §3.4: the original's layout and rules in order, own wording) -------

constexpr const char* kOpening =
    "You are playing a shopper who is chatting with a shopping assistant that tailors its help to you.";
constexpr const char* kProfileLabel = "Who you are:";
constexpr const char* kWantedLabel = "The product you have in mind:";
constexpr const char* kBoughtLabel = "A product you have bought:";
constexpr const char* kReviewLabel = "The review you wrote of it:";
constexpr const char* kAssistantRole = "The assistant is there to help you get your shopping request done.";

constexpr std::array<const char*, 7> kRules = {
    "- Each turn, write one single line: the shopper's next message.",
    "- Do not make up anything you were not told above.",
    "- Respond only to what the assistant asks; do not ask it questions of your own or give it extra directions.",
    "- Keep the product's specifics to yourself: never state its title, its ASIN or its exact details.",
    "- Do not reuse the wording of your profile or of the product; say the same things in words of your own.",
    "- Sound as natural as you can and stay in character as the person your profile describes.",
    "- When the results fall short, say that you are not satisfied and drop hints that help the assistant see what "
    "you prefer.",
};

constexpr const char* kStopRule =
    "- Once you are satisfied with what the assistant has done, or have nothing left to add, reply with exactly "
    "###STOP### and nothing else.";

}  // namespace

std::string render_user_profile(const data::Profile& profile) {
  auto field = [&](std::string_view name) { return std::string(profile.get(name)); };
  auto level_line = [&](const LevelPhrases& phrases, std::string_view name) -> std::string {
    const char* phrase = level_phrase(phrases, profile.get(name));
    return phrase ? std::string("- You are ") + phrase + "\n" : std::string();
  };
  std::string out = "\n";
  out += "- Gender: " + field("Gender") + "\n";
  out += "- Age: " + field("Age") + "\n";
  out += "- Occupation: " + field("Occupation") + "\n";
  out += level_line(kPricePhrases, "Price Sensitivity");
  out += "- What you like to shop for: " + field("Shopping Interest") + "\n";
  out += "- Brands you lean towards: " + field("Brand Preference") + "\n";
  out += level_line(kDiversityPhrases, "Diversity Preference");
  out += level_line(kInteractionPhrases, "Interaction Complexity");
  out += "- How you usually express yourself: " + field("Tone and Style") + "\n";
  out += "- What you tend to mention: " + field("Item Reference") + "\n";
  out += "- What you care about most: " + field("Focus Aspect") + "\n";
  return out;
}

std::string render_user_product(const data::Product& p) { return "\n" + data::product_fields_block(p) + "\n"; }

std::string llm_user_system_prompt(const data::Dataset& ds, const data::Task& task, bool stop_rule) {
  const data::User& user = ds.user(task.user);
  std::string product = render_user_product(ds.product(task.target_product));
  std::string out = kOpening;
  out += "\n\n";
  out += kProfileLabel;
  out += "\n" + render_user_profile(user.profile) + "\n\n";
  if (task.type == data::TaskType::kReview) {
    out += std::string(kBoughtLabel) + "\n" + product + "\n\n";
    out += std::string(kReviewLabel) + "\n" + task.target_review.text + "\n\n";
  } else {
    out += std::string(kWantedLabel) + "\n" + product + "\n\n";
  }
  out += kAssistantRole;
  out += "\n\nRules:";
  for (const char* rule : kRules) out += std::string("\n") + rule;
  if (stop_rule) out += std::string("\n") + kStopRule;
  return out;
}

LlmUser::LlmUser(const data::Dataset& ds, const data::Task& task, llm::ChatModel& model, std::string model_name,
                 LlmUserOptions options)
    : ds_(ds), task_(task), model_(model), model_name_(std::move(model_name)), options_(options) {
  if (model_name_.empty()) throw UsageError("the LLM user simulator needs a model name (--user-model)");
  if (options_.max_tokens < 1) throw UsageError("the LLM user simulator's max_tokens must be at least 1");
  if (options_.leak_guard < 0) throw UsageError("the LLM user simulator's leak_guard must be 0 (off) or more");
  // docs/decisions.md §3.4: role-flipped. The model plays the user as "assistant"; the agent's turns are "user"
  // turns. The dialogue opens with the agent's greeting and the user's instruction, so the model carries on a
  // conversation it began.
  messages_.push_back(llm::Message::system(llm_user_system_prompt(ds_, task_, options_.stop_rule)));
  messages_.push_back(llm::Message::user(kGreeting));
  messages_.push_back(llm::Message::assistant(task_.instruction));
}

LlmUser::LlmUser(const data::Dataset& ds, const data::Task& task, std::unique_ptr<llm::ChatModel> model,
                 std::string model_name, LlmUserOptions options)
    : LlmUser(ds, task, checked(model), std::move(model_name), options) {
  owned_ = std::move(model);
}

llm::ChatResponse LlmUser::ask(const std::vector<llm::Message>& messages, int sample, std::optional<int64_t> seed) {
  llm::ChatRequest req;
  req.model = model_name_;
  req.messages = messages;
  req.temperature = options_.temperature;
  req.max_tokens = options_.max_tokens;
  req.seed = seed;
  req.sample = sample;
  llm::ChatResponse r = model_.chat(req);  // InfraError / ReplayMissError propagate: the task errors
  ++usage_.calls;
  usage_.prompt_tokens += r.prompt_tokens;
  usage_.completion_tokens += r.completion_tokens;
  if (r.from_cache) ++usage_.cached_calls;
  return r;
}

Leak LlmUser::leak_of(const std::string& text) const {
  // A reply said as the bare sentinel reaches the agent as "###STOP###" whatever else the model wrote.
  if (options_.stop_rule && text.find(kStopSentinel) != std::string::npos) return {};
  return find_leak(text, ds_, task_, options_.leak_rule);
}

std::string LlmUser::rewrite(std::string draft, Leak leak) {
  for (int r = 1; r <= options_.leak_guard; ++r) {
    // The request shows the model its own leaky draft and says what was wrong with it; only the accepted reply
    // enters messages_, so later turns never see the draft or the correction. The correction is a "user" turn, not
    // a system one: many open models' chat templates refuse a system message anywhere but first, and user and
    // assistant turns keep alternating this way.
    std::vector<llm::Message> request = messages_;
    request.push_back(llm::Message::assistant(draft));
    request.push_back(llm::Message::user(leak.review ? kReviewCorrection : kProductCorrection));
    std::optional<int64_t> seed = options_.seed;
    if (seed) *seed += r;
    std::string text = ask(request, options_.sample + kGuardSampleOffset + r, seed).message.content;
    ++n_rewrites_;
    if (is_blank(text)) continue;  // nothing usable: the next rewrite still answers the last leaky draft
    Leak again = leak_of(text);
    if (!again.any()) return text;
    draft = std::move(text);
    leak = again;
  }
  ++n_guard_fallbacks_;
  return kGuardFallbackReply;
}

std::string LlmUser::reply(const std::string& agent_message) {
  // Once the user has said the sentinel (stop_rule only) the dialogue is over for them: no further calls.
  if (stopped_) return kStopSentinel;
  messages_.push_back(llm::Message::user(agent_message));
  std::string text = ask(messages_, options_.sample, options_.seed).message.content;
  if (is_blank(text)) {
    // An empty reply (a content filter, a reply cut before any text) says nothing the agent could use: ask once
    // more, as another sample so that a record/replay cache keeps both, then fall back to a neutral line.
    std::optional<int64_t> seed = options_.seed;
    if (seed) ++*seed;
    text = ask(messages_, options_.sample + kRetrySampleOffset, seed).message.content;
    if (is_blank(text)) {
      text = kFallbackReply;
      ++n_fallback_;
    }
  }
  if (Leak leak = leak_of(text); leak.any()) {
    ++n_leaky_;
    if (options_.leak_guard > 0) text = rewrite(std::move(text), leak);
  }
  messages_.push_back(llm::Message::assistant(text));
  if (options_.stop_rule && text.find(kStopSentinel) != std::string::npos) {
    stopped_ = true;
    return kStopSentinel;
  }
  return text;
}

std::string LlmUser::record_json() const {
  if (options_.leak_guard > 0)
    return fmt::format(R"({{"leak_guard":{},"rewrites":{},"guard_fallbacks":{},"leaky_drafts":{}}})",
                       options_.leak_guard, n_rewrites_, n_guard_fallbacks_, n_leaky_);
  return n_leaky_ > 0 ? fmt::format(R"({{"leaky_drafts":{}}})", n_leaky_) : std::string();
}

}  // namespace pwab::sim
