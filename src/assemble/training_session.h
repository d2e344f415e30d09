// src/assemble/training_session.h: PUMA's training pipeline assembled in one place -- what `pwab puma ...` does after its flags.
//
// Opens the dataset and its environment (the services and embedder the fast tests act on), wires the LLM search
// labeler when one is given, and runs the pipeline (puma/pipeline.h) through the libtorch plugin
// (models/torch_models.h). The front end binds flags and prints the report.
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "assemble/benchmark.h"
#include "puma/pipeline.h"

namespace pwab::assemble {

struct TrainingConfig {
  std::filesystem::path data;        //!< dataset directory
  std::filesystem::path index_dir;   //!< empty = DATA's default
  std::filesystem::path checkpoint;  //!< SASRec; empty = DATA's default (trained when missing)
  std::string embedder = "fasttext";  //!< memory retrieval and review rewards (open_embedder)
  int top_k = 10;
  puma::PipelineOptions pipeline;
  std::string until;  //!< the last step to run ("" = every step)
  //! Candidates for DPO from an OpenAI-compatible completions server (vLLM) instead of in-process sampling.
  std::shared_ptr<llm::ChatModel> sample_model;
  std::string sample_model_name;
};

struct TrainingHooks {
  std::function<void(const std::string&)> status;      //!< service lines (first-run SASRec training)
  std::function<void(const std::string&)> log;         //!< the pipeline's events
  std::function<void(const puma::TrainProgress&)> progress;  //!< training progress
  const std::atomic<bool>* cancel = nullptr;           //!< checkpoint and stop (resumable)
};

//! The dataset and its environment opened once, for one or several pipelines over them (the ablation runs many).
class TrainingSession {
 public:
  //! Opens config.data, its environment and the multi-turn data's teacher (the heuristic agent); the pipeline
  //! settings in `config` are not used here.
  TrainingSession(const TrainingConfig& config, const RunModels& models, const TrainingHooks& hooks);
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;
  //! Runs a pipeline up to `until` ("" = every step) through the libtorch plugin.
  puma::PipelineReport run(const puma::PipelineOptions& options, const std::string& until = "");
  const data::Dataset& dataset() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! Runs the pipeline up to config.until. `models.agent_model`, when set, labels search tasks (search_labels llm).
puma::PipelineReport run_training(const TrainingConfig& config, const RunModels& models, const TrainingHooks& hooks);

}  // namespace pwab::assemble
