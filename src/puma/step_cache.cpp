// src/puma/step_cache.cpp: a training step's work folder and its settings (step_cache.h).
#include "puma/step_cache.h"

namespace pwab::puma {

void claim_work_dir(const std::filesystem::path& work, const std::string& settings) {
  const std::filesystem::path mine = work / ".settings";
  if (std::filesystem::exists(work) && (!std::filesystem::exists(mine) || read_file(mine) != settings)) std::filesystem::remove_all(work);
  write_file_atomic(mine, settings);
}

}  // namespace pwab::puma
