// libpwab_torch.so: the entry points of torch_models.h over the libtorch areas (rec training, MiniLM, LLaMA/PUMA).
// Linked with every static area it needs and with their symbols hidden (--exclude-libs), so it exports one
// symbol and never binds to the copies of the same code inside `pwab`.
#include <chrono>
#include <cstdlib>
#include <string>

#include "core/torch_runtime.h"
#include "embed/minilm.h"
#include "llama/distributed.h"
#include "models/torch_models.h"
#include "puma/model.h"
#include "puma/pipeline.h"
#include "rec/recommender.h"
#include "tok/tokenizer.h"

namespace pwab::models {
namespace {

// Started as several processes (torchrun, srun), the ranks on a host share its cores: each gets its share as
// OMP_NUM_THREADS, read by the models when they load, unless the user set it (their choice wins). Thread settings
// are the binary's, so this is here and not in puma/.
puma::PipelineReport run_puma_pipeline(const puma::PipelineContext& ctx, const puma::PipelineOptions& options,
                                       const std::string& until) {
  if (llama::DistEnv env = llama::dist_env_from_environment(); env.world > 1 && !std::getenv("OMP_NUM_THREADS"))
    ::setenv("OMP_NUM_THREADS", std::to_string(env.threads).c_str(), 1);
  return puma::run_pipeline(ctx, options, until);
}

std::string describe() {
  torch_init_threads();
  return torch_description();
}

std::unique_ptr<embed::Embedder> load_minilm(const std::filesystem::path& dir, const embed::MiniLMOptions& options) {
  return embed::MiniLMEmbedder::load(dir, options);
}

double matmul_gflops() { return torch_matmul_gflops(); }

LocalChatModel open_local_chat_model(const std::filesystem::path& dir, const std::filesystem::path& adapter,
                                     const std::string& name) {
  std::shared_ptr<puma::PumaModel> model = puma::PumaModel::open(dir, adapter);
  std::string description = model->describe();
  if (!adapter.empty()) description += ", adapter " + adapter.string();
  return {std::shared_ptr<llm::ChatModel>(puma::local_chat_model(model, name)), std::move(description)};
}

std::vector<std::vector<std::string>> lm_generate(const std::filesystem::path& dir, const std::filesystem::path& adapter,
                                                  const std::vector<std::string>& prompts,
                                                  const puma::GenerateConfig& config, LmGenerateStats* stats) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto model = puma::PumaModel::open(dir, adapter);
  const auto loaded = Clock::now();
  auto out = model->generate(prompts, config);
  if (stats) {
    stats->load_seconds = std::chrono::duration<double>(loaded - start).count();
    stats->generate_seconds = std::chrono::duration<double>(Clock::now() - loaded).count();
    stats->prompt_tokens = model->last_prompt_tokens();
    stats->generated_tokens = model->last_generated_tokens();
  }
  return out;
}

std::vector<std::pair<double, int64_t>> lm_score(const std::filesystem::path& dir, const std::filesystem::path& adapter,
                                                 const std::vector<puma::TrainPair>& pairs) {
  auto model = puma::PumaModel::open(dir, adapter);
  std::vector<double> lp = model->target_logprobs(pairs);
  std::vector<std::pair<double, int64_t>> out;
  for (std::size_t i = 0; i < pairs.size(); ++i)
    out.emplace_back(lp[i], static_cast<int64_t>(model->tokenizer().encode(pairs[i].target, false, false).size()) + 1);
  return out;
}

std::vector<std::pair<std::vector<int32_t>, std::vector<float>>> lm_logits(const std::filesystem::path& dir,
                                                                           const std::filesystem::path& adapter,
                                                                           const std::vector<std::string>& texts,
                                                                           int64_t* vocab) {
  auto model = puma::PumaModel::open(dir, adapter);
  std::vector<std::pair<std::vector<int32_t>, std::vector<float>>> out;
  for (const std::string& t : texts)
    out.emplace_back(model->tokenizer().encode(t, true, false), model->logits(t, vocab));
  return out;
}

std::vector<std::vector<int32_t>> lm_tokenize(const std::filesystem::path& dir, const std::vector<std::string>& texts,
                                              bool add_special) {
  auto tokenizer = tok::load_tokenizer(dir);
  std::vector<std::vector<int32_t>> out;
  for (const std::string& t : texts) out.push_back(add_special ? tokenizer->encode(t) : tokenizer->encode(t, false, false));
  return out;
}

std::string lm_describe(const std::filesystem::path& dir, const std::filesystem::path& adapter) {
  return puma::PumaModel::open(dir, adapter)->describe();
}

const TorchModels kModels = [] {
  torch_tune_allocator();  // once, when the plugin loads
  TorchModels m;
  m.abi = kTorchModelsAbi;
  m.size = sizeof(TorchModels);
  m.describe = &describe;
  m.matmul_gflops = &matmul_gflops;
  m.train_recommender = &rec::train;
  m.load_minilm = &load_minilm;
  m.open_local_chat_model = &open_local_chat_model;
  m.run_puma_pipeline = &run_puma_pipeline;
  m.lm_generate = &lm_generate;
  m.lm_score = &lm_score;
  m.lm_logits = &lm_logits;
  m.lm_tokenize = &lm_tokenize;
  m.lm_describe = &lm_describe;
  return m;
}();

}  // namespace
}  // namespace pwab::models

extern "C" __attribute__((visibility("default"))) const pwab::models::TorchModels* pwab_torch_models() {
  return &pwab::models::kModels;
}
