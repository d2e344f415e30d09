// `pwab rec train` and `pwab recommend`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "core/error.h"
#include "assemble/services.h"
#include "models/torch_models.h"
#include "rec/evaluate.h"
#include "rec/recommender.h"

namespace pwab::cli {

void add_rec_commands(CLI::App& app) {
  auto* rec = app.add_subcommand("rec", "The SASRec recommender behind get_recommendations_by_history");
  rec->require_subcommand(1);

  // A recipe gives every training setting; the flags given on the command line override it.
  struct TrainArgs {
    std::string data, out, recipe = "pwab", loss;
    std::optional<int> epochs, eval_every, batch_size;
    std::optional<double> lr, dropout;
    rec::TrainOptions options;  // seed, threads, resume: not part of a recipe
  };
  auto train_args = std::make_shared<TrainArgs>();
  auto* train = rec->add_subcommand("train", "Train SASRec on DATA's history + train behaviours (resumable)");
  train->add_option("data", train_args->data, "Dataset directory")->required();
  add_shared_option(*train, "--out", train_args->out, "checkpoint");
  train->add_option("--recipe", train_args->recipe,
                    "pwab (softmax over every candidate; the default) or original (PersonalWAB's BCE recipe)")
      ->check(CLI::IsMember({"pwab", "original"}));
  train->add_option("--epochs", train_args->epochs, "Total epochs")->check(CLI::Range(1, 100000));
  train->add_option("--eval-every", train_args->eval_every, "Validate and checkpoint every N epochs");
  train->add_option("--batch-size", train_args->batch_size, "Sequences per batch")->check(CLI::Range(1, 65536));
  train->add_option("--lr", train_args->lr, "Adam learning rate");
  train->add_option("--loss", train_args->loss,
                    "Objective: softmax (over every candidate) or bce (one sampled negative, the original's)")
      ->check(CLI::IsMember({"bce", "softmax"}));
  train->add_option("--dropout", train_args->dropout, "Dropout rate while training");
  add_shared_option(*train, "--seed", train_args->options.seed, "training");
  add_shared_option(*train, "--threads", train_args->options.num_threads, "torch");
  add_shared_flag(*train, "--resume", train_args->options.resume, "checkpoint");
  train->add_flag("--hold-out-train", train_args->options.hold_out_train,
                  "Learn from history behaviours only, so that train tasks are held out too: the recommender behind "
                  "PUMA's training rewards (pwab puma train --reward-checkpoint); needs --out");
  train->callback([train_args] {
    const auto& a = *train_args;
    rec::TrainOptions options = a.recipe == "original" ? rec::original_recipe() : rec::TrainOptions{};
    options.seed = a.options.seed;
    options.num_threads = a.options.num_threads;
    options.resume = a.options.resume;
    options.hold_out_train = a.options.hold_out_train;
    // the default checkpoint is the one every run serves; a train-held-out model must not replace it unasked
    if (options.hold_out_train && a.out.empty())
      throw UsageError("--hold-out-train needs --out: the default checkpoint is the one `pwab run` serves");
    if (a.epochs) options.epochs = *a.epochs;
    if (a.eval_every) options.eval_every = *a.eval_every;
    if (a.batch_size) options.batch_size = *a.batch_size;
    if (a.lr) options.lr = *a.lr;
    if (a.dropout) options.dropout = *a.dropout;
    if (!a.loss.empty()) options.loss = rec::parse_loss(a.loss);
    data::Dataset ds = load_data(train_args->data);
    auto out = train_args->out.empty() ? assemble::default_rec_checkpoint(train_args->data) : std::filesystem::path(train_args->out);
    rec::TrainReport r = models::torch_models().train_recommender(ds, options, out);
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

  struct EvalArgs {
    std::string data, checkpoint;
    int k = 10;
    bool json = false;
  };
  auto eval_args = std::make_shared<EvalArgs>();
  auto* eval = rec->add_subcommand(
      "eval", "Score the recommender on DATA's held-out test purchases beside most-popular and last-item successors");
  eval->add_option("data", eval_args->data, "Dataset directory")->required();
  add_shared_option(*eval, "--checkpoint", eval_args->checkpoint);
  add_shared_option(*eval, "--k", eval_args->k, "cutoff")->check(CLI::Range(1, 1000));
  add_shared_flag(*eval, "--json", eval_args->json, "print");
  eval->callback([eval_args] {
    data::Dataset ds = load_data(eval_args->data);
    auto ckpt = eval_args->checkpoint.empty() ? assemble::default_rec_checkpoint(eval_args->data)
                                              : std::filesystem::path(eval_args->checkpoint);
    if (!std::filesystem::exists(ckpt))
      throw Error("no recommender checkpoint at " + ckpt.string() + ": run `pwab rec train " + eval_args->data +
                  "` or pass --checkpoint");
    auto model = rec::Recommender::load(ckpt, ds);
    rec::HeldOutReport r = rec::evaluate_held_out(*model, ds, eval_args->k);
    auto row = [](const rec::RankerScore& s) {
      return nlohmann::json{{"hr", s.hr}, {"ndcg", s.ndcg}, {"distinct_items", s.distinct_items}};
    };
    if (eval_args->json) {
      std::cout << nlohmann::json{{"checkpoint", ckpt.string()}, {"model", model->description()}, {"k", r.k},
                                  {"cases", r.cases}, {"sasrec", row(r.model)}, {"most_popular", row(r.popular)},
                                  {"successors", row(r.successors)}}
                       .dump()
                << "\n";
      return;
    }
    std::string out = fmt::format("{} ({}), {} held-out test purchases, all {} candidates ranked\n", ckpt.string(),
                                  model->description(), r.cases, model->n_candidates());
    out += fmt::format("{:<22} {:>8} {:>8} {:>15}\n", "ranker", fmt::format("HR@{}", r.k), fmt::format("NDCG@{}", r.k),
                       "distinct items");
    auto line = [&](const char* name, const rec::RankerScore& s) {
      out += fmt::format("{:<22} {:>8.4f} {:>8.4f} {:>15}\n", name, s.hr, s.ndcg, s.distinct_items);
    };
    line("sasrec", r.model);
    line("most-popular", r.popular);
    line("last-item successors", r.successors);
    std::cout << out;
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
