// Recommender: loading either checkpoint format, checking it against the item map, and inference.
#include "rec/recommender.h"

#include <cmath>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "core/torch_runtime.h"
#include "rec/item_map.h"
#include "rec/sasrec.h"

namespace fs = std::filesystem;

namespace pwab::rec {

struct Recommender::Impl {
  ItemMap items;
  Sasrec model{nullptr};           //!< the loaded network: the reference, and what the probes are checked on
  std::optional<FastSasrec> fast;  //!< a torch-free copy of its weights that inference runs on
  std::string description;

  std::vector<std::pair<int64_t, float>> top(const std::vector<int64_t>& sequence, int k) const {
    return fast->top(sequence, k);
  }
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

//! Builds the model from named tensors and checks that every item id of the map has a row.
Sasrec build_model(int64_t item_rows, const ModelShape& shape, const std::map<std::string, torch::Tensor>& tensors,
                   const ItemMap& items, const std::string& what) {
  if (items.max_id() >= item_rows)
    throw Error(what + ": item_emb.weight has " + std::to_string(item_rows) + " rows, but the item map uses id " +
                std::to_string(items.max_id()) + " (a checkpoint for another item map?)");
  Sasrec model(item_rows, shape, 0.0);
  assign_tensors(model, tensors, what);
  model->eval();
  return model;
}

void attach_fast_path(Recommender::Impl& impl) { impl.fast.emplace(make_fast_sasrec(impl.model, impl.items.ids())); }

void load_original(Recommender::Impl& impl, const fs::path& path) {
  auto tensors = read_state_dict_pth(path);
  auto [item_rows, shape] = infer_dimensions(tensors, path.string());
  impl.model = build_model(item_rows, shape, tensors, impl.items, path.string());
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
void verify_probes(Recommender::Impl& impl, const nlohmann::json& probes, const std::string& what) {
  torch::NoGradGuard no_grad;
  for (const auto& probe : probes) {
    auto sequence = probe.at("input_ids").get<std::vector<int64_t>>();
    auto top_ids = probe.at("top_ids").get<std::vector<int64_t>>();
    auto top_scores = probe.at("top_scores").get<std::vector<float>>();
    auto state = impl.model->encode(right_aligned(sequence, impl.model->shape().maxlen)).select(1, -1).squeeze(0);
    for (std::size_t i = 0; i < top_ids.size() && i < top_scores.size(); ++i) {
      if (top_ids[i] <= 0 || top_ids[i] >= impl.model->item_rows()) throw Error(what + ": a probe names an unknown item");
      float score = impl.model->item_table()[top_ids[i]].dot(state).item<float>();
      if (!(std::fabs(score - top_scores[i]) <= 1e-3f * std::max(1.0f, std::fabs(top_scores[i]))))
        throw Error(what + ": self-test failed: item " + std::to_string(top_ids[i]) + " scores " + std::to_string(score) +
                    ", the checkpoint recorded " + std::to_string(top_scores[i]) + " (corrupt file?)");
    }
  }
}

void load_own(Recommender::Impl& impl, const fs::path& path) {
  const std::string what = path.string();
  OwnCheckpoint checkpoint = read_own_checkpoint(path);
  const auto& meta = checkpoint.meta;
  try {
    std::string fingerprint = meta.at("item_map").at("fingerprint").get<std::string>();
    if (fingerprint != impl.items.fingerprint())
      throw Error(what + ": the checkpoint was trained with another item map (fingerprint " + fingerprint +
                  ", the dataset's is " + impl.items.fingerprint() + ")");
    ModelShape shape = shape_from(meta.at("config"));
    int64_t item_rows = meta.at("config").at("item_rows").get<int64_t>();
    impl.model = build_model(item_rows, shape, checkpoint.served, impl.items, what);
    verify_probes(impl, meta.value("probes", nlohmann::json::array()), what);
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
  torch_init_threads();
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
  attach_fast_path(*impl);
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
  return impl_->top(sequence, k);
}

int64_t Recommender::item_id(std::string_view asin) const { return impl_->items.find(asin); }
std::size_t Recommender::n_candidates() const { return impl_->items.size(); }
const ModelShape& Recommender::shape() const { return impl_->model->shape(); }
std::string Recommender::description() const { return impl_->description; }

}  // namespace pwab::rec
