// src/embed/fasttext_embedder.cpp: skipgram training on a dataset's text, the model cache, and sentence vectors.
#include "embed/fasttext_embedder.h"
#include "embed/fasttext_train.h"

#include <fasttext/args.h>
#include <fasttext/fasttext.h>
#include <fasttext/vector.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "core/error.h"
#include "core/sys.h"
#include "core/hash.h"
#include "data/dataset.h"

namespace fs = std::filesystem;

namespace pwab::embed {
namespace {

// Bumped when the corpus or the normalization changes, so cached models are retrained.
constexpr std::string_view kCorpusVersion = "fasttext-corpus-v1";

void normalize_l2(std::vector<float>& v) {
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm <= 0) return;
  auto inv = static_cast<float>(1.0 / std::sqrt(norm));
  for (float& x : v) x *= inv;
}

void validate(const FastTextTrainOptions& o) {
  if (o.dim < 1 || o.epochs < 1 || o.window < 1 || o.negatives < 1 || o.min_count < 1 || o.threads < 1 ||
      o.buckets < 0 || o.min_ngram < 0 || o.max_ngram < o.min_ngram || o.learning_rate <= 0)
    throw UsageError("invalid fastText training options");
}

}  // namespace

std::string_view to_string(FastTextPooling p) { return p == FastTextPooling::kMean ? "mean" : "sif"; }

std::optional<FastTextPooling> parse_fasttext_pooling(std::string_view s) {
  if (s == "mean") return FastTextPooling::kMean;
  if (s == "sif") return FastTextPooling::kSif;
  return std::nullopt;
}

