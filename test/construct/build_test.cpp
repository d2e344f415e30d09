// `pwab build` as a library: on small raw files written here (plain and .gz, malformed lines, odd fields,
// unknown products, duplicates, users with 1-3 behaviours) the dataset keeps exactly the right behaviours, in time
// order, split 80/10/10, with deterministic offline profiles and instructions, and passes the validator.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "construct/build.h"
#include "construct/instructions.h"
#include "core/error.h"
#include "data/loader.h"
#include "data/validate.h"
#include "llm/http_chat_model.h"
#include "llm/llm_test_util.h"
#include "raw_fixture.h"
#include "support/openai_test_server.h"
#include "support/test_support.h"

namespace pwab::construct {
namespace {

namespace fs = std::filesystem;
using testing::RawSample;

BuildOptions sample_options(const RawSample& s) {
  BuildOptions o;
  o.review_files = {s.electronics, s.home};
  o.meta_files = {s.meta_electronics, s.meta_home};
  o.categories = {"Electronics", "home and kitchen"};  // case and punctuation do not matter
  o.n_users = 100;
  o.min_behaviours = 1;
  return o;
}

TEST(SplitSizes, EightyTenTenWithShortHistories) {
  struct Row {
    std::size_t n, history, train, test;
  };
  for (Row r : std::vector<Row>{{1, 0, 0, 1}, {2, 1, 0, 1}, {3, 2, 0, 1}, {4, 3, 0, 1}, {5, 3, 1, 1}, {9, 7, 1, 1},
                                {10, 8, 1, 1}, {14, 12, 1, 1}, {15, 11, 2, 2}, {20, 16, 2, 2}, {38, 30, 4, 4},
                                {100, 80, 10, 10}}) {
    auto s = split_sizes(r.n);
    EXPECT_EQ(s.history, r.history) << r.n;
    EXPECT_EQ(s.train, r.train) << r.n;
    EXPECT_EQ(s.test, r.test) << r.n;
    EXPECT_EQ(s.history + s.train + s.test, r.n);
  }
  EXPECT_EQ(split_sizes(0).test, 0u);
}

TEST(Build, KeepsExactlyTheValidBehavioursInTimeOrderAndValidates) {
  test::TempDir dir;
  RawSample sample(dir.path());
  auto report = build_dataset(sample_options(sample), dir / "out");

  EXPECT_EQ(report.users, sample.per_user.size());
  EXPECT_EQ(report.behaviours, sample.expected.size());
  EXPECT_EQ(report.reviews_malformed, sample.malformed_review_lines);
  EXPECT_EQ(report.duplicates_dropped, sample.duplicates);
  EXPECT_EQ(report.no_metadata_dropped, sample.unknown_products);
  EXPECT_EQ(report.meta_malformed, 1u);
  EXPECT_EQ(report.meta_duplicates, 1u);
  EXPECT_EQ(report.malformed_by_reason.at("reviews: missing timestamp"), 1u);
  EXPECT_EQ(report.malformed_by_reason.at("reviews: invalid JSON"), 1u);
  EXPECT_EQ(report.malformed_by_reason.at("meta: missing parent_asin"), 1u);
  EXPECT_EQ(report.field_problems.at("reviews: title is not a string"), 1u);
  EXPECT_EQ(report.field_problems.at("meta: store is not a string"), 1u);
  EXPECT_EQ(report.products_behaviour, 13u);
  EXPECT_EQ(report.products_filler, 31u);  // 30 cables + the odd Home record
  ASSERT_FALSE(report.examples.empty());
  EXPECT_NE(report.examples[0].find("Electronics.jsonl:"), std::string::npos) << report.examples[0];

  auto ds = data::load_dataset(dir / "out");
  std::set<testing::Key> got;
  std::size_t n_train = 0, n_test = 0;
  for (const auto& u : ds.users()) {
    EXPECT_TRUE(u.has_profile);
    EXPECT_EQ(u.profile.fields.size(), 11u);
    ASSERT_EQ(u.behaviours.size(), sample.per_user.at(u.id)) << u.id;
    auto sz = split_sizes(u.behaviours.size());
    for (std::size_t k = 0; k < u.behaviours.size(); ++k) {
      const auto& b = u.behaviours[k];
      EXPECT_TRUE(got.insert({u.id, b.review.parent_asin, b.review.timestamp}).second) << "duplicated behaviour";
      EXPECT_EQ(ds.product(b.product).parent_asin, b.review.parent_asin);
      if (k > 0) {
        EXPECT_LE(u.behaviours[k - 1].review.timestamp, b.review.timestamp) << u.id;
      }
      data::Split want = k < sz.history ? data::Split::kHistory : k < sz.history + sz.train ? data::Split::kTrain : data::Split::kTest;
      EXPECT_EQ(b.split, want) << u.id << " #" << k;
      n_train += b.split == data::Split::kTrain;
      n_test += b.split == data::Split::kTest;
    }
  }
  EXPECT_EQ(got, sample.expected);  // nothing lost, nothing added
  // One task per train and test behaviour, at its time, with its review.
  EXPECT_EQ(ds.tasks(data::Split::kTrain).size(), n_train);
  EXPECT_EQ(ds.tasks(data::Split::kTest).size(), n_test);
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : ds.tasks(split)) {
      EXPECT_EQ(t.timestamp, t.target_review.timestamp);
      const auto& asin = ds.product(t.target_product).parent_asin;
      EXPECT_EQ(t.instruction.find(asin), std::string::npos) << t.instruction;
      // A long title is shortened to its first segment; a short one may be named as it is.
      const auto& title = ds.product(t.target_product).title;
      if (product_phrase(ds.product(t.target_product)) != title) {
        EXPECT_EQ(t.instruction.find(title), std::string::npos) << t.instruction;
      }
    }
  // The odd review kept its int rating and lost its non-string title.
  auto onemore = ds.find_user("AONEMORE000000000000000000AA");
  ASSERT_TRUE(onemore);
  EXPECT_EQ(ds.user(*onemore).behaviours[0].review.rating, py::Scalar::of_int(3));
  EXPECT_EQ(ds.user(*onemore).behaviours[0].review.title, "");
  // Item ids: every catalogue product, 1..N.
  EXPECT_EQ(ds.item_ids().size(), ds.products().size());
  EXPECT_EQ(ds.item_ids().back().second, static_cast<int64_t>(ds.products().size()));

