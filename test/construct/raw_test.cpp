// Streaming raw files (plain and gzip), parsing raw lines, and the bounded user sampler.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <map>

#include "construct/raw_reader.h"
#include "construct/raw_records.h"
#include "construct/user_sampler.h"
#include "core/error.h"
#include "core/rng.h"
#include "raw_fixture.h"
#include "support/test_support.h"

namespace pwab::construct {
namespace {

std::vector<std::string> read_all(const std::filesystem::path& p, std::vector<uint64_t>* numbers = nullptr,
                                  int* overlong_count = nullptr) {
  LineReader in(p);
  std::vector<std::string> out;
  std::string_view line;
  bool overlong = false;
  while (in.next(line, overlong)) {
    if (overlong) {
      if (overlong_count) ++*overlong_count;
      out.push_back("<overlong>");
    } else {
      out.emplace_back(line);
    }
    if (numbers) numbers->push_back(in.line_number());
  }
  return out;
}

TEST(FileCategory, FromAmazonFileNames) {
  EXPECT_EQ(file_category("/x/Electronics.jsonl.gz"), "Electronics");
  EXPECT_EQ(file_category("meta_Home_and_Kitchen.jsonl"), "Home_and_Kitchen");
  EXPECT_EQ(file_category("reviews.jsonl"), "reviews");
  EXPECT_EQ(file_category("meta.json"), "meta");
  EXPECT_EQ(file_category("All_Beauty.jsonl.gz"), "All_Beauty");
}

TEST(LineReader, PlainAndGzipGiveTheSameLines) {
  test::TempDir dir;
  std::vector<std::string> lines = {"\xEF\xBB\xBF{\"a\": 1}", "", "   ", "{\"b\": 2}\r", "{\"c\": 3}"};
  testing::write_lines(dir / "x.jsonl", lines, false, /*no_final_newline=*/true);
  testing::write_lines(dir / "x.jsonl.gz", lines, true);
  std::vector<uint64_t> numbers;
  auto plain = read_all(dir / "x.jsonl", &numbers);
  EXPECT_EQ(plain, (std::vector<std::string>{"{\"a\": 1}", "{\"b\": 2}", "{\"c\": 3}"}));
  EXPECT_EQ(numbers, (std::vector<uint64_t>{1, 4, 5}));  // blank lines are counted, not returned
  EXPECT_EQ(read_all(dir / "x.jsonl.gz"), plain);
  // A gzip file named like a plain one is still read as gzip (detected from the content).
  testing::write_lines(dir / "y.jsonl", lines, true);
  EXPECT_EQ(read_all(dir / "y.jsonl"), plain);
}

TEST(LineReader, ConcatenatedGzipMembersAndLongLines) {
  test::TempDir dir;
  // Two gzip members back to back (what `cat a.gz b.gz` makes) read as one stream.
  testing::write_lines(dir / "a.gz", {"one", "two"}, true);
  testing::write_lines(dir / "b.gz", {"three"}, true);
  test::write_text(dir / "ab.gz", test::read_text(dir / "a.gz") + test::read_text(dir / "b.gz"));
  EXPECT_EQ(read_all(dir / "ab.gz"), (std::vector<std::string>{"one", "two", "three"}));
  // Lines longer than the read buffer are assembled whole; one above the cap is skipped as overlong.
  std::string long_line(3u << 20, 'x');
  std::string huge(LineReader::kMaxLineBytes + 100, 'y');
  testing::write_lines(dir / "long.jsonl", {"first", long_line, huge, "last"}, false);
  int overlong = 0;
  std::vector<uint64_t> numbers;
  auto got = read_all(dir / "long.jsonl", &numbers, &overlong);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[1], long_line);
  EXPECT_EQ(got[2], "<overlong>");
  EXPECT_EQ(got[3], "last");
  EXPECT_EQ(overlong, 1);
  EXPECT_EQ(numbers, (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(LineReader, TruncatedGzipIsAnErrorNamingTheFile) {
  test::TempDir dir;
  std::vector<std::string> lines;
  Rng rng(3);
  for (int i = 0; i < 20000; ++i) lines.push_back("{\"n\": " + std::to_string(rng.next_u64()) + "}");
  testing::write_lines(dir / "full.jsonl.gz", lines, true);
  std::string bytes = test::read_text(dir / "full.jsonl.gz");
  test::write_text(dir / "cut.jsonl.gz", bytes.substr(0, bytes.size() / 2));
  try {
    read_all(dir / "cut.jsonl.gz");
    FAIL() << "a truncated gzip file must not read as complete";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.jsonl.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LineReader(dir / "missing.jsonl"), Error);
  EXPECT_THROW(LineReader(dir.path()), Error);
}

// Parses one line as LineReader hands it over (padding after the line).
struct Parsed {
  bool ok = false;
  RawReview review;
  LineProblem problem;
  std::vector<LineProblem> fields;
};
Parsed parse_review(const std::string& line) {
  std::string buf = line + std::string(64, '\0');
  RawParser parser;
  Parsed p;
  p.ok = parser.review(std::string_view(buf.data(), line.size()), true, p.review, p.problem, p.fields);
  return p;
}

TEST(RawParser, ReviewFieldsAndEveryRejectionReason) {
  auto good = parse_review(testing::review_line("AUSER", "B01", 1600000000123, 4.0, "Nice", "Works well"));
  ASSERT_TRUE(good.ok) << good.problem.reason;
  EXPECT_EQ(good.review.user_id, "AUSER");
  EXPECT_EQ(good.review.parent_asin, "B01");
  EXPECT_EQ(good.review.rating, py::Scalar::of_float(4.0));
  EXPECT_EQ(good.review.timestamp, 1600000000123);
  EXPECT_EQ(good.review.title, "Nice");
  EXPECT_EQ(good.review.text, "Works well");
  EXPECT_TRUE(good.fields.empty());

  // asin stands in for a missing parent_asin; an integral float timestamp and an int rating are accepted.
  auto alt = parse_review(R"({"rating": 5, "asin": "B02", "user_id": "U", "timestamp": 1.6e12, "title": null})");
  ASSERT_TRUE(alt.ok) << alt.problem.reason;
  EXPECT_EQ(alt.review.parent_asin, "B02");
  EXPECT_EQ(alt.review.rating, py::Scalar::of_int(5));
  EXPECT_EQ(alt.review.timestamp, 1600000000000);

  auto odd = parse_review(R"({"rating": 3.0, "parent_asin": "B03", "user_id": "U", "timestamp": 5, "title": ["x"], "text": 7})");
  ASSERT_TRUE(odd.ok);
  EXPECT_EQ(odd.review.title, "");
  ASSERT_EQ(odd.fields.size(), 2u);
  EXPECT_EQ(odd.fields[0].reason, "title is not a string");
  EXPECT_EQ(odd.fields[1].reason, "text is not a string");

  std::vector<std::pair<std::string, std::string>> bad = {
      {"{oops", "invalid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"rating": 5.0, "parent_asin": "B", "timestamp": 1})", "missing user_id"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": "", "timestamp": 1})", "user_id is not a non-empty string"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": 12, "timestamp": 1})", "user_id is not a non-empty string"},
      {R"({"rating": 5.0, "user_id": "U", "timestamp": 1})", "missing parent_asin"},
      {R"({"rating": 5.0, "parent_asin": 7, "user_id": "U", "timestamp": 1})", "parent_asin is not a non-empty string"},
      {R"({"parent_asin": "B", "user_id": "U", "timestamp": 1})", "missing rating"},
      {R"({"rating": "5", "parent_asin": "B", "user_id": "U", "timestamp": 1})", "rating is not a number"},
      {R"({"rating": 0.0, "parent_asin": "B", "user_id": "U", "timestamp": 1})", "rating out of range 1-5"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": "U"})", "missing timestamp"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": "U", "timestamp": null})", "missing timestamp"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": "U", "timestamp": "2020"})", "timestamp is not an integer"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": "U", "timestamp": 1.5})", "timestamp is not an integer"},
      {R"({"rating": 5.0, "parent_asin": "B", "user_id": "U", "timestamp": -3})", "timestamp is negative"},
  };
  for (const auto& [line, reason] : bad) {
    auto p = parse_review(line);
    EXPECT_FALSE(p.ok) << line;
    EXPECT_EQ(p.problem.reason, reason) << line;
  }
}

TEST(RawParser, MetaRecordsWithTheLoadersTolerance) {
  RawParser parser;
  std::string line = R"({"main_category": "Amazon Home", "title": "Pan", "average_rating": 4.5, "rating_number": 10, "features": "one", "description": ["a", 2], "price": "$12.99", "images": [{"x": 1}], "store": null, "categories": ["Home & Kitchen", "Cookware"], "details": {"Brand": "Y", "Size": "10 in"}, "parent_asin": "B0PAN"})";
  std::string buf = line + std::string(64, '\0');
  std::string asin;
  LineProblem problem;
  std::vector<LineProblem> fields;
  ASSERT_TRUE(parser.meta_key(std::string_view(buf.data(), line.size()), asin, problem));
  EXPECT_EQ(asin, "B0PAN");
  data::Product p;
  ASSERT_TRUE(parser.meta(std::string_view(buf.data(), line.size()), p, problem, fields)) << problem.reason;
  EXPECT_EQ(p.parent_asin, "B0PAN");
  EXPECT_EQ(p.title, "Pan");
  EXPECT_EQ(p.features, std::vector<std::string>{"one"});
  EXPECT_EQ(p.description, (std::vector<std::string>{"a", "2"}));
  EXPECT_EQ(p.price, py::Scalar::of_str("$12.99"));
  EXPECT_FALSE(p.store.has_value());
  EXPECT_EQ(p.details_json, R"({"Brand":"Y","Size":"10 in"})");
  EXPECT_EQ(p.average_rating, py::Scalar::of_float(4.5));
  EXPECT_EQ(p.rating_number, py::Scalar::of_int(10));
  EXPECT_TRUE(fields.empty());

  // meta() without a preceding meta_key parses the line itself; wrong optional types are dropped and reported.
  std::string odd = R"({"parent_asin": "B0ODD", "store": 5, "average_rating": "4.5", "details": [1], "categories": [{"a": 1}]})";
  std::string obuf = odd + std::string(64, '\0');
  fields.clear();
  ASSERT_TRUE(parser.meta(std::string_view(obuf.data(), odd.size()), p, problem, fields));
  EXPECT_EQ(p.parent_asin, "B0ODD");
  EXPECT_EQ(p.details_json, "{}");
  EXPECT_TRUE(p.average_rating.is_none());
  std::vector<std::string> reasons;
  for (const auto& f : fields) reasons.push_back(f.reason);
  EXPECT_EQ(reasons, (std::vector<std::string>{"average_rating is not a number", "categories has non-string items",
                                               "store is not a string", "details is not an object"}));

  std::string no_key = R"({"title": "x"})";
  std::string nbuf = no_key + std::string(64, '\0');
  EXPECT_FALSE(parser.meta_key(std::string_view(nbuf.data(), no_key.size()), asin, problem));
  EXPECT_EQ(problem.reason, "missing parent_asin");
}

TEST(UserSampler, BoundedTableGivesTheExactBottomKOfQualifyingUsers) {
  // 50,000 users with 1..12 reviews each, interleaved; a table of 2,000 must still return exactly the users with
  // the lowest priorities among those with 4..10 reviews, with exact counts.
  Rng rng(11);
  std::vector<uint64_t> keys;
  std::map<uint64_t, uint32_t> truth;
  for (int u = 0; u < 50000; ++u) {
    uint64_t key = user_key("USER" + std::to_string(u));
    uint32_t n = 1 + static_cast<uint32_t>(rng.below(12));
    truth[key] = n;
    for (uint32_t i = 0; i < n; ++i) keys.push_back(key);
  }
  rng.shuffle(keys);
  UserSampler sampler(42, 2000);
  for (uint64_t k : keys) sampler.add(k);
  EXPECT_GT(sampler.n_halvings(), 3);
  EXPECT_LE(sampler.tracked(), 2000u);
  EXPECT_LE(sampler.memory_bytes(), 4u * 2000 * 12);

  std::vector<std::pair<uint64_t, uint64_t>> qualifying;  // (priority, key)
  for (const auto& [k, n] : truth)
    if (n >= 4 && n <= 10) qualifying.push_back({sampler.priority(k), k});
  std::sort(qualifying.begin(), qualifying.end());
  auto got = sampler.candidates(4, 10, 100);
  ASSERT_EQ(got.size(), 100u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, qualifying[i].second) << i;
    EXPECT_EQ(got[i].count, truth[got[i].key]) << i;
  }
  // Another seed samples other users.
  UserSampler other(43, 2000);
  for (uint64_t k : keys) other.add(k);
  auto got2 = other.candidates(4, 10, 100);
  std::size_t same = 0;
  for (const auto& a : got)
    for (const auto& b : got2) same += a.key == b.key;
  EXPECT_LT(same, 20u);
}

}  // namespace
}  // namespace pwab::construct
