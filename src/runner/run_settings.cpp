// src/runner/run_settings.cpp: the manifest's config object, written and read in one place (run_settings.h).
#include "runner/run_settings.h"

#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_depth.h"

namespace pwab::runner {
namespace {

using Json = nlohmann::json;

// The keys RunSettings knows; every other key is kept in `other`.
constexpr std::string_view kStringKeys[] = {"mode",     "split",        "tasks",       "agent",        "user_sim",
                                            "embedder", "search_index", "recommender", "rescored_from"};
constexpr std::string_view kIntKeys[] = {"trials", "max_steps", "top_k", "user_guard"};
constexpr std::string_view kJsonKeys[] = {"agent_config", "llm", "rescore"};

std::optional<std::string>* string_field(RunSettings& s, std::string_view key) {
  if (key == "mode") return &s.mode;
  if (key == "split") return &s.split;
  if (key == "tasks") return &s.tasks;
  if (key == "agent") return &s.agent;
  if (key == "user_sim") return &s.user_sim;
  if (key == "embedder") return &s.embedder;
  if (key == "search_index") return &s.search_index;
  if (key == "recommender") return &s.recommender;
  if (key == "rescored_from") return &s.rescored_from;
  return nullptr;
}

std::optional<int>* int_field(RunSettings& s, std::string_view key) {
  if (key == "trials") return &s.trials;
  if (key == "max_steps") return &s.max_steps;
  if (key == "top_k") return &s.top_k;
  if (key == "user_guard") return &s.user_guard;
  return nullptr;
}

std::optional<std::string>* json_field(RunSettings& s, std::string_view key) {
  if (key == "agent_config") return &s.agent_config;
  if (key == "llm") return &s.llm;
  if (key == "rescore") return &s.rescore;
  return nullptr;
}

const std::optional<std::string>* string_field(const RunSettings& s, std::string_view key) {
  return string_field(const_cast<RunSettings&>(s), key);
}
const std::optional<int>* int_field(const RunSettings& s, std::string_view key) {
  return int_field(const_cast<RunSettings&>(s), key);
}
const std::optional<std::string>* json_field(const RunSettings& s, std::string_view key) {
  return json_field(const_cast<RunSettings&>(s), key);
}

}  // namespace

std::string RunSettings::to_json() const {
  Json j = parse_json_or_discarded(other);
  if (!j.is_object()) j = Json::object();
  for (std::string_view key : kStringKeys)
    if (const auto& v = *string_field(*this, key)) j[std::string(key)] = *v;
  for (std::string_view key : kIntKeys)
    if (const auto& v = *int_field(*this, key)) j[std::string(key)] = *v;
  for (std::string_view key : kJsonKeys)
    if (const auto& v = *json_field(*this, key)) j[std::string(key)] = Json::parse(*v);
  if (track) j["track"] = data::to_string(*track);
  return j.dump();
}

RunSettings RunSettings::from_json(std::string_view text, std::string_view what) {
  const Json j = parse_json_or_discarded(text);
  if (j.is_discarded() || !j.is_object()) throw DataError(std::string(what) + ": the config is not a JSON object");
  auto bad = [&](const std::string& key, std::string_view expected) {
    return DataError(std::string(what) + ": config '" + key + "' is not " + std::string(expected) + ", got " +
                     j[key].dump());
  };
  RunSettings s;
  Json other = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const Json& value = it.value();
    if (auto* field = string_field(s, key)) {
      if (!value.is_string()) throw bad(key, "a string");
      *field = value.get<std::string>();
    } else if (auto* number = int_field(s, key)) {
      // Only the trials count has a range of its own: the other numbers are read as they were written.
      const int64_t low = key == "trials" ? 1 : INT32_MIN, high = key == "trials" ? 1'000'000 : INT32_MAX;
      if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high)
        throw bad(key, key == "trials" ? "an integer from 1 to 1000000" : "an integer");
      *number = static_cast<int>(value.get<int64_t>());
    } else if (auto* object = json_field(s, key)) {
      *object = value.dump();
    } else if (key == "track") {
      const auto track = value.is_string() ? data::parse_track(value.get<std::string>()) : std::nullopt;
      if (!track) throw bad(key, "\"single\" or \"multi\"");
      s.track = *track;
    } else {
      other[key] = value;
    }
  }
  s.other = other.dump();
  return s;
}

RunSettings settings_of(const RunManifest& manifest) { return RunSettings::from_json(manifest.config_json); }

}  // namespace pwab::runner
