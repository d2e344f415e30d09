// `pwab index build|docs` and `pwab search`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "core/error.h"
#include "core/sys.h"
#include "search/search.h"

namespace pwab::cli {
namespace {

struct IndexArgs {
  std::string data;
  std::string cache_dir;
};

std::optional<std::filesystem::path> cache_root(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  return std::filesystem::path(dir);
}

// Reads "qid<TAB>text" lines; a line without a tab is an error naming the line.
std::vector<std::pair<std::string, std::string>> read_queries(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error("cannot read queries file " + file);
  std::vector<std::pair<std::string, std::string>> queries;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos) throw DataError(fmt::format("{}:{}: expected qid<TAB>query", file, n));
    queries.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return queries;
}

}  // namespace

void add_search_commands(CLI::App& app) {
  auto* index = app.add_subcommand("index", "Build or inspect the BM25 search index of a dataset");
  index->require_subcommand(1);

  auto build_args = std::make_shared<IndexArgs>();
  auto* build = index->add_subcommand("build", "Build (or verify) the search index of DATA's catalogue");
  build->add_option("data", build_args->data, "Dataset directory")->required();
  add_shared_option(*build, "--cache-dir", build_args->cache_dir);
  build->callback([build_args] {
    data::Dataset ds = load_data(build_args->data);
    Stopwatch clock;
    auto idx = search::Index::open_or_build(ds, cache_root(build_args->cache_dir));
    std::cerr << fmt::format("pwab: index of {} products ready in {:.2f} s: {}\n", idx->size(), clock.seconds(),
                             idx->dir().string());
  });

  auto docs_args = std::make_shared<IndexArgs>();
  auto* docs = index->add_subcommand("docs", "Print every indexed document as asin<TAB>text (text flattened)");
  add_shared_option(*docs, "--data", docs_args->data)->required();
  docs->callback([docs_args] {
    data::Dataset ds = load_data(docs_args->data);
    search::write_documents_tsv(ds, std::cout);
  });

  struct SearchArgs {
    std::string data, queries, query, cache_dir;
    int k = 10;
  };
  auto args = std::make_shared<SearchArgs>();
  auto* search = app.add_subcommand("search", "BM25 search: print qid<TAB>rank<TAB>asin<TAB>score for the top k");
  add_shared_option(*search, "--data", args->data)->required();
  search->add_option("--queries", args->queries, "File of qid<TAB>query lines");
  search->add_option("query", args->query, "A single query (qid q0)");
  add_shared_option(*search, "--k", args->k)->check(CLI::Range(1, 1000));
  add_shared_option(*search, "--cache-dir", args->cache_dir);
  search->callback([args] {
    if (args->queries.empty() == args->query.empty()) throw UsageError("give either QUERY or --queries FILE");
    data::Dataset ds = load_data(args->data);
    auto idx = search::Index::open_or_build(ds, cache_root(args->cache_dir));
    auto queries = args->queries.empty() ? std::vector<std::pair<std::string, std::string>>{{"q0", args->query}}
                                         : read_queries(args->queries);
    std::string out;
    for (const auto& [qid, text] : queries) {
      auto hits = idx->search(text, args->k);
      for (std::size_t r = 0; r < hits.size(); ++r)
        out += fmt::format("{}\t{}\t{}\t{:.5f}\n", qid, r + 1, hits[r].asin, hits[r].score);
    }
    std::cout << out;
  });
}

}  // namespace pwab::cli
