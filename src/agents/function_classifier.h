// src/agents/function_classifier.h: which task function an instruction asks for (PUMA's function identification,
// docs/decisions.md §5.1, done offline).
//
// A fastText supervised classifier trained on the train split's instructions, labelled with the tool that solves
// each task, and cached by the hash of that training data. A dataset without train tasks gets keyword rules
// instead (documented in docs/agents/heuristic.md), so an agent still runs on test-only data.
#pragma once
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/dataset.h"

namespace pwab::agents {

//! A predicted task function (one of the three tool names) and the classifier's probability for it.
struct FunctionPrediction {
  std::string function;
  double probability = 0;
};

//! fastText supervised settings; every field is part of the cache key.
struct FunctionClassifierOptions {
  int dim = 16;
  int epochs = 10;
  int word_ngrams = 2;  //!< word bigrams catch "review of", "recommend me"
  int buckets = 10000;
  double learning_rate = 0.5;
  int seed = 1;         //!< training uses one thread, so the model is bit-deterministic
};

class FunctionClassifier {
 public:
  ~FunctionClassifier();
  FunctionClassifier(const FunctionClassifier&) = delete;
  FunctionClassifier& operator=(const FunctionClassifier&) = delete;

  //! Loads <cache_dir>/function-classifier/<key>.bin, training it first from the train split when missing; the
  //! keyword rules when the train split is empty.
  static std::unique_ptr<FunctionClassifier> open_or_train(const data::Dataset& ds,
                                                           const std::filesystem::path& cache_dir,
                                                           const FunctionClassifierOptions& options = {});
  //! Trains on (instruction, tool name) pairs and writes the model to `out` atomically. UsageError when
  //! `examples` is empty or a label is not a task function.
  static std::unique_ptr<FunctionClassifier> train(const std::vector<std::pair<std::string, std::string>>& examples,
                                                   const FunctionClassifierOptions& options,
                                                   const std::filesystem::path& out);
  //! Loads a model written by train(). Throws pwab::Error naming the file.
  static std::unique_ptr<FunctionClassifier> load(const std::filesystem::path& model_file);
  //! The fallback without training data: review words → add_product_review, recommendation words →
  //! get_recommendations_by_history, anything else → search_product_by_query.
  static std::unique_ptr<FunctionClassifier> keyword_rules();

  //! The most probable task function. Thread-safe.
  FunctionPrediction predict(std::string_view instruction) const;
  //! Share of `tasks` whose predicted function solves the task's type.
  double accuracy(const std::vector<data::Task>& tasks) const;
  //! "fasttext <16 hex digits of the model file>" or "keyword rules".
  std::string description() const;

 private:
  struct Impl;
  explicit FunctionClassifier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

//! The (instruction, tool name) training pairs of a split, in file order.
std::vector<std::pair<std::string, std::string>> function_examples(const data::Dataset& ds, data::Split split);

}  // namespace pwab::agents
