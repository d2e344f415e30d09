// The manifest's config, typed (run_settings.h): every key written and read in one place, unknown keys kept, one
// default per key, and a clear error for a key of the wrong type.
#include "runner/run_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sys.h"
#include "support/test_support.h"

namespace pwab::runner {
namespace {

using Json = nlohmann::json;

TEST(RunSettings, ARunsConfigRoundTripsByteForByte) {
  // What `pwab run` writes (keys sorted, compact), plus a key this version does not know.
  const std::string config =
      Json{{"agent", "heuristic"},       {"agent_config", {{"memory", "taskspec"}, {"k", 3}}},
           {"embedder", "hashing-v1/64"}, {"future_key", {1, 2}},
           {"llm", {{"model", "m"}}},     {"max_steps", 10},
           {"recommender", "ab12"},       {"search_index", "cd34"},
           {"split", "test"},             {"tasks", "0:"},
           {"top_k", 10},                 {"track", "multi"},
           {"trials", 2},                 {"user_guard", 1},
           {"user_sim", "scripted"}}
          .dump();
  const RunSettings s = RunSettings::from_json(config);
  EXPECT_EQ(s.to_json(), config);
  EXPECT_EQ(s.agent, "heuristic");
  EXPECT_EQ(s.track, data::Track::kMultiTurn);
  EXPECT_EQ(s.trials, 2);
  EXPECT_EQ(Json::parse(*s.agent_config)["memory"], "taskspec");
  EXPECT_EQ(Json::parse(s.other), (Json{{"future_key", {1, 2}}}));
}

TEST(RunSettings, AnOldOrHandMadeManifestGetsTheDefaults) {
  RunManifest bare;
  bare.config_json = "{}";
  const RunSettings s = settings_of(bare);
  EXPECT_EQ(s.to_json(), "{}");
  EXPECT_EQ(s.track_or_default(), data::kDefaultTrack);
  EXPECT_EQ(s.trials_or_default(), 1);
  EXPECT_EQ(s.split_or_default(), "test");
  EXPECT_EQ(s.max_steps_or_default(), 10);
  EXPECT_EQ(s.top_k_or_default(), 10);
  EXPECT_EQ(s.embedder_or_unknown(), "unknown");
  EXPECT_EQ(manifest_track(bare), data::kDefaultTrack);
  EXPECT_EQ(manifest_trials(bare), 1);
}

TEST(RunSettings, AKeyOfTheWrongTypeNamesItself) {
  auto message = [](const std::string& config) {
    try {
      RunSettings::from_json(config, "runs/a/manifest.json");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"track": "both"})"),
            "runs/a/manifest.json: config 'track' is not \"single\" or \"multi\", got \"both\"");
  EXPECT_EQ(message(R"({"trials": 0})"), "runs/a/manifest.json: config 'trials' is not an integer from 1 to 1000000, got 0");
  EXPECT_EQ(message(R"({"top_k": "10"})"), "runs/a/manifest.json: config 'top_k' is not an integer, got \"10\"");
  EXPECT_EQ(message(R"({"agent": 3})"), "runs/a/manifest.json: config 'agent' is not a string, got 3");
  EXPECT_EQ(message("[1]"), "runs/a/manifest.json: the config is not a JSON object");
}

TEST(RunSettings, AManifestFileWithABadKeyIsNamedWhenRead) {
  test::TempDir tmp;
  write_file_atomic(tmp / kManifestFile,
                    R"({"config": {"track": "both"}, "seed": 0, "dataset_fingerprint": "x", "pwab_version": "0",
                        "created_utc": "", "shard_index": 0, "shard_count": 1})");
  try {
    read_manifest(tmp.path());
    FAIL() << "read";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), (tmp / kManifestFile).string() +
                                         ": config 'track' is not \"single\" or \"multi\", got \"both\"");
  }
}

}  // namespace
}  // namespace pwab::runner