std::string fasttext_normalize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (unsigned char c : text) {
    bool word = c >= 0x80 || std::isalnum(c);
    if (!word) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// The embedder
// ------------------------------------------------------------------------------------------------------------

struct FastTextEmbedder::Impl {
  fasttext::FastText model;
  std::shared_ptr<const fasttext::Dictionary> dict;
  int dim = 0;
  std::string name;
  //! The normalized (and, for kSif, weighted) vector of every dictionary word, row-major: looked up instead of
  //! re-summing subwords.
  std::vector<float> word_vectors;
  //! kSif: the smoothing constant a of the weight a / (a + p(word)); an unknown word weighs 1.
  static constexpr double kSifA = 1e-3;

  //! Adds the L2-normalized vector of `word` to `sum`; false when the word has no vector at all.
  bool add_word(const std::string& word, std::vector<float>& sum) const {
    int32_t id = dict->getId(word);
    if (id >= 0 && id < dict->nwords()) {
      const float* row = word_vectors.data() + static_cast<std::size_t>(id) * static_cast<std::size_t>(dim);
      bool any = false;
      for (int k = 0; k < dim; ++k) any |= row[k] != 0.0f;
      for (int k = 0; k < dim; ++k) sum[k] += row[k];
      return any;
    }
    // Unseen word: its subword n-grams (as getWordVector does), normalized.
    fasttext::Vector v(dim);
    model.getWordVector(v, word);
    double norm = v.norm();
    if (norm <= 0) return false;
    for (int k = 0; k < dim; ++k) sum[k] += static_cast<float>(v[k] / norm);
    return true;
  }
};

FastTextEmbedder::FastTextEmbedder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FastTextEmbedder::~FastTextEmbedder() = default;

std::unique_ptr<FastTextEmbedder> FastTextEmbedder::load(const fs::path& model_file, FastTextPooling pooling) {
  auto impl = std::make_unique<Impl>();
  if (!fs::is_regular_file(model_file)) throw Error("fastText model " + model_file.string() + ": no such file");
  try {
    impl->model.loadModel(model_file.string());
  } catch (const std::exception& e) {
    throw Error("fastText model " + model_file.string() + ": " + e.what());
  }
  if (impl->model.getArgs().model == fasttext::model_name::sup)
    throw Error("fastText model " + model_file.string() + " is a classifier, not word vectors");
  impl->dict = impl->model.getDictionary();
  impl->dim = impl->model.getDimension();
  impl->name = std::string(pooling == FastTextPooling::kMean ? "fasttext-v1/" : "fasttext-sif-v1/") +
               std::to_string(impl->dim) + "/" + to_hex(hash_file(model_file));
  // Precompute normalized word vectors, as getSentenceVector would compute them per occurrence.
  const int32_t n_words = impl->dict->nwords();
  const std::vector<int64_t> counts = impl->dict->getCounts(fasttext::entry_type::word);
  const double n_tokens = std::max<double>(1.0, static_cast<double>(impl->dict->ntokens()));
  impl->word_vectors.assign(static_cast<std::size_t>(n_words) * static_cast<std::size_t>(impl->dim), 0.0f);
  fasttext::Vector v(impl->dim);
  for (int32_t i = 0; i < n_words; ++i) {
    impl->model.getWordVector(v, impl->dict->getWord(i));
    double norm = v.norm();
    if (norm <= 0) continue;
    float* row = impl->word_vectors.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(impl->dim);
    for (int k = 0; k < impl->dim; ++k) row[k] = static_cast<float>(v[k] / norm);
  }
  if (pooling == FastTextPooling::kSif) {
    for (int32_t i = 0; i < n_words; ++i) {
      double weight = Impl::kSifA / (Impl::kSifA + static_cast<double>(counts[static_cast<std::size_t>(i)]) / n_tokens);
      float* row = impl->word_vectors.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(impl->dim);
      for (int k = 0; k < impl->dim; ++k) row[k] = static_cast<float>(weight * row[k]);
    }
  }
  return std::unique_ptr<FastTextEmbedder>(new FastTextEmbedder(std::move(impl)));
}

std::string FastTextEmbedder::name() const { return impl_->name; }
std::size_t FastTextEmbedder::dim() const { return static_cast<std::size_t>(impl_->dim); }

std::vector<float> FastTextEmbedder::embed_one(std::string_view text) const {
  std::vector<float> sum(static_cast<std::size_t>(impl_->dim), 0.0f);
  std::string normalized = fasttext_normalize(text);
  std::size_t start = 0;
  std::string word;
  while (start < normalized.size()) {
    std::size_t end = normalized.find(' ', start);
    if (end == std::string::npos) end = normalized.size();
    word.assign(normalized, start, end - start);
    impl_->add_word(word, sum);
    start = end + 1;
  }
  // The mean of the word vectors has the direction of their sum.
  normalize_l2(sum);
  return sum;
}

std::vector<std::vector<float>> FastTextEmbedder::embed(const std::vector<std::string>& texts) const {
  std::vector<std::vector<float>> out;
  out.reserve(texts.size());
  for (const auto& t : texts) out.push_back(embed_one(t));
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// Training and the cache
// ------------------------------------------------------------------------------------------------------------

void train_fasttext_embedder(const std::vector<std::string>& corpus, const FastTextTrainOptions& options,
                             const fs::path& out) {
  validate(options);
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  // fastText trains from a file: the normalized corpus, one text per line, up to the word budget.
  fs::path input = temp_path_beside(out, "corpus");
  std::size_t n_words = 0;
  {
    std::ofstream f(input, std::ios::binary);
    for (const auto& text : corpus) {
      std::string line = fasttext_normalize(text);
      if (line.empty()) continue;
      f << line << '\n';
      n_words += 1 + static_cast<std::size_t>(std::count(line.begin(), line.end(), ' '));
      if (options.max_corpus_words > 0 && n_words >= options.max_corpus_words) break;
    }
    if (!f) throw Error("cannot write " + input.string());
  }
  if (n_words == 0) {
    fs::remove(input);
    throw UsageError("fastText embedder: the training corpus has no words");
  }
  fasttext::Args args;
  args.input = input.string();
  args.model = fasttext::model_name::sg;
  args.loss = fasttext::loss_name::ns;
  args.dim = options.dim;
  args.epoch = options.epochs;
  args.ws = options.window;
  args.neg = options.negatives;
  args.minCount = options.min_count;
  args.minn = options.min_ngram;
  args.maxn = options.max_ngram;
  args.bucket = options.max_ngram > 0 ? options.buckets : 0;
  args.lr = options.learning_rate;
  args.thread = options.threads;
  args.seed = options.seed;
  args.verbose = 0;
  train_fasttext_model(args, input, out, "fastText embedder");
}

void train_fasttext_model(fasttext::Args args, const fs::path& input, const fs::path& out, std::string_view what) {
  args.input = input.string();
  fs::path tmp = temp_path_beside(out, "model");
  try {
    fasttext::FastText ft;
    ft.train(args);
    ft.saveModel(tmp.string());
  } catch (const std::exception& e) {
    fs::remove(input);
    fs::remove(tmp);
    throw Error(std::string(what) + " training failed: " + e.what());
  }
  fs::remove(input);
  fs::rename(tmp, out);
}

std::vector<std::string> dataset_corpus(const data::Dataset& ds) {
  // One list per source, deduplicated across all of them.
  std::unordered_set<uint64_t> seen;
  std::vector<std::vector<std::string>> sources(5);
  auto add = [&](std::size_t source, const std::string& text) {
    if (text.empty() || !seen.insert(hash_bytes(text)).second) return;
    sources[source].push_back(text);
  };
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& task : ds.tasks(split)) add(0, task.instruction);
  for (const auto& p : ds.products()) {
    add(1, p.title);
    std::string path = p.main_category;
    for (const auto& c : p.categories) path += " " + c;
    add(2, path);
    for (const auto& f : p.features) add(4, f);
  }
  for (const auto& user : ds.users())
    for (const auto& b : user.behaviours) {
      if (b.split == data::Split::kTest) continue;  // test reviews are the review tasks' ground truth
      add(3, b.review.title + ". " + b.review.text);
    }
  // Interleaved, so that a word budget (FastTextTrainOptions::max_corpus_words) samples every source.
  std::vector<std::string> out;
  std::size_t longest = 0;
  for (const auto& s : sources) longest = std::max(longest, s.size());
  for (std::size_t i = 0; i < longest; ++i)
    for (auto& s : sources)
      if (i < s.size()) out.push_back(std::move(s[i]));
  return out;
}

std::string fasttext_cache_key(const std::vector<std::string>& corpus, const FastTextTrainOptions& o) {
  Hasher h;
  h.update(kCorpusVersion);
  for (int v : {o.dim, o.epochs, o.window, o.negatives, o.min_count, o.min_ngram, o.max_ngram, o.buckets, o.threads,
                o.seed})
    h.update_u64(static_cast<uint64_t>(static_cast<int64_t>(v)));
  h.update_u64(static_cast<uint64_t>(std::llround(o.learning_rate * 1e9)));
  h.update_u64(o.max_corpus_words);
  for (const auto& text : corpus) {
    h.update_u64(text.size());
    h.update(text);
  }
  return h.hex();
}

std::unique_ptr<FastTextEmbedder> open_or_train_fasttext_embedder(const data::Dataset& ds, const fs::path& cache_dir,
                                                                  const FastTextTrainOptions& options,
                                                                  FastTextPooling pooling) {
  std::vector<std::string> corpus = dataset_corpus(ds);
  fs::path file = cache_dir / "fasttext-embedder" / (fasttext_cache_key(corpus, options) + ".bin");
  if (fs::exists(file)) {
    try {
      return FastTextEmbedder::load(file, pooling);
    } catch (const Error&) {
      // Corrupt (e.g. a foreign file): trained again below.
    }
  }
  train_fasttext_embedder(corpus, options, file);
  return FastTextEmbedder::load(file, pooling);
}

}  // namespace pwab::embed
