// The torch-free inference path (src/rec/fast_sasrec.h) against the libtorch forward it replaces: the same
// logits (1e-4) and the same top 10, on the Python-made fixture and on a randomly initialised full-size model,
// for sequences of every length from empty to longer than maxlen, with padding, duplicates and interior zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "core/error.h"
#include "rec/fast_sasrec.h"
#include "rec/sasrec.h"
#include "support/test_support.h"

using namespace pwab;
using namespace pwab::rec;

namespace {

Sasrec fixture_model() {
  auto tensors = read_state_dict_pth(test::fixture("rec/sasrec_tiny.pth"));
  auto [item_rows, shape] = infer_dimensions(tensors, "fixture");
  Sasrec model(item_rows, shape, 0.0);
  assign_tensors(model, tensors, "fixture");
  model->eval();
  return model;
}

//! The full-size shape (35,773 item rows) with the original's initialisation, and every vector parameter
//! (layer norms, biases) perturbed so that a swapped or ignored tensor changes the output.
Sasrec random_full_model() {
  torch::manual_seed(1234);
  Sasrec model(35773, ModelShape{}, 0.0);
  model->init_like_original();
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters())
    if (p.dim() == 1) p.add_(torch::randn_like(p) * 0.2);
  model->eval();
  return model;
}

std::vector<int64_t> ids_range(int64_t first, int64_t last, int64_t skip_every = 0) {
  std::vector<int64_t> ids;
  for (int64_t id = first; id <= last; ++id)
    if (skip_every == 0 || id % skip_every != 0) ids.push_back(id);
  return ids;
}

//! One sequence of each length 0..40: random items, half of them drawn from a pool of 3 (many duplicates).
std::vector<std::vector<int64_t>> test_sequences(int64_t max_id, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> any(1, max_id), pool(1, 3);
  std::vector<std::vector<int64_t>> sequences;
  for (int length = 0; length <= 40; ++length) {
    std::vector<int64_t> sequence;
    for (int i = 0; i < length; ++i) sequence.push_back(length % 2 ? pool(rng) : any(rng));
    sequences.push_back(std::move(sequence));
  }
  sequences.push_back({7, 0, 0, 7, 2, 0, 9});  // zeros inside the sequence count as padding positions
  return sequences;
}

std::vector<float> torch_state(Sasrec& model, const std::vector<int64_t>& sequence) {
  torch::NoGradGuard no_grad;
  auto state = model->encode(right_aligned(sequence, model->shape().maxlen)).select(1, -1).squeeze(0).contiguous();
  return {state.data_ptr<float>(), state.data_ptr<float>() + state.numel()};
}

std::vector<float> torch_logits(Sasrec& model, const std::vector<int64_t>& candidates,
                                const std::vector<int64_t>& sequence) {
  torch::NoGradGuard no_grad;
  auto state = model->encode(right_aligned(sequence, model->shape().maxlen)).select(1, -1).squeeze(0);
  auto rows = model->item_table().index_select(0, torch::tensor(candidates, torch::kLong));
  auto logits = rows.matmul(state).contiguous();
  return {logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel()};
}

std::vector<int64_t> ids_of(const std::vector<std::pair<int64_t, float>>& ranked) {
  std::vector<int64_t> ids;
  for (const auto& entry : ranked) ids.push_back(entry.first);
  return ids;
}

//! Logits within 1e-4 of torch's and the same top 10 as the torch path (top_candidates) for every sequence.
void expect_same_as_torch(Sasrec& model, const std::vector<int64_t>& candidates,
                          const std::vector<std::vector<int64_t>>& sequences) {
  FastSasrec fast = make_fast_sasrec(model, candidates);
  auto columns = candidate_columns(model, candidates);
  for (const auto& sequence : sequences) {
    SCOPED_TRACE("sequence of length " + std::to_string(sequence.size()));
    auto state = fast.last_state(sequence), expected_state = torch_state(model, sequence);
    ASSERT_EQ(state.size(), expected_state.size());
    for (std::size_t j = 0; j < state.size(); ++j) EXPECT_NEAR(state[j], expected_state[j], 1e-4) << "dim " << j;
    auto logits = fast.logits(sequence), expected = torch_logits(model, candidates, sequence);
    ASSERT_EQ(logits.size(), candidates.size());
    float worst = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::abs(logits[i] - expected[i]));
    EXPECT_LE(worst, 1e-4f);
    torch::NoGradGuard no_grad;
    auto torch_top = top_candidates(model, columns, candidates, sequence, 10);
    auto fast_top = fast.top(sequence, 10);
    EXPECT_EQ(ids_of(fast_top), ids_of(torch_top));
    if (sequence.empty()) EXPECT_TRUE(fast_top.empty());
    else EXPECT_EQ(fast_top.size(), std::min<std::size_t>(10, candidates.size()));
  }
}

}  // namespace

TEST(RecFastSasrec, MatchesTorchOnTheFixture) {
  Sasrec model = fixture_model();
  expect_same_as_torch(model, ids_range(1, 40), test_sequences(40, 1));
}

TEST(RecFastSasrec, MatchesTorchOnARandomFullSizeModel) {
  Sasrec model = random_full_model();
  // A candidate set with gaps (every 5th id left out), so the gathered scoring table is checked too; the
  // sequences use ids from the whole table, candidates or not.
  expect_same_as_torch(model, ids_range(1, 35772, 5), test_sequences(35772, 2));
}

TEST(RecFastSasrec, TopKTiesAndLongLists) {
  // Ties go to the lower id, NaN ranks last, and both selection strategies (short and long k) agree.
  const std::vector<int64_t> ids = {3, 5, 8, 13, 21, 34};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> scores = {1.0f, 2.0f, nan, 2.0f, 1.0f, 0.5f};
  EXPECT_EQ(ids_of(select_top(scores.data(), ids, 3)), (std::vector<int64_t>{5, 13, 3}));
  EXPECT_EQ(ids_of(select_top(scores.data(), ids, 6)), (std::vector<int64_t>{5, 13, 3, 21, 34, 8}));
  std::vector<int64_t> many = ids_range(1, 200);
  std::vector<float> many_scores(many.size());
  for (std::size_t i = 0; i < many.size(); ++i) many_scores[i] = static_cast<float>((i * 37) % 11);
  auto long_list = select_top(many_scores.data(), many, 100), short_list = select_top(many_scores.data(), many, 60);
  auto long_ids = ids_of(long_list);
  long_ids.resize(60);
  EXPECT_EQ(long_ids, ids_of(short_list));
  EXPECT_TRUE(select_top(scores.data(), ids, 0).empty());
}

TEST(RecFastSasrec, RejectsMisshapenWeights) {
  Sasrec model = fixture_model();
  auto params = model->named_parameters();
  WeightSource truncated = [&](const std::string& name) {
    auto t = params[name].detach().contiguous();
    WeightArray array{t.sizes().vec(), std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel())};
    if (name == "forward_layers.1.conv2.bias") array.shape = {49};
    return array;
  };
  try {
    FastSasrec fast(truncated, model->item_rows(), model->shape(), ids_range(1, 40));
    FAIL() << "a misshapen tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("forward_layers.1.conv2.bias"), std::string::npos) << e.what();
  }
}
