#include "cli/common.h"

#include <fmt/format.h>

#include <iostream>

#include "core/error.h"
#include "core/sys.h"
#include "data/loader.h"
#include "embed/fasttext_embedder.h"
#ifdef PWAB_WITH_TORCH
#include "embed/minilm.h"
#endif

namespace pwab::cli {

data::Dataset load_data(const std::string& dir) { return data::load_dataset(dir); }

std::filesystem::path default_rec_checkpoint(const std::filesystem::path& data_dir) {
  return data_dir / ".pwab-rec" / "sasrec.pwab";
}

std::unique_ptr<embed::Embedder> make_run_embedder(const std::string& spec, const data::Dataset& ds,
                                                   const std::filesystem::path& data_dir) {
  if (spec == "fasttext") return embed::open_or_train_fasttext_embedder(ds, data_dir / ".pwab-models");
#ifdef PWAB_WITH_TORCH
  if (spec.rfind("minilm:", 0) == 0) return embed::MiniLMEmbedder::load(spec.substr(7));
#endif
  if (spec == "hashing" || spec.rfind("hashing:", 0) == 0) return embed::make_embedder(spec);
  throw UsageError("--embedder must be fasttext, minilm:MODEL_DIR or hashing[:DIM], got '" + spec + "'");
}

namespace {

//! First run: trains SASRec with `pwab rec train`'s defaults into DATA's default checkpoint. It trains into a
//! ".partial" file (resumed by the next run if this one is interrupted) and renames it when done, so a
//! half-trained model is never served as if it were finished.
void train_default_checkpoint(const data::Dataset& ds, const std::filesystem::path& ckpt, bool announce) {
  auto partial = ckpt;
  partial += ".partial";
  rec::TrainOptions options;
  options.resume = true;
  options.progress = announce;
  if (announce)
    std::cerr << fmt::format("pwab: no recommender checkpoint yet; training SASRec ({} epochs) into {} "
                             "(once: later runs reuse it; `pwab rec train` sets other options)\n",
                             options.epochs, ckpt.string());
  rec::TrainReport r = rec::train(ds, options, partial);
  std::filesystem::rename(partial, ckpt);
  if (announce)
    std::cerr << fmt::format("pwab: SASRec trained in {:.1f} s (best HR@10 {:.4f}, epoch {})\n", r.seconds,
                             r.best_hr10, r.best_epoch);
}

}  // namespace

EnvServices open_env_services(const data::Dataset& ds, const std::string& data_dir, const std::string& index_dir,
                              const std::string& checkpoint, bool announce) {
  EnvServices s;
  s.index = search::Index::open_or_build(
      ds, index_dir.empty() ? std::nullopt : std::optional<std::filesystem::path>(index_dir));
  auto ckpt = checkpoint.empty() ? default_rec_checkpoint(data_dir) : std::filesystem::path(checkpoint);
  if (!std::filesystem::exists(ckpt)) {
    // A checkpoint the user named must exist; the default one is trained on first use, like the index.
    if (!checkpoint.empty()) throw Error("no recommender checkpoint at " + ckpt.string());
    // Processes started together (shards, `pwab serve` beside `pwab run`) train once: the others wait here.
    FileLock lock(ckpt.string() + ".lock");
    if (!std::filesystem::exists(ckpt)) train_default_checkpoint(ds, ckpt, announce);
  }
  s.recommender = rec::Recommender::load(ckpt, ds);
  s.checkpoint = ckpt;
  return s;
}

}  // namespace pwab::cli
