// test/report/page_text.h: reading the report page's marked numbers back, from the HTML pwab writes or from the
// DOM Chromium dumps after the scripts ran.
#pragma once
#include <regex>
#include <string>

namespace pwab::test {

//! The text of the table cell marked data-metric="<name>", tags inside removed (a cell shows its value and its
//! interval in two spans); "" when there is no such cell.
inline std::string metric_text(const std::string& page, const std::string& name) {
  auto at = page.find("data-metric=\"" + name + "\"");
  if (at == std::string::npos) return {};
  auto begin = page.find('>', at) + 1;
  auto end = page.find("</td>", begin);
  return std::regex_replace(page.substr(begin, end - begin), std::regex("<[^>]*>"), "");
}

}  // namespace pwab::test