  auto v = data::validate_dataset(dir / "out");
  EXPECT_EQ(v.diag.n_errors(), 0u) << v.diag.first_error();
  EXPECT_EQ(v.diag.n_warnings(), 0u) << data::format_report(v);
  EXPECT_TRUE(fs::exists(dir / "out" / "build_report.json"));
}

std::map<std::string, std::string> dataset_files(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != "build_report.json") out[e.path().filename().string()] = test::read_text(e.path());
  return out;
}

TEST(Build, OfflineOutputIsDeterministicAndFollowsTheSeed) {
  test::TempDir dir;
  RawSample sample(dir.path());
  auto o = sample_options(sample);
  build_dataset(o, dir / "a");
  build_dataset(o, dir / "b");
  auto a = dataset_files(dir / "a");
  EXPECT_EQ(a, dataset_files(dir / "b"));
  EXPECT_EQ(a.size(), 5u);  // user_instructions, user_profiles, user_history, all_products, item_ids
  o.seed = 2;
  build_dataset(o, dir / "c");
  auto c = dataset_files(dir / "c");
  EXPECT_EQ(a.at("user_history.json"), c.at("user_history.json"));  // every user is sampled either way
  EXPECT_NE(a.at("user_instructions.json"), c.at("user_instructions.json"));  // other types and wording
}

TEST(Build, SamplingCategoriesMixAndCatalogueCap) {
  test::TempDir dir;
  RawSample sample(dir.path());
  auto o = sample_options(sample);
  // Only Electronics: the gzip Home file is not read, so its users and reviews are absent.
  o.categories = {"Electronics"};
  o.type_mix = {1, 0, 0};
  o.catalogue_size = 15;
  auto r = build_dataset(o, dir / "el");
  EXPECT_EQ(r.categories, std::vector<std::string>{"Electronics"});
  EXPECT_FALSE(r.files[1].used);
  auto ds = data::load_dataset(dir / "el");
  EXPECT_FALSE(ds.find_user("AREPEATBUYER00000000000000AA"));
  EXPECT_EQ(ds.products().size(), 15u);  // behaviour products always; fillers only up to the cap
  EXPECT_GT(r.products_filler, 0u);
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : ds.tasks(split)) EXPECT_EQ(t.type, data::TaskType::kSearch);

  // The activity filter counts valid review lines in pass 1 (duplicates and unknown products included), and is
  // checked again after cleaning: with 3..12 reviews, the heavy (14 lines) and wide (21) users are out; the
  // repeat buyer (3 lines) qualifies but keeps only 2 behaviours; the three-review user stays.
  o = sample_options(sample);
  o.n_users = 2;
  o.min_behaviours = 3;
  o.max_behaviours = 12;
  r = build_dataset(o, dir / "two");
  EXPECT_EQ(r.users_qualifying, 2u);
  EXPECT_EQ(r.users_below_minimum, 1u);
  EXPECT_EQ(r.users, 1u);
  EXPECT_TRUE(data::load_dataset(dir / "two").find_user("ATHREEREVIEWS0000000000000AA"));
}

