// SASRec training: the original recipe (docs/decisions.md §2.3.2) on a pwab dataset, with validation, checkpoints and
// resume. What it trains on and why: docs/recommender.md.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_set>

#include "core/error.h"
#include "core/hash.h"
#include "core/rng.h"
#include "core/sys.h"
#include "core/torch_runtime.h"
#include "rec/item_map.h"
#include "rec/recommender.h"
#include "rec/sasrec.h"

namespace fs = std::filesystem;

namespace pwab::rec {

namespace {

constexpr int kFormatVersion = 1;
constexpr std::size_t kMaxValidationUsers = 10000;  // as the original's evaluation
constexpr int kProbeCount = 3, kProbeTop = 5;

// ---- the sequences ----------------------------------------------------------------------------------------

//! One user's training material: the items the model learns from and the held-out validation item.
struct UserSequence {
  std::vector<int64_t> train;        //!< history + train behaviours in time order, minus the validation item
  int64_t validation = 0;            //!< the last non-test item (0: the user has fewer than 3 items)
  std::unordered_set<int64_t> seen;  //!< every non-test item: never drawn as a negative
};

struct TrainingData {
  std::vector<UserSequence> users;  //!< only users with a training sequence (2+ items)
  std::string fingerprint;
  std::size_t n_positions = 0, n_validation = 0;
};

TrainingData build_training_data(const data::Dataset& ds, const ItemMap& items, bool hold_out_train) {
  TrainingData out;
  Hasher hasher;
  hasher.update(items.fingerprint());
  for (const auto& user : ds.users()) {
    UserSequence seq;
    for (const auto& b : user.behaviours) {
      if (b.split == data::Split::kTest) continue;  // test targets must never be seen
      if (hold_out_train && b.split == data::Split::kTrain) continue;
      if (int64_t id = items.find(ds.product(b.product).parent_asin)) seq.train.push_back(id);
    }
    hasher.update(user.id).update_u64(seq.train.size());
    for (int64_t id : seq.train) hasher.update_u64(static_cast<uint64_t>(id));
    if (seq.train.size() < 2) continue;  // nothing to learn (the original's sampler looped forever here)
    seq.seen.insert(seq.train.begin(), seq.train.end());
    if (seq.train.size() >= 3) {
      seq.validation = seq.train.back();
      seq.train.pop_back();
      ++out.n_validation;
    }
    out.n_positions += seq.train.size() - 1;
    out.users.push_back(std::move(seq));
  }
  out.fingerprint = hasher.hex();
  return out;
}

//! A uniformly drawn candidate the user never interacted with (gives up after many tries on a saturated user).
int64_t sample_negative(const ItemMap& items, const UserSequence& user, Rng& rng) {
  int64_t id = 0;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    id = items.ids()[rng.below(items.size())];
    if (!user.seen.count(id)) break;
  }
  return id;
}

struct Batch {
  torch::Tensor inputs, positives, negatives;  //!< [batch, maxlen] int64, right-aligned
};

//! The original sampler's layout: inputs = sequence[:-1], positives = sequence[1:], one negative per position.
Batch make_batch(const std::vector<const UserSequence*>& users, const ItemMap& items, int maxlen, Rng& rng) {
  const auto n = static_cast<int64_t>(users.size());
  std::vector<int64_t> inputs(n * maxlen, 0), positives(n * maxlen, 0), negatives(n * maxlen, 0);
  for (int64_t row = 0; row < n; ++row) {
    const auto& seq = users[row]->train;
    int64_t slot = maxlen - 1;
    for (std::size_t i = seq.size() - 1; i >= 1 && slot >= 0; --i, --slot) {
      std::size_t at = row * maxlen + slot;
      inputs[at] = seq[i - 1];
      positives[at] = seq[i];
      negatives[at] = sample_negative(items, *users[row], rng);
    }
  }
  auto to_tensor = [&](std::vector<int64_t>& v) { return torch::tensor(v, torch::kLong).view({n, maxlen}); };
  return {to_tensor(inputs), to_tensor(positives), to_tensor(negatives)};
}

// ---- validation -------------------------------------------------------------------------------------------

struct Validation {
  std::vector<const UserSequence*> users;
  //! [validation item, negatives...] per user, fixed for the run; empty when ranking over every candidate.
  std::vector<std::vector<int64_t>> candidates;
};

Validation make_validation(const TrainingData& data, const ItemMap& items, const TrainOptions& options) {
  Validation v;
  Rng rng(derive_seed(options.seed, 0xE7A1));
  for (const auto& user : data.users) {
    if (!user.validation || v.users.size() >= kMaxValidationUsers) continue;
    v.users.push_back(&user);
    if (options.eval_negatives == 0) continue;
    std::vector<int64_t> candidates = {user.validation};
    for (int i = 0; i < options.eval_negatives; ++i) candidates.push_back(sample_negative(items, user, rng));
    v.candidates.push_back(std::move(candidates));
  }
  return v;
}

//! 0 for a candidate row, a large negative number for the padding row and ids outside the item map, so that
//! adding it to a row of logits leaves only the candidates in play.
torch::Tensor candidate_bias(const ItemMap& items, int64_t item_rows) {
  std::vector<float> bias(static_cast<std::size_t>(item_rows), -1e9f);
  for (int64_t id : items.ids()) bias[static_cast<std::size_t>(id)] = 0;
  return torch::from_blob(bias.data(), {item_rows}, torch::kFloat32).clone();
}

//! HR@10 and NDCG@10 of the validation item, ranked among its sampled negatives or, with no sample, among
//! every candidate as serving ranks (a tie counts against it).
std::pair<double, double> evaluate(Sasrec& model, const Validation& v, const torch::Tensor& not_candidate) {
  if (v.users.empty()) return {0, 0};
  torch::NoGradGuard no_grad;
  model->eval();
  double hits = 0, ndcg = 0;
  const int maxlen = model->shape().maxlen;
  for (std::size_t start = 0; start < v.users.size(); start += 256) {
    std::size_t end = std::min(v.users.size(), start + 256);
    std::vector<torch::Tensor> seqs, candidates;
    std::vector<int64_t> targets;
    for (std::size_t i = start; i < end; ++i) {
      seqs.push_back(right_aligned(v.users[i]->train, maxlen));
      if (!v.candidates.empty()) candidates.push_back(torch::tensor(v.candidates[i], torch::kLong));
      targets.push_back(v.users[i]->validation);
    }
    auto state = model->encode(torch::cat(seqs)).select(1, -1);                   // [b, hidden]
    torch::Tensor rank;
    if (v.candidates.empty()) {
      auto scores = torch::matmul(state, model->item_table().t()) + not_candidate;  // [b, item rows]
      auto target = scores.gather(1, torch::tensor(targets, torch::kLong).unsqueeze(1));
      rank = (scores >= target).sum(1) - 1;                                         // others at least as good
    } else {
      auto rows = model->item_table().index({torch::stack(candidates)});            // [b, 1 + negatives, hidden]
      auto scores = (rows * state.unsqueeze(1)).sum(-1);                             // [b, 1 + negatives]
      rank = (scores.slice(1, 1) >= scores.slice(1, 0, 1)).sum(1);                   // negatives at least as good
    }
    auto* r = rank.data_ptr<int64_t>();
    for (int64_t i = 0; i < rank.size(0); ++i)
      if (r[i] < 10) {
        hits += 1;
        ndcg += 1.0 / std::log2(static_cast<double>(r[i]) + 2.0);
      }
  }
  model->train();
  return {hits / v.users.size(), ndcg / v.users.size()};
}

// ---- checkpoint -------------------------------------------------------------------------------------------

std::map<std::string, torch::Tensor> snapshot(Sasrec& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : model->named_parameters()) out[item.key()] = item.value().detach().clone();
  return out;
}

