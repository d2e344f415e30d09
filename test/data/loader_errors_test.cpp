// Every class of bad input gets a located, readable error; bad records are skipped, never a crash.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/loader.h"
#include "support/test_support.h"

namespace pwab::data {
namespace {

using Json = nlohmann::ordered_json;

// Parses one file's text and returns its only error (fails the test if there is not exactly one).
std::string only_error(std::string_view file, std::string_view json) {
  Diagnostics diag;
  parse_dataset_file_for_test(file, json, diag);
  EXPECT_EQ(diag.n_errors(), 1u);
  for (const auto& d : diag.kept())
    if (d.severity == Severity::kError) return d.to_string();
  return "(no error)";
}

const char* kProduct =
    R"({"main_category": "Grocery", "title": "Tea", "average_rating": 4.5, "rating_number": 3, "features": [],
        "description": [], "price": 3.5, "store": "Leafy", "categories": [], "details": {}, "parent_asin": "B0TEA"})";

std::string product_file(const std::string& product) { return R"({"B0TEA": )" + product + "}"; }

std::string history_file(const std::string& review, const std::string& split = "\"history\"") {
  return R"({"U1": [{"product_info": {"parent_asin": "B0TEA"}, "review": )" + review + R"(, "split": )" + split + "}]}";
}

const char* kReview = R"({"rating": 5.0, "title": "t", "text": "good", "parent_asin": "B0TEA", "timestamp": 1})";

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(LoaderErrors, InvalidJsonSaysWhere) {
  std::string e = only_error("all_products_part_1.json", "{\"B0TEA\": {\"title\": \"Tea\",\n \"price\": }");
  EXPECT_CONTAINS(e, "all_products_part_1.json");
  EXPECT_CONTAINS(e, "invalid JSON");
  EXPECT_CONTAINS(e, "line 2");
}

TEST(LoaderErrors, WrongTopLevelType) {
  std::string e = only_error("user_profiles.json", "[1, 2]");
  EXPECT_CONTAINS(e, "user_profiles.json");
  EXPECT_CONTAINS(e, "expected the top level to be an object");
}

TEST(LoaderErrors, WrongFieldTypeNamesRecordAndPath) {
  Json p = Json::parse(kProduct);
  p["title"] = 5;
  std::string e = only_error("all_products.json", product_file(p.dump()));
  EXPECT_CONTAINS(e, "product \"B0TEA\"");
  EXPECT_CONTAINS(e, "$[\"B0TEA\"].title");
  EXPECT_CONTAINS(e, "expected a string, got an integer 5");
}

TEST(LoaderErrors, PriceOfAnObjectIsRejectedButStringsAndNullAreNot) {
  Json p = Json::parse(kProduct);
  p["price"] = Json::object({{"amount", 3}});
  EXPECT_CONTAINS(only_error("all_products.json", product_file(p.dump())), "expected a number, a string or null");
  for (Json ok : {Json("$3.50"), Json(nullptr), Json(3)}) {
    p["price"] = ok;
    Diagnostics diag;
    parse_dataset_file_for_test("all_products.json", product_file(p.dump()), diag);
    EXPECT_EQ(diag.n_errors(), 0u) << diag.first_error();
  }
}

TEST(LoaderErrors, FeatureListWithAnObject) {
  Json p = Json::parse(kProduct);
  p["features"] = Json::array({"ok", Json::object()});
  std::string e = only_error("all_products.json", product_file(p.dump()));
  EXPECT_CONTAINS(e, "$[\"B0TEA\"].features[1]");
}

TEST(LoaderErrors, KeyAndParentAsinDisagree) {
  Json p = Json::parse(kProduct);
  p["parent_asin"] = "B0OTHER";
  EXPECT_CONTAINS(only_error("all_products.json", product_file(p.dump())), "differs from its key \"B0TEA\"");
}

TEST(LoaderErrors, MissingRequiredField) {
  Json r = Json::parse(kReview);
  r.erase("text");
  std::string e = only_error("user_history.json", history_file(r.dump()));
  EXPECT_CONTAINS(e, "user \"U1\"");
  EXPECT_CONTAINS(e, "$[\"U1\"][0].review");
  EXPECT_CONTAINS(e, "missing required field \"text\"");
}

TEST(LoaderErrors, TimestampMustBeAnInteger) {
  Json r = Json::parse(kReview);
  r["timestamp"] = "yesterday";
  EXPECT_CONTAINS(only_error("user_history.json", history_file(r.dump())),
                  "$[\"U1\"][0].review.timestamp): expected an integer, got a string \"yesterday\"");
  r["timestamp"] = 1.5;
  EXPECT_CONTAINS(only_error("user_history.json", history_file(r.dump())), "expected an integer, got a float 1.5");
}

TEST(LoaderErrors, NullRating) {
  Json r = Json::parse(kReview);
  r["rating"] = nullptr;
  EXPECT_CONTAINS(only_error("user_history.json", history_file(r.dump())), "rating is null");
}

TEST(LoaderErrors, UnknownSplit) {
  EXPECT_CONTAINS(only_error("user_history.json", history_file(kReview, "\"validation\"")),
                  "split must be \"history\", \"train\" or \"test\", got \"validation\"");
}

TEST(LoaderErrors, UnknownTaskType) {
  std::string tasks = R"({"train": [], "test": [{"user_id": "U1", "task": "do it", "type": "compare", "timestamp": 1,
    "target": {"product_info": {"parent_asin": "B0TEA"}, "review": )" + std::string(kReview) + "}}]}";
  std::string e = only_error("user_instructions.json", tasks);
  EXPECT_CONTAINS(e, "test[0]");
  EXPECT_CONTAINS(e, "$.test[0].type");
  EXPECT_CONTAINS(e, "got \"compare\"");
}

