// test/construct/raw_fixture.h: small Amazon Reviews 2023 raw files written by the tests, with the behaviours a
// correct build must keep, worked out independently of the builder.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/test_support.h"

namespace pwab::construct::testing {

//! Writes lines as a plain or gzip-compressed file (each line followed by "\n" unless `no_final_newline`).
inline void write_lines(const std::filesystem::path& p, const std::vector<std::string>& lines, bool gzip,
                        bool no_final_newline = false) {
  std::string text;
  for (std::size_t i = 0; i < lines.size(); ++i) text += lines[i] + (i + 1 == lines.size() && no_final_newline ? "" : "\n");
  if (!gzip) {
    test::write_text(p, text);
    return;
  }
  gzFile gz = gzopen(p.c_str(), "wb");
  if (!gz) throw std::runtime_error("cannot write " + p.string());
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
}

//! A kept behaviour: (user, product, timestamp).
using Key = std::tuple<std::string, std::string, int64_t>;

inline std::string review_line(const std::string& user, const std::string& asin, int64_t ts, double rating,
                               const std::string& title, const std::string& text) {
  return fmt::format(R"({{"rating": {:.1f}, "title": "{}", "text": "{}", "images": [], "asin": "{}", "parent_asin": "{}", "user_id": "{}", "timestamp": {}, "helpful_vote": 0, "verified_purchase": true}})",
                     rating, title, text, asin, asin, user, ts);
}

inline std::string meta_line(const std::string& asin, const std::string& main_category, const std::string& title,
                             const std::string& store, const std::string& price_json, const std::string& cats_json) {
  return fmt::format(R"({{"main_category": "{}", "title": "{}", "average_rating": 4.4, "rating_number": 120, "features": ["Long battery: lasts 30 hours", "Bluetooth 5.3"], "description": ["A product."], "price": {}, "images": [], "videos": [], "store": "{}", "categories": {}, "details": {{"Brand": "{}", "Color": "Black"}}, "parent_asin": "{}", "bought_together": null}})",
                     main_category, title, price_json, store, cats_json, store, asin);
}

//! The sample: two review files (Electronics plain, Home_and_Kitchen gzip), two meta files (one gzip), with
//! malformed lines, missing and odd fields, an unknown product, duplicate reviews, and users with 1-3 behaviours.
struct RawSample {
  std::filesystem::path electronics, home, meta_electronics, meta_home;
  std::set<Key> expected;                      //!< what the dataset must hold (every user sampled)
  std::map<std::string, std::size_t> per_user;  //!< expected behaviour count per user
  std::size_t malformed_review_lines = 0;
  std::size_t duplicates = 0;
  std::size_t unknown_products = 0;

