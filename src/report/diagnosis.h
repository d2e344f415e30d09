// src/report/diagnosis.h: why an agent scored what it did (docs/metrics.md "Diagnosis"), computed from a run's
// records and the dataset alone, so `pwab score --data`, `pwab compare --data`, `pwab report --data` and a
// re-scored or verified run all give the same answer:
//  - a failure taxonomy: one primary category per (task, trial) and flags for what else went wrong;
//  - the user simulator's leaks: per user reply, whether it gave away the target (sim/leaks.h), a leak rate per
//    type, and the multi-turn scores with and without the episodes where the user leaked;
//  - personalization attribution: per task-function call, the share of its parameter that can only have come
//    from the user's own data (history, profile), not from the instruction.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "metrics/metrics.h"
#include "runner/read_run.h"
#include "sim/leaks.h"

namespace pwab::report {

//! The primary category of a (task, trial): exactly one per record, the first that applies in the order infra error,
//! solved, the three "no task function called" endings, wrong function, tool error, then the type's own categories
//! (docs/metrics.md "Failure categories").
enum class Failure : uint8_t {
  kSolved,                 //!< passes the run's pass rule (metrics::passes)
  kInfraError,             //!< the record errored (not the agent's fault; not scored)
  kWrongFunction,          //!< task functions were called, never the one for the task's type
  kToolError,              //!< the right function was called, every time with arguments the tool refused
  kSearchTargetAbsent,     //!< search: the best search returned a list without the target
  kSearchTargetLow,        //!< search: the target was returned, ranked below what the pass rule asks
  kRecommendEmpty,         //!< recommend: the best call gave an empty history list
  kRecommendUnseen,        //!< recommend: target absent, and the list held ASINs not in the visible history
  kRecommendTargetAbsent,  //!< recommend: target absent from the recommendations
  kRecommendTargetLow,     //!< recommend: the target was recommended, ranked below what the pass rule asks
  kReviewLow,              //!< review: the best review's similarity is below the pass threshold
  kStepCap,                //!< no task function called, and the step cap ended the episode
  kStoppedNoAttempt,       //!< no task function called, and the agent stopped
  kTextReply,              //!< no task function called; the agent answered in text (single-turn respond)
};
inline constexpr std::size_t kFailureCount = 14;
//! The stable name in JSON and tables, e.g. "search_target_absent".
std::string_view to_string(Failure f);
//! A one-line definition for tables and the report's legend.
std::string_view describe(Failure f);

//! What else went wrong in an episode, whatever its primary category.
enum Flag : uint32_t {
  kFlagStepCap = 1u << 0,         //!< the step cap ended the episode
  kFlagToolError = 1u << 1,       //!< some call got an "Error: ..." observation (bad arguments, unknown tool)
  kFlagWrongFunction = 1u << 2,   //!< some task-function call was of another type's function
  kFlagRepeatedCall = 1u << 3,    //!< a call repeated an earlier one exactly (name and arguments)
  kFlagIgnoredAnswer = 1u << 4,   //!< asked the user, got an answer, and the next attempt was the previous one again
  kFlagBetterEarlier = 1u << 5,   //!< the last right-function attempt scored below an earlier one
  kFlagUnseenHistory = 1u << 6,   //!< a recommend call listed ASINs not in the user's visible history
  kFlagUserLeaked = 1u << 7,      //!< a user reply gave the target away (sim::find_leak)
};
inline constexpr std::size_t kFlagCount = 8;
//! The stable names of the set bits, in bit order.
std::vector<std::string> flag_names(uint32_t flags);
std::string_view flag_name(std::size_t bit);
std::string_view describe_flag(std::size_t bit);

//! One task-function call's attribution: how much of its parameter is the user's own.
struct Attribution {
  std::size_t action = 0;  //!< index into the record's actions
  data::TaskType kind = data::TaskType::kSearch;  //!< which function (search, recommend or review)
  std::size_t units = 0;     //!< distinct content words (query, review) or ASINs (recommend) of the parameter
  std::size_t personal = 0;  //!< of those, the ones only the user's data explains
  std::vector<std::string> personal_units;  //!< those words or ASINs, in parameter order
  double share() const { return units == 0 ? 0.0 : static_cast<double>(personal) / static_cast<double>(units); }
};

//! Everything diagnosed about one record.
struct RecordDiagnosis {
  std::string task_key;
  int trial = 0;
  data::TaskType type = data::TaskType::kSearch;
  Failure primary = Failure::kSolved;
  uint32_t flags = 0;
  std::string detail;          //!< e.g. "called search_product_by_query, needed get_recommendations_by_history"
  int user_replies = 0;        //!< user replies to `respond` (multi-turn)
  int leaked_replies = 0;      //!< of those, replies that leaked
  std::array<int, 3> leak_kinds{};  //!< replies leaking the ASIN, the title, the review
  std::string leak_evidence;   //!< the first leaked text
  std::vector<Attribution> attribution;  //!< per task-function call with a readable parameter
  double score_f = 0, score_r = 0;        //!< the record's docs/decisions.md §3.2 task score (0, 0 for errored records)
};

//! Options of a diagnosis.
struct DiagnosisOptions {
  metrics::PassRule rule;  //!< what "solved" means (the run's pass rule, as pass^k)
  sim::LeakRule leak;
  metrics::BootstrapOptions bootstrap;
};

//! Diagnoses one record against the dataset (its task must be in `ds`: DataError otherwise).
RecordDiagnosis diagnose_record(const runner::TaskRecord& record, const data::Dataset& ds,
                                const DiagnosisOptions& options = {});

//! A share with its bootstrap interval over tasks and the count it averages.
struct ShareCell {
  metrics::Cell cell;
  std::size_t n = 0;
};

//! Per group (search, recommend, review, overall) of a run.
struct DiagnosisGroup {
  std::size_t records = 0;  //!< (task, trial) records, errored ones included
  std::array<std::size_t, kFailureCount> primary{};  //!< records per primary category
  std::array<std::size_t, kFlagCount> flags{};       //!< records with each flag
  // Leaks (multi-turn episodes with user replies).
  std::size_t replies = 0, leaked_replies = 0;
  std::size_t episodes_with_replies = 0, leaked_episodes = 0;
  std::array<std::size_t, 3> leak_kinds{};  //!< replies leaking the ASIN, the title, the review
  //! F. Acc and R. Acc over every scored record, over those without a leaked reply, and the difference
  //! (all − clean) with a paired bootstrap interval (the same draw of tasks for both).
  metrics::Cell f_all, r_all, f_clean, r_clean, f_diff, r_diff;
  std::size_t clean_outcomes = 0;
  // Attribution: per record, the mean share of its task-function calls; then averaged over records.
  ShareCell personal_share;  //!< mean per-record share of personal words / ASINs
  ShareCell personal_any;    //!< share of records with at least one personal word / ASIN in some call
  std::size_t actions = 0;   //!< task-function calls attributed
};

struct Diagnosis {
  bool multi_turn = false;
  std::vector<RecordDiagnosis> records;   //!< in the run's record order
  std::array<DiagnosisGroup, 4> groups;   //!< search, recommend, review, overall
  DiagnosisOptions options;
  //! What the run's user simulator was ("scripted", "llm", "none", ...), from the manifest.
  std::string user_sim;
};

//! Diagnoses every record of `run` and aggregates per group.
Diagnosis diagnose(const runner::Run& run, const data::Dataset& ds, const DiagnosisOptions& options = {});

//! {"pass_rule", "leak_rule", "user_sim", "categories": {"search": {"records", "primary": {name: n}, "flags":
//! {name: n}}, ..., "overall"}, "leaks": {group: {"replies", "leaked_replies", "reply_rate", "episodes",
//! "leaked_episodes", "episode_rate", "kinds": {"asin", "title", "review"}, "scores": {"f_all", "r_all",
//! "f_clean", "r_clean", "f_diff", "r_diff" (cells), "clean_outcomes"}}} (multi-turn only), "attribution": {group:
//! {"actions", "share": cell+n, "any": cell+n}}}. Names of every category and flag appear (zeros included).
std::string diagnosis_json(const Diagnosis& d);
//! The same as Markdown tables (categories per type, flags, leaks, attribution), with a definition line each.
std::string diagnosis_markdown(const Diagnosis& d);
//! Per record, as one JSON object per line: {"task", "trial", "type", "category", "flags": [...], "detail",
//! "leaked_replies", "user_replies", "personal_share"}: for filters (the report's viewer) and scripts.
std::string diagnosis_records_jsonl(const Diagnosis& d);

//! Paired movement between two runs' diagnoses: records paired by (task key, trial).
struct DiagnosisComparison {
  std::size_t paired = 0;
  //! [from A's category][to B's category] = paired records.
  std::array<std::array<std::size_t, kFailureCount>, kFailureCount> moves{};
  //! Per group (search, recommend, review, overall): attribution share of A and B on the paired records, and
  //! b − a with a paired bootstrap interval over tasks.
  std::array<metrics::DiffCell, 4> personal_share;
  std::array<std::size_t, 4> personal_paired{};
};
DiagnosisComparison compare_diagnoses(const Diagnosis& a, const Diagnosis& b,
                                      const metrics::BootstrapOptions& options = {});
//! The movement as text: the categories that changed, largest moves first ("18 search_target_absent -> solved"),
//! then the attribution difference per type.
std::string format_diagnosis_comparison(const DiagnosisComparison& c, std::string_view name_a,
                                        std::string_view name_b);
std::string diagnosis_comparison_json(const DiagnosisComparison& c);

}  // namespace pwab::report
