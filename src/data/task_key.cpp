// src/data/task_key.cpp: the one parser of task keys (task_key.h).
#include "data/task_key.h"

#include <charconv>

namespace pwab::data {

std::optional<TaskKey> parse_task_key(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::optional<Split> split = parse_split(key.substr(0, slash));
  if (!split || (*split != Split::kTest && *split != Split::kTrain)) return std::nullopt;
  const std::string_view digits = key.substr(slash + 1);
  if (digits.empty() || digits.front() < '0' || digits.front() > '9') return std::nullopt;  // no sign, no space
  TaskKey parsed{*split, 0};
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed.index);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return parsed;
}

const Task* task_by_key(const Dataset& ds, std::string_view key) {
  const std::optional<TaskKey> parsed = parse_task_key(key);
  if (!parsed) return nullptr;
  const std::vector<Task>& tasks = ds.tasks(parsed->split);
  return parsed->index < tasks.size() ? &tasks[parsed->index] : nullptr;
}

}  // namespace pwab::data