TEST(Build, BadInputsGiveClearErrors) {
  test::TempDir dir;
  RawSample sample(dir.path());
  auto o = sample_options(sample);
  o.categories = {};  // the paper's five: Electronics and Home_and_Kitchen are among them
  EXPECT_NO_THROW(build_dataset(o, dir / "paper"));
  o.categories = {"Toys_and_Games"};
  try {
    build_dataset(o, dir / "x");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--categories all"), std::string::npos) << e.what();
  }
  o = sample_options(sample);
  std::swap(o.review_files, o.meta_files);  // meta given as reviews
  o.categories = {"all"};
  try {
    build_dataset(o, dir / "x");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("meta_Electronics.jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing user_id"), std::string::npos) << e.what();
  }
  o = sample_options(sample);
  o.review_files.push_back(dir / "nope.jsonl");
  EXPECT_THROW(build_dataset(o, dir / "x"), UsageError);
  o = sample_options(sample);
  o.min_behaviours = 50;
  EXPECT_THROW(build_dataset(o, dir / "x"), Error);
  // A corrupt gzip file stops the build with its name.
  std::string gz = test::read_text(sample.home);
  test::write_text(dir / "Home_and_Kitchen.jsonl.gz", gz.substr(0, gz.size() - 12));
  o = sample_options(sample);
  try {
    build_dataset(o, dir / "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Home_and_Kitchen.jsonl.gz"), std::string::npos) << e.what();
  }
}

// The LLM path against the loopback OpenAI server: profile replies as JSON (one garbled, one partial), instruction
// replies (one empty, one repeated), all through the real HTTP client.
TEST(Build, LlmProfilesAndInstructions) {
  test::TempDir dir;
  RawSample sample(dir.path());
  test::OpenAITestServer server;
  std::atomic<int> profile_calls{0}, instruction_calls{0};
  server.set_chat_handler([&](const test::ReceivedRequest& req) {
    auto body = nlohmann::json::parse(req.body);
    std::string system = body["messages"][0]["content"];
    if (system.find("structured profiles") != std::string::npos) {
      int n = profile_calls++;
      if (n == 0) return test::ScriptedReply::text("Sorry, I cannot tell.");
      nlohmann::json p = {{"Gender", "Female"}, {"Age", "35-44"}, {"Occupation", "Nurse"},
                          {"Price Sensitivity", "Low"}, {"Shopping Interest", {"Headphones", "Cookware"}},
                          {"Brand Preference", "Sony"}, {"Diversity Preference", "High"},
                          {"Interaction Complexity", "Medium"}, {"Tone and Style", "Warm, Direct"},
                          {"Item Reference", "Often"}};  // no Focus Aspect: filled by the offline rule
      return test::ScriptedReply::text("```json\n" + p.dump() + "\n```");
    }
    int n = instruction_calls++;
    if (n == 1) return test::ScriptedReply::text("   ");                       // unusable: asked again
    if (n == 2 || n == 3) return test::ScriptedReply::text("\"Find me those headphones.\"");  // a repeat
    return test::ScriptedReply::text("Instruction: please help with request " + std::to_string(n) + ".");
  });
  llm::HttpChatModel model(llm::testing::make_endpoint(llm::testing::fast_config(server)));
  auto o = sample_options(sample);
  o.model = &model;
  o.model_name = "gpt-4o-mini";
  o.llm_workers = 1;  // replies in slot order, so the scripted repeat lands where the test expects it
  auto r = build_dataset(o, dir / "llm");

  std::size_t n_slots = r.behaviours_by_split[1] + r.behaviours_by_split[2];
  EXPECT_EQ(r.mode, "llm:gpt-4o-mini");
  EXPECT_EQ(profile_calls.load(), static_cast<int>(r.users));
  EXPECT_EQ(r.llm_failures, 1u);                      // the garbled profile
  EXPECT_EQ(r.profile_fields_filled, 11u + (r.users - 1));
  EXPECT_EQ(r.instruction_collisions, 1u);            // the repeat, asked again as a new sample
  EXPECT_EQ(r.instruction_fallbacks, 0u);
  EXPECT_EQ(r.llm_calls, r.users + n_slots + 2);      // + the re-asked empty and repeated replies
  EXPECT_EQ(static_cast<std::size_t>(instruction_calls.load()), n_slots + 2);

  auto ds = data::load_dataset(dir / "llm");
  std::size_t llm_profiles = 0;
  for (const auto& u : ds.users()) {
    if (u.profile.get("Occupation") == "Nurse") {
      ++llm_profiles;
      EXPECT_EQ(u.profile.get("Shopping Interest"), "Headphones, Cookware");
      EXPECT_FALSE(u.profile.get("Focus Aspect").empty());
    } else {
      EXPECT_EQ(u.profile.get("Occupation"), "Other");  // the offline rule, for the garbled reply
    }
  }
  EXPECT_EQ(llm_profiles, r.users - 1);
  std::set<std::string> seen;
  for (data::Split split : {data::Split::kTrain, data::Split::kTest})
    for (const auto& t : ds.tasks(split)) {
      EXPECT_TRUE(seen.insert(t.instruction).second) << t.instruction;
      EXPECT_EQ(t.instruction.rfind("Instruction:", 0), std::string::npos) << "label not stripped";
      EXPECT_NE(t.instruction.front(), '"');
    }
  EXPECT_TRUE(seen.contains("Find me those headphones."));
  auto v = data::validate_dataset(dir / "llm");
  EXPECT_EQ(v.diag.n_errors(), 0u) << v.diag.first_error();

  // What the model was shown: the profile prompt holds the user's reviews and asks for JSON; a review prompt holds
  // the true review; nothing ever shows the ASIN of a search target.
  bool saw_review_prompt = false;
  for (const auto& req : server.requests()) {
    auto body = nlohmann::json::parse(req.body);
    std::string user = body["messages"][1]["content"];
    if (std::string(body["messages"][0]["content"]).find("structured profiles") != std::string::npos) {
      EXPECT_EQ(body["response_format"]["type"], "json_object");
      EXPECT_NE(user.find("rated "), std::string::npos);
    }
    if (user.find("Their review (rating") != std::string::npos) saw_review_prompt = true;
    EXPECT_EQ(user.find("B00EL"), std::string::npos) << user;
  }
  EXPECT_TRUE(saw_review_prompt);
}

