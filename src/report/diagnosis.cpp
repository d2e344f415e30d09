// The failure taxonomy, the simulator's leaks and personalization attribution of report/diagnosis.h.
#include "report/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_set>

#include "core/error.h"
#include "core/rng.h"
#include "core/text.h"
#include "data/task_key.h"
#include "runner/run_settings.h"
#include "env/tools.h"

namespace pwab::report {
namespace {

using StringSet = std::unordered_set<std::string>;

//! A category's or a flag's stable name and its one-line definition.
struct Named {
  std::string_view name, definition;
};
constexpr Named kFailures[kFailureCount] = {
    {"solved", "passes the run's pass rule"},
    {"infra_error", "an infrastructure error ended the task (not scored)"},
    {"wrong_function", "called task functions, never the one for the task's type"},
    {"tool_error", "called the right function, but its arguments were refused every time"},
    {"search_target_absent", "search: the best search's results did not contain the target"},
    {"search_target_low", "search: the target was found, ranked below what the pass rule asks"},
    {"recommend_empty_list", "recommend: the best call passed an empty history"},
    {"recommend_unseen_history", "recommend: target absent; the history passed held ASINs the user never had"},
    {"recommend_target_absent", "recommend: the target was not among the recommendations"},
    {"recommend_target_low", "recommend: the target was recommended, ranked below what the pass rule asks"},
    {"review_low_similarity", "review: the best review's similarity is below the pass threshold"},
    {"step_cap", "no task function called before the step cap"},
    {"stopped_without_attempt", "no task function called; the agent stopped"},
    {"text_reply", "no task function called; the agent answered in text"},
};

constexpr Named kFlags[kFlagCount] = {
    {"step_cap", "the step cap ended the episode"},
    {"tool_error", "some call got an error observation (bad arguments, unknown tool)"},
    {"wrong_function", "some task-function call was another type's function"},
    {"repeated_call", "a call repeated an earlier one exactly"},
    {"ignored_answer", "asked the user, then attempted exactly what it had attempted before asking"},
    {"better_earlier", "the last right-function attempt scored below an earlier one"},
    {"unseen_history", "a recommend call listed ASINs not in the user's visible history"},
    {"user_leaked", "a user reply gave the target away"},
};

constexpr std::size_t kOverall = 3;
constexpr std::array<std::string_view, 4> kGroupNames = {"search", "recommend", "review", "overall"};

// Function words that say nothing about a person: a query or review sharing them with the history is not personal.
const StringSet& stop_words() {
  static const StringSet words = {
      "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
      "because", "been", "before", "being", "below", "best", "between", "both", "but", "by", "can", "could", "did",
      "do", "does", "doing", "down", "during", "each", "even", "few", "for", "from", "get", "good", "great", "had",
      "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
      "just", "like", "looking", "me", "more", "most", "much", "my", "need", "new", "no", "nor", "not", "now", "of",
      "off", "on", "once", "one", "only", "or", "other", "our", "out", "over", "own", "product", "products", "really",
      "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these",
      "they", "this", "those", "through", "to", "too", "under", "up", "use", "used", "very", "want", "was", "we",
      "well", "were", "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you",
      "your"};
  return words;
}

//! The content words of a text: leak_words without function words and one-character words.
std::vector<std::string> content_words(std::string_view text) {
  std::vector<std::string> out;
  for (auto& w : sim::leak_words(text))
    if (w.size() > 1 && !stop_words().contains(w)) out.push_back(std::move(w));
  return out;
}

void add_words(StringSet& set, std::string_view text) {
  for (auto& w : content_words(text)) set.insert(std::move(w));
}

//! "test/17" → the task; DataError when the dataset has none.
const data::Task& task_of(const data::Dataset& ds, const std::string& key) {
  if (const data::Task* task = data::task_by_key(ds, key)) return *task;
  throw DataError(fmt::format("record of task '{}', which the dataset does not have (wrong --data?)", key));
}

//! Arguments in one canonical text (keys sorted, compact), so equal calls compare equal however they were spelled.
std::string canonical(const std::string& arguments) {
  auto j = nlohmann::json::parse(arguments, nullptr, false);
  return j.is_discarded() ? arguments : j.dump();
}

bool is_error(const std::string& observation) { return observation.rfind("Error:", 0) == 0; }

//! The 1-based rank of `asin` among the "Parent Asin: X" entries of a results observation; 0 when absent.
std::pair<int, int> rank_in(std::string_view observation, std::string_view asin) {
  constexpr std::string_view kKey = "Parent Asin: ";
  int rank = 0, n = 0;
  for (std::size_t at = observation.find(kKey); at != std::string_view::npos; at = observation.find(kKey, at + 1)) {
    ++n;
    std::size_t b = at + kKey.size(), e = b;
    while (e < observation.size() && std::isalnum(static_cast<unsigned char>(observation[e]))) ++e;
    if (rank == 0 && observation.substr(b, e - b) == asin) rank = n;
  }
  return {rank, n};
}

//! The parameter of a task-function call, or nullopt when the arguments do not hold it.
std::optional<nlohmann::json> parameter_of(const env::Action& action) {
  auto j = nlohmann::json::parse(action.arguments_json, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  const char* key = action.name == env::kSearch      ? "query"
                    : action.name == env::kRecommend ? "product_sequence"
                                                     : "review";
  if (!j.contains(key)) return std::nullopt;
  return j[key];
}

std::vector<std::string> asin_list(const nlohmann::json& p) {
  std::vector<std::string> out;
  if (!p.is_array()) return out;
  for (const auto& x : p)
    if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

//! Content words as small integers: each distinct word of the dataset texts a diagnosis looks at is interned once,
//! and the words of a product or a past review are tokenised once per diagnosis instead of once per record that
//! sees them. A word never interned is in none of the user's or product's sets. Not thread-safe: one per diagnose().
class WordCache {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  explicit WordCache(const data::Dataset& ds) : ds_(ds) {}

  //! The id of a word, kNone when no cached text holds it.
  uint32_t find(const std::string& w) const {
    auto it = ids_.find(w);
    return it == ids_.end() ? kNone : it->second;
  }
  //! Title, store, main category and categories of a product (what a visible history shows of it).
  const std::vector<uint32_t>& history_words(data::ProductId id) {
    auto [it, added] = history_.try_emplace(id);
    if (added) {
      const data::Product& p = ds_.product(id);
      add(it->second, p.title);
      if (p.store) add(it->second, *p.store);
      add(it->second, p.main_category);
      for (const auto& c : p.categories) add(it->second, c);
    }
    return it->second;
  }
  //! The title and text of a past review.
  const std::vector<uint32_t>& review_words(const data::Behaviour* b) {
    auto [it, added] = reviews_.try_emplace(b);
    if (added) {
      add(it->second, b->review.title);
      add(it->second, b->review.text);
    }
    return it->second;
  }
  //! Every text field of a product (a review task's target).
  const std::vector<uint32_t>& product_words(data::ProductId id) {
    auto [it, added] = products_.try_emplace(id);
    if (added) {
      const data::Product& p = ds_.product(id);
      it->second = history_words(id);
      for (const auto& f : p.features) add(it->second, f);
      for (const auto& d : p.description) add(it->second, d);
      add(it->second, p.details_json);
    }
    return it->second;
  }
  //! The values of a user's profile fields.
  const std::vector<uint32_t>& profile_words(data::UserId user) {
    auto [it, added] = profiles_.try_emplace(user);
    if (added)
      for (const auto& [name, value] : ds_.user(user).profile.fields) add(it->second, value);
    return it->second;
  }

 private:
  //! content_words(text) as ids. ASCII text (most of it) is split here into one reused buffer, exactly as
  //! sim::leak_words splits it (ASCII letters lower-cased, letters and digits kept, every other byte separates),
  //! without a string per word; other text goes through content_words.
  void add(std::vector<uint32_t>& out, std::string_view text) {
    if (std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
      for (const auto& w : content_words(text)) out.push_back(intern(w));
      return;
    }
    auto flush = [&] {
      if (word_.size() > 1 && !stop_words().contains(word_)) out.push_back(intern(word_));
      word_.clear();
    };
    word_.clear();
    for (char c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 'A' && u <= 'Z') word_ += static_cast<char>(u + ('a' - 'A'));
      else if ((u >= 'a' && u <= 'z') || (u >= '0' && u <= '9')) word_ += c;
      else if (!word_.empty()) flush();
    }
    if (!word_.empty()) flush();
  }
  uint32_t intern(const std::string& w) {
    if (auto it = ids_.find(w); it != ids_.end()) return it->second;
    return ids_.emplace(w, static_cast<uint32_t>(ids_.size())).first->second;
  }
  const data::Dataset& ds_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::unordered_map<data::ProductId, std::vector<uint32_t>> history_, products_;
  std::unordered_map<const data::Behaviour*, std::vector<uint32_t>> reviews_;
  std::unordered_map<data::UserId, std::vector<uint32_t>> profiles_;
  std::string word_;  // add()'s buffer
};

//! The word sets of the record being diagnosed, as marks in per-set arrays indexed by word id: a word is in a set
//! when its mark is the current record's number. Filling a set is one write per word, with no sorting and no
//! allocation once the arrays have grown; begin() empties every set at once.
class WordSets {
 public:
  enum Set { kHistory, kReview, kProfile, kTarget, kCount };
  void begin() { ++record_; }
  void add(Set s, const std::vector<uint32_t>& ids) {
    auto& marks = marks_[s];
    for (uint32_t id : ids) {
      if (id >= marks.size()) marks.resize(std::max<std::size_t>(id + 1, marks.size() * 2), 0);
      marks[id] = record_;
    }
  }
  bool contains(Set s, uint32_t id) const { return id < marks_[s].size() && marks_[s][id] == record_; }

 private:
  std::array<std::vector<uint32_t>, kCount> marks_;
  uint32_t record_ = 0;  // marks start at 0, records at 1
};

//! What the user's own data holds, built once per record: the words of the visible history (titles, stores and
//! categories of its products; its review titles and texts), of its reviews only and of the profile in `sets`.
struct UserData {
  StringSet history_asins;  // upper-cased as stored
};

UserData user_data(const data::Dataset& ds, const data::Task& task, WordCache& words, WordSets& sets) {
  UserData u;
  for (const data::Behaviour* b : ds.visible_history(task)) {
    const data::Product& p = ds.product(b->product);
    u.history_asins.insert(p.parent_asin);
    sets.add(WordSets::kHistory, words.history_words(b->product));
    const auto& r = words.review_words(b);
    sets.add(WordSets::kHistory, r);
    sets.add(WordSets::kReview, r);
  }
  sets.add(WordSets::kProfile, words.profile_words(task.user));
  return u;
}

//! The attribution of one call; `said` holds the words of the instruction and of the user's replies so far.
Attribution attribute(const env::Action& action, const nlohmann::json& param, const UserData& user,
                      const WordCache& words, const WordSets& sets, const StringSet& said,
                      const StringSet& said_lower, bool has_target) {
  Attribution a;
  a.kind = *env::task_type_of_function(action.name);
  std::set<std::string> seen;
  auto count = [&](const std::string& unit, bool personal) {
    if (!seen.insert(unit).second) return;
    ++a.units;
    if (personal) {
      ++a.personal;
      a.personal_units.push_back(unit);
    }
  };
  if (a.kind == data::TaskType::kRecommend) {
    for (const auto& asin : asin_list(param))
      count(asin, user.history_asins.contains(asin) && !said_lower.contains(ascii_lower(asin)));
    return a;
  }
  if (!param.is_string()) return a;
  for (const auto& w : content_words(param.get<std::string>())) {
    if (said.contains(w)) {
      count(w, false);
      continue;
    }
    const uint32_t id = words.find(w);
    if (a.kind == data::TaskType::kSearch) {
      count(w, sets.contains(WordSets::kHistory, id) || sets.contains(WordSets::kProfile, id));
    } else {
      count(w, sets.contains(WordSets::kReview, id) && !(has_target && sets.contains(WordSets::kTarget, id)));
    }
  }
  return a;
}

}  // namespace

std::string_view to_string(Failure f) { return kFailures[static_cast<std::size_t>(f)].name; }
std::string_view describe(Failure f) { return kFailures[static_cast<std::size_t>(f)].definition; }
std::string_view flag_name(std::size_t bit) { return kFlags[bit].name; }
std::string_view describe_flag(std::size_t bit) { return kFlags[bit].definition; }

std::vector<std::string> flag_names(uint32_t flags) {
  std::vector<std::string> out;
  for (std::size_t b = 0; b < kFlagCount; ++b)
    if (flags & (1u << b)) out.emplace_back(kFlags[b].name);
  return out;
}

namespace {

RecordDiagnosis diagnose_one(const runner::TaskRecord& record, const data::Dataset& ds, const DiagnosisOptions& options,
                             WordCache& words, WordSets& sets) {
  RecordDiagnosis d;
  d.task_key = record.task_key;
  d.trial = record.trial;
  d.type = record.type;
  const data::Task& task = task_of(ds, record.task_key);
  const std::string_view right = env::task_function(record.type);
  const std::string& target = ds.product(task.target_product).parent_asin;

  // Walk the trajectory once: flags, the attempts of the right function, user replies and their leaks.
  sets.begin();
  const UserData user = user_data(ds, task, words, sets);
  StringSet said, said_lower;  // instruction and user words: what the agent was told, not what it remembered
  add_words(said, record.instruction);
  for (auto& w : sim::leak_words(record.instruction)) said_lower.insert(w);
  const bool has_target = record.type == data::TaskType::kReview;  // the target's own words are not personal
  if (has_target) sets.add(WordSets::kTarget, words.product_words(task.target_product));

  std::set<std::string> calls_seen;
  bool any_task_call = false, any_right_call = false, any_right_ran = false;
  std::vector<std::pair<double, std::size_t>> right_scores;  // (R, action index) of right calls whose tool ran
  std::optional<std::string> last_attempt;                   // canonical name+args of the latest task-function call
  std::optional<std::string> attempt_before_question;        // the latest attempt when the user last answered
  std::string first_error;
  for (std::size_t i = 0; i < record.actions.size(); ++i) {
    const env::ActionRecord& a = record.actions[i];
    const std::string& name = a.action.name;
    if (name == env::kRespond) {
      const bool reply = !is_error(a.observation) && a.observation != "###STOP###";
      if (reply && !a.observation.empty()) {
        ++d.user_replies;
        sim::Leak leak = sim::find_leak(a.observation, ds, task, options.leak);
        if (leak.any()) {
          ++d.leaked_replies;
          d.leak_kinds[0] += leak.asin;
          d.leak_kinds[1] += leak.title;
          d.leak_kinds[2] += leak.review;
          if (d.leak_evidence.empty()) d.leak_evidence = leak.evidence;
        }
        add_words(said, a.observation);
        for (auto& w : sim::leak_words(a.observation)) said_lower.insert(w);
        if (last_attempt) attempt_before_question = last_attempt;
      }
      continue;
    }
    if (name == env::kStop) continue;
    if (is_error(a.observation)) {
      d.flags |= kFlagToolError;
      if (first_error.empty()) first_error = a.observation;
    }
    const std::string key = name + canonical(a.action.arguments_json);
    if (!calls_seen.insert(key).second) d.flags |= kFlagRepeatedCall;
    auto fn_type = env::task_type_of_function(name);
    if (!fn_type) continue;
    any_task_call = true;
    if (attempt_before_question) {
      if (*attempt_before_question == key) d.flags |= kFlagIgnoredAnswer;
      attempt_before_question.reset();
    }
    last_attempt = key;
    if (name != right) d.flags |= kFlagWrongFunction;
    else any_right_call = true;
    if (name == right && a.scored) {
      any_right_ran = true;
      right_scores.emplace_back(a.reward.result_acc, i);
    }
    if (auto param = parameter_of(a.action)) {
      if (*fn_type == data::TaskType::kRecommend)
        for (const auto& asin : asin_list(*param))
          if (!user.history_asins.contains(asin)) d.flags |= kFlagUnseenHistory;
      Attribution at = attribute(a.action, *param, user, words, sets, said, said_lower, has_target);
      at.action = i;
      d.attribution.push_back(std::move(at));
    }
  }
  if (record.ending == "step_cap") d.flags |= kFlagStepCap;
  if (d.leaked_replies > 0) d.flags |= kFlagUserLeaked;
  if (right_scores.size() >= 2) {
    double best_earlier = right_scores.front().first;
    for (std::size_t k = 0; k + 1 < right_scores.size(); ++k) best_earlier = std::max(best_earlier, right_scores[k].first);
    if (right_scores.back().first < best_earlier) d.flags |= kFlagBetterEarlier;
  }

  // The primary category: the first that applies.
  if (!record.error.empty()) {
    d.primary = Failure::kInfraError;
    d.detail = record.error;
    return d;
  }
  const metrics::TaskOutcome outcome = record.outcome();
  const metrics::TaskScore score = metrics::score_task(outcome);
  d.score_f = score.f;
  d.score_r = score.r;
  const bool solved = metrics::passes(outcome, options.rule);
  // The best right-function attempt, as docs/decisions.md §3.2 picks it: the first with the highest R.
  std::optional<std::size_t> best;
  for (const auto& [r, i] : right_scores)
    if (!best || r > record.actions[*best].reward.result_acc) best = i;

  if (solved) {
    d.primary = Failure::kSolved;
  } else if (!any_task_call) {
    d.primary = record.ending == "step_cap" ? Failure::kStepCap
                : record.ending == "stop"   ? Failure::kStoppedNoAttempt
                                            : Failure::kTextReply;
  } else if (!any_right_call) {
    std::string called;
    for (const auto& a : record.actions)
      if (env::task_type_of_function(a.action.name) && called.find(a.action.name) == std::string::npos)
        called += (called.empty() ? "" : ", ") + a.action.name;
    d.primary = Failure::kWrongFunction;
    d.detail = fmt::format("called {}, needed {}", called, right);
  } else if (!any_right_ran || !best) {
    d.primary = Failure::kToolError;
    d.detail = first_error;
  } else {
    const env::ActionRecord& a = record.actions[*best];
    const double r = a.reward.result_acc;
    auto param = parameter_of(a.action);
    switch (record.type) {
      case data::TaskType::kSearch: {
        auto [rank, n] = rank_in(a.observation, target);
        d.primary = r > 0 ? Failure::kSearchTargetLow : Failure::kSearchTargetAbsent;
        d.detail = r > 0 ? fmt::format("target at rank {} of {}", rank, n) : fmt::format("{} results", n);
        break;
      }
      case data::TaskType::kRecommend: {
        auto [rank, n] = rank_in(a.observation, target);
        const auto asins = param ? asin_list(*param) : std::vector<std::string>{};
        std::size_t unseen = 0;
        for (const auto& x : asins) unseen += !user.history_asins.contains(x);
        if (r > 0) {
          d.primary = Failure::kRecommendTargetLow;
          d.detail = fmt::format("target at rank {} of {}", rank, n);
        } else if (asins.empty()) {
          d.primary = Failure::kRecommendEmpty;
        } else if (unseen > 0) {
          d.primary = Failure::kRecommendUnseen;
          d.detail = fmt::format("{} of {} ASINs not in the visible history", unseen, asins.size());
        } else {
          d.primary = Failure::kRecommendTargetAbsent;
          d.detail = fmt::format("{} ASINs given", asins.size());
        }
        break;
      }
      case data::TaskType::kReview:
        d.primary = Failure::kReviewLow;
        d.detail = fmt::format("similarity {:.3f}, threshold {}", r, options.rule.threshold[2]);
        break;
    }
  }
  return d;
}

}  // namespace

RecordDiagnosis diagnose_record(const runner::TaskRecord& record, const data::Dataset& ds,
                                const DiagnosisOptions& options) {
  WordCache words(ds);
  WordSets sets;
  return diagnose_one(record, ds, options, words, sets);
}

namespace {

using Records = std::vector<const RecordDiagnosis*>;

//! Records grouped by task key, in first-seen order: the clusters a bootstrap draws (a task brings all its trials).
std::vector<Records> clusters_of(const Records& records) {
  std::vector<Records> out;
  std::map<std::string, std::size_t> at;
  for (const RecordDiagnosis* r : records) {
    auto [it, added] = at.emplace(r->task_key, out.size());
    if (added) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

std::optional<double> record_share(const RecordDiagnosis& r) {
  if (r.attribution.empty()) return std::nullopt;
  double s = 0;
  for (const auto& a : r.attribution) s += a.share();
  return s / static_cast<double>(r.attribution.size());
}

bool scored(const RecordDiagnosis& r) { return r.primary != Failure::kInfraError; }

//! Sums over a set of records from which every aggregated figure of a group follows; a bootstrap draw fills one.
struct Sums {
  double n = 0, f = 0, r = 0;                   // scored records
  double n_clean = 0, f_clean = 0, r_clean = 0;  // scored records without a leaked reply
  double n_attr = 0, share = 0, any = 0;        // records with attributed calls

  void add(const RecordDiagnosis& x) {
    if (scored(x)) {
      n += 1, f += x.score_f, r += x.score_r;
      if (x.leaked_replies == 0) n_clean += 1, f_clean += x.score_f, r_clean += x.score_r;
    }
    if (auto s = record_share(x)) {
      n_attr += 1, share += *s;
      bool personal = false;
      for (const auto& a : x.attribution) personal |= a.personal > 0;
      any += personal;
    }
  }
  //! The figures in the order of kFigures; nullopt where a figure has no records.
  std::array<std::optional<double>, 8> figures() const {
    auto mean = [](double sum, double count) { return count > 0 ? std::optional<double>(sum / count) : std::nullopt; };
    std::array<std::optional<double>, 8> out{mean(f, n), mean(r, n), mean(f_clean, n_clean), mean(r_clean, n_clean),
                                             std::nullopt, std::nullopt, mean(share, n_attr), mean(any, n_attr)};
    if (n > 0 && n_clean > 0) out[4] = *out[0] - *out[2], out[5] = *out[1] - *out[3];
    return out;
  }
};

// Stream ids of this file's bootstraps (metrics uses 0..2).
constexpr uint64_t kDiagnosisStream = 20, kCompareShareStream = 40;

//! Counts, and the figures with percentile-bootstrap intervals over task clusters (a drawn task brings all its
//! trials; one draw serves every figure, so "all", "no leak" and their difference are paired). Draws in which a
//! figure has no records (e.g. no clean episode drawn) are left out of that figure's interval.
void aggregate(DiagnosisGroup& g, const Records& rs, const metrics::BootstrapOptions& o, uint64_t group) {
  g.records = rs.size();
  Sums total;
  for (const RecordDiagnosis* r : rs) {
    ++g.primary[static_cast<std::size_t>(r->primary)];
    for (std::size_t b = 0; b < kFlagCount; ++b) g.flags[b] += (r->flags >> b) & 1u;
    g.replies += r->user_replies;
    g.leaked_replies += r->leaked_replies;
    g.episodes_with_replies += r->user_replies > 0;
    g.leaked_episodes += r->leaked_replies > 0;
    for (std::size_t k = 0; k < 3; ++k) g.leak_kinds[k] += r->leak_kinds[k];
    g.actions += r->attribution.size();
    g.clean_outcomes += scored(*r) && r->leaked_replies == 0;
    total.add(*r);
  }
  g.personal_share.n = g.personal_any.n = static_cast<std::size_t>(total.n_attr);
  const auto values = total.figures();
  std::array<std::vector<double>, 8> draws;
  // Each task's sums once; a draw adds up the drawn tasks' sums.
  const auto clusters = clusters_of(rs);
  std::vector<Sums> per_task(clusters.size());
  for (std::size_t c = 0; c < clusters.size(); ++c)
    for (const RecordDiagnosis* r : clusters[c]) per_task[c].add(*r);
  if (!clusters.empty() && o.resamples > 0) {
    Rng rng(derive_seed(o.seed, kDiagnosisStream, group));
    for (int k = 0; k < o.resamples; ++k) {
      Sums s;
      for (std::size_t c = 0; c < clusters.size(); ++c) {
        const Sums& t = per_task[rng.below(clusters.size())];
        s.n += t.n, s.f += t.f, s.r += t.r, s.n_clean += t.n_clean, s.f_clean += t.f_clean, s.r_clean += t.r_clean;
        s.n_attr += t.n_attr, s.share += t.share, s.any += t.any;
      }
      const auto v = s.figures();
      for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i]) draws[i].push_back(*v[i]);
    }
  }
  std::array<metrics::Cell*, 8> cells{&g.f_all,   &g.r_all,  &g.f_clean,           &g.r_clean,
                                      &g.f_diff,  &g.r_diff, &g.personal_share.cell, &g.personal_any.cell};
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const double value = values[i].value_or(0.0);
    *cells[i] = o.resamples == 0 || clusters.empty()
                    ? metrics::Cell{value, value, value}
                    : metrics::percentile_interval(value, std::move(draws[i]), o.confidence);
  }
}

std::string user_sim_of(const runner::Run& run) {
  return runner::settings_of(run.manifest).user_sim.value_or("unknown");
}

}  // namespace

Diagnosis diagnose(const runner::Run& run, const data::Dataset& ds, const DiagnosisOptions& options) {
  Diagnosis d;
  d.multi_turn = run.track == data::Track::kMultiTurn;
  d.options = options;
  d.user_sim = user_sim_of(run);
  d.records.reserve(run.records.size());
  WordCache words(ds);  // each product's and past review's words tokenised once for the whole run
  WordSets sets;
  for (const auto& record : run.records) {
    try {
      d.records.push_back(diagnose_one(record, ds, options, words, sets));
    } catch (const DataError& e) {
      throw DataError(fmt::format("{}: {}", run.dir.string(), e.what()));
    }
  }
  std::array<Records, 4> by_group;
  for (const auto& r : d.records) {
    by_group[metrics::type_index(r.type)].push_back(&r);
    by_group[kOverall].push_back(&r);
  }
  for (std::size_t g = 0; g < 4; ++g) aggregate(d.groups[g], by_group[g], options.bootstrap, g);
  return d;
}

namespace {

using OJson = nlohmann::ordered_json;

OJson cell_json(const metrics::Cell& c) { return {{"value", c.value}, {"ci_low", c.ci_low}, {"ci_high", c.ci_high}}; }

OJson share_json(const ShareCell& s) {
  OJson j = cell_json(s.cell);
  j["n"] = s.n;
  return j;
}

double rate(std::size_t part, std::size_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

std::string diagnosis_json(const Diagnosis& d) {
  OJson j;
  j["pass_rule"] = {{"search", d.options.rule.threshold[0]}, {"recommend", d.options.rule.threshold[1]},
                    {"review", d.options.rule.threshold[2]}};
  j["leak_rule"] = {{"title_words", d.options.leak.title_words}, {"review_words", d.options.leak.review_words}};
  j["user_sim"] = d.user_sim;
  OJson categories, leaks, attribution;
  for (std::size_t g = 0; g < 4; ++g) {
    const DiagnosisGroup& x = d.groups[g];
    OJson primary, flags;
    for (std::size_t c = 0; c < kFailureCount; ++c) primary[std::string(kFailures[c].name)] = x.primary[c];
    for (std::size_t b = 0; b < kFlagCount; ++b) flags[std::string(kFlags[b].name)] = x.flags[b];
    categories[std::string(kGroupNames[g])] = {{"records", x.records}, {"primary", primary}, {"flags", flags}};
    if (d.multi_turn)
      leaks[std::string(kGroupNames[g])] = {
          {"replies", x.replies},
          {"leaked_replies", x.leaked_replies},
          {"reply_rate", rate(x.leaked_replies, x.replies)},
          {"episodes", x.episodes_with_replies},
          {"leaked_episodes", x.leaked_episodes},
          {"episode_rate", rate(x.leaked_episodes, x.episodes_with_replies)},
          {"kinds", {{"asin", x.leak_kinds[0]}, {"title", x.leak_kinds[1]}, {"review", x.leak_kinds[2]}}},
          {"scores",
           {{"f_all", cell_json(x.f_all)},
            {"r_all", cell_json(x.r_all)},
            {"f_clean", cell_json(x.f_clean)},
            {"r_clean", cell_json(x.r_clean)},
            {"f_diff", cell_json(x.f_diff)},
            {"r_diff", cell_json(x.r_diff)},
            {"clean_outcomes", x.clean_outcomes}}}};
    attribution[std::string(kGroupNames[g])] = {
        {"actions", x.actions}, {"share", share_json(x.personal_share)}, {"any", share_json(x.personal_any)}};
  }
  j["categories"] = categories;
  if (d.multi_turn) j["leaks"] = leaks;
  j["attribution"] = attribution;
  return j.dump(2) + "\n";
}

std::string diagnosis_records_jsonl(const Diagnosis& d) {
  std::string out;
  for (const auto& r : d.records) {
    OJson j = {{"task", r.task_key},
               {"trial", r.trial},
               {"type", data::to_string(r.type)},
               {"category", to_string(r.primary)},
               {"flags", flag_names(r.flags)},
               {"detail", r.detail},
               {"user_replies", r.user_replies},
               {"leaked_replies", r.leaked_replies}};
    if (auto s = record_share(r)) j["personal_share"] = *s;
    else j["personal_share"] = nullptr;
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return out;
}

namespace {

std::string pct(std::size_t part, std::size_t whole) {
  return whole == 0 ? "0" : fmt::format("{} ({:.0f}%)", part, 100.0 * rate(part, whole));
}

}  // namespace

std::string diagnosis_markdown(const Diagnosis& d) {
  std::string out = "\n## Why tasks fail\n\nOne primary category per (task, trial), the first that applies "
                    "(docs/metrics.md \"Diagnosis\").\n\n";
  out += "| Category | Search | Recommendation | Review | Overall | Definition |\n|---|---|---|---|---|---|\n";
  for (std::size_t c = 0; c < kFailureCount; ++c) {
    if (d.groups[kOverall].primary[c] == 0 && c != 0) continue;
    out += fmt::format("| {} |", kFailures[c].name);
    for (std::size_t g = 0; g < 4; ++g) out += " " + pct(d.groups[g].primary[c], d.groups[g].records) + " |";
    out += fmt::format(" {} |\n", kFailures[c].definition);
  }
  out += "\nFlags (records with each; a record may have several):\n\n";
  out += "| Flag | Search | Recommendation | Review | Overall | Definition |\n|---|---|---|---|---|---|\n";
  for (std::size_t b = 0; b < kFlagCount; ++b) {
    out += fmt::format("| {} |", kFlags[b].name);
    for (std::size_t g = 0; g < 4; ++g) out += " " + pct(d.groups[g].flags[b], d.groups[g].records) + " |";
    out += fmt::format(" {} |\n", kFlags[b].definition);
  }
  if (d.multi_turn) {
    out += fmt::format("\n## User simulator leaks ({} user)\n\nA reply leaks when it holds the target's ASIN, {} "
                       "consecutive words of its title, or (review tasks) {} consecutive words of the true review.\n\n",
                       d.user_sim, d.options.leak.title_words, d.options.leak.review_words);
    out += "| | Search | Recommendation | Review | Overall |\n|---|---|---|---|---|\n";
    auto row = [&](std::string_view name, const std::function<std::string(const DiagnosisGroup&)>& f) {
      out += fmt::format("| {} |", name);
      for (const auto& g : d.groups) out += " " + f(g) + " |";
      out += "\n";
    };
    row("Leaked replies", [](const DiagnosisGroup& g) { return pct(g.leaked_replies, g.replies) + fmt::format(" of {}", g.replies); });
    row("Leaked episodes", [](const DiagnosisGroup& g) {
      return pct(g.leaked_episodes, g.episodes_with_replies) + fmt::format(" of {}", g.episodes_with_replies);
    });
    row("F. Acc, all", [](const DiagnosisGroup& g) { return metrics::format_cell(g.f_all); });
    row("F. Acc, no leak", [](const DiagnosisGroup& g) { return metrics::format_cell(g.f_clean); });
    row("F. Acc, all − no leak", [](const DiagnosisGroup& g) { return metrics::format_diff(g.f_diff); });
    row("R. Acc, all", [](const DiagnosisGroup& g) { return metrics::format_cell(g.r_all); });
    row("R. Acc, no leak", [](const DiagnosisGroup& g) { return metrics::format_cell(g.r_clean); });
    row("R. Acc, all − no leak", [](const DiagnosisGroup& g) { return metrics::format_diff(g.r_diff); });
  }
  out += "\n## Personalization attribution\n\nPer task-function call, the share of its distinct content words "
         "(recommend: ASINs) that only the user's own data explains: found in the visible history or profile "
         "(review: the user's past reviews) and not in the instruction, the user's replies or (review) the "
         "product. Mean per record, then over records.\n\n";
  out += "| | Search | Recommendation | Review | Overall |\n|---|---|---|---|---|\n| Personal share |";
  for (const auto& g : d.groups) out += " " + metrics::format_cell(g.personal_share.cell) + " |";
  out += "\n| Records with any |";
  for (const auto& g : d.groups) out += " " + metrics::format_cell(g.personal_any.cell) + " |";
  out += "\n| Calls attributed |";
  for (const auto& g : d.groups) out += fmt::format(" {} |", g.actions);
  out += "\n";
  return out;
}

DiagnosisComparison compare_diagnoses(const Diagnosis& a, const Diagnosis& b, const metrics::BootstrapOptions& o) {
  DiagnosisComparison c;
  std::map<std::pair<std::string, int>, const RecordDiagnosis*> in_b;
  for (const auto& r : b.records) in_b[{r.task_key, r.trial}] = &r;
  std::array<Records, 4> a_side, b_side;
  for (const auto& r : a.records) {
    auto it = in_b.find({r.task_key, r.trial});
    if (it == in_b.end()) continue;
    ++c.paired;
    ++c.moves[static_cast<std::size_t>(r.primary)][static_cast<std::size_t>(it->second->primary)];
    if (r.attribution.empty() || it->second->attribution.empty()) continue;
    for (std::size_t g : {metrics::type_index(r.type), kOverall}) {
      a_side[g].push_back(&r);
      b_side[g].push_back(it->second);
    }
  }
  for (std::size_t g = 0; g < 4; ++g) {
    // One draw of task clusters serves both runs: resample indices of the paired list, grouped by task key.
    const Records& ra = a_side[g];
    const Records& rb = b_side[g];
    c.personal_paired[g] = ra.size();
    auto mean_diff = [&](const std::vector<std::size_t>& idx) {
      double sa = 0, sb = 0;
      for (std::size_t i : idx) {
        sa += *record_share(*ra[i]);
        sb += *record_share(*rb[i]);
      }
      const double n = static_cast<double>(idx.size());
      return std::array<double, 3>{sa / n, sb / n, (sb - sa) / n};
    };
    metrics::DiffCell& cell = c.personal_share[g];
    if (ra.empty()) continue;
    std::vector<std::size_t> all(ra.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    auto v = mean_diff(all);
    cell.a = v[0];
    cell.b = v[1];
    std::vector<std::vector<std::size_t>> clusters;
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < ra.size(); ++i) {
      auto [it, added] = at.emplace(ra[i]->task_key, clusters.size());
      if (added) clusters.emplace_back();
      clusters[it->second].push_back(i);
    }
    std::vector<double> draws;
    Rng rng(derive_seed(o.seed, kCompareShareStream, g));
    std::vector<std::size_t> idx;
    for (int k = 0; k < o.resamples; ++k) {
      idx.clear();
      for (std::size_t j = 0; j < clusters.size(); ++j) {
        const auto& pick = clusters[rng.below(clusters.size())];
        idx.insert(idx.end(), pick.begin(), pick.end());
      }
      draws.push_back(mean_diff(idx)[2]);
    }
    cell.diff = metrics::percentile_interval(v[2], std::move(draws), o.confidence);
  }
  return c;
}

namespace {

struct Move {
  std::size_t from, to, n;
};

std::vector<Move> changed_moves(const DiagnosisComparison& c) {
  std::vector<Move> moves;
  for (std::size_t i = 0; i < kFailureCount; ++i)
    for (std::size_t k = 0; k < kFailureCount; ++k)
      if (i != k && c.moves[i][k] > 0) moves.push_back({i, k, c.moves[i][k]});
  std::stable_sort(moves.begin(), moves.end(), [](const Move& x, const Move& y) { return x.n > y.n; });
  return moves;
}

}  // namespace

std::string format_diagnosis_comparison(const DiagnosisComparison& c, std::string_view name_a,
                                        std::string_view name_b) {
  std::string out = fmt::format("\nFailure categories, {} paired records, A = {} → B = {}:\n", c.paired, name_a, name_b);
  std::size_t same = 0;
  for (std::size_t i = 0; i < kFailureCount; ++i) same += c.moves[i][i];
  auto moves = changed_moves(c);
  if (moves.empty()) out += "  no record changed category\n";
  for (const Move& m : moves)
    out += fmt::format("  {:>6}  {} → {}\n", m.n, kFailures[m.from].name, kFailures[m.to].name);
  out += fmt::format("  {:>6}  unchanged\n", same);
  out += "\nPersonal share of the agent's parameters (paired records with attributed calls), B − A:\n";
  for (std::size_t g = 0; g < 4; ++g) {
    const auto& cell = c.personal_share[g];
    out += fmt::format("  {:<10} n = {:<5} A {:.3f}  B {:.3f}  {}\n", kGroupNames[g], c.personal_paired[g], cell.a, cell.b,
                       metrics::format_diff(cell.diff));
  }
  return out;
}

std::string diagnosis_comparison_json(const DiagnosisComparison& c) {
  OJson j;
  j["paired"] = c.paired;
  OJson moves = OJson::array();
  for (const Move& m : changed_moves(c))
    moves.push_back({{"from", kFailures[m.from].name}, {"to", kFailures[m.to].name}, {"count", m.n}});
  j["moves"] = moves;
  std::size_t same = 0;
  for (std::size_t i = 0; i < kFailureCount; ++i) same += c.moves[i][i];
  j["unchanged"] = same;
  OJson share;
  for (std::size_t g = 0; g < 4; ++g) {
    const auto& cell = c.personal_share[g];
    share[std::string(kGroupNames[g])] = {
        {"n", c.personal_paired[g]}, {"a", cell.a}, {"b", cell.b}, {"diff", cell_json(cell.diff)}};
  }
  j["personal_share"] = share;
  return j.dump(2) + "\n";
}

}  // namespace pwab::report
