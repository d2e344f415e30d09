// src/puma/step_cache.h: which steps of a PUMA pipeline are done. A step's folder holds `.done` with the settings
// of every step up to it; a step whose `.done` matches is skipped (or its files are taken over from
// PipelineOptions::reuse_from), and any redone step redoes every later one.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "core/sys.h"
#include "puma/pipeline.h"

namespace pwab::puma {

// A step is skipped when its `.done` holds the same settings and no earlier step was redone, or taken over from the
// reuse directory (PipelineOptions::reuse_from) when that directory did the step with the same settings.
class StepCache {
 public:
  StepCache(const PipelineContext& ctx, PipelineReport& report, std::filesystem::path out, std::filesystem::path reuse)
      : ctx_(ctx), report_(report), out_(std::move(out)), reuse_(std::move(reuse)) {}
  bool skip(const std::string& step, const std::filesystem::path& dir, const std::string& settings) {
    std::filesystem::path done = dir / ".done";
    if (!redo_rest_ && std::filesystem::exists(done) && read_file(done) == settings) {
      report_.skipped_steps.push_back(step);
      log(step + ": done before with the same settings, skipped");
      return true;
    }
    if (!redo_rest_ && reuse(step, dir, settings)) return true;
    redo_rest_ = true;  // everything after a redone step depends on it
    std::filesystem::create_directories(dir);
    if (std::filesystem::exists(done)) std::filesystem::remove(done);
    log(step + ": running");
    started_ = std::chrono::steady_clock::now();
    return false;
  }
  void mark(const std::string& step, const std::filesystem::path& dir, const std::string& settings) {
    write_file_atomic(dir / ".done", settings);
    report_.ran_steps.push_back(step);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    write_file_atomic(dir / ".seconds", fmt::format("{:.3f}\n", seconds));
  }
  void log(const std::string& line) const {
    if (ctx_.log) ctx_.log(line);
  }
  //! Whether an earlier step was redone (so every later one is): the second-stage branches start from the state
  //! after eval-sft, not from each other's.
  bool redoing() const { return redo_rest_; }
  void set_redoing(bool redoing) { redo_rest_ = redoing; }

 private:
  // The same step done with the same settings in the reuse directory: its files are hard-linked into place (they
  // are only ever replaced by rename, never written in place), except the folders of later steps nested in it.
  bool reuse(const std::string& step, const std::filesystem::path& dir, const std::string& settings) {
    if (reuse_.empty()) return false;
    const std::filesystem::path rel = dir.lexically_relative(out_);
    if (rel.empty() || *rel.begin() == "..") return false;
    const std::filesystem::path from = reuse_ / rel;
    if (!std::filesystem::exists(from / ".done") || read_file(from / ".done") != settings) return false;
    if (std::filesystem::exists(dir)) {
      for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (!nested_step(entry.path().filename().string())) std::filesystem::remove_all(entry.path());
    }
    std::filesystem::create_directories(dir);
    for (const auto& entry : std::filesystem::directory_iterator(from)) {
      const std::string name = entry.path().filename().string();
      if (nested_step(name)) continue;
      std::filesystem::copy(entry.path(), dir / name, std::filesystem::copy_options::recursive | std::filesystem::copy_options::create_hard_links);
    }
    report_.skipped_steps.push_back(step);
    log(step + ": done with the same settings in " + reuse_.string() + ", reused");
    return true;
  }
  static bool nested_step(const std::string& name) { return name == "eval" || name == "sample" || name == "score"; }

  const PipelineContext& ctx_;
  PipelineReport& report_;
  std::filesystem::path out_, reuse_;
  bool redo_rest_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

//! Makes `work` (a training step's checkpoint and curve) belong to `settings`: a folder left by other settings is
//! emptied first, so a resume never continues someone else's checkpoint.
void claim_work_dir(const std::filesystem::path& work, const std::string& settings);

}  // namespace pwab::puma
