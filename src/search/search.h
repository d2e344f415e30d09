// src/search/search.h: BM25 product search as PersonalWAB's search tool runs it (docs/decisions.md §1.7, §2.3.1).
//
// One document per catalogue product: id = parent_asin, text = data::product_fields_block(product). Text is
// analyzed as Anserini's default English analyzer does (Lucene 8 StandardTokenizer, possessive, lower case,
// 33 stop words, Porter reference stemmer) and ranked with Lucene's BM25 (k1 = 0.9, b = 0.4, one-byte length
// norms), ties by parent_asin ascending. The index lives on disk (Xapian) with a meta file that lets it check
// itself on open. docs/search.md has the details and the parity and speed figures.
#pragma once
#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace pwab::search {

struct Hit {
  std::string asin;
  double score;  //!< Lucene's float score, widened
};

//! The Lucene-compatible analysis: the terms `text` is indexed or searched with, in order.
std::vector<std::string> analyze(std::string_view text);

//! The search document of a product (product_fields_block).
std::string document_text(const data::Product& product);
//! 16 hex digits over every product's parent_asin and document text; changes when any of them changes.
std::string catalogue_fingerprint(const data::Dataset& ds);
//! The corpus as "asin<TAB>text" lines in asin order, the text's newlines and tabs turned into spaces (the
//! input of the Lucene reference tool and of `pwab index docs`).
void write_documents_tsv(const data::Dataset& ds, std::ostream& out);

class Index {
 public:
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  //! Builds the index of `ds` into `dir` (replaced if present): the Xapian database, the doc-id list and
  //! meta.json (fingerprint, k1, b, analyzer version, statistics, probe queries with their expected top hit).
  static void build(const data::Dataset& ds, const std::filesystem::path& dir);
  //! Opens `dir` and checks it: meta file, analyzer version, parameters, statistics and probe results, and the
  //! fingerprint when one is given. Throws pwab::Error saying what is stale or corrupt.
  static std::unique_ptr<Index> open(const std::filesystem::path& dir, std::string_view expected_fingerprint = {});
  //! Opens the index of `ds`, building it first when missing or stale, at <root>/<fingerprint>/ where root is
  //! `cache_root` or else <dataset dir>/.pwab-index if writable, else $XDG_CACHE_HOME (or ~/.cache)/pwab/index.
  static std::unique_ptr<Index> open_or_build(const data::Dataset& ds,
                                              std::optional<std::filesystem::path> cache_root = {});
  //! The index open_or_build would open, when it is already built: null when it is missing, stale or corrupt
  //! (nothing is built). Lets a caller open it on another thread without risking a long build there.
  static std::unique_ptr<Index> open_cached(const data::Dataset& ds,
                                            std::optional<std::filesystem::path> cache_root = {});

  //! The top `k` products for `query`, best first, ties by asin ascending. An empty query or one without
  //! indexed terms gives no hits. Safe to call from many threads at once.
  std::vector<Hit> search(std::string_view query, int k = 10) const;
  //! Number of documents (catalogue products).
  std::size_t size() const;
  const std::filesystem::path& dir() const;
  const std::string& fingerprint() const;

 private:
  struct Impl;
  explicit Index(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pwab::search
