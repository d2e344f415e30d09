// `pwab build` (a dataset from Amazon Reviews 2023 raw dumps) and `pwab data consistency` (profile fit).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/common.h"
#include "cli/options.h"
#include "cli/llm_setup.h"
#include "construct/construct.h"
#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"

namespace pwab::cli {
namespace {

struct BuildArgs {
  construct::BuildOptions options;
  std::vector<std::string> reviews, meta;
  std::string out, type_mix;
  bool offline = false, json = false;
  LlmFlags llm;
};

struct ConsistencyArgs {
  std::string dir, judge = "embed", embedder = "hashing";
  construct::ConsistencyOptions options;
  bool json = false;
  LlmFlags llm;
};

//! The model flags of `pwab run`, less the user simulator's (build and consistency have no user simulator).
void add_model_flags(CLI::App& cmd, LlmFlags& flags) {
  add_llm_flags(cmd, flags);
  for (const char* name : {"--user-model", "--user-base-url", "--user-api-key-env"}) cmd.remove_option(cmd.get_option(name));
}

//! A model that refuses new requests once the ledger's budget is spent (the build keeps what it has cached).
class BudgetedModel final : public llm::ChatModel {
 public:
  BudgetedModel(llm::ChatModel& inner, const llm::Ledger& ledger) : inner_(inner), ledger_(ledger) {}
  llm::ChatResponse chat(const llm::ChatRequest& request) override {
    if (ledger_.budget_reached())
      throw Error("the --budget-usd budget is spent; run again with the same --llm-cache to continue from the "
                  "cached replies");
    return inner_.chat(request);
  }
  std::string describe() const override { return inner_.describe(); }

