// The environment with its real services on the mini synthetic dataset: the Lucene-faithful index and SASRec.
#include "env/backends.h"

#include <gtest/gtest.h>

#include "data/synth.h"
#include "core/py_format.h"
#include "env/tools.h"
#include "support/test_support.h"

namespace pwab::env {
namespace {

class RealServices : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    ds_ = new data::Dataset(data::synthesize(data::SynthOptions{}));
    index_ = search::Index::open_or_build(*ds_, dir_->path() / "index").release();
    rec::TrainOptions opts;
    opts.epochs = 2;
    opts.eval_every = 0;
    opts.progress = false;
    rec::train(*ds_, opts, dir_->path() / "sasrec.pwab");
    model_ = rec::Recommender::load(dir_->path() / "sasrec.pwab", *ds_).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete index_;
    delete ds_;
    delete dir_;
  }
  static test::TempDir* dir_;
  static data::Dataset* ds_;
  static search::Index* index_;
  static rec::Recommender* model_;
};
test::TempDir* RealServices::dir_ = nullptr;
data::Dataset* RealServices::ds_ = nullptr;
search::Index* RealServices::index_ = nullptr;
rec::Recommender* RealServices::model_ = nullptr;

const data::Task& first_task(const data::Dataset& ds, data::TaskType type) {
  for (const auto& t : ds.tasks(data::Split::kTest))
    if (t.type == type) return t;
  throw std::runtime_error("no task of that type");
}

TEST_F(RealServices, SearchObservationAndRankReward) {
  IndexSearch search(*index_);
  embed::HashingEmbedder embedder;
  Environment env(*ds_, &search, nullptr, embedder);
  const data::Task& task = first_task(*ds_, data::TaskType::kSearch);
  const data::Product& target = ds_->product(task.target_product);
  // Searching for the target's own title ranks it first (a title is a very specific query).
  Session s(env, task);
  std::string args = std::string("{\"query\": ") + py::json_string_ascii(target.title) + "}";
  StepResult r = s.step({std::string(kSearch), args});
  EXPECT_TRUE(r.done);
  EXPECT_TRUE(r.scored);
  EXPECT_EQ(r.reward.function_acc, 1.0);
  EXPECT_EQ(r.reward.result_acc, 1.0) << r.observation.substr(0, 300);
  EXPECT_EQ(r.observation.rfind("['Product 0: \\n- Title: ", 0), 0u) << r.observation.substr(0, 80);
  // The observation is the Python repr of 10 strings.
  std::size_t n = 0;
  for (std::size_t pos = 0; (pos = r.observation.find("- Parent Asin: ", pos)) != std::string::npos; ++pos) ++n;
  EXPECT_EQ(n, 10u);
  // The same query on a recommend task is the wrong function: F = 0 (R is computed but ignored later).
  Session wrong(env, first_task(*ds_, data::TaskType::kRecommend));
  EXPECT_EQ(wrong.step({std::string(kSearch), args}).reward.function_acc, 0.0);
}

TEST_F(RealServices, RecommendObservation) {
  SasrecRecommend recommend(*model_);
  embed::HashingEmbedder embedder;
  Environment env(*ds_, nullptr, &recommend, embedder);
  const data::Task& task = first_task(*ds_, data::TaskType::kRecommend);
  std::string seq = "[";
  for (const auto* b : ds_->visible_history(task)) seq += (seq.size() > 1 ? ", \"" : "\"") + ds_->product(b->product).parent_asin + "\"";
  seq += "]";
  Session s(env, task);
  StepResult r = s.step({std::string(kRecommend), "{\"product_sequence\": " + seq + "}"});
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.reward.function_acc, 1.0);
  EXPECT_EQ(r.observation.rfind("['\\nProduct 0:\\n- Title: ", 0), 0u) << r.observation.substr(0, 80);
  // Unknown ASINs only: an empty list, still the right function, R = 0.
  Session s2(env, task);
  StepResult empty = s2.step({std::string(kRecommend), R"({"product_sequence": ["B0NOTREAL"]})"});
  EXPECT_EQ(empty.observation, "[]");
  EXPECT_EQ(empty.reward.function_acc, 1.0);
  EXPECT_EQ(empty.reward.result_acc, 0.0);
}

}  // namespace
}  // namespace pwab::env
