// src/puma/train_scaffold.h: what PUMA's three training loops (SFT and DPO in model.cpp's train_loop, RL in rl.cpp's
// train_rl) share around their updates: whether a run resumes from its checkpoint (every data-parallel rank or
// none), the logs cut back to the checkpoint so no point is counted twice, and a stop every rank takes at the same
// step. The checkpoints themselves differ (an optimizer's state for SFT/DPO, the policy trainer's for RL).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace pwab::llama {
class ProcessGroup;
}

namespace pwab::puma {

//! Whether training resumes: `checkpoint` exists. With data-parallel ranks (`group`), every rank must see it or
//! none: Error naming `phase` when only some do (the work directory is not on a filesystem they share).
bool resumes_from(const std::filesystem::path& checkpoint, llama::ProcessGroup* group, std::string_view phase);

//! Keeps the lines of a JSONL log (a curve, the rollouts) whose integer `key` ("step", "iteration") is at most
//! `last`, dropping the points a resumed run will write again. Nothing when the file does not exist.
void keep_log_until(const std::filesystem::path& file, std::string_view key, int64_t last);

//! Whether to stop now: `stop_here` on this rank, or, with ranks, on any of them (one collective), so that every
//! rank stops at the same step.
bool ranks_stop(llama::ProcessGroup* group, bool stop_here);

}  // namespace pwab::puma
