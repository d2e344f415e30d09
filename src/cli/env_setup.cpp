// Building a dataset's environment (env_setup.h).
#include "cli/env_setup.h"

namespace pwab::cli {

DatasetEnvironment open_environment(const data::Dataset& ds, const std::string& data_dir, const std::string& index_dir,
                                    const std::string& checkpoint, const std::string& embedder_spec, int top_k) {
  DatasetEnvironment e;
  e.services = open_env_services(ds, data_dir, index_dir, checkpoint);
  e.embedder = make_run_embedder(embedder_spec, ds, data_dir);
  e.search = std::make_unique<env::IndexSearch>(*e.services.index);
  e.recommend = std::make_unique<env::SasrecRecommend>(*e.services.recommender);
  e.environment = std::make_unique<env::Environment>(ds, e.search.get(), e.recommend.get(), *e.embedder,
                                                     env::EnvironmentOptions{top_k});
  return e;
}

}  // namespace pwab::cli
