// src/models/torch_models.h: the one seam between pwab and libtorch.
//
// Everything that needs libtorch -- training SASRec, the MiniLM sentence encoder, local PUMA models and PUMA's
// training pipeline -- is compiled into a plugin, libpwab_torch.so, that `pwab` loads the first time one of these
// entry points is used. Commands that never need them (data, index, search, score, serve with a trained
// recommender, ...) never map libtorch, which takes most of a second to load with Debian's build. The header is
// torch-free and names the types it passes only by declaration: callers include the real headers
// (rec/recommender.h, embed/minilm.h, puma/pipeline.h) for the types they use.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pwab {
namespace data {
class Dataset;
}
namespace rec {
struct TrainOptions;
struct TrainReport;
}  // namespace rec
namespace embed {
class Embedder;
struct MiniLMOptions;
}  // namespace embed
namespace llm {
class ChatModel;
}
namespace puma {
struct PipelineContext;
struct PipelineOptions;
struct PipelineReport;
struct GenerateConfig;
struct TrainPair;
}  // namespace puma

namespace models {

//! A local PUMA model serving raw-text completions, and the description run manifests record.
struct LocalChatModel {
  std::shared_ptr<llm::ChatModel> model;
  std::string description;
};

//! What one `pwab lm generate` call cost (its --stats): the model's loading apart from the generation itself, so
//! that a benchmark can set the generation beside another library's `generate` (bench/ecosystem/generate_speed.py).
struct LmGenerateStats {
  double load_seconds = 0, generate_seconds = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
};

//! The plugin's entry points. The plugin is built from the same sources in the same build as `pwab`, so C++
//! types cross the boundary as they are; `abi` and `size` catch a plugin left over from another build.
struct TorchModels {
  int abi = 0;
  std::size_t size = 0;
  //! "1.13.0 (threads 2, BLAS ...)" after setting libtorch's threads (`pwab version`).
  std::string (*describe)() = nullptr;
  //! GFLOP/s of a 512×512 matmul: whether libtorch got a fast BLAS (`pwab version --verbose`).
  double (*matmul_gflops)() = nullptr;
  //! rec::train: SASRec on a dataset's behaviours (rec/recommender.h).
  rec::TrainReport (*train_recommender)(const data::Dataset&, const rec::TrainOptions&,
                                        const std::filesystem::path& out) = nullptr;
  //! embed::MiniLMEmbedder::load (embed/minilm.h).
  std::unique_ptr<embed::Embedder> (*load_minilm)(const std::filesystem::path& model_dir,
                                                  const embed::MiniLMOptions&) = nullptr;
  //! puma::PumaModel::open (with a PEFT adapter when `adapter_dir` is not empty) + puma::local_chat_model, named
  //! `name` (puma/model.h).
  LocalChatModel (*open_local_chat_model)(const std::filesystem::path& model_dir,
                                          const std::filesystem::path& adapter_dir, const std::string& name) = nullptr;
  //! `pwab lm generate`: continuations of each prompt by the model (and adapter), PumaModel::generate; `stats`,
  //! when not null, gets the seconds and token counts.
  std::vector<std::vector<std::string>> (*lm_generate)(const std::filesystem::path& model_dir,
                                                       const std::filesystem::path& adapter_dir,
                                                       const std::vector<std::string>& prompts,
                                                       const puma::GenerateConfig& config,
                                                       LmGenerateStats* stats) = nullptr;
  //! `pwab lm score`: Σ log p(completion + EOS | prompt) of each pair and its token count.
  std::vector<std::pair<double, int64_t>> (*lm_score)(const std::filesystem::path& model_dir,
                                                      const std::filesystem::path& adapter_dir,
                                                      const std::vector<puma::TrainPair>& pairs) = nullptr;
  //! `pwab lm logits`: for each text, the ids the model reads (BOS added, as PumaModel's prompts) and the
  //! next-token logits [ids × vocab], row-major float32 (PumaModel::logits); `vocab` gets the row width.
  std::vector<std::pair<std::vector<int32_t>, std::vector<float>>> (*lm_logits)(
      const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir,
      const std::vector<std::string>& texts, int64_t* vocab) = nullptr;
  //! `pwab lm tokenize`: the ids of each text under the directory's tokenizer (tok::load_tokenizer), with the
  //! directory's own BOS/EOS defaults when `add_special`, else none.
  std::vector<std::vector<int32_t>> (*lm_tokenize)(const std::filesystem::path& model_dir,
                                                   const std::vector<std::string>& texts, bool add_special) = nullptr;
  //! The model's description (PumaModel::describe) with the adapter, for the commands' output.
  std::string (*lm_describe)(const std::filesystem::path& model_dir, const std::filesystem::path& adapter_dir) = nullptr;
  //! puma::run_pipeline (puma/pipeline.h).
  puma::PipelineReport (*run_puma_pipeline)(const puma::PipelineContext&, const puma::PipelineOptions&,
                                            const std::string& until) = nullptr;
};

//! Bumped whenever TorchModels, or a type that crosses it (llm::ChatRequest, llm::TokenTrace, ...), changes;
//! test/models/torch_seam_test.cpp records the crossing types' sizes for it and fails when one moves without a bump.
//! 6: PipelineOptions::reward_checkpoint, PipelineContext::reward_env, rec::TrainOptions::hold_out_train.
//! 9: PipelineContext::reward_fingerprint.
//! 10: llm::ChatRequest::top_k.
inline constexpr int kTorchModelsAbi = 10;
//! The symbol the plugin exports: `const TorchModels* pwab_torch_models()`.
inline constexpr const char* kTorchModelsSymbol = "pwab_torch_models";

//! The plugin's entry points, loading it on first use (thread-safe). It is looked for at $PWAB_TORCH_PLUGIN when
//! set, else beside the running executable, in ../lib/pwab/ from it, and in the build tree. Throws pwab::Error
//! saying what needed libtorch, where it looked and why loading failed (or that this build has no libtorch).
const TorchModels& torch_models();
//! Whether the plugin is loaded in this process (it stays loaded once it is).
bool torch_models_loaded();
//! Whether this build has the plugin at all (PWAB_WITH_TORCH).
bool torch_models_built();

}  // namespace models
}  // namespace pwab
