// src/data/track.h: the two tracks of the benchmark, one type for every area that names one (tasks are run, scored
// and tabled per track), with its one spelling in manifests, flags and requests.
#pragma once

#include <optional>
#include <string_view>

namespace pwab::data {

//! Single-turn (the original's --max_steps -1, no user) or multi-turn (a user simulator answers `respond`).
enum class Track { kSingleTurn, kMultiTurn };

//! "single" or "multi": how manifests, flags and requests spell a track.
constexpr std::string_view to_string(Track track) { return track == Track::kSingleTurn ? "single" : "multi"; }

//! The track spelled `text`, or nothing for any other text (each caller words its own error).
constexpr std::optional<Track> parse_track(std::string_view text) {
  if (text == "single") return Track::kSingleTurn;
  if (text == "multi") return Track::kMultiTurn;
  return std::nullopt;
}

//! The track of a run whose manifest names none: multi-turn, whose tables have every column (docs/decisions.md D11).
inline constexpr Track kDefaultTrack = Track::kMultiTurn;

}  // namespace pwab::data
