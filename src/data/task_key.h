// src/data/task_key.h: a task key read back. Every area names a task by the key data::task_key (types.h) writes,
// "<split>/<index>" such as "test/17": records, the ledger, served episodes, rewards. This is its one parser.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "data/dataset.h"
#include "data/types.h"

namespace pwab::data {

//! What a key names: a split with tasks (test or train) and a position within it.
struct TaskKey {
  Split split = Split::kTest;
  std::size_t index = 0;
};

//! "test/17" → {kTest, 17}. Nothing for any other text: no slash, a split other than test or train, or an index
//! that is not plain decimal digits. Whether a dataset has the task is task_by_key's question.
std::optional<TaskKey> parse_task_key(std::string_view key);

//! The task `key` names in `ds`; null when the key does not parse or its split has no such index. Each caller
//! words its own error (a record of another dataset, an HTTP 400 or 404).
const Task* task_by_key(const Dataset& ds, std::string_view key);

}  // namespace pwab::data
