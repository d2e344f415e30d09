// src/embed/fasttext_train.h: one fastText training run from a prepared input file to a model file, shared by
// the fastText embedder and the agents' function classifier. Includes fastText's own headers, so only code that
// links fastText includes it.
#pragma once
#include <fasttext/args.h>

#include <filesystem>
#include <string_view>

namespace pwab::embed {

//! Trains with `args` (args.input is set to `input`) and moves the model into `out` atomically. `input` is
//! removed afterwards, also on failure. Throws pwab::Error "<what> training failed: ..." when fastText fails.
void train_fasttext_model(fasttext::Args args, const std::filesystem::path& input, const std::filesystem::path& out,
                          std::string_view what);

}  // namespace pwab::embed
