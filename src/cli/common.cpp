#include "cli/common.h"

#include "core/error.h"
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

EnvServices open_env_services(const data::Dataset& ds, const std::string& data_dir, const std::string& index_dir,
                              const std::string& checkpoint) {
  EnvServices s;
  s.index = search::Index::open_or_build(
      ds, index_dir.empty() ? std::nullopt : std::optional<std::filesystem::path>(index_dir));
  auto ckpt = checkpoint.empty() ? default_rec_checkpoint(data_dir) : std::filesystem::path(checkpoint);
  if (!std::filesystem::exists(ckpt))
    throw Error("no recommender checkpoint at " + ckpt.string() + ": run `pwab rec train " + data_dir +
                "` first or pass --checkpoint");
  s.recommender = rec::Recommender::load(ckpt, ds);
  s.checkpoint = ckpt;
  return s;
}

}  // namespace pwab::cli
