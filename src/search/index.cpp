// The on-disk index: build, open with self-check, cache location, and thread-safe search.
#include <fmt/format.h>
#include <unistd.h>
#include <xapian.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.h"
#include "core/hash.h"
#include "core/multiversion.h"
#include "core/sys.h"
#include "search/analyzer.h"
#include "search/small_float.h"
#include "search/bm25_weight.h"
#include "search/documents.h"
#include "search/search.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace pwab::search {
namespace {

constexpr int kFormatVersion = 1;
constexpr Bm25Params kParams{0.9f, 0.4f};
constexpr int kNumProbes = 5;
// Xapian refuses terms over 245 bytes; longer ones (Lucene allows 255 UTF-16 units) are stored by hash, under
// a prefix no analyzed term can start with.
constexpr std::size_t kMaxPlainTermBytes = 240;

std::string xapian_term(const std::string& term) {
  if (term.size() <= kMaxPlainTermBytes) return term;
  return "\x01" + to_hex(hash_bytes(term));
}

struct QueryTerm {
  std::string term;
  int count;
};

// Lucene's bag of words: each distinct term once, in first-occurrence order, boosted by its count.
std::vector<QueryTerm> query_terms(std::string_view query) {
  std::vector<QueryTerm> terms;
  std::unordered_map<std::string, std::size_t> position;
  for (std::string& t : analyze(query)) {
    auto [it, inserted] = position.try_emplace(t, terms.size());
    if (inserted) {
      terms.push_back({std::move(t), 1});
    } else {
      ++terms[it->second].count;
    }
  }
  return terms;
}

fs::path database_dir(const fs::path& dir) { return dir / "xapian"; }
fs::path meta_path(const fs::path& dir) { return dir / "meta.json"; }
fs::path doc_ids_path(const fs::path& dir) { return dir / "doc_ids.txt"; }

json read_meta(const fs::path& dir) {
  std::ifstream in(meta_path(dir));
  if (!in) throw Error(fmt::format("search index {}: no meta.json (not an index, or an interrupted build)", dir.string()));
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(fmt::format("search index {}: meta.json is corrupt ({})", dir.string(), e.what()));
  }
}

std::vector<std::string> read_doc_ids(const fs::path& dir) {
  std::ifstream in(doc_ids_path(dir));
  if (!in) throw Error(fmt::format("search index {}: doc_ids.txt is missing", dir.string()));
  std::vector<std::string> ids;
  for (std::string line; std::getline(in, line);) ids.push_back(std::move(line));
  return ids;
}

std::string hash_ids(const std::vector<std::string>& ids) {
  Hasher h;
  for (const auto& id : ids) h.update(id).update("\n");
  return h.hex();
}

bool is_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return false;
  fs::path probe = dir / fmt::format(".write-test-{}", ::getpid());
  bool ok = static_cast<bool>(std::ofstream(probe));
  fs::remove(probe, ec);
  return ok;
}

// $XDG_CACHE_HOME/pwab/index, ~/.cache/pwab/index, or a private /tmp/pwab-UID/index: never a shared /tmp path
// another user could have filled with an index of their making.
fs::path user_cache_root() { return private_cache_dir("index"); }

}  // namespace

struct Index::Impl {
  fs::path dir;
  std::string fingerprint;
  std::vector<std::string> doc_ids;  // Xapian docid d is doc_ids[d - 1]
  std::shared_ptr<const Bm25Context> context;
  // Xapian::Database handles are not thread-safe: each search borrows one, and the pool grows to the number of
  // threads searching at once.
  mutable std::mutex pool_mutex;
  mutable std::vector<std::unique_ptr<Xapian::Database>> idle;

  std::unique_ptr<Xapian::Database> borrow() const {
    {
      std::lock_guard lock(pool_mutex);
      if (!idle.empty()) {
        auto db = std::move(idle.back());
        idle.pop_back();
        return db;
      }
    }
    return std::make_unique<Xapian::Database>(database_dir(dir).string());
  }
  void give_back(std::unique_ptr<Xapian::Database> db) const {
    std::lock_guard lock(pool_mutex);
    idle.push_back(std::move(db));
  }

