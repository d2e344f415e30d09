// The one seam to libtorch: which `pwab` commands map it, and what happens when its plugin is missing.
//
// The dynamic loader's trace (LD_DEBUG=files) lists every shared object a process loads, including those it
// dlopens, so it tells exactly whether a command mapped libtorch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "embed/minilm.h"
#include "llm/chat.h"
#include "models/torch_models.h"
#include "puma/model.h"
#include "puma/pipeline.h"
#include "rec/recommender.h"
#include "support/test_support.h"

namespace pwab::models {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int status = -1;
  std::string out, err;
};

//! Runs the built binary with `env` before it (VAR=value ...), capturing stdout and stderr.
Ran run_with_env(const std::string& env, const std::string& args, const std::string& stdin_text = "") {
  test::TempDir io;
  test::write_text(io / "in", stdin_text);
  std::string cmd = "env " + env + " " + PWAB_BINARY + " " + args + " < " + (io / "in").string() + " > " +
                    (io / "out").string() + " 2> " + (io / "err").string();
  Ran r;
  r.status = WEXITSTATUS(std::system(cmd.c_str()));
  r.out = test::read_text(io / "out");
  r.err = test::read_text(io / "err");
  return r;
}

//! Runs a command under the loader's trace; returns whether libtorch was mapped (and fails on a bad exit).
bool maps_libtorch(const std::string& args, const std::string& stdin_text = "") {
  Ran r = run_with_env("LD_DEBUG=files", args, stdin_text);
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err.substr(0, 4000);
  return r.err.find("file=libtorch") != std::string::npos;  // a line of a loaded file, not a path that says libtorch
}

class TorchSeam : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    data_ = ((*dir_) / "mini").string();
    ASSERT_EQ(test::run_pwab("data synth --out " + data_ + " --scale mini --seed 5"), 0);
    // The recommender is trained once (through the plugin); everything after only loads it.
    std::string err;
    ASSERT_EQ(test::run_pwab("rec train " + data_ + " --epochs 2 --eval-every 0", nullptr, &err), 0) << err;
  }
  static void TearDownTestSuite() { delete dir_; }

  static test::TempDir* dir_;
  static std::string data_;
};
test::TempDir* TorchSeam::dir_ = nullptr;
std::string TorchSeam::data_;

TEST_F(TorchSeam, CommandsWithoutModelsNeverMapLibtorch) {
  EXPECT_FALSE(maps_libtorch("--help"));
  EXPECT_FALSE(maps_libtorch("agents"));
  EXPECT_FALSE(maps_libtorch("data validate " + data_));
  EXPECT_FALSE(maps_libtorch("index build " + data_));
  EXPECT_FALSE(maps_libtorch("search --data " + data_ + " --k 3 'wireless headphones'"));
  // A whole offline run, scored and merged: the recommender is loaded, not trained.
  const std::string run = ((*dir_) / "run").string();
  EXPECT_FALSE(maps_libtorch("run --quiet --data " + data_ + " --tasks 0:6 --out " + run));
  EXPECT_FALSE(maps_libtorch("score " + run));
  EXPECT_FALSE(maps_libtorch("compare " + run + " " + run));
  // The MCP server opens the environment (index, SASRec, fastText) before it reads its empty input.
  EXPECT_FALSE(maps_libtorch("mcp --data " + data_));
}

TEST_F(TorchSeam, ModelCommandsLoadThePlugin) {
  // `pwab version` asks the plugin for libtorch's version.
  Ran r = run_with_env("LD_DEBUG=files", "version");
  ASSERT_EQ(r.status, 0) << r.err.substr(0, 4000);
  EXPECT_NE(r.err.find("libpwab_torch.so"), std::string::npos);
  EXPECT_NE(r.err.find("file=libtorch"), std::string::npos);
  EXPECT_NE(r.out.find("libtorch   " PWAB_CONFIGURED_TORCH "."), std::string::npos) << r.out;
}

