// Parity with Lucene 8 (label `parity`): the same corpus and queries through pwab and through the shared
// reference tool (Lucene's StandardTokenizer/English chain + BM25Similarity(0.9, 0.4)), comparing the top 10.
// Skips when java or the tool is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "data/synth.h"
#include "search/search.h"
#include "support/test_support.h"

namespace pwab::search {
namespace {

namespace fs = std::filesystem;

struct RankedDoc {
  std::string asin;
  double score;
};

std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

// Instructions of the search and recommendation tasks (what agents search with), then product titles and
// feature lines, then hand-written queries with apostrophes, numbers, symbols and non-ASCII text.
std::vector<std::string> parity_queries(const data::Dataset& ds) {
  std::vector<std::string> queries;
  for (auto split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : ds.tasks(split))
      if (t.type != data::TaskType::kReview) queries.push_back(t.instruction);
  const auto& products = ds.products();
  for (std::size_t i = 0; i < products.size(); i += 40) {
    queries.push_back(products[i].title);
    if (!products[i].features.empty()) queries.push_back(products[i].features.front());
    if (products[i].store) queries.push_back(*products[i].store + "'s best " + products[i].title.substr(0, 20));
  }
  for (const char* q : {"women's running shoes size 8.5", "kid\u2019s water bottle, 24 oz", "USB-C 3.1 cable 6ft",
                        "1,000 mAh power bank", "coffee maker w/ grinder & timer", "50% off!!! best-seller #1",
                        "\u00AE\u2122 trademark brands", "it's the one that's not there", "Bluetooth 5.3 earbuds",
                        "4K HDMI 2.1 (8ft)", "caf\u00E9 au lait mug", "\U0001F600 gift for mom \u2764\uFE0F",
                        "stainless-steel 18/8 tumbler 30oz", "e.g. a phone case for iPhone 14 Pro Max",
                        "U.S.A. made organic honey", "nuts", "the", "", "x", "l'oreal paris shampoo",
                        "gluten-free snacks under $20", "vitamin d3 5000 iu", "\u4E2D\u6587 tea set"})
    queries.push_back(q);
  return queries;
}

std::map<std::string, std::vector<RankedDoc>> read_lucene_results(const fs::path& path) {
  std::map<std::string, std::vector<RankedDoc>> results;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string qid, rank, asin, score;
    std::getline(fields, qid, '\t');
    std::getline(fields, rank, '\t');
    std::getline(fields, asin, '\t');
    std::getline(fields, score, '\t');
    results[qid].push_back({asin, std::stod(score)});
  }
  return results;
}

TEST(Parity, TopTenMatchesLucene) {
  fs::path tool = PWAB_LUCENE_TOOL;
  if (!fs::exists(tool)) GTEST_SKIP() << "the Lucene reference tool is missing: " << tool;
  if (std::system("command -v java >/dev/null 2>&1") != 0) GTEST_SKIP() << "java is not installed (scripts/install-deps.sh --with-parity)";

  test::TempDir tmp;
  data::Dataset ds = data::synthesize({.n_users = 200, .n_products = 5000});
  {
    std::ofstream docs(tmp / "docs.tsv");
    write_documents_tsv(ds, docs);
  }
  std::vector<std::string> queries = parity_queries(ds);
  {
    std::ofstream out(tmp / "queries.tsv");
    for (std::size_t i = 0; i < queries.size(); ++i) out << "q" << i << '\t' << one_line(queries[i]) << '\n';
  }
  std::string cmd = tool.string() + " " + (tmp / "docs.tsv").string() + " " + (tmp / "queries.tsv").string() +
                    " 10 > " + (tmp / "lucene.tsv").string() + " 2> " + (tmp / "lucene.err").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_text(tmp / "lucene.err");
  auto lucene = read_lucene_results(tmp / "lucene.tsv");

  auto index = Index::open_or_build(ds, tmp / "index");
  double overlap_sum = 0;
  int same_top1 = 0, same_list = 0, n_shown = 0;
  double max_score_diff = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto& want = lucene["q" + std::to_string(i)];
    std::vector<Hit> got = index->search(one_line(queries[i]), 10);
    std::size_t common = 0;
    for (const auto& h : got)
      for (const auto& w : want)
        if (h.asin == w.asin) {
          ++common;
          max_score_diff = std::max(max_score_diff, std::abs(h.score - w.score));
        }
    std::size_t size = std::max(got.size(), want.size());
    overlap_sum += size == 0 ? 1.0 : static_cast<double>(common) / static_cast<double>(size);
    bool top1 = got.empty() ? want.empty() : (!want.empty() && got[0].asin == want[0].asin);
    same_top1 += top1;
    bool list = got.size() == want.size();
    for (std::size_t r = 0; list && r < got.size(); ++r) list = got[r].asin == want[r].asin;
    same_list += list;
    if (!list && n_shown++ < 5) {
      std::ostringstream msg;
      msg << "mismatch on q" << i << " \"" << one_line(queries[i]) << "\"\n";
      for (std::size_t r = 0; r < std::max(got.size(), want.size()); ++r)
        msg << "  " << r + 1 << "  pwab " << (r < got.size() ? got[r].asin + " " + std::to_string(got[r].score) : "-")
            << "   lucene " << (r < want.size() ? want[r].asin + " " + std::to_string(want[r].score) : "-") << "\n";
      std::printf("%s", msg.str().c_str());
    }
  }
  double n = static_cast<double>(queries.size());
  std::printf("parity: %zu queries over %zu documents: mean top-10 overlap %.4f, identical top-1 %.4f, identical "
              "top-10 lists %.4f, max score difference %.2g\n%s\n",
              queries.size(), index->size(), overlap_sum / n, same_top1 / n, same_list / n, max_score_diff,
              test::read_text(tmp / "lucene.err").c_str());
  EXPECT_GE(queries.size(), 500u);
  EXPECT_GE(overlap_sum / n, 0.98);
  EXPECT_GE(same_top1 / n, 0.99);
}

}  // namespace
}  // namespace pwab::search