  // The postings, loaded from the Xapian database on open: scoring them directly is ~10x faster than Xapian's
  // matcher on these long OR queries (docs/search.md). Per posting, Lucene's 1 + f * norm_inverse is stored,
  // so a term's score on a document is weight - weight / stored. Documents and denominators are kept in two
  // arrays, so the divisions of a block of postings run as one vector loop.
  struct PostingList {
    std::vector<uint32_t> docs;  // 0-based: Xapian docid - 1, ascending
    std::vector<float> denominators;
    std::size_t size() const { return docs.size(); }
  };
  std::unordered_map<std::string, PostingList> postings;

  //! Scores with the in-memory postings (what search() uses).
  std::vector<Hit> search(std::string_view query, int k) const;
  //! Scores with Xapian's matcher and Bm25Weight; the self-check compares both.
  std::vector<Hit> search_xapian(std::string_view query, int k) const;
  void load_postings();
  //! Reads the files of `dir` without the self-check (open() checks; build() uses it to compute the probes).
  static std::unique_ptr<Impl> load(const fs::path& dir, const json& meta);
};

namespace {

struct Ranked {
  float score;
  Xapian::docid docid;
};

// Xapian ranks by the double sum of the term scores; Lucene rounds that sum to float first, so documents whose
// sums differ only below float precision tie there and are ordered by document number (= asin). Fetching a
// few more than k and re-sorting reproduces that; the loop widens the window until it provably holds the top k.
std::vector<Ranked> top_k_as_lucene(Xapian::Enquire& enquire, int k) {
  Xapian::doccount want = static_cast<Xapian::doccount>(k) + 16;
  while (true) {
    Xapian::MSet mset = enquire.get_mset(0, want);
    std::vector<Ranked> ranked;
    ranked.reserve(mset.size());
    for (auto it = mset.begin(); it != mset.end(); ++it)
      ranked.push_back({static_cast<float>(it.get_weight()), *it});
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return a.score != b.score ? a.score > b.score : a.docid < b.docid;
    });
    bool complete = mset.size() < want ||
                    static_cast<float>(mset[mset.size() - 1].get_weight()) < ranked[static_cast<std::size_t>(k) - 1].score;
    if (complete) {
      if (ranked.size() > static_cast<std::size_t>(k)) ranked.resize(static_cast<std::size_t>(k));
      return ranked;
    }
    want *= 2;
  }
}

}  // namespace

std::vector<Hit> Index::Impl::search_xapian(std::string_view query, int k) const {
  if (k <= 0 || doc_ids.empty()) return {};
  std::vector<QueryTerm> terms = query_terms(query);
  if (terms.empty()) return {};
  std::vector<Xapian::Query> parts;
  parts.reserve(terms.size());
  for (const auto& t : terms) parts.emplace_back(xapian_term(t.term), static_cast<Xapian::termcount>(t.count));
  Xapian::Query xq(Xapian::Query::OP_OR, parts.begin(), parts.end());

  std::unique_ptr<Xapian::Database> db = borrow();
  std::vector<Ranked> ranked;
  {
    Xapian::Enquire enquire(*db);
    enquire.set_query(xq);
    enquire.set_weighting_scheme(Bm25Weight(context));
    enquire.set_docid_order(Xapian::Enquire::ASCENDING);
    ranked = top_k_as_lucene(enquire, k);
  }
  give_back(std::move(db));

  std::vector<Hit> hits;
  hits.reserve(ranked.size());
  for (const auto& r : ranked) hits.push_back({doc_ids.at(r.docid - 1), static_cast<double>(r.score)});
  return hits;
}

void Index::Impl::load_postings() {
  std::unique_ptr<Xapian::Database> db = borrow();
  std::vector<uint8_t> norms(doc_ids.size());
  for (Xapian::docid d = 1; d <= doc_ids.size(); ++d) norms[d - 1] = length_to_norm(db->get_doclength(d));
  for (auto term = db->allterms_begin(); term != db->allterms_end(); ++term) {
    PostingList& list = postings[*term];
    list.docs.reserve(term.get_termfreq());
    list.denominators.reserve(term.get_termfreq());
    for (auto p = db->postlist_begin(*term); p != db->postlist_end(*term); ++p) {
      uint32_t doc = *p - 1;
      float denominator = 1.0f + static_cast<float>(p.get_wdf()) * context->norm_inverse[norms.at(doc)];
      list.docs.push_back(doc);
      list.denominators.push_back(denominator);
    }
  }
  give_back(std::move(db));
}