TEST_F(TorchSeam, AMissingPluginIsAClearErrorOnlyWhereItIsNeeded) {
  const std::string missing = "PWAB_TORCH_PLUGIN=" + ((*dir_) / "nowhere" / "libpwab_torch.so").string();
  // Training needs it: exit 1 with what was needed, where it looked and how to point at it.
  Ran train = run_with_env(missing, "rec train " + data_ + " --out " + ((*dir_) / "other.pwab").string());
  EXPECT_EQ(train.status, 1);
  EXPECT_NE(train.err.find("needs libtorch"), std::string::npos) << train.err;
  EXPECT_NE(train.err.find("nowhere/libpwab_torch.so: not there"), std::string::npos) << train.err;
  EXPECT_NE(train.err.find("PWAB_TORCH_PLUGIN"), std::string::npos) << train.err;
  // A file that is no shared library: the loader's own reason, after the path.
  test::write_text((*dir_) / "junk.so", "not an ELF file\n");
  Ran junk = run_with_env("PWAB_TORCH_PLUGIN=" + ((*dir_) / "junk.so").string(), "version");
  EXPECT_NE(junk.out.find("junk.so: "), std::string::npos) << junk.out;
  // A run over a trained recommender does not.
  Ran run = run_with_env(missing, "run --quiet --data " + data_ + " --tasks 0:3 --out " + ((*dir_) / "r2").string());
  EXPECT_EQ(run.status, 0) << run.err;
  // `pwab version` still prints, saying libtorch is unavailable.
  Ran version = run_with_env(missing, "version");
  EXPECT_EQ(version.status, 0);
  EXPECT_NE(version.out.find("libtorch   (unavailable"), std::string::npos) << version.out;
}

TEST(TorchSeamInProcess, ThePluginAnswersThroughTheTable) {
  ASSERT_TRUE(torch_models_built());
  const TorchModels& torch = torch_models();  // found in the build tree (PWAB_TORCH_PLUGIN_BUILD_PATH)
  EXPECT_TRUE(torch_models_loaded());
  EXPECT_EQ(torch.abi, kTorchModelsAbi);
  EXPECT_EQ(torch.describe().rfind(PWAB_CONFIGURED_TORCH ".", 0), 0u) << torch.describe();
  EXPECT_GT(torch.matmul_gflops(), 0.0);
  // A MiniLM directory that is not there: the encoder's own error comes back across the seam as pwab::Error.
  EXPECT_THROW(torch.load_minilm("/nonexistent/minilm", {}), Error);
}

// The plugin takes a pwab binary's C++ types as they are, so a binary and a plugin of different builds must not
// meet: the loader refuses a plugin whose kTorchModelsAbi differs. That number is bumped by hand, so this table
// catches a change it missed: the sizes of the types that cross TorchModels, recorded for the current number. A
// size that moved means: bump kTorchModelsAbi (models/torch_models.h) and record the new sizes here. (A field
// moved within the same size passes; the number stays the rule, this is its reminder.) A copied `pwab` that met
// the rebuilt plugin of its build tree, after PipelineOptions grew a field without the bump, died of
// std::bad_alloc in the middle of `pwab puma eval-rl`.
TEST(TorchSeamAbi, TheTypesThatCrossHaveTheSizesRecordedForThisAbi) {
#if !(defined(__x86_64__) && defined(__GLIBCXX__))
  GTEST_SKIP() << "sizes recorded for x86-64 with libstdc++ (GCC 12, the supported toolchain)";
#endif
  const std::vector<std::pair<const char*, std::size_t>> now = {
      {"TorchModels", sizeof(TorchModels)},
      {"LocalChatModel", sizeof(LocalChatModel)},
      {"LmGenerateStats", sizeof(LmGenerateStats)},
      {"rec::TrainOptions", sizeof(rec::TrainOptions)},
      {"rec::TrainReport", sizeof(rec::TrainReport)},
      {"embed::MiniLMOptions", sizeof(embed::MiniLMOptions)},
      {"llm::ChatRequest", sizeof(llm::ChatRequest)},
      {"llm::ChatResponse", sizeof(llm::ChatResponse)},
      {"llm::TokenTrace", sizeof(llm::TokenTrace)},
      {"puma::GenerateConfig", sizeof(puma::GenerateConfig)},
      {"puma::TrainPair", sizeof(puma::TrainPair)},
      {"puma::PipelineContext", sizeof(puma::PipelineContext)},
      {"puma::PipelineOptions", sizeof(puma::PipelineOptions)},
      {"puma::PipelineReport", sizeof(puma::PipelineReport)},
  };
  constexpr int kRecordedAbi = 10;
  const std::vector<std::size_t> recorded = {104, 48, 32, 120, 96, 32, 280, 408, 96, 88, 64, 248, 1472, 424};
  EXPECT_EQ(kTorchModelsAbi, kRecordedAbi) << "kTorchModelsAbi moved: record the sizes below for it";
  ASSERT_EQ(now.size(), recorded.size());
  std::string sizes;
  for (std::size_t i = 0; i < now.size(); ++i) {
    sizes += std::to_string(now[i].second) + (i + 1 < now.size() ? ", " : "");
    EXPECT_EQ(now[i].second, recorded[i]) << now[i].first << " changed size since ABI " << kRecordedAbi
                                          << ": bump kTorchModelsAbi in models/torch_models.h and record the sizes";
  }
  if (HasFailure()) std::printf("sizes now: {%s}\n", sizes.c_str());
}

}  // namespace
}  // namespace pwab::models