std::string serialize_optimizer(torch::optim::Adam& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void restore_optimizer(torch::optim::Adam& optimizer, const std::string& bytes) {
  if (bytes.empty()) return;
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
}

//! Probes: a few sequences with the served model's top items and scores, re-checked on load.
nlohmann::json make_probes(const std::map<std::string, torch::Tensor>& served, int64_t item_rows, const ModelShape& shape,
                           const TrainingData& data, const ItemMap& items) {
  Sasrec model(item_rows, shape, 0.0);
  assign_tensors(model, served, "probe model");
  model->eval();
  torch::NoGradGuard no_grad;
  auto table = candidate_columns(model, items.ids());
  nlohmann::json probes = nlohmann::json::array();
  for (std::size_t i = 0; i < data.users.size() && probes.size() < kProbeCount; i += std::max<std::size_t>(1, data.users.size() / kProbeCount)) {
    const auto& seq = data.users[i].train;
    std::vector<int64_t> input(seq.end() - std::min<std::ptrdiff_t>(seq.size(), shape.maxlen), seq.end());
    nlohmann::json ids = nlohmann::json::array(), scores = nlohmann::json::array();
    for (const auto& [id, score] : top_candidates(model, table, items.ids(), input, kProbeTop)) {
      ids.push_back(id);
      scores.push_back(score);
    }
    probes.push_back({{"input_ids", input}, {"top_ids", ids}, {"top_scores", scores}});
  }
  return probes;
}

struct TrainingState {
  int epoch = 0;  //!< epochs completed
  int best_epoch = 0;
  double best_hr10 = 0, best_ndcg10 = -1;
  std::map<std::string, torch::Tensor> best;  //!< weights of best_epoch (empty: none evaluated yet)
  nlohmann::json history = nlohmann::json::array();
};

nlohmann::json config_json(const TrainOptions& o, int64_t item_rows) {
  return {{"maxlen", o.shape.maxlen}, {"hidden", o.shape.hidden}, {"blocks", o.shape.blocks}, {"heads", o.shape.heads},
          {"item_rows", item_rows}, {"dropout", o.dropout}};
}

void write_checkpoint(const fs::path& out, Sasrec& model, torch::optim::Adam& optimizer, const TrainingState& state,
                      const TrainOptions& o, const TrainingData& data, const ItemMap& items) {
  auto latest = snapshot(model);
  const auto& served = state.best.empty() ? latest : state.best;
  nlohmann::json meta = {
      {"format", "pwab-sasrec"},
      {"version", kFormatVersion},
      {"config", config_json(o, model->item_rows())},
      {"item_map", {{"fingerprint", items.fingerprint()}, {"size", items.size()}}},
      {"dataset_fingerprint", data.fingerprint},
      {"epoch", state.epoch},
      {"best_epoch", state.best.empty() ? state.epoch : state.best_epoch},
      {"best_hr10", state.best_hr10},
      {"best_ndcg10", std::max(0.0, state.best_ndcg10)},
      {"training", {{"loss", loss_name(o.loss)}, {"batch_size", o.batch_size}, {"lr", o.lr}, {"betas", {o.beta1, o.beta2}}, {"seed", o.seed},
                    {"eval_every", o.eval_every}, {"eval_negatives", o.eval_negatives}, {"epochs", o.epochs},
                    {"held_out", o.hold_out_train ? nlohmann::json::array({"test", "train"}) : nlohmann::json::array({"test"})}}},
      {"history", state.history},
      {"probes", make_probes(served, model->item_rows(), o.shape, data, items)}};
  CheckpointContents contents;
  contents.meta_json = meta.dump();
  for (const auto& [name, tensor] : served) contents.arrays.push_back(to_named_array(name, tensor));
  for (const auto& [name, tensor] : latest) contents.arrays.push_back(to_named_array(std::string(kLatestPrefix) + name, tensor));
  contents.blob = serialize_optimizer(optimizer);
  write_file_atomic(out, encode_checkpoint(contents));
}

//! Restores model, optimizer and bookkeeping from `out`; checks it was made from the same data and shape.
TrainingState resume_from(const fs::path& out, Sasrec& model, torch::optim::Adam& optimizer, const TrainOptions& o,
                          const TrainingData& data) {
  const std::string what = out.string() + " (resume)";
  OwnCheckpoint checkpoint = read_own_checkpoint(out);
  const auto& meta = checkpoint.meta;
  TrainingState state;
  try {
    if (meta.at("dataset_fingerprint").get<std::string>() != data.fingerprint)
      throw Error(what + ": the checkpoint was trained on other data (dataset fingerprint differs); train afresh");
    if (meta.at("config") != config_json(o, model->item_rows()))
      throw Error(what + ": the checkpoint's model configuration " + meta.at("config").dump() +
                  " differs from the options " + config_json(o, model->item_rows()).dump());
    if (checkpoint.latest.empty()) throw Error(what + ": the checkpoint holds no training state");
    // Checkpoints from before the option trained with BCE.
    const auto& training = meta.at("training");
    const std::string loss = training.contains("loss") ? training.at("loss").get<std::string>() : "bce";
    if (loss != loss_name(o.loss))
      throw Error(what + ": the checkpoint was trained with loss " + loss + ", the options say " +
                  std::string(loss_name(o.loss)));
    state.epoch = meta.at("epoch").get<int>();
    state.best_epoch = meta.at("best_epoch").get<int>();
    state.best_hr10 = meta.at("best_hr10").get<double>();
    state.best_ndcg10 = meta.at("best_ndcg10").get<double>();
    state.history = meta.at("history");
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": corrupt checkpoint metadata: " + e.what());
  }
  assign_tensors(model, checkpoint.latest, what);
  if (!state.history.empty() && std::any_of(state.history.begin(), state.history.end(),
                                            [](const auto& h) { return h.contains("hr10"); }))
    state.best = checkpoint.served;
  else
    state.best_ndcg10 = -1;
  try {
    restore_optimizer(optimizer, checkpoint.optimizer_state);
  } catch (const c10::Error& e) {
    throw Error(what + ": cannot restore the optimizer state");
  }
  return state;
}

