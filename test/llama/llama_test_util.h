// test/llama/llama_test_util.h: the tiny LLaMA fixture (test/fixtures/llama/make_fixture.py) and comparisons.
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "llama/model.h"
#include "support/test_support.h"

namespace pwab::llama::testing {

inline std::filesystem::path fixture_dir(const std::string& name) { return test::fixture("llama/" + name); }

inline const nlohmann::json& expected() {
  static const nlohmann::json j = nlohmann::json::parse(test::read_text(fixture_dir("expected.json")));
  return j;
}

inline LoadOptions quiet(torch::Dtype dtype = torch::kFloat32) {
  LoadOptions o;
  o.dtype = dtype;
  o.n_threads = -1;  // leave libtorch's thread count to the test runner
  return o;
}

inline LlamaModel load_fixture(const std::string& name = "f32", torch::Dtype dtype = torch::kFloat32) {
  return load_model(fixture_dir(name), quiet(dtype));
}

inline std::vector<int32_t> sequence(std::size_t i) { return expected()["sequences"][i].get<std::vector<int32_t>>(); }

inline torch::Tensor ids_tensor(const std::vector<int32_t>& ids) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
}

//! Logits [n, vocab] of one unpadded sequence.
inline torch::Tensor logits_of(LlamaModelImpl& model, const std::vector<int32_t>& ids) {
  torch::NoGradGuard no_grad;
  return model.forward(ids_tensor(ids))[0];
}

//! An expected.json logits block [sequence][position][vocab] as a tensor for sequence i.
inline torch::Tensor expected_logits(const std::string& key, std::size_t i) {
  std::vector<float> flat;
  int64_t rows = 0;
  for (const auto& row : expected()[key][i]) {
    for (const auto& v : row) flat.push_back(v.get<float>());
    ++rows;
  }
  return torch::tensor(flat).view({rows, -1});
}

inline double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

//! Largest difference to reference logits, relative where they exceed 1 (float32 rounding grows with magnitude).
inline double ref_diff(const torch::Tensor& a, const torch::Tensor& reference) {
  auto r = reference.to(torch::kFloat64);
  return ((a.to(torch::kFloat64) - r).abs() / r.abs().clamp_min(1.0)).max().item<double>();
}

//! The fixture's tensors as TensorData, to rewrite (dropped, renamed, reshaped, re-typed).
inline std::vector<safetensors::TensorData> fixture_tensors(const std::string& name = "f32") {
  auto f = safetensors::File::open(fixture_dir(name) / "model.safetensors");
  std::vector<safetensors::TensorData> out;
  for (const auto& t : f.tensors())
    out.push_back(
        {t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size())});
  return out;
}

}  // namespace pwab::llama::testing
