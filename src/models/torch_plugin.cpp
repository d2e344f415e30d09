// libpwab_torch.so: the entry points of torch_models.h over the libtorch areas (rec training, MiniLM, LLaMA/PUMA).
// Linked with every static area it needs and with their symbols hidden (--exclude-libs), so it exports one
// symbol and never binds to the copies of the same code inside `pwab`.
#include "core/torch_runtime.h"
#include "embed/minilm.h"
#include "models/torch_models.h"
#include "puma/model.h"
#include "puma/pipeline.h"
#include "rec/recommender.h"

namespace pwab::models {
namespace {

std::string describe() {
  torch_init_threads();
  return torch_description();
}

std::unique_ptr<embed::Embedder> load_minilm(const std::filesystem::path& dir, const embed::MiniLMOptions& options) {
  return embed::MiniLMEmbedder::load(dir, options);
}

double matmul_gflops() { return torch_matmul_gflops(); }

LocalChatModel open_local_chat_model(const std::filesystem::path& dir, const std::string& name) {
  std::shared_ptr<puma::PumaModel> model = puma::PumaModel::open(dir);
  std::string description = model->describe();
  return {std::shared_ptr<llm::ChatModel>(puma::local_chat_model(model, name)), std::move(description)};
}

const TorchModels kModels = [] {
  TorchModels m;
  m.abi = kTorchModelsAbi;
  m.size = sizeof(TorchModels);
  m.describe = &describe;
  m.matmul_gflops = &matmul_gflops;
  m.train_recommender = &rec::train;
  m.load_minilm = &load_minilm;
  m.open_local_chat_model = &open_local_chat_model;
  m.run_puma_pipeline = &puma::run_pipeline;
  return m;
}();

}  // namespace
}  // namespace pwab::models

extern "C" __attribute__((visibility("default"))) const pwab::models::TorchModels* pwab_torch_models() {
  return &pwab::models::kModels;
}
