// src/cli/common.h: what several subcommands share: loading a dataset, default artifact paths.
#pragma once
#include <filesystem>
#include <string>

#include "data/dataset.h"

namespace pwab::cli {

//! Loads a dataset directory, throwing DataError with the first problem (see `pwab data validate`).
data::Dataset load_data(const std::string& dir);
//! Where `pwab rec train DATA` writes its checkpoint and `pwab recommend` looks for it by default.
std::filesystem::path default_rec_checkpoint(const std::filesystem::path& data_dir);

}  // namespace pwab::cli
