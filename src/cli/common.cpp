#include "cli/common.h"

#include "data/loader.h"

namespace pwab::cli {

data::Dataset load_data(const std::string& dir) { return data::load_dataset(dir); }

std::filesystem::path default_rec_checkpoint(const std::filesystem::path& data_dir) {
  return data_dir / ".pwab-rec" / "sasrec.pwab";
}

}  // namespace pwab::cli
