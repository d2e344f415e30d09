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

}  // namespace pwab::cli
