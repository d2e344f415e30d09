// Recommender: loading either checkpoint format, checking it against the item map, and inference. No torch:
// both formats are read into plain arrays (weights.h, checkpoint_file.h) and served by FastSasrec.
#include "rec/recommender.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "core/sys.h"
#include "rec/checkpoint_file.h"
#include "rec/fast_sasrec.h"
#include "rec/item_map.h"
#include "rec/weights.h"

namespace fs = std::filesystem;

namespace pwab::rec {

struct Recommender::Impl {
  ItemMap items;
  std::optional<FastSasrec> model;  //!< the loaded network, on plain arrays: what inference and the probes run on
  std::string description;
};

namespace {

enum class FileKind { kPwab, kTorchZip, kLegacyPickle, kOther };

FileKind sniff(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open the checkpoint");
  char head[32] = {};
  in.read(head, sizeof head);
  std::string_view bytes(head, static_cast<std::size_t>(in.gcount()));
  if (is_pwab_checkpoint(bytes)) return FileKind::kPwab;
  if (bytes.starts_with("PK\x03\x04")) return FileKind::kTorchZip;
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) == 0x80) return FileKind::kLegacyPickle;
  return FileKind::kOther;
}

//! Checks the weights (every tensor there, with its shape; a row for every item id of the map) and builds the
//! model from them; the arrays are moved out of `weights`.
FastSasrec build_model(int64_t item_rows, const ModelShape& shape, WeightMap& weights, const ItemMap& items,
                       const std::string& what) {
  if (items.max_id() >= item_rows)
    throw Error(what + ": item_emb.weight has " + std::to_string(item_rows) + " rows, but the item map uses id " +
                std::to_string(items.max_id()) + " (a checkpoint for another item map?)");
  check_tensors(weights, item_rows, shape, what);
  return FastSasrec([&](const std::string& name) { return std::move(weights.at(name)); }, item_rows, shape, items.ids());
}

void load_original(Recommender::Impl& impl, const fs::path& path) {
  WeightMap weights = read_torch_save_weights(path);
  auto [item_rows, shape] = infer_dimensions(weights, path.string());
  impl.model.emplace(build_model(item_rows, shape, weights, impl.items, path.string()));
  impl.description = "original PersonalWAB .pth";
}

ModelShape shape_from(const nlohmann::json& config) {
  ModelShape shape;
  shape.maxlen = config.at("maxlen").get<int>();
  shape.hidden = config.at("hidden").get<int>();
  shape.blocks = config.at("blocks").get<int>();
  shape.heads = config.at("heads").get<int>();
  return shape;
}

//! Re-runs the probes stored at training time: the model must give the stored scores to the stored items.
void verify_probes(const FastSasrec& model, const nlohmann::json& probes, const std::string& what) {
  auto known = [&](int64_t id) { return id >= 0 && id < model.item_rows(); };
  for (const auto& probe : probes) {
    auto sequence = probe.at("input_ids").get<std::vector<int64_t>>();
    auto top_ids = probe.at("top_ids").get<std::vector<int64_t>>();
    auto top_scores = probe.at("top_scores").get<std::vector<float>>();
    if (!std::all_of(sequence.begin(), sequence.end(), known)) throw Error(what + ": a probe names an unknown item");
    const std::vector<float> state = model.last_state(sequence);
    for (std::size_t i = 0; i < top_ids.size() && i < top_scores.size(); ++i) {
      if (top_ids[i] <= 0 || !known(top_ids[i])) throw Error(what + ": a probe names an unknown item");
      auto row = model.item_embedding(top_ids[i]);
      float score = 0;
      for (std::size_t j = 0; j < row.size(); ++j) score += row[j] * state[j];
      if (!(std::fabs(score - top_scores[i]) <= 1e-3f * std::max(1.0f, std::fabs(top_scores[i]))))
        throw Error(what + ": self-test failed: item " + std::to_string(top_ids[i]) + " scores " + std::to_string(score) +
                    ", the checkpoint recorded " + std::to_string(top_scores[i]) + " (corrupt file?)");
    }
  }
}

//! The weights inference uses: every array but the latest epoch's (kept under kLatestPrefix for resume).
WeightMap served_weights(CheckpointContents& contents) {
  WeightMap weights;
  for (auto& array : contents.arrays)
    if (!std::string_view(array.name).starts_with(kLatestPrefix))
      weights[array.name] = WeightArray{std::move(array.shape), std::move(array.values)};
  return weights;
}

