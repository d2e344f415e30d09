// src/report/analysis.h: the paper's analysis figures computed from a run's records (docs/report.md "Analysis"):
//  - time per task (Figure 7, §6.2.1): wall time of each finished (task, trial), the agent's and the
//    environment's (tools and user simulator) parts, per task type and overall;
//  - action transitions (Figure 8, §6.2.2), multi-turn runs: which function the agent called at each turn and
//    which followed which, per task type;
//  - results by attempt step (Figure 9, §6.2.3), multi-turn runs: per number of agent steps an episode took, how
//    many tasks ended there, how many of them were solved, and their Res Acc.
// `pwab score --format json|md` prints these beside the scores and `pwab report` draws them, from the same
// structures, so the page shows the numbers `pwab score` prints.
#pragma once
#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metrics.h"
#include "runner/read_run.h"

namespace pwab::report {

//! Seconds per finished (task, trial) of one group (errored records are left out).
struct TimeStats {
  std::size_t n = 0;
  double mean = 0;        //!< agent + environment
  double median = 0;      //!< nearest rank
  double p90 = 0;         //!< nearest rank
  double mean_agent = 0;  //!< the agent deciding (LLM calls included)
  double mean_env = 0;    //!< tools and the user simulator
};

//! The short names of the functions in the transition figures: search, recommend, review, details, respond, stop;
//! "other" for a name that is none of them (an agent's invalid call). "start" and "end" bound each episode.
std::string action_label(const std::string& function_name);

using Transition = std::pair<std::string, std::string>;  //!< (from, to)

//! Figure 8 for one task type: the agent's actions turn by turn over the type's episodes.
struct TurnFlow {
  std::size_t episodes = 0;
  //! [t − 1]: per action label, the episodes whose turn t was that action.
  std::vector<std::map<std::string, std::size_t>> actions;
  //! [t − 1]: (the action at turn t − 1, or "start" for t = 1) → (the action at turn t), counted.
  std::vector<std::map<Transition, std::size_t>> links;
  //! Every transition over all turns, with "start" before the first action and "end" after the last.
  std::map<Transition, std::size_t> totals;
};

//! Figure 9: the episodes that ended after `step` agent steps.
struct StepRow {
  int step = 0;
  std::size_t ended = 0;   //!< (task, trial) episodes that took exactly `step` steps
  std::size_t solved = 0;  //!< of those, the ones that pass (metrics::passes under the summary's rule)
  double r_acc = 0;        //!< their mean docs/decisions.md §3.2 Res Acc (0 for unsolved function choices,
                           //!< as in the tables)
};

struct Analysis {
  bool multi_turn = false;               //!< transitions and steps are computed for multi-turn runs only
  std::array<TimeStats, 4> time;         //!< search, recommend, review, overall
  std::array<TurnFlow, 3> flows;         //!< by type_index()
  std::array<std::vector<StepRow>, 4> steps;  //!< search, recommend, review, overall; rows with ended > 0
  metrics::PassRule rule;                //!< what "solved" means
};

//! The row of `step` among a group's rows, or null when none of its episodes ended there. (The overall group has
//! a row at every step where any group has one, so its rows list the steps to show.)
const StepRow* find_step(const std::vector<StepRow>& rows, int step);

//! The analysis of a run; "solved" is `rule`'s pass (the same rule as pass^k).
Analysis analyze(const runner::Run& run, const metrics::PassRule& rule = {});

//! {"time": {"search": {"n", "mean", "median", "p90", "mean_agent", "mean_env"}, ..., "overall"}} and, for
//! multi-turn runs, "transitions": {"search": {"episodes", "turns": [{"turn", "actions": {label: n}, "links":
//! [{"from", "to", "count"}]}], "totals": [{"from", "to", "count"}]}, ...} and "by_step": {"pass_rule", "search":
//! [{"step", "ended", "solved", "r_acc"}], ..., "overall"}. Seconds and Res Acc as full-precision numbers.
std::string analysis_json(const Analysis& analysis);
//! The same as Markdown: a time table, per type a transition matrix (rows from, columns to) and the actions per
//! turn, and a table of tasks and Res Acc by step.
std::string analysis_markdown(const Analysis& analysis);

}  // namespace pwab::report
