#include "cli/common.h"

#include <iostream>

#include "data/loader.h"

namespace pwab::cli {

data::Dataset load_data(const std::string& dir) { return data::load_dataset(dir); }

env::ServiceOptions service_options(const std::string& index_dir, const std::string& checkpoint, bool announce) {
  env::ServiceOptions options{index_dir, checkpoint, {}};
  if (announce) options.announce = [](const std::string& line) { std::cerr << "pwab: " << line << "\n"; };
  return options;
}

}  // namespace pwab::cli