// ---- the loop ---------------------------------------------------------------------------------------------

void check_options(const TrainOptions& o) {
  auto bad = [](const std::string& what) { return UsageError("rec train: " + what); };
  if (o.epochs < 0) throw bad("epochs must be >= 0");
  if (o.batch_size <= 0) throw bad("batch size must be positive");
  if (!(o.lr > 0)) throw bad("learning rate must be positive");
  if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1)) throw bad("betas must be in [0, 1)");
  if (!(o.dropout >= 0 && o.dropout < 1)) throw bad("dropout must be in [0, 1)");
  if (o.shape.maxlen <= 0 || o.shape.hidden <= 0 || o.shape.blocks <= 0 || o.shape.heads <= 0 ||
      o.shape.hidden % o.shape.heads != 0)
    throw bad("invalid model shape (hidden must be a multiple of heads)");
  if (o.eval_every < 0 || o.eval_negatives < 0)
    throw bad("eval_every must be >= 0 and eval_negatives >= 0 (0: rank among every candidate)");
}

std::string clock_text(double seconds) {
  auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

void show_progress(const EpochReport& r, double eta_seconds) {
  std::fprintf(stderr, "\r[rec] epoch %d/%d  loss %.4f  %.0f users/s  ETA %s   ", r.epoch, r.epochs, r.loss,
               r.sequences_per_second, clock_text(eta_seconds).c_str());
  if (r.evaluated) std::fprintf(stderr, "\n[rec] epoch %d: HR@10 %.4f  NDCG@10 %.4f\n", r.epoch, r.hr10, r.ndcg10);
  std::fflush(stderr);
}

//! One pass over the training users in a shuffled order; returns the mean batch loss.
double run_epoch(Sasrec& model, torch::optim::Adam& optimizer, const TrainingData& data, const ItemMap& items,
                 const torch::Tensor& not_candidate, const TrainOptions& o, int epoch) {
  Rng rng(derive_seed(o.seed, static_cast<uint64_t>(epoch), 1));
  torch::manual_seed(derive_seed(o.seed, static_cast<uint64_t>(epoch), 2));  // dropout masks
  std::vector<const UserSequence*> order;
  for (const auto& u : data.users) order.push_back(&u);
  rng.shuffle(order);
  model->train();
  double total = 0;
  int batches = 0;
  for (std::size_t start = 0; start < order.size(); start += o.batch_size) {
    std::vector<const UserSequence*> users(order.begin() + start, order.begin() + std::min(order.size(), start + o.batch_size));
    Batch batch = make_batch(users, items, o.shape.maxlen, rng);
    auto states = model->encode(batch.inputs);
    auto mask = batch.positives != 0;
    torch::Tensor loss;
    if (o.loss == Loss::kSoftmax) {
      // Every position's state against the whole item table; rows that are no candidate (padding row 0, gaps
      // in an original item map) get a large negative bias, so the softmax is over the candidates alone.
      auto h = states.index({mask});                                             // [positions, hidden]
      auto logits = torch::matmul(h, model->item_table().t()) + not_candidate;   // [positions, item rows]
      loss = torch::nn::functional::cross_entropy(logits, batch.positives.index({mask}));
    } else {
      auto positive = (states * model->item_table().index({batch.positives})).sum(-1);
      auto negative = (states * model->item_table().index({batch.negatives})).sum(-1);
      auto pos = positive.masked_select(mask), neg = negative.masked_select(mask);
      loss = torch::binary_cross_entropy_with_logits(pos, torch::ones_like(pos)) +
             torch::binary_cross_entropy_with_logits(neg, torch::zeros_like(neg));
    }
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    total += loss.item<double>();
    ++batches;
  }
  return batches ? total / batches : 0;
}

}  // namespace

