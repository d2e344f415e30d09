// LoRA adapters (zero init, merge, enable/disable, PEFT files both ways, errors) and the training utilities
// (batches and loss masks, sequence log-probabilities, DPO loss, accumulation, loss scaling, checkpoint resume).
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>

#include <set>

#include "core/error.h"
#include "llama/lora.h"
#include "llama/train.h"
#include "llama_test_util.h"

namespace pwab::llama {
namespace {

namespace fs = std::filesystem;
namespace st = pwab::safetensors;
using namespace testing;

LoraConfig puma_config(int64_t r = 16) {
  LoraConfig c;
  c.r = r;
  c.alpha = 2.0 * double(r);
  c.modules_to_save = kPumaModulesToSave;
  c.seed = 5;
  return c;
}

//! Gives every B factor and trained copy random values, so the adapter changes the outputs.
void randomise(LoraAdapter& adapter, uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& [name, t] : adapter.named_parameters()) {
    if (name.find("lora_B") != std::string::npos) t.copy_(torch::randn(t.sizes()) * 0.2);
    if (name.find("lora_") == std::string::npos) t.add_(torch::randn(t.sizes()) * 0.05);
  }
}

TEST(Lora, ZeroInitLeavesOutputsUnchanged) {
  auto model = load_fixture();
  const auto base = logits_of(*model, sequence(3));
  auto adapter = LoraAdapter::attach(model, puma_config());
  EXPECT_EQ(max_diff(logits_of(*model, sequence(3)), base), 0.0);
  // A is random (kaiming-uniform bound 1/sqrt(in)), B zero
  auto named = adapter->named_parameters();
  ASSERT_EQ(named[0].first, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_GT(named[0].second.abs().max().item<double>(), 0.0);
  EXPECT_LE(named[0].second.abs().max().item<double>(), 1.0 / std::sqrt(32.0));
  EXPECT_EQ(named[1].second.abs().max().item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(adapter->config().scale(), 2.0);
}

TEST(Lora, OnlyAdapterTensorsRequireGradients) {
  auto model = load_fixture();
  auto adapter = LoraAdapter::attach(model, puma_config(4));
  EXPECT_EQ(adapter->target_paths().size(), 14u);  // 7 projections × 2 layers
  EXPECT_EQ(adapter->saved_paths().size(), 7u);    // embed_tokens, lm_head, 2 × 2 layer norms, norm
  std::set<const void*> adapter_tensors;
  for (auto& t : adapter->parameters()) adapter_tensors.insert(t.unsafeGetTensorImpl());
  EXPECT_EQ(adapter_tensors.size(), 14u * 2 + 7);
  int trainable = 0;
  for (const auto& p : model->named_parameters()) {
    const bool is_adapter = adapter_tensors.count(p.value().unsafeGetTensorImpl()) > 0;
    EXPECT_EQ(p.value().requires_grad(), is_adapter) << p.key();
    trainable += p.value().requires_grad();
  }
  EXPECT_EQ(trainable, 35);
  // PEFT's parameter count: r·(in + out) per projection plus the full copies
  int64_t expected_count = 0;
  for (auto& [name, t] : adapter->named_parameters()) expected_count += t.numel();
  EXPECT_EQ(adapter->n_parameters(), expected_count);
}

TEST(Lora, MergedEqualsUnmergedAndDisablingGivesTheBase) {
  auto model = load_fixture();
  const auto base = logits_of(*model, sequence(0));
  auto adapter = LoraAdapter::attach(model, puma_config(4));
  randomise(*adapter, 1);
  const auto adapted = logits_of(*model, sequence(0));
  EXPECT_GT(max_diff(adapted, base), 1e-2);
  adapter->set_enabled(false);
  EXPECT_EQ(max_diff(logits_of(*model, sequence(0)), base), 0.0);
  adapter->set_enabled(true);
  EXPECT_EQ(max_diff(logits_of(*model, sequence(0)), adapted), 0.0);
  adapter->merge();
  EXPECT_FALSE(adapter->attached());
  EXPECT_LT(max_diff(logits_of(*model, sequence(0)), adapted), 1e-5);
  for (const auto& p : model->named_parameters()) EXPECT_EQ(p.key().find("lora"), std::string::npos) << p.key();
  EXPECT_EQ(model->named_parameters().size(), model->checkpoint_weights().size());
  // a second adapter can be attached after merging
  auto second = LoraAdapter::attach(model, LoraConfig{});
  EXPECT_TRUE(second->attached());
}

TEST(Lora, DropoutActsOnlyInTrainingMode) {
  auto model = load_fixture();
  LoraConfig c;
  c.r = 4;
  c.dropout = 0.5;
  auto adapter = LoraAdapter::attach(model, c);
  randomise(*adapter, 4);
  model->eval();
  const auto a = logits_of(*model, sequence(0)), b = logits_of(*model, sequence(0));
  EXPECT_EQ(max_diff(a, b), 0.0);
  model->train();
  torch::manual_seed(1);
  EXPECT_GT(max_diff(logits_of(*model, sequence(0)), a), 1e-4);
  model->eval();
}

TEST(Lora, LoadsAPeftAdapter) {
  auto model = load_fixture();
  auto adapter = LoraAdapter::load(model, fixture_dir("adapter"));
  EXPECT_EQ(adapter->config().r, 4);
  EXPECT_DOUBLE_EQ(adapter->config().scale(), 2.0);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_LT(ref_diff(logits_of(*model, sequence(i)), expected_logits("logits_adapter", i)), 2e-5) << i;
  adapter->merge();
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_LT(ref_diff(logits_of(*model, sequence(i)), expected_logits("logits_adapter", i)), 2e-5) << i;
}

TEST(Lora, SaveLoadRoundTripsInPeftLayout) {
  auto model = load_fixture();
  auto config = puma_config(4);
  config.base_model_name_or_path = "tiny";
  auto adapter = LoraAdapter::attach(model, config);
  randomise(*adapter, 2);
  const auto adapted = logits_of(*model, sequence(3));
  test::TempDir dir;
  adapter->save(dir.path());
  auto file = st::File::open(dir / "adapter_model.safetensors");
  EXPECT_NE(file.find("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"), nullptr);
  EXPECT_NE(file.find("base_model.model.model.embed_tokens.weight"), nullptr);
  EXPECT_NE(file.find("base_model.model.lm_head.weight"), nullptr);
  EXPECT_NE(file.find("base_model.model.model.layers.0.input_layernorm.weight"), nullptr);
  EXPECT_EQ(file.tensors().size(), 35u);
  auto j = nlohmann::json::parse(test::read_text(dir / "adapter_config.json"));
  EXPECT_EQ(j["peft_type"], "LORA");
  EXPECT_EQ(j["r"], 4);
  EXPECT_EQ(j["lora_alpha"], 8.0);
  EXPECT_EQ(j["target_modules"].size(), 7u);
  EXPECT_EQ(j["modules_to_save"], nlohmann::json(kPumaModulesToSave));

  auto fresh = load_fixture();
  auto loaded = LoraAdapter::load(fresh, dir.path());
  EXPECT_EQ(max_diff(logits_of(*fresh, sequence(3)), adapted), 0.0);
  EXPECT_EQ(loaded->target_paths(), adapter->target_paths());

  // a regular-expression target (PEFT's string form) survives the round trip
  auto other = load_fixture();
  LoraConfig re;
  re.r = 2;
  re.target_modules = {"re:.*layers\\.1\\.self_attn\\.(q|v)_proj"};
  auto narrow = LoraAdapter::attach(other, re);
  EXPECT_EQ(narrow->target_paths(),
            (std::vector<std::string>{"model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"}));
  test::TempDir dir2;
  narrow->save(dir2.path());
  EXPECT_EQ(LoraConfig::from_file(dir2 / "adapter_config.json").target_modules, re.target_modules);
}

TEST(Lora, BadAdaptersAreClearErrors) {
  auto model = load_fixture();
  LoraConfig missing;
  missing.target_modules = {"q_proj", "w_proj"};
  try {
    LoraAdapter::attach(model, missing);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'w_proj'"), std::string::npos);
  }
  EXPECT_EQ(model->named_parameters().size(), model->checkpoint_weights().size());  // nothing left attached
  LoraConfig norm;
  norm.target_modules = {"input_layernorm"};
  EXPECT_THROW(LoraAdapter::attach(model, norm), UsageError);
  auto adapter = LoraAdapter::attach(model, LoraConfig{});
  EXPECT_THROW(LoraAdapter::attach(model, LoraConfig{}), UsageError);  // one adapter at a time
  adapter->detach();

  test::TempDir dir;
  test::copy_dir(fixture_dir("adapter"), dir.path());
  auto tensors = st::File::open(dir / "adapter_model.safetensors");
  std::vector<st::TensorData> kept;
  for (const auto& t : tensors.tensors())
    if (t.name != "base_model.model.model.layers.1.self_attn.o_proj.lora_A.weight")
      kept.push_back(
          {t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size())});
  auto expect_error = [&](const std::string& needle) {
    auto fresh = load_fixture();
    try {
      LoraAdapter::load(fresh, dir.path());
      ADD_FAILURE() << "no error; expected " << needle;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  st::write_file(dir / "adapter_model.safetensors", kept);
  expect_error("missing tensor 'base_model.model.model.layers.1.self_attn.o_proj.lora_A.weight'");
  kept.push_back(st::TensorData::from_floats("base_model.model.model.layers.1.self_attn.o_proj.lora_A.weight", {4, 32},
                                             std::vector<float>(128)));
  kept.push_back(st::TensorData::from_floats("base_model.model.model.layers.0.self_attn.q_proj.lora_embedding_A", {2},
                                             std::vector<float>(2)));
  st::write_file(dir / "adapter_model.safetensors", kept);
  expect_error("unexpected tensor 'base_model.model.model.layers.0.self_attn.q_proj.lora_embedding_A'");
  auto config = test::read_text(fixture_dir("adapter") / "adapter_config.json");
  auto with = [&](const char* key, const nlohmann::json& value) {
    auto j = nlohmann::json::parse(config);
    j[key] = value;
    test::write_text(dir / "adapter_config.json", j.dump());
  };
  with("use_dora", true);
  expect_error("DoRA");
  with("peft_type", "IA3");
  expect_error("only LoRA");
  fs::remove(dir / "adapter_model.safetensors");
  test::write_text(dir / "adapter_config.json", config);
  expect_error("do not exist");
}

// ---- training ----------------------------------------------------------------------------------------------------

TEST(Train, BatchesMaskPromptAndPadding) {
  std::vector<SequencePair> rows{{{1, 10, 11}, {20, 2}}, {{1, 12}, {21, 22, 23, 2}}, {{1, 13, 14, 15}, {2}}};
  auto right = make_batch(rows, 2);
  EXPECT_EQ(right.input_ids.sizes(), (std::vector<int64_t>{3, 6}));
  auto ids = [](const torch::Tensor& t, int r) {
    auto row = t[r].contiguous();
    return std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
  };
  EXPECT_EQ(ids(right.input_ids, 0), (std::vector<int64_t>{1, 10, 11, 20, 2, 2}));
  EXPECT_EQ(ids(right.attention_mask, 0), (std::vector<int64_t>{1, 1, 1, 1, 1, 0}));
  // the EOS that ends the target is a label; the pad (same id) is not (docs/decisions.md D6)
  EXPECT_EQ(ids(right.loss_mask, 0), (std::vector<int64_t>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(ids(right.loss_mask, 1), (std::vector<int64_t>{0, 0, 1, 1, 1, 1}));
  auto left = make_batch(rows, 0, 0, Padding::kLeft);
  EXPECT_EQ(ids(left.input_ids, 2), (std::vector<int64_t>{0, 1, 13, 14, 15, 2}));
  EXPECT_EQ(ids(left.loss_mask, 2), (std::vector<int64_t>{0, 0, 0, 0, 0, 1}));
  auto cut = make_batch(rows, 2, 4);
  EXPECT_EQ(ids(cut.input_ids, 1), (std::vector<int64_t>{1, 12, 21, 22}));
  EXPECT_EQ(ids(cut.loss_mask, 1), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_THROW(make_batch({}, 0), UsageError);
}

// Training's forward packs a batch's rows end to end without padding (LlamaModelImpl::packed_hidden_states): the
// hidden states, losses and gradients are those of the padded batch, row for row.
TEST(Train, PackedRowsGiveThePaddedBatchesNumbersAndGradients) {
  auto model = load_fixture();
  std::vector<SequencePair> rows{{{1, 17, 42, 9, 9, 30}, {5, 63, 2}}, {{1, 3}, {3, 2}}, {{1, 8, 9, 10}, {11, 12, 2}}};
  auto batch = make_batch(rows, 0);
  std::vector<int64_t> lengths;
  std::vector<int64_t> flat;
  for (const auto& r : rows) {
    lengths.push_back(static_cast<int64_t>(r.prompt.size() + r.target.size()));
    flat.insert(flat.end(), r.prompt.begin(), r.prompt.end());
    flat.insert(flat.end(), r.target.begin(), r.target.end());
  }
  {
    torch::NoGradGuard no_grad;
    auto packed = model->packed_hidden_states(torch::tensor(flat).view({1, -1}), lengths)[0];
    auto padded = model->hidden_states(batch.input_ids, batch.attention_mask);
    int64_t offset = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      EXPECT_LT(testing::max_diff(packed.narrow(0, offset, lengths[r]), padded[int64_t(r)].narrow(0, 0, lengths[r])), 1e-5)
          << r;
      offset += lengths[r];
    }
    EXPECT_THROW(model->packed_hidden_states(torch::tensor(flat).view({1, -1}), {lengths[0], lengths[1]}), UsageError);
    EXPECT_THROW(model->packed_hidden_states(torch::tensor(flat).view({1, -1}), {int64_t(flat.size()), 0}), UsageError);
  }
  // the loss of the batch (packed) against each row alone (one row: nothing to pack), gradients included
  set_base_trainable(*model, true);
  auto packed_lp = sequence_logprobs(*model, batch);
  packed_lp.sum().backward();
  std::vector<torch::Tensor> packed_grads;
  for (auto& w : model->parameters()) packed_grads.push_back(w.grad().clone()), w.mutable_grad().zero_();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    auto alone = sequence_logprobs(*model, make_batch({rows[r]}, 0));
    EXPECT_NEAR(alone.item<double>(), packed_lp[int64_t(r)].item<double>(), 1e-4) << r;
    alone.sum().backward();
  }
  std::size_t i = 0;
  for (auto& w : model->parameters()) {
    const double scale = std::max(1e-6, w.grad().abs().max().item<double>());
    EXPECT_LT(testing::max_diff(w.grad(), packed_grads[i++]) / scale, 1e-5) << scale;
  }
  set_base_trainable(*model, false);
}

// Training reads only the positions that predict a label, which end each row, so its packed forward runs the last
// layer for each row's last tokens alone (packed_hidden_states with tails): those tokens' hidden states, the loss
// and every gradient are the full forward's.
TEST(Train, LastTokensOfEachRowGiveTheFullForwardsNumbersAndGradients) {
  auto model = load_fixture();
  std::vector<SequencePair> rows{{{1, 17, 42, 9, 9, 30}, {5, 63, 2}}, {{1, 3}, {3, 2}}, {{1, 8, 9, 10}, {11, 12, 2}}};
  std::vector<int64_t> lengths, flat;
  for (const auto& r : rows) {
    lengths.push_back(static_cast<int64_t>(r.prompt.size() + r.target.size()));
    flat.insert(flat.end(), r.prompt.begin(), r.prompt.end());
    flat.insert(flat.end(), r.target.begin(), r.target.end());
  }
  auto ids = torch::tensor(flat).view({1, -1});
  // every row keeps a different share: one token, some, all of them
  const std::vector<int64_t> tails{1, 3, lengths[2]};
  {
    torch::NoGradGuard no_grad;
    auto full = model->packed_hidden_states(ids, lengths)[0];
    auto last = model->packed_hidden_states(ids, lengths, tails)[0];
    ASSERT_EQ(last.size(0), tails[0] + tails[1] + tails[2]);
    int64_t offset = 0, kept = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      offset += lengths[r];
      EXPECT_LT(testing::max_diff(last.narrow(0, kept, tails[r]), full.narrow(0, offset - tails[r], tails[r])), 1e-5)
          << r;
      kept += tails[r];
    }
    EXPECT_THROW(model->packed_hidden_states(ids, lengths, {1, 1}), UsageError);
    EXPECT_THROW(model->packed_hidden_states(ids, lengths, {1, 0, 1}), UsageError);
    EXPECT_THROW(model->packed_hidden_states(ids, lengths, {1, lengths[1] + 1, 1}), UsageError);
  }
  // The SFT loss over the labelled positions (the last layer for the tokens from each prompt's last on) against
  // the same loss read from the full packed forward, gradients included.
  set_base_trainable(*model, true);
  auto batch = make_batch(rows, 0);
  auto loss = causal_lm_loss(*model, batch);
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (auto& w : model->parameters()) grads.push_back(w.grad().clone()), w.mutable_grad().zero_();
  auto full = model->packed_hidden_states(ids, lengths)[0];
  std::vector<int64_t> at, labels;
  int64_t offset = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto prompt = static_cast<int64_t>(rows[r].prompt.size());
    for (int64_t t = prompt - 1; t + 1 < lengths[r]; ++t) {
      at.push_back(offset + t);
      labels.push_back(flat[static_cast<std::size_t>(offset + t + 1)]);
    }
    offset += lengths[r];
  }
  auto logp = torch::log_softmax(model->logits(full.index_select(0, torch::tensor(at))), -1);
  auto reference = -logp.gather(1, torch::tensor(labels).unsqueeze(-1)).mean();
  EXPECT_NEAR(loss.item<double>(), reference.item<double>(), 1e-5);
  reference.backward();
  std::size_t i = 0;
  for (auto& w : model->parameters()) {
    const double scale = std::max(1e-6, w.grad().abs().max().item<double>());
    EXPECT_LT(testing::max_diff(w.grad(), grads[i++]) / scale, 1e-5) << scale;
  }
  set_base_trainable(*model, false);
}

TEST(Train, SequenceLogprobsSumTargetTokensOnly) {
  auto model = load_fixture();
  std::vector<SequencePair> rows{{{1, 17, 42}, {5, 63, 2}}, {{1, 3}, {3, 3, 50, 9, 2}}, {{7, 8, 9, 10}, {11}}};
  for (Padding padding : {Padding::kRight, Padding::kLeft}) {
    auto batch = make_batch(rows, 0, 0, padding);
    torch::Tensor lp;
    {
      torch::NoGradGuard no_grad;
      lp = sequence_logprobs(*model, batch);
    }
    ASSERT_EQ(lp.sizes(), (std::vector<int64_t>{3}));
    double total = 0;
    int64_t count = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      auto all = rows[r].prompt;
      all.insert(all.end(), rows[r].target.begin(), rows[r].target.end());
      auto logp = torch::log_softmax(logits_of(*model, all).to(torch::kFloat64), -1);
      double s = 0;
      for (std::size_t i = rows[r].prompt.size(); i < all.size(); ++i) s += logp[int64_t(i) - 1][all[i]].item<double>();
      EXPECT_NEAR(lp[int64_t(r)].item<double>(), s, 1e-4) << r;
      total += s;
      count += int64_t(rows[r].target.size());
    }
    EXPECT_NEAR(causal_lm_loss(*model, batch).item<double>(), -total / double(count), 1e-5);
  }
}

TEST(Train, DpoLossAndSchedule) {
  auto pc = torch::tensor({-3.0, -5.0}), pr = torch::tensor({-4.0, -4.0});
  auto rc = torch::tensor({-3.5, -5.0}), rr = torch::tensor({-3.5, -4.5});
  // margins: (0.5 - (-0.5)) = 1.0 and (0 - 0.5) = -0.5
  const double beta = 0.1;
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const double expected_loss = -(std::log(sig(beta * 1.0)) + std::log(sig(beta * -0.5))) / 2;
  EXPECT_NEAR(dpo_loss(pc, pr, rc, rr, beta).item<double>(), expected_loss, 1e-6);
  EXPECT_DOUBLE_EQ(linear_schedule(0, 10, 100), 0.0);
  EXPECT_DOUBLE_EQ(linear_schedule(5, 10, 100), 0.5);
  EXPECT_DOUBLE_EQ(linear_schedule(10, 10, 100), 1.0);
  EXPECT_DOUBLE_EQ(linear_schedule(55, 10, 100), 0.5);
  EXPECT_DOUBLE_EQ(linear_schedule(100, 10, 100), 0.0);
}

TEST(Train, DisabledAdapterIsTheDpoReference) {
  auto model = load_fixture();
  auto batch = make_batch({{{1, 17, 42}, {5, 63, 2}}, {{1, 3}, {3, 50, 2}}}, 0);
  torch::NoGradGuard no_grad;
  auto base = sequence_logprobs(*model, batch);
  auto adapter = LoraAdapter::attach(model, puma_config(4));
  randomise(*adapter, 3);
  auto policy = sequence_logprobs(*model, batch);
  adapter->set_enabled(false);
  auto reference = sequence_logprobs(*model, batch);
  adapter->set_enabled(true);
  EXPECT_EQ(max_diff(reference, base), 0.0);
  EXPECT_GT(max_diff(policy, base), 1e-3);
}

std::vector<SequencePair> tiny_task() {
  // prompt → target pairs the random model does not know
  return {{{1, 10, 11}, {40, 41, 2}}, {{1, 12, 13, 14}, {42, 43, 44, 2}}, {{1, 15}, {45, 2}},
          {{1, 16, 17}, {46, 47, 2}}};
}

TEST(Train, LoraTrainingReducesTheLossAndLeavesTheBaseAlone) {
  auto model = load_fixture();
  const auto base_weights = model->checkpoint_weights();
  std::vector<torch::Tensor> before;
  for (auto& [n, t] : base_weights) before.push_back(t.detach().clone());
  LoraConfig config;
  config.r = 4;
  config.alpha = 8;
  auto adapter = LoraAdapter::attach(model, config);
  torch::optim::AdamW optimizer(adapter->parameters(), hf_adamw_options(1e-2));
  AccumulationOptions accumulation;
  accumulation.accumulation_steps = 2;
  accumulation.max_grad_norm = 1.0;
  GradientAccumulator acc(optimizer, adapter->parameters(), accumulation);
  auto data = tiny_task();
  auto first = make_batch({data[0], data[1]}, 0), second = make_batch({data[2], data[3]}, 0);
  auto full = make_batch(data, 0);
  double initial;
  {
    torch::NoGradGuard no_grad;
    initial = causal_lm_loss(*model, full).item<double>();
  }
  model->train();
  int steps = 0;
  for (int epoch = 0; epoch < 15; ++epoch) {
    steps += acc.backward(causal_lm_loss(*model, first));
    steps += acc.backward(causal_lm_loss(*model, second));
  }
  EXPECT_EQ(steps, 15);
  EXPECT_EQ(acc.optimizer_steps(), 15);
  EXPECT_EQ(acc.micro_steps(), 30);
  EXPECT_GT(acc.last_grad_norm(), 0.0);
  double final_loss;
  {
    torch::NoGradGuard no_grad;
    final_loss = causal_lm_loss(*model, full).item<double>();
  }
  EXPECT_LT(final_loss, 0.5 * initial) << initial << " → " << final_loss;
  for (std::size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(max_diff(base_weights[i].second, before[i]), 0.0) << base_weights[i].first;
}

TEST(Train, CheckpointResumesExactly) {
  auto data = tiny_task();
  auto batch = make_batch(data, 0);
  LoraConfig config;
  config.r = 4;
  config.modules_to_save = {"norm"};
  auto run = [&](LlamaModel& model, LoraAdapter& adapter, torch::optim::AdamW& opt, int steps) {
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      causal_lm_loss(*model, batch).backward();
      opt.step();
    }
  };
  test::TempDir dir;
  auto model = load_fixture();
  auto adapter = LoraAdapter::attach(model, config);
  torch::optim::AdamW opt(adapter->parameters(), hf_adamw_options(5e-3));
  run(model, *adapter, opt, 3);
  TrainState state;
  state.epoch = 1;
  state.micro_step = 3;
  state.optimizer_step = 3;
  state.extra_json = R"({"seed": 9})";
  save_checkpoint(dir / "ckpt" / "state.pt", adapter->named_parameters(), opt, state);
  run(model, *adapter, opt, 2);

  auto resumed_model = load_fixture();
  auto resumed = LoraAdapter::attach(resumed_model, config);
  torch::optim::AdamW opt2(resumed->parameters(), hf_adamw_options(5e-3));
  auto restored = load_checkpoint(dir / "ckpt" / "state.pt", resumed->named_parameters(), opt2);
  EXPECT_EQ(restored.epoch, 1);
  EXPECT_EQ(restored.optimizer_step, 3);
  EXPECT_EQ(restored.extra_json, state.extra_json);
  run(resumed_model, *resumed, opt2, 2);
  auto a = adapter->named_parameters(), b = resumed->named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_LT(max_diff(a[i].second, b[i].second), 1e-6) << a[i].first;

  // a checkpoint of another adapter shape is refused, naming the file
  auto other_model = load_fixture();
  LoraConfig other = config;
  other.modules_to_save = {};
  auto other_adapter = LoraAdapter::attach(other_model, other);
  torch::optim::AdamW opt3(other_adapter->parameters(), hf_adamw_options(5e-3));
  EXPECT_THROW(load_checkpoint(dir / "ckpt" / "state.pt", other_adapter->named_parameters(), opt3), DataError);
  test::write_text(dir / "junk.pt", "not a checkpoint");
  EXPECT_THROW(load_checkpoint(dir / "junk.pt", other_adapter->named_parameters(), opt3), DataError);
}

TEST(Train, LossScalerSkipsOverflowsAndAutocastIsANoOpOnCpu) {
  auto p = torch::zeros({3}, torch::requires_grad());
  (p * torch::tensor({1.0f, 2.0f, 3.0f})).sum().backward();
  LossScaler scaler(true, 8.0, 2);
  EXPECT_TRUE(scaler.unscale({p}));
  EXPECT_FLOAT_EQ(p.grad()[1].item<float>(), 0.25f);  // divided by the scale
  EXPECT_DOUBLE_EQ(scaler.value(), 8.0);
  EXPECT_TRUE(scaler.unscale({p}));
  EXPECT_DOUBLE_EQ(scaler.value(), 16.0);  // grew after growth_interval clean steps
  p.grad()[0] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.unscale({p}));
  EXPECT_DOUBLE_EQ(scaler.value(), 8.0);
  EXPECT_DOUBLE_EQ(LossScaler(false).value(), 1.0);
  {
    AutocastGuard guard(torch::kCPU, torch::kBFloat16);
    EXPECT_FALSE(at::autocast::is_enabled());
  }
}

}  // namespace
}  // namespace pwab::llama
