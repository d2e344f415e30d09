// src/agents/function_classifier.cpp: the fastText function classifier, its cache, and the keyword fallback.
#include "agents/function_classifier.h"

#include <fasttext/args.h>
#include <fasttext/fasttext.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/sys.h"
#include "core/hash.h"
#include "embed/fasttext_embedder.h"
#include "embed/fasttext_train.h"
#include "env/tools.h"

namespace fs = std::filesystem;

namespace pwab::agents {
namespace {

constexpr std::string_view kLabelPrefix = "__label__";
// Bumped when the training text or labels change, so cached classifiers are retrained.
constexpr std::string_view kVersion = "function-classifier-v1";

bool is_task_function(std::string_view name) { return env::task_type_of_function(name).has_value(); }

bool has_word(const std::string& normalized, std::string_view word) {
  std::size_t pos = 0;
  while ((pos = normalized.find(word, pos)) != std::string::npos) {
    bool start = pos == 0 || normalized[pos - 1] == ' ';
    bool end = pos + word.size() == normalized.size() || normalized[pos + word.size()] == ' ';
    if (start && end) return true;
    pos += 1;
  }
  return false;
}

std::string keyword_function(const std::string& normalized) {
  for (std::string_view w : {"review", "reviews", "rate", "rating", "stars"})
    if (has_word(normalized, w)) return std::string(env::kAddReview);
  for (std::string_view w : {"recommend", "recommendation", "recommendations", "suggest", "suggestion", "suggestions",
                             "ideas", "next", "usually"})
    if (has_word(normalized, w)) return std::string(env::kRecommend);
  return std::string(env::kSearch);
}

std::string cache_key(const std::vector<std::pair<std::string, std::string>>& examples,
                      const FunctionClassifierOptions& o) {
  Hasher h;
  h.update(kVersion);
  for (int v : {o.dim, o.epochs, o.word_ngrams, o.buckets, o.seed}) h.update_u64(static_cast<uint64_t>(v));
  h.update_u64(static_cast<uint64_t>(std::llround(o.learning_rate * 1e9)));
  for (const auto& [text, label] : examples) {
    h.update_u64(text.size()).update(text);
    h.update_u64(label.size()).update(label);
  }
  return h.hex();
}

}  // namespace

struct FunctionClassifier::Impl {
  std::unique_ptr<fasttext::FastText> model;  // null: keyword rules
  std::string description;
};

FunctionClassifier::FunctionClassifier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FunctionClassifier::~FunctionClassifier() = default;

std::vector<std::pair<std::string, std::string>> function_examples(const data::Dataset& ds, data::Split split) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& t : ds.tasks(split)) out.emplace_back(t.instruction, std::string(env::task_function(t.type)));
  return out;
}

std::unique_ptr<FunctionClassifier> FunctionClassifier::keyword_rules() {
  auto impl = std::make_unique<Impl>();
  impl->description = "keyword rules";
  return std::unique_ptr<FunctionClassifier>(new FunctionClassifier(std::move(impl)));
}

std::unique_ptr<FunctionClassifier> FunctionClassifier::load(const fs::path& model_file) {
  auto impl = std::make_unique<Impl>();
  impl->model = std::make_unique<fasttext::FastText>();
  if (!fs::is_regular_file(model_file)) throw Error("function classifier " + model_file.string() + ": no such file");
  try {
    impl->model->loadModel(model_file.string());
  } catch (const std::exception& e) {
    throw Error("function classifier " + model_file.string() + ": " + e.what());
  }
  if (impl->model->getArgs().model != fasttext::model_name::sup)
    throw Error("function classifier " + model_file.string() + " is not a fastText classifier");
  impl->description = "fasttext " + to_hex(hash_file(model_file));
  return std::unique_ptr<FunctionClassifier>(new FunctionClassifier(std::move(impl)));
}

std::unique_ptr<FunctionClassifier> FunctionClassifier::train(
    const std::vector<std::pair<std::string, std::string>>& examples, const FunctionClassifierOptions& o,
    const fs::path& out) {
  if (examples.empty()) throw UsageError("function classifier: no training instructions");
  if (o.dim < 1 || o.epochs < 1 || o.word_ngrams < 1 || o.buckets < 0 || o.learning_rate <= 0)
    throw UsageError("function classifier: invalid training options");
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  fs::path input = temp_path_beside(out, "train");
  {
    std::ofstream f(input, std::ios::binary);
    for (const auto& [text, label] : examples) {
      if (!is_task_function(label)) throw UsageError("function classifier: '" + label + "' is not a task function");
      f << kLabelPrefix << label << ' ' << embed::fasttext_normalize(text) << '\n';
    }
    if (!f) throw Error("cannot write " + input.string());
  }
  // The settings fastText's `supervised` command implies, set explicitly (Args defaults are skipgram's).
  fasttext::Args args;
  args.input = input.string();
  args.model = fasttext::model_name::sup;
  args.loss = fasttext::loss_name::softmax;
  args.dim = o.dim;
  args.epoch = o.epochs;
  args.wordNgrams = o.word_ngrams;
  args.bucket = o.word_ngrams > 1 ? o.buckets : 0;
  args.lr = o.learning_rate;
  args.minCount = 1;
  args.minn = 0;
  args.maxn = 0;
  args.thread = 1;
  args.seed = o.seed;
  args.verbose = 0;
  embed::train_fasttext_model(args, input, out, "function classifier");
  return load(out);
}

std::unique_ptr<FunctionClassifier> FunctionClassifier::open_or_train(const data::Dataset& ds, const fs::path& cache_dir,
                                                                      const FunctionClassifierOptions& options) {
  auto examples = function_examples(ds, data::Split::kTrain);
  if (examples.empty()) return keyword_rules();
  fs::path file = cache_dir / "function-classifier" / (cache_key(examples, options) + ".bin");
  if (fs::exists(file)) {
    try {
      return load(file);
    } catch (const Error&) {
      // Corrupt: trained again below.
    }
  }
  return train(examples, options, file);
}

FunctionPrediction FunctionClassifier::predict(std::string_view instruction) const {
  std::string normalized = embed::fasttext_normalize(instruction);
  if (impl_->model) {
    std::istringstream in(normalized + "\n");
    std::vector<std::pair<fasttext::real, std::string>> predictions;
    impl_->model->predictLine(in, predictions, 1, 0.0);
    if (!predictions.empty()) {
      std::string label = predictions[0].second;
      if (label.starts_with(kLabelPrefix)) label.erase(0, kLabelPrefix.size());
      return {label, predictions[0].first};
    }
    // No known word at all: the rules decide, with no confidence.
    return {keyword_function(normalized), 0.0};
  }
  return {keyword_function(normalized), 1.0};
}

double FunctionClassifier::accuracy(const std::vector<data::Task>& tasks) const {
  if (tasks.empty()) return 0;
  std::size_t right = 0;
  for (const auto& t : tasks) right += predict(t.instruction).function == env::task_function(t.type);
  return static_cast<double>(right) / static_cast<double>(tasks.size());
}

std::string FunctionClassifier::description() const { return impl_->description; }

}  // namespace pwab::agents
