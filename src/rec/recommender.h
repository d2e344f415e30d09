// src/rec/recommender.h: the SASRec recommender behind get_recommendations_by_history (docs/decisions.md §2.3.2).
//
// Loads the original PersonalWAB checkpoint (a PyTorch state_dict `.pth`) or pwab's own, turns a time-ordered
// ASIN sequence into the top-k items of the candidate set, and trains the model on a dataset's behaviours.
// Loading and recommending are plain C++ (library pwab_rec_core, no libtorch); train() needs libtorch and lives
// in pwab_rec, which links pwab_rec_core. No torch type appears here. docs/recommender.md describes the model,
// the formats and the recipe.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace pwab::rec {

//! SASRec's shape. The original fixes maxlen 30, hidden 50, 2 blocks, 2 heads (docs/decisions.md §1.8).
struct ModelShape {
  int maxlen = 30;
  int hidden = 50;
  int blocks = 2;
  int heads = 2;
};

struct Recommendation {
  std::string asin;
  float score = 0;  //!< the logit item_emb[item] · h
};

class Recommender {
 public:
  ~Recommender();
  Recommender(const Recommender&) = delete;
  Recommender& operator=(const Recommender&) = delete;

  //! Loads a checkpoint: an original PersonalWAB `.pth` (a state_dict saved by torch.save, zip format) or
  //! pwab's own (written by train()). The item map is the dataset's item_ids.json (Dataset::item_ids()), or, if
  //! the dataset has none, ids 1..N in catalogue order; its ids are the candidates. Throws pwab::Error naming
  //! the file and the problem (not a checkpoint, a missing or misshapen tensor, another item map, a failed
  //! self-test).
  static std::unique_ptr<Recommender> load(const std::filesystem::path& checkpoint, const data::Dataset& ds);

  //! `asins` in time order, most recent last. Unknown ASINs are dropped, order and duplicates kept, the last
  //! `maxlen` used (right-aligned, 0-padded); nothing left → empty result. Scores every candidate and returns
  //! the top k (ties: lower item id first); input items are not excluded. Safe to call from many threads.
  std::vector<Recommendation> recommend(const std::vector<std::string>& asins, int k = 10) const;

  //! The same on item ids (0 and ids outside the item table are dropped); returns (item id, score).
  std::vector<std::pair<int64_t, float>> recommend_ids(const std::vector<int64_t>& item_ids, int k = 10) const;

  //! Item id of an ASIN in the item map, or 0 if unknown.
  int64_t item_id(std::string_view asin) const;
  std::size_t n_candidates() const;
  const ModelShape& shape() const;
  //! "original .pth" or "pwab checkpoint (epoch N)".
  std::string description() const;

  struct Impl;

 private:
  explicit Recommender(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

//! What one finished epoch reports to TrainOptions::on_epoch.
struct EpochReport {
  int epoch = 0;          //!< 1-based, counted over resumed runs
  int epochs = 0;         //!< TrainOptions::epochs
  double loss = 0;        //!< mean BCE (positive + negative) over the epoch's batches
  double seconds = 0;     //!< this epoch's wall time
  double sequences_per_second = 0;
  bool evaluated = false;  //!< hr10/ndcg10 are set
  double hr10 = 0, ndcg10 = 0;
};

//! The training objective. kBinary is the original's: BCE of the next item against one sampled negative per
//! position. kSoftmax is cross-entropy of the next item over every candidate (a full softmax), which ranks
//! the next item against all 35,772 items as get_recommendations_by_history does; docs/recommender.md has the
//! figures that made it an option.
enum class Loss { kBinary, kSoftmax };

//! "bce" or "softmax"; parse_loss throws pwab::UsageError on anything else.
std::string_view loss_name(Loss loss);
Loss parse_loss(std::string_view name);

//! Defaults: pwab's recipe, which ranks the next item over every candidate (docs/recommender.md, "Training:
//! pwab's recipe and the original's"). original_recipe() gives the original PersonalWAB's.
struct TrainOptions {
  int epochs = 30;             //!< total epochs (a resumed run continues up to this number)
  int batch_size = 32;
  double lr = 2e-3;
  double beta1 = 0.9, beta2 = 0.98;
  double dropout = 0.2;
  Loss loss = Loss::kSoftmax;
  ModelShape shape;
  int eval_every = 5;          //!< validation (and a checkpoint) every N epochs; 0 = only at the end
  int eval_negatives = 0;      //!< sampled negatives per validation user; 0 = rank among every candidate
  uint64_t seed = 1;
  int num_threads = 0;         //!< libtorch intra-op threads; 0 = all hardware threads
  bool resume = false;         //!< continue from `out` if it exists (same dataset and options)
  bool progress = true;        //!< a progress line on stderr when it is a terminal
  //! Learn from history behaviours only, leaving out the train split's as well as the test split's. The train
  //! tasks' targets are then held out as the test tasks' are, so rewards on train tasks (PUMA's DPO scoring and
  //! RL) measure what the recommender predicts rather than what it memorised (docs/recommender.md, "A
  //! recommender for training rewards").
  bool hold_out_train = false;
  //! Called after every epoch; returning false stops training there (the checkpoint is written first).
  std::function<bool(const EpochReport&)> on_epoch;
};

//! The original PersonalWAB recipe (recommender/main.py): BCE against one sampled negative, batch 128, Adam
//! lr 1e-3, dropout 0.5, 200 epochs, validation against 100 sampled negatives every 10 epochs.
TrainOptions original_recipe();

struct TrainReport {
  int first_epoch = 1;        //!< 1 for a fresh run, the checkpoint's epoch + 1 after resume
  int epochs_run = 0;         //!< epochs trained by this call
  int last_epoch = 0;
  double final_loss = 0;      //!< loss of the last epoch
  double first_loss = 0;      //!< loss of this call's first epoch
  double best_hr10 = 0, best_ndcg10 = 0;  //!< best validation figures (100 sampled negatives)
  int best_epoch = 0;         //!< the epoch whose weights the checkpoint serves (0: never evaluated)
  std::size_t n_train_users = 0;       //!< users with a training sequence (2+ items)
  std::size_t n_train_positions = 0;   //!< (input, next item) pairs per epoch
  std::size_t n_validation_users = 0;  //!< users whose last training item is held out (3+ items)
  double seconds = 0;
  double sequences_per_second = 0;  //!< user sequences trained per second (all epochs of this call)
};

//! (pwab_rec, libtorch.) Trains SASRec on every user's history + train behaviours in time order (test behaviours never
//! seen; train behaviours neither with hold_out_train); the
//! last of them is held out for validation (HR@10 / NDCG@10 against sampled negatives), the rest are the
//! training sequence. Writes pwab's checkpoint to `out` atomically after each validation and at the end; it
//! serves the best-validated weights and keeps the latest state for `resume`. Throws pwab::Error on bad options,
//! a dataset without behaviours, or a checkpoint that does not match on resume.
TrainReport train(const data::Dataset& ds, const TrainOptions& options, const std::filesystem::path& out);

}  // namespace pwab::rec
