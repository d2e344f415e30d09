// src/report/html_parts.h: pieces shared by the report page's writers (html.cpp: the page, scores and viewer;
// figures.cpp: the repeated-trials tables and the analysis figures). Internal to pwab_report.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metrics.h"
#include "report/diagnosis.h"
#include "runner/read_run.h"

namespace pwab::report::html {

//! Text made safe for HTML content and attribute values.
std::string escape(std::string_view s);
//! A table cell's text ("0.647 [0.61, 0.68]") with the interval on a second, smaller line; the element's text
//! stays exactly the formatted cell.
std::string cell(const std::string& text);
//! "R1", "R2", ... for the run at position i.
std::string run_id(std::size_t i);

//! The repeated-trials tables (pass^k, flip rate, mixed tasks) of the runs with trials; "" when none has any.
std::string trials_tables(const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums);
//! The "Analysis" section: time per task (Figure 7) for every run; for multi-turn runs the action transitions
//! (Figure 8) and tasks and Res Acc by attempt step (Figure 9), each a chart and its table.
std::string analysis_section(const std::vector<runner::Run>& runs, const std::vector<metrics::Summary>& sums);
//! The "Why tasks fail" section (`pwab report --data`): per run, a stacked bar of the primary categories per task
//! type, the categories and flags tables, the user simulator's leaks (multi-turn runs) and the personalization
//! attribution; one diagnosis per run.
std::string diagnosis_section(const std::vector<runner::Run>& runs, const std::vector<Diagnosis>& diagnoses,
                              const metrics::BootstrapOptions& bootstrap);

}  // namespace pwab::report::html
