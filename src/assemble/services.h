// src/assemble/services.h: a dataset's environment with its real services, as every command that acts in one opens it
// (run, serve, mcp, puma, build): the BM25 index, SASRec, the embedder for review rewards and memory.
//
// Services are built on first use and cached beside the dataset: the index under DATA/.pwab-index, SASRec at
// DATA/.pwab-rec/sasrec.pwab (trained through the libtorch plugin when missing), the fastText embedder under
// DATA/.pwab-models. Loading what is already built needs no libtorch.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "data/dataset.h"
#include "embed/embedder.h"
#include "env/backends.h"
#include "env/environment.h"
#include "rec/recommender.h"
#include "search/search.h"

namespace pwab::assemble {

//! Where `pwab rec train DATA` writes its checkpoint and every command looks for it by default.
std::filesystem::path default_rec_checkpoint(const std::filesystem::path& data_dir);

//! Where the services come from; empty paths mean DATA's defaults.
struct ServiceOptions {
  std::filesystem::path index_dir;   //!< search index root (default DATA/.pwab-index)
  std::filesystem::path checkpoint;  //!< SASRec checkpoint (default DATA/.pwab-rec/sasrec.pwab, trained if missing)
  //! Status lines (a first-run training announcement, its progress on a terminal); null = silent.
  std::function<void(const std::string&)> announce;
  //! When set, asked first for the index (e.g. one opened on another thread from its cache with
  //! search::Index::open_cached); when it gives null, the index is opened or built as without it.
  std::function<std::unique_ptr<search::Index>()> opened_index = {};
};

//! The services behind an environment's search and recommendation tools.
struct Services {
  std::unique_ptr<search::Index> index;
  std::unique_ptr<rec::Recommender> recommender;
  std::filesystem::path checkpoint;  //!< the SASRec checkpoint loaded
};

//! Opens (or builds and caches) the BM25 index and loads SASRec. When the default checkpoint does not exist yet,
//! SASRec is trained there first with `pwab rec train`'s defaults (processes started together train once; an
//! interrupted training resumes on the next call). A checkpoint named in `options` that does not exist is an
//! Error.
Services open_services(const data::Dataset& ds, const std::filesystem::path& data_dir, const ServiceOptions& options);

//! The embedder for review rewards and memory retrieval: "fasttext" (trained on the dataset's own text, cached
//! under DATA/.pwab-models), "minilm:MODEL_DIR" (all-MiniLM-L6-v2, through the libtorch plugin) or
//! "hashing[:DIM]". UsageError for any other spec ("openai:MODEL" needs an endpoint: the front end builds it).
std::unique_ptr<embed::Embedder> open_embedder(const std::string& spec, const data::Dataset& ds,
                                               const std::filesystem::path& data_dir);

//! The environment over a dataset's real services, with everything it points to.
struct DatasetEnvironment {
  Services services;
  std::unique_ptr<embed::Embedder> embedder;
  std::unique_ptr<env::IndexSearch> search;
  std::unique_ptr<env::SasrecRecommend> recommend;
  std::unique_ptr<env::Environment> environment;
};

//! open_services, then the environment with `top_k` results per search or recommendation over `embedder`.
//! `ds` must outlive the result.
DatasetEnvironment open_environment(const data::Dataset& ds, const std::filesystem::path& data_dir,
                                    const ServiceOptions& options, std::unique_ptr<embed::Embedder> embedder,
                                    int top_k);

}  // namespace pwab::assemble
