#include "data/types.h"

namespace pwab::data {

std::string_view to_string(Split s) {
  switch (s) {
    case Split::kHistory: return "history";
    case Split::kTrain: return "train";
    case Split::kTest: return "test";
  }
  return "?";
}

std::optional<Split> parse_split(std::string_view s) {
  if (s == "history") return Split::kHistory;
  if (s == "train") return Split::kTrain;
  if (s == "test") return Split::kTest;
  return std::nullopt;
}

std::string_view to_string(TaskType t) {
  switch (t) {
    case TaskType::kSearch: return "search";
    case TaskType::kRecommend: return "recommend";
    case TaskType::kReview: return "review";
  }
  return "?";
}

std::optional<TaskType> parse_task_type(std::string_view s) {
  if (s == "search") return TaskType::kSearch;
  if (s == "recommend") return TaskType::kRecommend;
  if (s == "review") return TaskType::kReview;
  return std::nullopt;
}

std::string_view Profile::get(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (k == name) return v;
  return {};
}

std::string task_key(const Task& task) { return std::string(to_string(task.split)) + "/" + std::to_string(task.index); }

}  // namespace pwab::data