 private:
  llm::ChatModel& inner_;
  const llm::Ledger& ledger_;
};

//! One progress line on stderr, redrawn at most ten times a second, when stderr is a terminal.
class BuildProgressLine {
 public:
  BuildProgressLine() : enabled_(isatty(STDERR_FILENO)) {}
  void operator()(const construct::BuildProgress& p) {
    if (!enabled_) return;
    if (p.phase == phase_ && clock_.seconds() - last_ < 0.1) return;
    phase_ = p.phase;
    last_ = clock_.seconds();
    double pct = p.bytes_total ? 100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total) : 0;
    double rate = p.seconds > 0 ? static_cast<double>(p.lines) / p.seconds : 0;
    std::cerr << "\r\033[K" << fmt::format("{}: {:.0f}% · {} lines · {:.0f}/s", p.phase, pct, p.lines, rate) << std::flush;
    drawn_ = true;
  }
  void end() {
    if (drawn_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::string phase_;
  Stopwatch clock_;
  double last_ = -1;
};

std::array<double, 3> parse_type_mix(const std::string& text) {
  auto parts = split_trim(text, ',');
  std::array<double, 3> mix{};
  if (parts.size() != 3) throw UsageError("--type-mix takes three shares: SEARCH,RECOMMEND,REVIEW, got '" + text + "'");
  for (int i = 0; i < 3; ++i) {
    try {
      std::size_t used = 0;
      mix[i] = std::stod(parts[i], &used);
      if (used != parts[i].size() || mix[i] < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UsageError("--type-mix: '" + parts[i] + "' is not a non-negative number");
    }
  }
  return mix;
}

void run_build(BuildArgs& a) {
  auto& o = a.options;
  for (const auto& f : a.reviews) o.review_files.emplace_back(f);
  for (const auto& f : a.meta) o.meta_files.emplace_back(f);
  if (!a.type_mix.empty()) o.type_mix = parse_type_mix(a.type_mix);
  LlmSetup models;
  std::unique_ptr<llm::MeteredChatModel> metered;
  std::unique_ptr<BudgetedModel> budgeted;
  if (!a.llm.model.empty()) {
    models = make_llm_setup(a.llm, /*need_agent=*/true, /*need_user=*/false);
    metered = std::make_unique<llm::MeteredChatModel>(*models.agent_model, *models.ledger, llm::Role::kOther, "");
    budgeted = std::make_unique<BudgetedModel>(*metered, *models.ledger);
    o.model = budgeted.get();
    o.model_name = a.llm.model;
    o.temperature = a.llm.temperature;
    o.llm_seed = a.llm.llm_seed;
    o.llm_workers = a.llm.max_in_flight;
  }
  BuildProgressLine progress;
  o.on_progress = [&progress](const construct::BuildProgress& p) { progress(p); };
  construct::BuildReport report;
  try {
    report = construct::build_dataset(o, a.out);
  } catch (...) {
    progress.end();
    throw;
  }
  progress.end();
  if (a.json) {
    std::cout << construct::build_report_json(report) << "\n";
  } else {
    std::cout << construct::format_build_report(report);
    if (models.ledger) std::cout << "LLM cost: " << models.ledger->run_total().cost_text() << "\n";
  }
  std::cerr << fmt::format("pwab: wrote {} users, {} products and {} tasks to {} (check it with `pwab data validate {}`)\n",
                           report.users, report.products_behaviour + report.products_filler,
                           report.train_by_type[0] + report.train_by_type[1] + report.train_by_type[2] +
                               report.test_by_type[0] + report.test_by_type[1] + report.test_by_type[2],
                           a.out, a.out);
}

void run_consistency(ConsistencyArgs& a) {
  data::Dataset ds = load_data(a.dir);
  std::unique_ptr<construct::ConsistencyJudge> judge;
  std::unique_ptr<embed::Embedder> embedder;
  LlmSetup models;
  std::unique_ptr<llm::MeteredChatModel> metered;
  std::unique_ptr<BudgetedModel> budgeted;
  if (a.judge == "llm") {
    if (a.llm.model.empty()) throw UsageError("--judge llm needs --model NAME");
    models = make_llm_setup(a.llm, /*need_agent=*/true, /*need_user=*/false);
    metered = std::make_unique<llm::MeteredChatModel>(*models.agent_model, *models.ledger, llm::Role::kOther, "");
    budgeted = std::make_unique<BudgetedModel>(*metered, *models.ledger);
    judge = std::make_unique<construct::LlmJudge>(*budgeted, a.llm.model, a.llm.temperature, a.llm.llm_seed);
  } else if (a.judge == "embed") {
    embedder = assemble::open_embedder(a.embedder, ds, a.dir);
    judge = std::make_unique<construct::EmbeddingJudge>(*embedder);
  } else {
    throw UsageError("--judge must be embed or llm, got '" + a.judge + "'");
  }
  auto report = construct::evaluate_consistency(ds, *judge, a.options);
  std::cout << (a.json ? construct::consistency_json(report) + "\n" : construct::format_consistency(report));
  if (models.ledger && !a.json) std::cout << "LLM cost: " << models.ledger->run_total().cost_text() << "\n";
}

}  // namespace

void add_build_commands(CLI::App& app) {
  auto args = std::make_shared<BuildArgs>();
  auto* build = app.add_subcommand(
      "build", "Build a PersonalWAB dataset from Amazon Reviews 2023 raw JSONL files (plain or .gz), streamed");
  build->add_option("--reviews", args->reviews, "Review files, e.g. Electronics.jsonl.gz (category = file name)")
      ->required()
      ->expected(1, -1);
  build->add_option("--meta", args->meta, "Meta files, e.g. meta_Electronics.jsonl.gz")->required()->expected(1, -1);
  add_shared_option(*build, "--out", args->out, "dataset")->required();
  add_shared_option(*build, "--users", args->options.n_users, "dataset")->capture_default_str()->check(CLI::PositiveNumber);
  build->add_option("--categories", args->options.categories,
                    "Categories to sample from (file-name form; default: the paper's five; 'all': every file)")
      ->expected(1, -1);
  add_shared_option(*build, "--seed", args->options.seed, "bytes")->capture_default_str();
  build->add_option("--min-behaviours", args->options.min_behaviours, "Fewest valid reviews a sampled user has")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  build->add_option("--max-behaviours", args->options.max_behaviours, "Most reviews a sampled user has (0: no limit)")
      ->capture_default_str();
  build->add_option("--track-users", args->options.track_users, "Users counted at once in pass 1 (bounds memory)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 32));
  build->add_option("--catalogue-size", args->options.catalogue_size,
                    "Catalogue cap: behaviour products plus other items of the categories up to this")
      ->capture_default_str();
  build->add_option("--type-mix", args->type_mix, "Task type shares SEARCH,RECOMMEND,REVIEW (default 0.32,0.35,0.33)");
  auto* offline = build->add_flag("--offline", args->offline,
                                  "Profiles and instructions by deterministic rules (the default without --model)");
  add_shared_flag(*build, "--json", args->json, "print");
  add_model_flags(*build, args->llm);
  offline->excludes(build->get_option("--model"));
  build->callback([args] { run_build(*args); });

  auto* data = app.get_subcommand("data");
  auto cargs = std::make_shared<ConsistencyArgs>();
  auto* cons = data->add_subcommand(
      "consistency",
      "Score how well profiles match users' behaviours (top-1 accuracy) and products (NDCG@5, Recall@5), paper §4.2");
  cons->add_option("dir", cargs->dir, "Dataset directory")->required();
  cons->add_option("--judge", cargs->judge, "embed (cosine of embeddings) or llm (--model)")->capture_default_str();
  add_shared_option(*cons, "--embedder", cargs->embedder)
      ->capture_default_str();
  add_shared_option(*cons, "--users", cargs->options.max_users, "evaluated")->capture_default_str();
  add_shared_option(*cons, "--seed", cargs->options.seed, "candidates")->capture_default_str();
  cons->add_option("--negative-users", cargs->options.behaviour_negatives, "Other users per profile-behaviour test")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cons->add_option("--positives", cargs->options.product_positives, "User's products per profile-product test")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cons->add_option("--negatives", cargs->options.product_negatives, "Random products per profile-product test")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_shared_flag(*cons, "--json", cargs->json, "print");
  add_model_flags(*cons, cargs->llm);
  cons->callback([cargs] { run_consistency(*cargs); });
}

}  // namespace pwab::cli
