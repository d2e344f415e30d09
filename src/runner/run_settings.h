// src/runner/run_settings.h: what a run computes, typed: the "config" object of its manifest (RunManifest's
// config_json, results.h). Every writer builds a RunSettings and every reader gets one (from_json), so each key has
// one spelling, one type check and one default for manifests that do not name it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "data/track.h"
#include "runner/results.h"

namespace pwab::runner {

struct RunSettings {
  // Each key is optional: `pwab run`, `pwab serve` and `pwab rescore` write different sets, and older or hand-made
  // manifests may lack any of them. JSON values stay JSON text.
  std::optional<std::string> mode;          //!< "serve" in a served run's directories
  std::optional<std::string> split;         //!< "test" or "train"
  std::optional<data::Track> track;
  std::optional<std::string> tasks;         //!< the task range, "A:B" (TaskRange::to_string)
  std::optional<std::string> agent;         //!< the agent's name ("served" for a served run)
  std::optional<std::string> agent_config;  //!< the agent's own settings, a JSON object
  std::optional<std::string> user_sim;      //!< none, scripted, llm or human
  std::optional<int> trials;                //!< runs per task
  std::optional<int> max_steps;             //!< agent calls per task
  std::optional<int> top_k;                 //!< results per search or recommendation
  std::optional<std::string> embedder;      //!< the name of the embedder that scored reviews
  std::optional<std::string> search_index;  //!< the search index's fingerprint
  std::optional<std::string> recommender;   //!< the SASRec checkpoint's hash
  std::optional<std::string> llm;           //!< the models and sampling settings, a JSON object
  std::optional<int> user_guard;            //!< the LLM user's leak guard, written only when on
  std::optional<std::string> rescored_from;  //!< the run a `pwab rescore` replayed
  std::optional<std::string> rescore;        //!< how it was rescored, a JSON object
  std::string other = "{}";  //!< keys this version does not know, kept as read (a JSON object)

  // One default per key, for a manifest that does not name it (docs/decisions.md D11 for the track).
  data::Track track_or_default() const { return track.value_or(data::kDefaultTrack); }
  std::string split_or_default() const { return split.value_or("test"); }
  int trials_or_default() const { return trials.value_or(1); }
  int max_steps_or_default() const { return max_steps.value_or(10); }
  int top_k_or_default() const { return top_k.value_or(10); }
  std::string embedder_or_unknown() const { return embedder.value_or("unknown"); }

  //! The config object: the keys that are set and `other`'s, sorted, compact (RunManifest::config_json).
  std::string to_json() const;
  //! Reads a config object. DataError naming `what` and the key when the text is not a JSON object or a known key
  //! has the wrong type (a track other than single or multi, trials outside 1..1000000, ...).
  static RunSettings from_json(std::string_view text, std::string_view what = "run manifest");
};

//! The settings of a manifest (RunSettings::from_json of its config_json).
RunSettings settings_of(const RunManifest& manifest);

}  // namespace pwab::runner
