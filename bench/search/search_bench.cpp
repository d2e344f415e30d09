// Search benchmarks on the full synthetic catalogue (35,772 products): building the index, and answering the
// dataset's search and recommendation instructions single-threaded, with Lucene 8 (the shared reference tool:
// same analysis, BM25 k1=0.9 b=0.4) run on the same documents and queries as the anchor. pwab's results are
// checked against Lucene's, so a fast wrong answer fails.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "bench.h"
#include "core/sys.h"
#include "data/loader.h"
#include "data/synth.h"
#include "search/search.h"

namespace fs = std::filesystem;
using namespace pwab;
using namespace pwab::bench;

namespace {

fs::path full_dir(const Context& ctx) { return full_dataset_dir(ctx); }
fs::path work_dir(const Context& ctx) { return ctx.out_dir / "search"; }
// ../shared beside the checkout; __FILE__ is absolute (CMake compiles sources by full path).
fs::path lucene_tool() { return fs::path(__FILE__).parent_path() / "../../../shared/tools/lucene-bm25/run"; }

void ensure_full_dataset(const Context& ctx) { full_dataset_dir(ctx); }

std::unique_ptr<data::Dataset> dataset;
std::vector<std::string> queries;
std::unique_ptr<search::Index> index;
std::vector<std::vector<search::Hit>> pwab_results;
double lucene_query_seconds = 0;  // Lucene's own search_ms of its last run, JVM start and indexing excluded
double pwab_query_seconds = 0;

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return text;
}

// Loads the dataset and writes docs.tsv and queries.tsv (every search and recommendation instruction).
void ensure_inputs(const Context& ctx) {
  ensure_full_dataset(ctx);
  if (dataset) return;
  dataset = std::make_unique<data::Dataset>(data::load_dataset(full_dir(ctx)));
  fs::create_directories(work_dir(ctx));
  std::ofstream docs(work_dir(ctx) / "docs.tsv");
  search::write_documents_tsv(*dataset, docs);
  for (auto split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : dataset->tasks(split))
      if (t.type != data::TaskType::kReview) queries.push_back(one_line(t.instruction));
  std::ofstream out(work_dir(ctx) / "queries.tsv");
  for (std::size_t i = 0; i < queries.size(); ++i) out << "q" << i << '\t' << queries[i] << '\n';
}

double run_lucene(const Context& ctx) {
  fs::path dir = work_dir(ctx);
  std::string cmd = fmt::format("{} {} {} 10 > {} 2> {}", lucene_tool().string(), (dir / "docs.tsv").string(),
                                (dir / "queries.tsv").string(), (dir / "lucene.tsv").string(),
                                (dir / "lucene.err").string());
  double wall = time_command(cmd);
  std::ifstream err(dir / "lucene.err");
  std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  auto at = text.find("search_ms=");
  if (at == std::string::npos) throw std::runtime_error("no search_ms in the Lucene tool's output: " + text);
  lucene_query_seconds = std::stod(text.substr(at + 10)) / 1e3;
  return wall;
}

const int kBuild = add({
    "search/index_build",
    "build the BM25 index of the full catalogue (35,772 products: analysis + Xapian glass database)",
    3,
    ensure_inputs,
    [](const Context& ctx, std::vector<Extra>& extras) {
      Stopwatch clock;
      search::Index::build(*dataset, work_dir(ctx) / "index-build");
      double s = clock.seconds();
      extras.push_back({"documents/s", static_cast<double>(dataset->products().size()) / s, ""});
      return s;
    },
    [](const Context& ctx) -> std::string {
      auto opened = search::Index::open(work_dir(ctx) / "index-build", search::catalogue_fingerprint(*dataset));
      return opened->size() == dataset->products().size() ? "" : "wrong document count";
    },
});

const int kLucene = add({
    "search/query_lucene",
    "anchor: Lucene 8 reference tool on the same documents and queries (time = whole JVM run; q/s from its "
    "in-process search time)",
    2,
    ensure_inputs,
    [](const Context& ctx, std::vector<Extra>& extras) {
      double wall = run_lucene(ctx);
      extras.push_back({"queries", static_cast<double>(queries.size()), ""});
      extras.push_back({"Lucene search", lucene_query_seconds, "s"});
      extras.push_back({"Lucene q/s", static_cast<double>(queries.size()) / lucene_query_seconds, ""});
      return wall;
    },
    nullptr,
});

std::map<std::string, std::vector<std::string>> read_lucene_results(const fs::path& path) {
  std::map<std::string, std::vector<std::string>> results;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string qid, rank, asin;
    std::getline(fields, qid, '\t');
    std::getline(fields, rank, '\t');
    std::getline(fields, asin, '\t');
    results[qid].push_back(asin);
  }
  return results;
}

const int kQuery = add({
    "search/query_pwab",
    "pwab: the same queries, top 10, one thread (index opened beforehand)",
    5,
    [](const Context& ctx) {
      ensure_inputs(ctx);
      if (!fs::exists(work_dir(ctx) / "lucene.tsv")) run_lucene(ctx);
      index = search::Index::open_or_build(*dataset, work_dir(ctx) / "cache");
    },
    [](const Context& ctx, std::vector<Extra>& extras) {
      pwab_results.clear();
      pwab_results.reserve(queries.size());
      Stopwatch clock;
      for (const auto& q : queries) pwab_results.push_back(index->search(q, 10));
      pwab_query_seconds = clock.seconds();
      double qps = static_cast<double>(queries.size()) / pwab_query_seconds;
      extras.push_back({"queries", static_cast<double>(queries.size()), ""});
      extras.push_back({"pwab q/s", qps, ""});
      if (lucene_query_seconds > 0)
        extras.push_back({"pwab / Lucene q/s", qps / (static_cast<double>(queries.size()) / lucene_query_seconds), "x"});
      return pwab_query_seconds;
    },
    [](const Context& ctx) -> std::string {
      auto lucene = read_lucene_results(work_dir(ctx) / "lucene.tsv");
      double overlap = 0;
      int same_top1 = 0;
      for (std::size_t i = 0; i < queries.size(); ++i) {
        const auto& want = lucene["q" + std::to_string(i)];
        const auto& got = pwab_results[i];
        std::size_t common = 0;
        for (const auto& h : got) common += std::count(want.begin(), want.end(), h.asin);
        std::size_t size = std::max(got.size(), want.size());
        overlap += size == 0 ? 1.0 : static_cast<double>(common) / static_cast<double>(size);
        same_top1 += got.empty() ? want.empty() : (!want.empty() && got[0].asin == want[0]);
      }
      double n = static_cast<double>(queries.size());
      std::fprintf(stderr, "[bench] search/query_pwab vs Lucene: mean top-10 overlap %.4f, identical top-1 %.4f\n",
                   overlap / n, same_top1 / n);
      if (overlap / n < 0.98 || same_top1 / n < 0.99)
        return fmt::format("differs from Lucene: overlap {:.4f}, top-1 {:.4f}", overlap / n, same_top1 / n);
      return "";
    },
});

}  // namespace
