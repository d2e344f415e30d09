// src/puma/train_scaffold.cpp: resume, logs and stops shared by PUMA's training loops (train_scaffold.h).
#include "puma/train_scaffold.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "llama/distributed.h"

namespace pwab::puma {

bool resumes_from(const std::filesystem::path& checkpoint, llama::ProcessGroup* group, std::string_view phase) {
  const bool have_checkpoint = std::filesystem::exists(checkpoint);
  if (group) {
    const double seeing = group->all_reduce_sum({have_checkpoint ? 1.0 : 0.0})[0];
    if (seeing != 0 && seeing != group->world())
      throw Error(fmt::format("{}: {} of {} ranks see the checkpoint {}; data-parallel ranks need the work "
                              "directory on a filesystem they all share",
                              phase, seeing, group->world(), checkpoint.string()));
  }
  return have_checkpoint;
}

void keep_log_until(const std::filesystem::path& file, std::string_view key, int64_t last) {
  if (!std::filesystem::exists(file)) return;
  std::string kept;
  for_each_nonblank_line(read_file(file), [&](std::string_view line, std::size_t) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.value(std::string(key), int64_t{0}) <= last)
      kept += std::string(line) + "\n";
  });
  write_file_atomic(file, kept);
}

bool ranks_stop(llama::ProcessGroup* group, bool stop_here) {
  if (!group) return stop_here;
  return group->all_reduce_sum({stop_here ? 1.0 : 0.0})[0] > 0;
}

}  // namespace pwab::puma