namespace {

// Per-thread score accumulator, reused between searches and all zero between them (a search resets only the
// documents it touched, listed in the first entries of `touched`, which has room for every document).
struct Accumulator {
  std::vector<double> score;
  std::vector<uint32_t> touched;
  std::vector<float> block;  // one block's term scores
};

constexpr std::size_t kBlock = 512;

//! out[i] = weight - weight / denominators[i]: Lucene's term scores of a block, in one vector loop (division is
//! exactly rounded in every instruction set, so the scores are the scalar ones, bit for bit).
PWAB_MULTIVERSION void block_scores(float weight, const float* __restrict denominators, std::size_t n,
                                           float* __restrict out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = weight - weight / denominators[i];
}

}  // namespace

std::vector<Hit> Index::Impl::search(std::string_view query, int k) const {
  if (k <= 0 || doc_ids.empty()) return {};
  thread_local Accumulator acc;
  if (acc.score.size() != doc_ids.size()) {
    acc.score.assign(doc_ids.size(), 0.0);
    acc.touched.assign(doc_ids.size(), 0);
  }
  acc.block.resize(kBlock);
  std::size_t n_touched = 0;
  for (const QueryTerm& t : query_terms(query)) {
    auto it = postings.find(xapian_term(t.term));
    if (it == postings.end()) continue;
    const PostingList& list = it->second;
    const float weight = static_cast<float>(t.count) * lucene_idf(static_cast<int64_t>(list.size()), context->stats.doc_count);
    for (std::size_t start = 0; start < list.size(); start += kBlock) {
      const std::size_t n = std::min(kBlock, list.size() - start);
      block_scores(weight, list.denominators.data() + start, n, acc.block.data());
      const uint32_t* docs = list.docs.data() + start;
      for (std::size_t i = 0; i < n; ++i) {
        // Branch-free: whether a document is new here is a coin toss the branch predictor would lose.
        double& s = acc.score[docs[i]];
        acc.touched[n_touched] = docs[i];
        n_touched += s == 0;
        s += static_cast<double>(acc.block[i]);
      }
    }
  }
  // Lucene rounds each document's sum to float, then ties go to the lower document number (= asin).
  auto better = [&](uint32_t a, uint32_t b) {
    float sa = static_cast<float>(acc.score[a]), sb = static_cast<float>(acc.score[b]);
    return sa != sb ? sa > sb : a < b;
  };
  const auto touched_end = acc.touched.begin() + static_cast<std::ptrdiff_t>(n_touched);
  std::size_t n = std::min(n_touched, static_cast<std::size_t>(k));
  std::partial_sort(acc.touched.begin(), acc.touched.begin() + static_cast<std::ptrdiff_t>(n), touched_end, better);
  std::vector<Hit> hits;
  hits.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t doc = acc.touched[i];
    hits.push_back({doc_ids[doc], static_cast<double>(static_cast<float>(acc.score[doc]))});
  }
  for (auto it = acc.touched.begin(); it != touched_end; ++it) acc.score[*it] = 0;  // zero for the next search
  return hits;
}

Index::Index(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Index::~Index() = default;

std::vector<Hit> Index::search(std::string_view query, int k) const { return impl_->search(query, k); }
std::size_t Index::size() const { return impl_->doc_ids.size(); }
const fs::path& Index::dir() const { return impl_->dir; }
const std::string& Index::fingerprint() const { return impl_->fingerprint; }

std::unique_ptr<Index::Impl> Index::Impl::load(const fs::path& dir, const json& meta) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->fingerprint = meta.at("fingerprint").get<std::string>();
  impl->doc_ids = read_doc_ids(dir);
  CollectionStats stats{meta.at("doc_count").get<int64_t>(), meta.at("sum_total_term_freq").get<int64_t>()};
  impl->context = std::make_shared<Bm25Context>(Bm25Context{kParams, stats, NormInverseTable(kParams, lucene_avgdl(stats))});
  return impl;
}

