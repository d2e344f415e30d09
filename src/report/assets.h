// src/report/assets.h: the report page's script and style sheet, compiled in from src/report/assets/ (CMake
// generates the definitions; edit the files there).
#pragma once
#include <string_view>

namespace pwab::report::assets {

//! Runs first in <head>: shows script errors in #console-errors, so a broken page says so (and tests see it).
std::string_view error_hook_js();
//! The page's style sheet.
std::string_view report_css();
//! The trajectory viewer: renders the task list and trajectories from the #pwab-data JSON blob.
std::string_view viewer_js();

}  // namespace pwab::report::assets
