// src/puma/exchange.h: PUMA's training data in the formats of the engines people train 7B models with, so a
// pipeline's examples and preference pairs can be trained elsewhere (TRL, LLaMA-Factory, the original scripts)
// and the result evaluated by pwab again (docs/puma.md "Training elsewhere").
//
//   trl           sft_{train,test}.jsonl {"prompt", "completion"} (TRL's prompt-completion format) and
//                 dpo_{train,test}.jsonl {"prompt", "chosen", "rejected"} (TRL's preference format)
//   llamafactory  puma_sft{,_test}.json [{"instruction", "input", "output"}] (alpaca),
//                 puma_dpo{,_test}.json [{"instruction", "input", "chosen", "rejected"}] and dataset_info.json naming
//                 them (the preference sets with "ranking": true)
//   original      function_data.json and param_data.json {"train": [...], "test": [...]} with the original's
//                 records ({"instruction", "prompt", "target"} plus "mem" for parameters) and dpo_data.json
//                 {"train": [...], "test": [...]} of {"instruction", "prompt", "chosen", "rejected"}
//
// The prompt is the whole raw prompt of pwab's template and the completion the text after it; the engines must add
// no chat template (LLaMA-Factory: `template: empty`) and end the completion with EOS, as pwab trains (D6 in
// docs/decisions.md).
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "puma/model.h"
#include "puma/pipeline.h"
#include "puma/prepare.h"

namespace pwab::puma {

enum class ExportFormat { kTrl, kLlamaFactory, kOriginal };
std::string_view to_string(ExportFormat format);
//! "trl" / "llamafactory" / "original"; UsageError otherwise.
ExportFormat parse_export_format(std::string_view text);

//! What a pipeline directory holds for training elsewhere.
struct TrainingData {
  std::vector<Example> function_train, function_test;  //!< function identification (docs/decisions.md §5.1)
  std::vector<Example> param_train, param_test;        //!< parameters (docs/decisions.md §5.2)
  std::vector<PreferenceExample> dpo_train, dpo_test;  //!< preference pairs (docs/decisions.md §5.5), when the score
                                                       //!< step ran
  std::vector<std::string> dpo_train_instructions, dpo_test_instructions;  //!< the pairs' instructions
};

//! Reads a pipeline directory's data/ (prepare) and dpo/score/ (score) files. DataError when prepare has not run.
TrainingData read_training_data(const std::filesystem::path& pipeline_dir);

//! The SFT rows of `mode` (function examples then parameter examples), as the SFT step builds them (one copy of
//! each function example).
std::vector<TrainPair> sft_rows(const std::vector<Example>& functions, const std::vector<Example>& params, SftMode mode);

//! Writes `data` in `format` into `dir` (created); returns the files written. The SFT files hold the rows of `mode`.
std::vector<std::filesystem::path> export_training_data(const TrainingData& data, ExportFormat format,
                                                        SftMode mode, const std::filesystem::path& dir);

//! What an export holds, read back (for round-trip checks and for training on data prepared elsewhere).
struct ExportedData {
  std::vector<TrainPair> sft_train, sft_test;
  std::vector<PreferenceExample> dpo_train, dpo_test;
};
//! Reads what export_training_data wrote (or the same formats written by anyone). DataError naming the file and
//! the record on anything malformed.
ExportedData read_export(const std::filesystem::path& dir, ExportFormat format, SftMode mode = SftMode::kFunctionParam);

}  // namespace pwab::puma
