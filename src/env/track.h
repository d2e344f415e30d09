// src/env/track.h: the two tracks of the benchmark, shared by agents, the runner and the metrics tables.
#pragma once

namespace pwab::env {

//! Single-turn (the original's --max_steps -1, no user) or multi-turn (a user simulator answers `respond`).
enum class Track { kSingleTurn, kMultiTurn };

}  // namespace pwab::env
