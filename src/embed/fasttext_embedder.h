// src/embed/fasttext_embedder.h: the offline embedder, fastText skipgram vectors trained on a dataset's own text.
//
// The paper's encoder (all-MiniLM-L6-v2) needs model files; this embedder needs none: it trains a small skipgram
// model on the dataset's product titles, categories and features, its users' past reviews and its instructions,
// caches it next to the data, and embeds a text as fastText's getSentenceVector does (the mean of the
// L2-normalized word vectors; unseen words count only when subwords are trained), by default with each word
// weighted by its rarity (FastTextPooling), L2-normalized.
// Training uses one thread by default: fastText is bit-deterministic only with one thread, and a small corpus
// trains in a few seconds anyway (docs/agents/heuristic.md has the figures).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embed/embedder.h"

namespace pwab::data {
class Dataset;
}

namespace pwab::embed {

//! Skipgram training settings. The defaults trade a little quality for speed (a few seconds on the full
//! synthetic dataset): every field is part of the cache key.
struct FastTextTrainOptions {
  int dim = 100;
  int epochs = 3;
  int window = 3;
  int negatives = 3;
  int min_count = 2;  //!< rarer words get no vector (unless subwords are on)
  //! Subword n-gram lengths; 0 and 0 (the default) trains whole words only, 2.5x faster at the same quality on the
  //! synthetic data. 3 and 4 give unseen and rare words a vector from their character n-grams.
  int min_ngram = 0;
  int max_ngram = 0;
  int buckets = 50000;  //!< hash buckets for subword n-grams (the model file is (words + buckets) × dim floats)
  double learning_rate = 0.2;  //!< higher than fastText's 0.05: a small corpus and few epochs
  //! Training stops reading the corpus after this many words (0 = all): keeps training time bounded on big data.
  std::size_t max_corpus_words = 200000;
  int threads = 1;        //!< >1 is faster but not bit-deterministic (fastText's lock-free updates)
  int seed = 1;
};

//! The text normalization used for training and embedding: ASCII lower case, one space between runs of letters
//! and digits (any non-ASCII byte counts as a letter), everything else dropped.
std::string fasttext_normalize(std::string_view text);

//! How word vectors make a sentence vector.
enum class FastTextPooling {
  //! The mean of the L2-normalized word vectors, exactly fastText's getSentenceVector. Frequent words dominate:
  //! on one narrow catalogue any two reviews score above 0.9 (docs/agents/heuristic.md).
  kMean,
  //! Smooth inverse frequency: each normalized word vector weighted by a / (a + p(word)), with a = 1e-3 and p the
  //! word's frequency in the training corpus (an unknown word weighs 1), then summed. Frequent words stop
  //! dominating; same-category reviews are told from others far better (AUC 0.88 vs 0.67 on the mini dataset).
  kSif,
};
std::string_view to_string(FastTextPooling p);
//! "mean" | "sif"; nullopt otherwise.
std::optional<FastTextPooling> parse_fasttext_pooling(std::string_view s);

class FastTextEmbedder final : public Embedder {
 public:
  ~FastTextEmbedder() override;
  FastTextEmbedder(const FastTextEmbedder&) = delete;
  FastTextEmbedder& operator=(const FastTextEmbedder&) = delete;

  //! Loads a fastText model file (skipgram or cbow). Throws pwab::Error naming the file when it cannot be read
  //! or is not a fastText unsupervised model.
  static std::unique_ptr<FastTextEmbedder> load(const std::filesystem::path& model_file,
                                                FastTextPooling pooling = FastTextPooling::kSif);

  //! "fasttext-v1/<dim>/<16 hex digits of the model file's hash>" (mean pooling) or "fasttext-sif-v1/…".
  std::string name() const override;
  std::size_t dim() const override;
  //! One L2-normalized vector per text (zero for a text with no words). Thread-safe.
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) const override;
  std::vector<float> embed_one(std::string_view text) const;

 private:
  struct Impl;
  explicit FastTextEmbedder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

//! Trains a skipgram model on `corpus` (one text per element, normalized here) and writes the model file to
//! `out` atomically (a temporary file renamed into place). Throws UsageError on bad options or an empty corpus.
void train_fasttext_embedder(const std::vector<std::string>& corpus, const FastTextTrainOptions& options,
                             const std::filesystem::path& out);

//! The dataset's own text, deduplicated, in a fixed order: every instruction, product titles, category paths,
//! review title + text of every non-test behaviour (test reviews are the ground truth of review tasks, so they
//! are left out) and feature bullets, the five sources interleaved so that a word budget samples all of them.
std::vector<std::string> dataset_corpus(const data::Dataset& ds);

//! 16 hex digits over the corpus and the options: the cache key of the trained model.
std::string fasttext_cache_key(const std::vector<std::string>& corpus, const FastTextTrainOptions& options);

//! Loads <cache_dir>/fasttext-embedder/<cache key>.bin, training it first from dataset_corpus(ds) when missing.
//! The directory is created on demand.
std::unique_ptr<FastTextEmbedder> open_or_train_fasttext_embedder(const data::Dataset& ds,
                                                                  const std::filesystem::path& cache_dir,
                                                                  const FastTextTrainOptions& options = {},
                                                                  FastTextPooling pooling = FastTextPooling::kSif);

}  // namespace pwab::embed
