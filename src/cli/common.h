// src/cli/common.h: what several subcommands share: loading a dataset, default artifact paths.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "data/dataset.h"
#include "embed/embedder.h"
#include "rec/recommender.h"
#include "search/search.h"

namespace pwab::cli {

//! Loads a dataset directory, throwing DataError with the first problem (see `pwab data validate`).
data::Dataset load_data(const std::string& dir);
//! Where `pwab rec train DATA` writes its checkpoint and `pwab recommend` looks for it by default.
std::filesystem::path default_rec_checkpoint(const std::filesystem::path& data_dir);
//! The services behind an environment's search and recommendation tools.
struct EnvServices {
  std::unique_ptr<search::Index> index;
  std::unique_ptr<rec::Recommender> recommender;
  std::filesystem::path checkpoint;  //!< the SASRec checkpoint loaded
};
//! Opens (or builds and caches) the BM25 index (`index_dir`, or DATA's default when empty) and loads SASRec from
//! `checkpoint` (DATA's default when empty). When the default checkpoint does not exist yet, SASRec is trained
//! there first with `pwab rec train`'s defaults (an interrupted training resumes on the next call); `announce`
//! prints a line saying so, and a progress line when stderr is a terminal. A `checkpoint` that does not exist is
//! an Error.
EnvServices open_env_services(const data::Dataset& ds, const std::string& data_dir, const std::string& index_dir,
                              const std::string& checkpoint, bool announce = true);

//! The embedder a run uses for review rewards and memory retrieval: "fasttext" (trained on the dataset's own
//! text, cached under DATA/.pwab-models), "minilm:MODEL_DIR" (all-MiniLM-L6-v2) or "hashing[:DIM]". UsageError
//! for an unknown spec.
std::unique_ptr<embed::Embedder> make_run_embedder(const std::string& spec, const data::Dataset& ds,
                                                   const std::filesystem::path& data_dir);

}  // namespace pwab::cli
