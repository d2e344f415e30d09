// src/construct/consistency.h: how well profiles match behaviours and products (paper §4.2, Appendix A.1).
//
// Profile-behaviour: given a user's profile, pick the true user among 1 + `behaviour_negatives` candidates, each
// shown by its behaviour sequence; top-1 accuracy. Profile-product: given the profile, rank `product_positives`
// of the user's products among `product_negatives` random catalogue products; NDCG@5 and Recall@5. The paper
// (after Apollonion) uses 1 positive + 4 negatives and 3 positives + 7 negatives, with gpt-4o-mini as the
// judge. A judge here is an LLM or an embedder (cosine of the profile and the candidate texts).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "embed/embedder.h"
#include "llm/chat.h"

namespace pwab::construct {

//! Scores candidates against a profile.
class ConsistencyJudge {
 public:
  virtual ~ConsistencyJudge() = default;
  virtual std::string name() const = 0;
  //! Index of the candidate (a user's behaviours as text) that the profile describes; -1 = no usable answer.
  virtual int pick_user(const std::string& profile, const std::vector<std::string>& candidates) = 0;
  //! Every candidate index (a product as text), most likely first. Thread-safe calls are not required.
  virtual std::vector<int> rank_products(const std::string& profile, const std::vector<std::string>& candidates) = 0;
  //! Replies that could not be read (LLM judge); 0 for embedders.
  virtual std::size_t unusable_replies() const { return 0; }
};

//! Cosine similarity of embeddings: the candidate most similar to the profile text wins.
class EmbeddingJudge final : public ConsistencyJudge {
 public:
  explicit EmbeddingJudge(const embed::Embedder& embedder) : embedder_(embedder) {}
  std::string name() const override { return "embedding:" + embedder_.name(); }
  int pick_user(const std::string& profile, const std::vector<std::string>& candidates) override;
  std::vector<int> rank_products(const std::string& profile, const std::vector<std::string>& candidates) override;

 private:
  std::vector<double> scores(const std::string& profile, const std::vector<std::string>& candidates) const;
  const embed::Embedder& embedder_;
};

//! Asks a chat model: "which shopper is this?" (a number) and "rank these products" (numbers in order).
//! Numbers it leaves out keep their shown order after the ones it ranked.
class LlmJudge final : public ConsistencyJudge {
 public:
  //! `temperature` defaults to 0; `seed`, when set, is sent with every request.
  LlmJudge(llm::ChatModel& model, std::string model_name, std::optional<double> temperature,
           std::optional<int64_t> seed = std::nullopt)
      : model_(model), model_name_(std::move(model_name)), temperature_(temperature), seed_(seed) {}
  std::string name() const override { return "llm:" + model_name_; }
  int pick_user(const std::string& profile, const std::vector<std::string>& candidates) override;
  std::vector<int> rank_products(const std::string& profile, const std::vector<std::string>& candidates) override;
  std::size_t unusable_replies() const override { return unusable_; }

 private:
  llm::ChatModel& model_;
  std::string model_name_;
  std::optional<double> temperature_;
  std::optional<int64_t> seed_;
  std::size_t unusable_ = 0;
};

struct ConsistencyOptions {
  uint64_t seed = 1;
  std::size_t max_users = 0;          //!< users evaluated, a seeded sample (0 = every user with a profile)
  std::size_t behaviour_negatives = 4;
  std::size_t product_positives = 3;
  std::size_t product_negatives = 7;
  std::size_t k = 5;                  //!< the cut-off of NDCG@k and Recall@k
  std::size_t behaviours_shown = 20;  //!< most recent history behaviours that represent a candidate user
};

struct ConsistencyReport {
  std::string judge;
  std::size_t users_behaviour = 0;      //!< users in the profile-behaviour test
  double top1_accuracy = 0;
  double top1_random = 0;               //!< what a random pick scores in expectation
  std::size_t users_product = 0;        //!< users in the profile-product test
  double ndcg = 0, recall = 0;          //!< at k
  double ndcg_random = 0, recall_random = 0;
  std::size_t k = 5;
  std::size_t unusable_replies = 0;
};

//! Runs both tests with the same seed-derived candidate sets for any judge, so judges are comparable.
//! DataError when the dataset has fewer than 1 + behaviour_negatives users with profiles and behaviours.
ConsistencyReport evaluate_consistency(const data::Dataset& ds, ConsistencyJudge& judge, const ConsistencyOptions& o);

//! A behaviour sequence as the judges see it: one line per behaviour (title, category, rating, review title).
std::string behaviours_text(const data::Dataset& ds, const data::User& u, std::size_t max_items);
//! A product as the judges see it: title, category path, store.
std::string product_judge_text(const data::Product& p);

std::string format_consistency(const ConsistencyReport& r);
std::string consistency_json(const ConsistencyReport& r);

}  // namespace pwab::construct
