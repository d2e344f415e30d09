// Opening a dataset's services and environment (services.h).
#include "assemble/services.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/sys.h"
#include "embed/fasttext_embedder.h"
#include "embed/minilm.h"
#include "models/torch_models.h"

namespace pwab::assemble {

std::filesystem::path default_rec_checkpoint(const std::filesystem::path& data_dir) {
  return data_dir / ".pwab-rec" / "sasrec.pwab";
}

namespace {

//! First run: trains SASRec with `pwab rec train`'s defaults into DATA's default checkpoint. It trains into a
//! ".partial" file (resumed by the next run if this one is interrupted) and renames it when done, so a
//! half-trained model is never served as if it were finished.
void train_default_checkpoint(const data::Dataset& ds, const std::filesystem::path& ckpt,
                              const std::function<void(const std::string&)>& announce) {
  auto partial = ckpt;
  partial += ".partial";
  rec::TrainOptions options;
  options.resume = true;
  options.progress = static_cast<bool>(announce);
  if (announce)
    announce(fmt::format("no recommender checkpoint yet; training SASRec ({} epochs) into {} "
                         "(once: later runs reuse it; `pwab rec train` sets other options)",
                         options.epochs, ckpt.string()));
  rec::TrainReport r = models::torch_models().train_recommender(ds, options, partial);
  std::filesystem::rename(partial, ckpt);
  if (announce)
    announce(fmt::format("SASRec trained in {:.1f} s (best HR@10 {:.4f}, epoch {})", r.seconds, r.best_hr10,
                         r.best_epoch));
}

}  // namespace

Services open_services(const data::Dataset& ds, const std::filesystem::path& data_dir, const ServiceOptions& options) {
  Services s;
  auto open_index = [&] {
    if (options.opened_index) s.index = options.opened_index();
    if (!s.index)
      s.index = search::Index::open_or_build(
          ds, options.index_dir.empty() ? std::nullopt : std::optional<std::filesystem::path>(options.index_dir));
  };
  auto ckpt = options.checkpoint.empty() ? default_rec_checkpoint(data_dir) : options.checkpoint;
  // An index opening elsewhere is asked for after a ready recommender is loaded, to give it the most time;
  // otherwise (and before a first-run training) the index comes first.
  if (!options.opened_index || !std::filesystem::exists(ckpt)) open_index();
  if (!std::filesystem::exists(ckpt)) {
    // A checkpoint the user named must exist; the default one is trained on first use, like the index.
    if (!options.checkpoint.empty()) throw Error("no recommender checkpoint at " + ckpt.string());
    // Processes started together (shards, `pwab serve` beside `pwab run`) train once: the others wait here.
    FileLock lock(ckpt.string() + ".lock");
    if (!std::filesystem::exists(ckpt)) train_default_checkpoint(ds, ckpt, options.announce);
  }
  s.recommender = rec::Recommender::load(ckpt, ds);
  s.checkpoint = ckpt;
  if (!s.index) open_index();
  return s;
}

std::unique_ptr<embed::Embedder> open_embedder(const std::string& spec, const data::Dataset& ds,
                                               const std::filesystem::path& data_dir) {
  if (spec == "fasttext") return embed::open_or_train_fasttext_embedder(ds, data_dir / ".pwab-models");
  if (spec.rfind("minilm:", 0) == 0) return models::torch_models().load_minilm(spec.substr(7), embed::MiniLMOptions{});
  if (spec == "hashing" || spec.rfind("hashing:", 0) == 0) return embed::make_embedder(spec);
  throw UsageError("--embedder must be fasttext, minilm:MODEL_DIR or hashing[:DIM], got '" + spec + "'");
}

DatasetEnvironment open_environment(const data::Dataset& ds, const std::filesystem::path& data_dir,
                                    const ServiceOptions& options, std::unique_ptr<embed::Embedder> embedder,
                                    int top_k) {
  DatasetEnvironment e;
  e.services = open_services(ds, data_dir, options);
  e.embedder = std::move(embedder);
  e.search = std::make_unique<env::IndexSearch>(*e.services.index);
  e.recommend = std::make_unique<env::SasrecRecommend>(*e.services.recommender);
  e.environment = std::make_unique<env::Environment>(ds, e.search.get(), e.recommend.get(), *e.embedder,
                                                env::EnvironmentOptions{top_k});
  return e;
}

}  // namespace pwab::assemble