void Index::build(const data::Dataset& ds, const fs::path& dir) {
  static std::atomic<int> counter{0};
  fs::path tmp = dir;
  tmp += fmt::format(".tmp-{}-{}", ::getpid(), counter++);
  fs::remove_all(tmp);
  fs::create_directories(tmp);

  std::vector<const data::Product*> products = products_by_asin(ds);
  std::vector<std::string> doc_ids;
  CollectionStats stats;
  try {
    Xapian::WritableDatabase db(database_dir(tmp).string(), Xapian::DB_CREATE_OR_OVERWRITE | Xapian::DB_BACKEND_GLASS);
    std::vector<std::string> terms;
    for (const data::Product* p : products) {
      terms.clear();
      analyze_into(document_text(*p), terms);
      Xapian::Document doc;
      for (const auto& t : terms) doc.add_term(xapian_term(t));
      db.add_document(doc);
      doc_ids.push_back(p->parent_asin);
      stats.sum_total_term_freq += static_cast<int64_t>(terms.size());
      if (!terms.empty()) ++stats.doc_count;
    }
    db.commit();
    db.close();
  } catch (const Xapian::Error& e) {
    throw Error(fmt::format("building the search index in {}: {}", tmp.string(), e.get_description()));
  }
  {
    std::ofstream out(doc_ids_path(tmp));
    for (const auto& id : doc_ids) out << id << '\n';
    if (!out) throw Error(fmt::format("cannot write {}", doc_ids_path(tmp).string()));
  }

  json meta = {{"format", kFormatVersion},
               {"analyzer", std::string(kAnalyzerVersion)},
               {"k1", kParams.k1},
               {"b", kParams.b},
               {"fingerprint", catalogue_fingerprint(ds)},
               {"n_docs", doc_ids.size()},
               {"doc_count", stats.doc_count},
               {"sum_total_term_freq", stats.sum_total_term_freq},
               {"doc_ids_hash", hash_ids(doc_ids)}};
  // Probes: a few product titles, spread over the catalogue, with the top hit this build gives them.
  std::unique_ptr<Impl> built = Impl::load(tmp, meta);
  built->load_postings();
  json probes = json::array();
  for (int i = 0; i < kNumProbes && !products.empty(); ++i) {
    const data::Product* p = products[products.size() * static_cast<std::size_t>(i) / kNumProbes];
    std::string query = p->title.empty() ? p->parent_asin : p->title;
    std::vector<Hit> hits = built->search(query, 1);
    if (hits.empty()) continue;
    probes.push_back({{"query", query}, {"top_asin", hits[0].asin}, {"score", hits[0].score}});
  }
  built.reset();
  meta["probes"] = probes;
  {
    std::ofstream out(meta_path(tmp));
    out << meta.dump(2) << '\n';
    if (!out) throw Error(fmt::format("cannot write {}", meta_path(tmp).string()));
  }
  // Publish at once, so a reader never sees a half-written index.
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp);
    if (!fs::exists(meta_path(dir))) throw Error(fmt::format("cannot move the new index to {}: {}", dir.string(), ec.message()));
  }
}

