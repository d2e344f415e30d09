#include "core/diagnostics.h"

#include <algorithm>

namespace pwab {
namespace {
std::size_t& slot(std::vector<std::pair<std::string, std::size_t>>& v, const std::string& key) {
  for (auto& [k, n] : v)
    if (k == key) return n;
  v.emplace_back(key, 0);
  return v.back().second;
}
}  // namespace

std::string Diagnostic::to_string() const {
  std::string out = severity == Severity::kError ? "error: " : "warning: ";
  if (!file.empty()) out += file + ": ";
  if (!record.empty()) out += record + " ";
  if (!path.empty()) out += "(" + path + ") ";
  if (!file.empty() || !record.empty() || !path.empty()) {
    if (out.back() == ' ') out.pop_back();
    if (out.back() != ':') out += ":";
    out += " ";
  }
  out += message;
  return out;
}

void Diagnostics::add(Diagnostic d) {
  auto& counts = d.severity == Severity::kError ? error_counts_ : warning_counts_;
  ++slot(counts, d.check);
  ++(d.severity == Severity::kError ? n_errors_ : n_warnings_);
  keep(std::move(d));
}

void Diagnostics::keep(Diagnostic d) {
  std::size_t& kept = slot(kept_counts_, d.check + (d.severity == Severity::kError ? "#e" : "#w"));
  if (kept < keep_per_check_) {
    ++kept;
    kept_.push_back(std::move(d));
  }
}

void Diagnostics::error(std::string check, std::string file, std::string record, std::string path,
                        std::string message) {
  add({Severity::kError, std::move(file), std::move(record), std::move(path), std::move(message), std::move(check)});
}

void Diagnostics::warning(std::string check, std::string file, std::string record, std::string path,
                          std::string message) {
  add({Severity::kWarning, std::move(file), std::move(record), std::move(path), std::move(message),
       std::move(check)});
}

std::vector<std::pair<std::string, std::size_t>> Diagnostics::counts(Severity s) const {
  auto v = s == Severity::kError ? error_counts_ : warning_counts_;
  std::sort(v.begin(), v.end());
  return v;
}

std::string Diagnostics::first_error() const {
  for (const auto& d : kept_)
    if (d.severity == Severity::kError) return d.to_string();
  return {};
}

void Diagnostics::merge(Diagnostics&& other) {
  for (const auto& [check, n] : other.error_counts_) slot(error_counts_, check) += n;
  for (const auto& [check, n] : other.warning_counts_) slot(warning_counts_, check) += n;
  n_errors_ += other.n_errors_;
  n_warnings_ += other.n_warnings_;
  for (auto& d : other.kept_) keep(std::move(d));
}

}  // namespace pwab
