// `pwab rec train` and `pwab recommend`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "core/error.h"
#include "assemble/services.h"
#include "models/torch_models.h"
#include "rec/recommender.h"

namespace pwab::cli {

void add_rec_commands(CLI::App& app) {
  auto* rec = app.add_subcommand("rec", "The SASRec recommender behind get_recommendations_by_history");
  rec->require_subcommand(1);

  struct TrainArgs {
    std::string data, out;
    rec::TrainOptions options;
  };
  auto train_args = std::make_shared<TrainArgs>();
  auto* train = rec->add_subcommand("train", "Train SASRec on DATA's history + train behaviours (resumable)");
  train->add_option("data", train_args->data, "Dataset directory")->required();
  add_shared_option(*train, "--out", train_args->out, "checkpoint");
  train->add_option("--epochs", train_args->options.epochs, "Total epochs")->check(CLI::Range(1, 100000));
  train->add_option("--eval-every", train_args->options.eval_every, "Validate and checkpoint every N epochs");
  train->add_option("--batch-size", train_args->options.batch_size, "Sequences per batch")->check(CLI::Range(1, 65536));
  train->add_option("--lr", train_args->options.lr, "Adam learning rate");
  add_shared_option(*train, "--seed", train_args->options.seed, "training");
  add_shared_option(*train, "--threads", train_args->options.num_threads, "torch");
  add_shared_flag(*train, "--resume", train_args->options.resume, "checkpoint");
  train->callback([train_args] {
    data::Dataset ds = load_data(train_args->data);
    auto out = train_args->out.empty() ? assemble::default_rec_checkpoint(train_args->data) : std::filesystem::path(train_args->out);
    rec::TrainReport r = models::torch_models().train_recommender(ds, train_args->options, out);
    if (r.epochs_run == 0) {
      std::cerr << fmt::format("pwab: {} is already trained to epoch {} (best HR@10 {:.4f}, NDCG@10 {:.4f}); nothing to do\n",
                               out.string(), r.last_epoch, r.best_hr10, r.best_ndcg10);
      return;
    }
    std::cerr << fmt::format(
        "pwab: trained epochs {}-{} in {:.1f} s ({:.0f} sequences/s); loss {:.4f} -> {:.4f}; best HR@10 {:.4f} "
        "NDCG@10 {:.4f} (epoch {}); checkpoint {}\n",
        r.first_epoch, r.last_epoch, r.seconds, r.sequences_per_second, r.first_loss, r.final_loss, r.best_hr10,
        r.best_ndcg10, r.best_epoch, out.string());
  });

  struct RecommendArgs {
    std::string data, checkpoint;
    std::vector<std::string> asins;
    int k = 10;
  };
  auto args = std::make_shared<RecommendArgs>();
  auto* recommend = app.add_subcommand("recommend", "Recommend from ASINs in time order: print rank<TAB>asin<TAB>score");
  add_shared_option(*recommend, "--data", args->data)->required();
  add_shared_option(*recommend, "--checkpoint", args->checkpoint);
  add_shared_option(*recommend, "--k", args->k)->check(CLI::Range(1, 1000));
  recommend->add_option("asins", args->asins, "Product ASINs, oldest first")->required();
  recommend->callback([args] {
    data::Dataset ds = load_data(args->data);
    auto ckpt = args->checkpoint.empty() ? assemble::default_rec_checkpoint(args->data) : std::filesystem::path(args->checkpoint);
    if (!std::filesystem::exists(ckpt))
      throw Error("no recommender checkpoint at " + ckpt.string() + ": run `pwab rec train " + args->data +
                  "` or pass --checkpoint");
    auto model = rec::Recommender::load(ckpt, ds);
    auto recs = model->recommend(args->asins, args->k);
    std::string out;
    for (std::size_t r = 0; r < recs.size(); ++r) out += fmt::format("{}\t{}\t{:.5f}\n", r + 1, recs[r].asin, recs[r].score);
    std::cout << out;
  });
}

}  // namespace pwab::cli