  explicit RawSample(const std::filesystem::path& dir) {
    electronics = dir / "Electronics.jsonl";
    home = dir / "Home_and_Kitchen.jsonl.gz";
    meta_electronics = dir / "meta_Electronics.jsonl";
    meta_home = dir / "meta_Home_and_Kitchen.jsonl.gz";
    std::vector<std::string> el, hk, me, mh;
    const char* texts[] = {"Great sound and the battery lasts all day!", "The price was fair and it works well.",
                           "Cheap plastic, it broke after a week.", "Comfortable fit, I wear it every day.",
                           "Easy to set up. The instructions were clear.", "Looks beautiful on my desk"};
    auto add = [&](std::vector<std::string>& file, const std::string& user, const std::string& asin, int64_t ts,
                   double rating, bool known = true) {
      file.push_back(review_line(user, asin, ts, rating, "My take " + std::to_string(ts % 100000), texts[(ts / 1000) % 6]));
      if (known) {
        expected.insert({user, asin, ts});
      } else {
        ++unknown_products;
      }
    };
    // Heavy user: 12 Electronics reviews out of time order, one duplicate line, one unknown product.
    const std::string heavy = "AHEAVYUSER0000000000000000AA";
    for (int i = 11; i >= 0; --i) add(el, heavy, fmt::format("B00EL{:05d}", i % 9), 1600000000000 + i * 86400000LL, 1 + i % 5);
    el.push_back(el[3]);  // the same review again
    ++duplicates;
    add(el, heavy, "B0UNKNOWN01", 1600000000000 + 20 * 86400000LL, 4, /*known=*/false);
    // Users with 1, 2 and 3 behaviours, across both files.
    add(el, "AONEREVIEW0000000000000000AA", "B00EL00001", 1500000000000, 5);
    add(el, "ATWOREVIEWS000000000000000AA", "B00EL00002", 1500000001000, 4);
    add(hk, "ATWOREVIEWS000000000000000AA", "B00HK00001", 1500000002000, 3);
    add(hk, "ATHREEREVIEWS0000000000000AA", "B00HK00002", 1500000005000, 2);
    add(el, "ATHREEREVIEWS0000000000000AA", "B00EL00003", 1500000004000, 5);
    add(hk, "ATHREEREVIEWS0000000000000AA", "B00HK00003", 1500000003000, 1);
    // A user reviewing the same product twice at different times keeps both; same time is a duplicate.
    add(hk, "AREPEATBUYER00000000000000AA", "B00HK00001", 1500000010000, 5);
    add(hk, "AREPEATBUYER00000000000000AA", "B00HK00001", 1500000020000, 4);
    hk.push_back(hk.back());
    ++duplicates;
    // A user with 21 reviews split over both files (gzip and plain), ties in time included.
    const std::string wide = "AWIDEUSER00000000000000000AA";
    for (int i = 0; i < 21; ++i) {
      bool home_file = i % 3 == 0;
      add(home_file ? hk : el, wide, home_file ? fmt::format("B00HK{:05d}", i % 4) : fmt::format("B00EL{:05d}", i % 9),
          1550000000000 + (i / 2) * 1000LL, 1 + (i * 7) % 5);
    }
    // Malformed lines: each is counted and skipped.
    std::vector<std::string> bad = {
        "{not json",
        R"({"rating": 5.0, "title": "x", "text": "y", "parent_asin": "B00EL00001", "user_id": "AX", "helpful_vote": 1})",  // no timestamp
        R"({"rating": "five", "parent_asin": "B00EL00001", "user_id": "AX", "timestamp": 1})",
        R"({"rating": 5.0, "parent_asin": "B00EL00001", "timestamp": 1})",  // no user
        R"(["an", "array"])",
        R"({"rating": 9.0, "parent_asin": "B00EL00001", "user_id": "AX", "timestamp": 1})",
        R"({"rating": 4.0, "parent_asin": "B00EL00001", "user_id": "AX", "timestamp": "yesterday"})",
    };
    malformed_review_lines = bad.size();
    el.insert(el.begin() + 5, bad.begin(), bad.end());
    el.insert(el.begin() + 2, "");    // blank lines are not lines
    el[3] += "\r";                    // a CRLF line still parses
    // An optional field of the wrong type is dropped, the review kept.
    hk.push_back(R"({"rating": 3, "title": 17, "text": null, "parent_asin": "B00HK00003", "user_id": "AONEMORE000000000000000000AA", "timestamp": 1500000030000})");
    expected.insert({"AONEMORE000000000000000000AA", "B00HK00003", 1500000030000});

    for (int i = 0; i < 9; ++i)
      me.push_back(meta_line(fmt::format("B00EL{:05d}", i), "All Electronics", fmt::format("Sony Wireless Headphones Model {} - Black", i),
                             i % 2 ? "Sony" : "Anker", i % 3 == 0 ? "null" : i % 3 == 1 ? fmt::format("{}.99", 20 + i * 10) : "\"$15.00\"",
                             R"(["Electronics", "Headphones, Earbuds & Accessories", "Over-Ear Headphones"])"));
    for (int i = 0; i < 30; ++i)  // other items of the category: catalogue filler
      me.push_back(meta_line(fmt::format("B00FILL{:03d}", i), "All Electronics", fmt::format("USB Cable {}", i), "Anker",
                             "9.99", R"(["Electronics", "Cables"])"));
    me.push_back(me[0]);                                       // a repeated record: the first is kept
    me.push_back(R"({"title": "no asin", "price": 3.0})");     // malformed: no parent_asin
    for (int i = 0; i < 4; ++i)
      mh.push_back(meta_line(fmt::format("B00HK{:05d}", i), "Amazon Home", fmt::format("Stainless Steel Pan {}", i),
                             "Cuisinart", fmt::format("{}", 30 + i), R"(["Home & Kitchen", "Kitchen & Dining", "Cookware"])"));
    // Odd but accepted field types: a lone string as features, details as a JSON string, a numeric store.
    mh.push_back(R"({"main_category": "Amazon Home", "title": "Odd record", "features": "one feature", "details": "{\"Brand\": \"X\"}", "store": 12, "categories": ["Home & Kitchen", 5], "parent_asin": "B00HKODD01", "price": "None"})");
    write_lines(electronics, el, false, /*no_final_newline=*/true);
    write_lines(home, hk, true);
    write_lines(meta_electronics, me, false);
    write_lines(meta_home, mh, true);
    for (const auto& [u, a, t] : expected) ++per_user[u];
  }
};

}  // namespace pwab::construct::testing