TEST(Instructions, OfflineTemplatesFollowTheTypeAndProfile) {
  data::Product p;
  p.parent_asin = "B0TEST0001";
  p.title = "Sony WH-1000XM4 Wireless Noise Canceling Headphones, Black";
  p.store = "Sony";
  p.price = py::Scalar::of_float(248.0);
  p.categories = {"Electronics", "Headphones, Earbuds & Accessories", "Over-Ear Headphones"};
  p.features = {"Industry-leading noise canceling: dual noise sensors", "30-hour battery life"};
  data::Review r{py::Scalar::of_float(2.0), "Disappointing battery", "The battery died after a month. Sound is fine though.", "B0TEST0001", 1};
  data::Profile chatty, terse;
  chatty.fields = {{"Price Sensitivity", "High"}, {"Interaction Complexity", "High"}, {"Tone and Style", "Critical, Enthusiastic, Detailed"},
                   {"Brand Preference", "Sony"}, {"Item Reference", "Often names the brand or the product"}, {"Focus Aspect", "Performance, Quality"}};
  terse.fields = {{"Price Sensitivity", "Medium"}, {"Interaction Complexity", "Low"}, {"Tone and Style", "Positive, Measured, Concise"}};
  EXPECT_EQ(product_phrase(p), "WH-1000XM4 Wireless Noise Canceling Headphones");
  std::size_t chatty_chars = 0, terse_chars = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    InstructionInput in{data::TaskType::kSearch, &chatty, &p, &r};
    std::string s = offline_instruction(in, seed);
    EXPECT_EQ(s, offline_instruction(in, seed));
    EXPECT_NE(s.find("WH-1000XM4"), std::string::npos) << s;  // specific
    EXPECT_NE(s.find("$"), std::string::npos) << s;           // a budget for a price-sensitive shopper
    EXPECT_EQ(s.find("B0TEST0001"), std::string::npos);
    in.type = data::TaskType::kRecommend;
    std::string rec = offline_instruction(in, seed);
    EXPECT_EQ(rec.find("WH-1000XM4"), std::string::npos) << rec;  // vague
    in.type = data::TaskType::kReview;
    std::string rev = offline_instruction(in, seed);
    EXPECT_NE(rev.find("not happy"), std::string::npos) << rev;  // the true review's verdict (2 stars)
    in.profile = &terse;
    in.type = data::TaskType::kSearch;
    chatty_chars += s.size();
    terse_chars += offline_instruction(in, seed).size();
  }
  EXPECT_LT(terse_chars * 3, chatty_chars * 2) << "terse users write shorter requests";
  EXPECT_EQ(clean_instruction_reply("  Instruction: \"Find a kettle.\"  "), "Find a kettle.");
  EXPECT_EQ(clean_instruction_reply("''"), "");
}

}  // namespace
}  // namespace pwab::construct