void load_own(Recommender::Impl& impl, const fs::path& path) {
  const std::string what = path.string();
  CheckpointContents contents = decode_checkpoint(read_file(path), what);
  const nlohmann::json meta = nlohmann::json::parse(contents.meta_json, nullptr, false);
  if (!meta.is_object()) throw Error(what + ": corrupt checkpoint metadata");
  WeightMap weights = served_weights(contents);
  try {
    std::string fingerprint = meta.at("item_map").at("fingerprint").get<std::string>();
    if (fingerprint != impl.items.fingerprint())
      throw Error(what + ": the checkpoint was trained with another item map (fingerprint " + fingerprint +
                  ", the dataset's is " + impl.items.fingerprint() + ")");
    ModelShape shape = shape_from(meta.at("config"));
    int64_t item_rows = meta.at("config").at("item_rows").get<int64_t>();
    impl.model.emplace(build_model(item_rows, shape, weights, impl.items, what));
    verify_probes(*impl.model, meta.value("probes", nlohmann::json::array()), what);
    impl.description = "pwab checkpoint (epoch " + std::to_string(meta.value("best_epoch", 0)) + " of " +
                       std::to_string(meta.value("epoch", 0)) + ")";
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": corrupt checkpoint metadata: " + e.what());
  }
}

}  // namespace

Recommender::Recommender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recommender::~Recommender() = default;

std::unique_ptr<Recommender> Recommender::load(const fs::path& checkpoint, const data::Dataset& ds) {
  auto impl = std::make_unique<Impl>();
  impl->items = ItemMap::from_dataset(ds);
  if (impl->items.size() == 0) throw Error("recommender: the dataset has no products, so there is nothing to recommend");
  switch (sniff(checkpoint)) {
    case FileKind::kPwab: load_own(*impl, checkpoint); break;
    case FileKind::kTorchZip: load_original(*impl, checkpoint); break;
    case FileKind::kLegacyPickle:
      throw Error(checkpoint.string() + ": a legacy (pre-1.6, non-zip) torch.save file; re-save it with a newer torch "
                                        "(torch.save(torch.load(f), f))");
    case FileKind::kOther:
      throw Error(checkpoint.string() + ": not a SASRec checkpoint (neither a torch.save zip nor a pwab checkpoint)");
  }
  return std::unique_ptr<Recommender>(new Recommender(std::move(impl)));
}

std::vector<Recommendation> Recommender::recommend(const std::vector<std::string>& asins, int k) const {
  std::vector<int64_t> ids;
  ids.reserve(asins.size());
  for (const auto& asin : asins)
    if (int64_t id = impl_->items.find(asin)) ids.push_back(id);
  std::vector<Recommendation> out;
  for (const auto& [id, score] : recommend_ids(ids, k)) {
    auto at = std::lower_bound(impl_->items.ids().begin(), impl_->items.ids().end(), id);
    out.push_back({impl_->items.asin_at(static_cast<std::size_t>(at - impl_->items.ids().begin())), score});
  }
  return out;
}

std::vector<std::pair<int64_t, float>> Recommender::recommend_ids(const std::vector<int64_t>& item_ids, int k) const {
  std::vector<int64_t> sequence;
  sequence.reserve(item_ids.size());
  for (int64_t id : item_ids)
    if (id > 0 && id < impl_->model->item_rows()) sequence.push_back(id);
  return impl_->model->top(sequence, k);
}

int64_t Recommender::item_id(std::string_view asin) const { return impl_->items.find(asin); }
std::size_t Recommender::n_candidates() const { return impl_->items.size(); }
const ModelShape& Recommender::shape() const { return impl_->model->shape(); }
std::string Recommender::description() const { return impl_->description; }

std::string_view loss_name(Loss loss) { return loss == Loss::kSoftmax ? "softmax" : "bce"; }

Loss parse_loss(std::string_view name) {
  if (name == "bce") return Loss::kBinary;
  if (name == "softmax") return Loss::kSoftmax;
  throw UsageError("rec train: loss is bce or softmax, not '" + std::string(name) + "'");
}

TrainOptions original_recipe() {
  TrainOptions o;
  o.epochs = 200;
  o.batch_size = 128;
  o.lr = 1e-3;
  o.dropout = 0.5;
  o.loss = Loss::kBinary;
  o.eval_every = 10;
  o.eval_negatives = 100;
  return o;
}

}  // namespace pwab::rec