TrainReport train(const data::Dataset& ds, const TrainOptions& options, const fs::path& out) {
  check_options(options);
  torch_init_threads(options.num_threads);
  Stopwatch clock;
  ItemMap items = ItemMap::from_dataset(ds);
  if (items.size() == 0) throw Error("rec train: the dataset has no products");
  TrainingData data = build_training_data(ds, items, options.hold_out_train);
  if (data.users.empty())
    throw Error(options.hold_out_train ? "rec train: no user has two or more history behaviours to learn from"
                                       : "rec train: no user has two or more non-test behaviours to learn from");
  Validation validation = make_validation(data, items, options);

  torch::manual_seed(derive_seed(options.seed, 0x1217));  // the initial weights
  Sasrec model(items.max_id() + 1, options.shape, options.dropout);
  model->init_like_original();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(options.lr)
                                                        .betas({options.beta1, options.beta2})
                                                        .eps(1e-8));
  TrainingState state;
  if (options.resume && fs::exists(out)) state = resume_from(out, model, optimizer, options, data);

  TrainReport report;
  report.first_epoch = state.epoch + 1;
  report.n_train_users = data.users.size();
  report.n_train_positions = data.n_positions;
  report.n_validation_users = validation.users.size();
  const bool show = options.progress && isatty(STDERR_FILENO);
  // 0 for the candidates, a large negative for the padding row and ids without an item: the softmax and the
  // validation ranking are over candidates alone
  const torch::Tensor not_candidate = candidate_bias(items, model->item_rows());
  bool stopped = false;
  for (int epoch = state.epoch + 1; epoch <= options.epochs && !stopped; ++epoch) {
    Stopwatch epoch_clock;
    EpochReport r;
    r.epoch = epoch;
    r.epochs = options.epochs;
    r.loss = run_epoch(model, optimizer, data, items, not_candidate, options, epoch);
    const bool last = epoch == options.epochs;
    r.evaluated = !validation.users.empty() && ((options.eval_every > 0 && epoch % options.eval_every == 0) || last);
    nlohmann::json entry = {{"epoch", epoch}, {"loss", r.loss}};
    if (r.evaluated) {
      std::tie(r.hr10, r.ndcg10) = evaluate(model, validation, not_candidate);
      entry["hr10"] = r.hr10;
      entry["ndcg10"] = r.ndcg10;
      if (r.ndcg10 > state.best_ndcg10) {
        state.best_ndcg10 = r.ndcg10;
        state.best_hr10 = r.hr10;
        state.best_epoch = epoch;
        state.best = snapshot(model);
      }
    }
    state.epoch = epoch;
    state.history.push_back(entry);
    r.seconds = epoch_clock.seconds();
    r.sequences_per_second = data.users.size() / std::max(1e-9, r.seconds);
    if (report.epochs_run == 0) report.first_loss = r.loss;
    ++report.epochs_run;
    report.final_loss = r.loss;
    if (show) show_progress(r, r.seconds * (options.epochs - epoch));
    stopped = options.on_epoch && !options.on_epoch(r);
    if (r.evaluated || last || stopped) write_checkpoint(out, model, optimizer, state, options, data, items);
  }
  if (show && report.epochs_run) std::fprintf(stderr, "\n");
  if (!fs::exists(out)) write_checkpoint(out, model, optimizer, state, options, data, items);
  report.last_epoch = state.epoch;
  report.best_epoch = state.best.empty() ? 0 : state.best_epoch;
  report.best_hr10 = state.best_hr10;
  report.best_ndcg10 = std::max(0.0, state.best_ndcg10);
  report.seconds = clock.seconds();
  report.sequences_per_second = report.epochs_run * data.users.size() / std::max(1e-9, report.seconds);
  return report;
}

}  // namespace pwab::rec
