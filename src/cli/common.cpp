#include "cli/common.h"

#include <iostream>

#include "data/loader.h"

namespace pwab::cli {

data::Dataset load_data(const std::string& dir) { return data::load_dataset(dir); }

std::function<void(const std::string&)> stderr_status() {
  return [](const std::string& line) { std::cerr << "pwab: " << line << "\n"; };
}

env::ServiceOptions service_options(const std::string& index_dir, const std::string& checkpoint, bool announce) {
  return {index_dir, checkpoint, announce ? stderr_status() : nullptr};
}

}  // namespace pwab::cli
