// src/agents/agent_options.cpp: OptionReader, the typed getters behind every agent's options.
#include "agents/agent_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pwab::agents {

namespace {

//! "a, b, c" (last = ", ") or "a, b or c" (last = " or ").
std::string join(const std::vector<std::string_view>& names, std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? last : std::string_view(", ");
    out += names[i];
  }
  return out;
}

//! A bound as a person would write it (0.001, 600, 1e+06).
std::string shown(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

OptionReader::OptionReader(std::string_view agent, const AgentOptions& options)
    : who_(std::string(agent) + " agent"), options_(options) {}

UsageError OptionReader::error(std::string_view message) const {
  return UsageError(who_ + ": " + std::string(message));
}

std::string_view OptionReader::memory(std::initializer_list<std::string_view> names) const {
  if (options_.memory.empty()) return *names.begin();
  for (std::string_view name : names)
    if (name == options_.memory) return name;
  throw error("unknown memory '" + options_.memory + "' (available: " + join(std::vector(names), ", ") + ")");
}

MemoryStrategy OptionReader::memory_strategy() const {
  using enum MemoryStrategy;
  return parse_memory_strategy(memory({to_string(kNone), to_string(kRandom), to_string(kLast),
                                       to_string(kRelevant), to_string(kTaskSpec)}));
}

int OptionReader::memory_length(int fallback) const {
  int k = options_.memory_length.value_or(fallback);
  if (k < 1) throw error("memory length must be at least 1");
  return k;
}

void OptionReader::no_memory(std::string_view why) const {
  if (!options_.memory.empty() || options_.memory_length)
    throw error("takes no --memory or --memory-length (" + std::string(why) + ")");
}

const std::string* OptionReader::find(std::string_view key) {
  if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.emplace_back(key);
  auto it = options_.extra.find(std::string(key));
  return it == options_.extra.end() ? nullptr : &it->second;
}

int OptionReader::integer(std::string_view key, int fallback, int lo, int hi) {
  const std::string* v = find(key);
  if (!v) return fallback;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < lo || n > hi) {
    // A count whose ceiling is only a guard against absurd values states its floor alone.
    std::string range = hi == kMaxOptionCount ? "≥ " + std::to_string(lo)
                                               : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    throw error(std::string(key) + " takes an integer " + range + ", not '" + *v + "'");
  }
  return static_cast<int>(n);
}

double OptionReader::number(std::string_view key, double fallback, double lo, double hi) {
  const std::string* v = find(key);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !std::isfinite(x) || x < lo || x > hi)
    throw error(std::string(key) + " takes a number in [" + shown(lo) + ", " + shown(hi) + "], not '" + *v + "'");
  return x;
}

bool OptionReader::flag(std::string_view key, bool fallback) {
  const std::string* v = find(key);
  if (!v) return fallback;
  if (*v == "true" || *v == "1") return true;
  if (*v == "false" || *v == "0") return false;
  throw error(std::string(key) + " takes true or false, not '" + *v + "'");
}

std::optional<std::size_t> OptionReader::choice_index(std::string_view key, const std::vector<std::string_view>& names) {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == *v) return i;
  throw error(std::string(key) + " takes " + join(names, " or ") + ", not '" + *v + "'");
}

RelevanceText OptionReader::relevance(RelevanceText fallback) {
  return choice("relevance", fallback, {{"full", RelevanceText::kFull}, {"compact", RelevanceText::kCompact}});
}

FunctionModel OptionReader::function_model(FunctionModel fallback) {
  const std::string* v = find("function_model");
  return v ? parse_function_model(*v, who_) : fallback;
}

void OptionReader::function_model_or_file(FunctionModel& model, std::filesystem::path& file) {
  model = function_model(model);
  if (std::optional<std::string> p = path("function_file")) {
    model = FunctionModel::kFile;
    file = *p;
  }
}

std::optional<std::string> OptionReader::path(std::string_view key) {
  const std::string* v = find(key);
  if (!v) return std::nullopt;
  if (v->empty()) throw error(std::string(key) + " needs a path");
  return *v;
}

std::optional<std::string> OptionReader::text(std::string_view key) {
  const std::string* v = find(key);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

void OptionReader::finish() const {
  for (const auto& [key, value] : options_.extra) {
    if (std::find(asked_.begin(), asked_.end(), key) != asked_.end()) continue;
    std::vector<std::string_view> names(asked_.begin(), asked_.end());
    throw error("unknown option '" + key + "' (available: " + (names.empty() ? "none" : join(names, ", ")) + ")");
  }
}

}  // namespace pwab::agents