TEST(LoaderErrors, ProfileFieldOfTheWrongType) {
  std::string e = only_error("user_profiles.json", R"({"U1": {"user_profile": {"Gender": "Female", "Age": 30}}})");
  EXPECT_CONTAINS(e, "$[\"U1\"].user_profile.Age");
}

TEST(LoaderErrors, ItemIdsMustBePositiveIntegers) {
  EXPECT_CONTAINS(only_error("item_ids.json", R"({"B0TEA": 0})"), "positive integer");
  EXPECT_CONTAINS(only_error("item_ids.json", R"({"B0TEA": "7"})"), "got a string \"7\"");
}

TEST(LoaderErrors, ABadRecordDoesNotHideTheOthers) {
  Json good = Json::parse(kProduct);
  Json bad = good;
  bad["title"] = Json::array();
  bad["parent_asin"] = "B0BAD";
  std::string file = R"({"B0BAD": )" + bad.dump() + R"(, "B0TEA": )" + good.dump() + "}";
  Diagnostics diag;
  parse_dataset_file_for_test("all_products.json", file, diag);
  EXPECT_EQ(diag.n_errors(), 1u);
}

// Referential checks need the whole dataset: mutate a copy of the fixture and load it.
Diagnostics load_mutated(const std::string& file, const std::function<void(Json&)>& mutate) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  Json j = Json::parse(test::read_text(dir / file));
  mutate(j);
  test::write_text(dir / file, j.dump());
  Diagnostics diag;
  load_dataset(dir.path(), diag);
  return diag;
}

std::string first_error_of(const Diagnostics& d, const std::string& check) {
  for (const auto& x : d.kept())
    if (x.check == check && x.severity == Severity::kError) return x.to_string();
  return "(no " + check + " error)";
}

TEST(LoaderErrors, HistoryProductNotInCatalogue) {
  auto diag = load_mutated("user_history_part_2.json", [](Json& j) {
    j["AG3FIXTUREUSERTHREE000000003"][1]["product_info"]["parent_asin"] = "B0MISSING";
    j["AG3FIXTUREUSERTHREE000000003"][1]["review"]["parent_asin"] = "B0MISSING";
  });
  EXPECT_EQ(diag.n_errors(), 1u);
  EXPECT_CONTAINS(first_error_of(diag, "history-asin"), "$[\"AG3FIXTUREUSERTHREE000000003\"][1].product_info.parent_asin");
  EXPECT_CONTAINS(first_error_of(diag, "history-asin"), "\"B0MISSING\" is not in the catalogue");
}

TEST(LoaderErrors, TaskUserUnknown) {
  auto diag = load_mutated("user_instructions.json", [](Json& j) { j["test"][2]["user_id"] = "ANOBODY"; });
  EXPECT_CONTAINS(first_error_of(diag, "task-user"), "test[2]");
  EXPECT_CONTAINS(first_error_of(diag, "task-user"), "user \"ANOBODY\" has neither a profile nor a history");
}

TEST(LoaderErrors, TaskTargetNotInCatalogue) {
  auto diag = load_mutated("user_instructions.json",
                           [](Json& j) { j["train"][0]["target"]["product_info"]["parent_asin"] = "B0GONE"; });
  EXPECT_CONTAINS(first_error_of(diag, "task-target"), "$.train[0].target.product_info.parent_asin");
}

TEST(LoaderErrors, DuplicateInstructionAcrossSplits) {
  auto diag = load_mutated("user_instructions.json", [](Json& j) { j["test"][1]["task"] = j["train"][0]["task"]; });
  EXPECT_EQ(diag.n_errors(), 1u);
  EXPECT_CONTAINS(first_error_of(diag, "instruction-unique"), "test[1]");
  EXPECT_CONTAINS(first_error_of(diag, "instruction-unique"), "already used by train[0]");
}

TEST(LoaderErrors, DuplicateItemIds) {
  auto diag = load_mutated("item_ids.json", [](Json& j) { j["B0FIXTURE2"] = 1; });
  EXPECT_CONTAINS(first_error_of(diag, "item-id"), "item id 1 is used by more than one product");
}

TEST(LoaderErrors, ThrowingLoadReportsFirstErrorAndCount) {
  test::TempDir dir;
  test::copy_dir(test::fixture("data/original"), dir.path());
  test::write_text(dir / "user_history_part_2.json", "{\"x\": [1, 2]}");
  try {
    load_dataset(dir.path());
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_CONTAINS(e.what(), "user_history_part_2.json");
    EXPECT_CONTAINS(e.what(), "and 1 more errors");
  }
}

TEST(LoaderErrors, EmptyAndGarbageFilesNeverCrash) {
  for (std::string text : {"", " ", "null", "{", "[]", "\"x\"", "{\"a\":", "\xff\xfe", "{\"U\": {\"user_profile\": null}}"}) {
    for (std::string file : {"all_products.json", "user_history.json", "user_instructions.json", "user_profiles.json",
                             "item_ids.json"}) {
      Diagnostics diag;
      parse_dataset_file_for_test(file, text, diag);
      EXPECT_GE(diag.n_errors() + diag.n_warnings(), 1u) << file << " accepted " << text;
    }
  }
}

}  // namespace
}  // namespace pwab::data