std::unique_ptr<Index> Index::open(const fs::path& dir, std::string_view expected_fingerprint) {
  json meta = read_meta(dir);
  auto stale = [&](const std::string& what) {
    return Error(fmt::format("search index {} is stale: {}; delete it to rebuild", dir.string(), what));
  };
  try {
    if (meta.at("format").get<int>() != kFormatVersion)
      throw stale(fmt::format("format {} (this pwab writes {})", meta.at("format").dump(), kFormatVersion));
    if (meta.at("analyzer").get<std::string>() != kAnalyzerVersion)
      throw stale(fmt::format("analyzer {} (this pwab uses {})", meta.at("analyzer").dump(), kAnalyzerVersion));
    if (meta.at("k1").get<float>() != kParams.k1 || meta.at("b").get<float>() != kParams.b)
      throw stale(fmt::format("k1={} b={} (this pwab uses k1={} b={})", meta.at("k1").dump(), meta.at("b").dump(),
                              kParams.k1, kParams.b));
    if (!expected_fingerprint.empty() && meta.at("fingerprint").get<std::string>() != expected_fingerprint)
      throw stale(fmt::format("built for catalogue {}, the dataset's is {}", meta.at("fingerprint").get<std::string>(),
                              expected_fingerprint));

    std::unique_ptr<Impl> impl = Impl::load(dir, meta);
    auto corrupt = [&](const std::string& what) {
      return Error(fmt::format("search index {} is corrupt: {}; delete it to rebuild", dir.string(), what));
    };
    if (impl->doc_ids.size() != meta.at("n_docs").get<std::size_t>() || hash_ids(impl->doc_ids) != meta.at("doc_ids_hash"))
      throw corrupt("doc_ids.txt does not match meta.json");
    {
      std::unique_ptr<Xapian::Database> db = impl->borrow();
      if (db->get_doccount() != impl->doc_ids.size() ||
          static_cast<int64_t>(db->get_total_length()) != impl->context->stats.sum_total_term_freq)
        throw corrupt(fmt::format("the database has {} documents and {} tokens, meta.json says {} and {}",
                                  db->get_doccount(), db->get_total_length(), impl->doc_ids.size(),
                                  impl->context->stats.sum_total_term_freq));
      impl->give_back(std::move(db));
    }
    impl->load_postings();
    for (const auto& probe : meta.at("probes")) {
      std::vector<Hit> hits = impl->search(probe.at("query").get<std::string>(), 1);
      std::vector<Hit> xapian_hits = impl->search_xapian(probe.at("query").get<std::string>(), 1);
      if (xapian_hits.size() != hits.size() || (!hits.empty() && (hits[0].asin != xapian_hits[0].asin ||
                                                                  hits[0].score != xapian_hits[0].score)))
        throw corrupt(fmt::format("probe query {}: the postings and the Xapian matcher disagree", probe.at("query").dump()));
      auto want_asin = probe.at("top_asin").get<std::string>();
      auto want_score = static_cast<float>(probe.at("score").get<double>());
      if (hits.empty() || hits[0].asin != want_asin || static_cast<float>(hits[0].score) != want_score)
        throw corrupt(fmt::format("probe query {} gives {} (score {}), expected {} (score {})", probe.at("query").dump(),
                                  hits.empty() ? "no hit" : hits[0].asin, hits.empty() ? 0.0 : hits[0].score,
                                  want_asin, want_score));
    }
    return std::unique_ptr<Index>(new Index(std::move(impl)));
  } catch (const json::exception& e) {
    throw Error(fmt::format("search index {}: meta.json is incomplete ({})", dir.string(), e.what()));
  } catch (const Xapian::Error& e) {
    throw Error(fmt::format("search index {} is corrupt: {}; delete it to rebuild", dir.string(), e.get_description()));
  }
}

namespace {

//! Where open_or_build keeps the index of a catalogue.
fs::path cache_root_of(const data::Dataset& ds, const std::optional<fs::path>& cache_root) {
  if (cache_root) return *cache_root;
  if (!ds.source().empty() && is_writable_dir(ds.source() / ".pwab-index")) return ds.source() / ".pwab-index";
  return user_cache_root();
}

//! The cached index at `dir`, or null when there is none or it is stale or corrupt.
std::unique_ptr<Index> open_if_valid(const fs::path& dir, const std::string& fingerprint) {
  if (!fs::exists(meta_path(dir))) return nullptr;
  try {
    return Index::open(dir, fingerprint);
  } catch (const Error&) {
    return nullptr;  // stale or corrupt
  }
}

}  // namespace

std::unique_ptr<Index> Index::open_cached(const data::Dataset& ds, std::optional<fs::path> cache_root) {
  std::string fingerprint = catalogue_fingerprint(ds);
  return open_if_valid(cache_root_of(ds, cache_root) / fingerprint, fingerprint);
}

std::unique_ptr<Index> Index::open_or_build(const data::Dataset& ds, std::optional<fs::path> cache_root) {
  std::string fingerprint = catalogue_fingerprint(ds);
  fs::path root = cache_root_of(ds, cache_root);
  fs::path dir = root / fingerprint;
  if (auto index = open_if_valid(dir, fingerprint)) return index;
  fs::create_directories(root);
  build(ds, dir);
  return open(dir, fingerprint);
}

}  // namespace pwab::search
