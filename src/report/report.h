// src/report/report.h: `pwab report`, one self-contained HTML page over one or more runs: a header per run, the
// paper's Table 3/4 rows with bootstrap intervals, bar charts with interval whiskers, the paired comparison of
// each run with the first, and a trajectory viewer (docs/report.md).
//
// Every number in the tables and charts is formatted here, from the same metrics::summarize call with the same
// default bootstrap settings as `pwab score`, so the page shows exactly what `pwab score` prints. The viewer's
// data travels as one JSON blob inside the page; its script renders the task list and trajectories from it. The
// page loads nothing: inline CSS and JS, no external URLs, so it works from file:// and offline.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "report/diagnosis.h"
#include "runner/read_run.h"

namespace pwab::report {

struct ReportOptions {
  std::string title = "pwab report";   //!< the page's heading and <title>
  metrics::BootstrapOptions bootstrap;  //!< the intervals; the defaults are `pwab score`'s
  //! Observations longer than this many characters (bytes of UTF-8) are cut in the page, with a note saying how
  //! much was cut (results.jsonl keeps every character). 0 keeps them whole.
  std::size_t max_observation_chars = 2000;
  //! The viewer's default "failed" threshold: a task failed when it errored, scored F = 0, or R below this.
  double failed_below = 0.5;
  //! Stamped into the page's footer; empty leaves the time out (reproducible output).
  std::string generated_utc;
  //! The runs' diagnoses (`pwab report --data`: report::diagnose of each run, in run order): the "Why tasks fail"
  //! section and each record's category and flags in the viewer, with filters by both. Empty: no diagnosis on the
  //! page. Otherwise one per run (UsageError when the sizes differ).
  std::vector<Diagnosis> diagnoses;
};

//! The page for `runs` (at least one; UsageError otherwise). Runs are shown in the given order and named R1, R2,
//! ...; the paired comparison sets each later run against R1.
std::string render_html(const std::vector<runner::Run>& runs, const ReportOptions& options = {});

//! Escapes a JSON text for a <script type="application/json"> element: every '<' becomes \u003c (so neither
//! "</script>" nor "<!--" can end or confuse the element) and U+2028 / U+2029 become \u2028 / \u2029. The
//! result parses to the same value.
std::string escape_json_for_script(std::string_view json);

//! Cuts `text` to at most `max_bytes` bytes without splitting a UTF-8 sequence (0: no limit).
std::string cut_utf8(std::string_view text, std::size_t max_bytes);

}  // namespace pwab::report
