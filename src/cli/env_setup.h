// src/cli/env_setup.h: a dataset's web environment as the commands that act in it build it (serve, puma).
#pragma once
#include <memory>
#include <string>

#include "cli/common.h"
#include "env/backends.h"
#include "env/environment.h"

namespace pwab::cli {

//! The environment over a dataset's real services, with everything it points to.
struct DatasetEnvironment {
  EnvServices services;
  std::unique_ptr<embed::Embedder> embedder;
  std::unique_ptr<env::IndexSearch> search;
  std::unique_ptr<env::SasrecRecommend> recommend;
  std::unique_ptr<env::Environment> environment;
};

//! open_env_services (index, SASRec), make_run_embedder(`embedder_spec`) and the environment with `top_k` results
//! per search or recommendation. `ds` must outlive the result.
DatasetEnvironment open_environment(const data::Dataset& ds, const std::string& data_dir, const std::string& index_dir,
                                    const std::string& checkpoint, const std::string& embedder_spec, int top_k);

}  // namespace pwab::cli
