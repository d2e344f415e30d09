#include "construct/consistency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unordered_set>

#include "construct/profile.h"
#include "core/error.h"
#include "core/rng.h"

namespace pwab::construct {

namespace {

// Every non-negative integer in the text, in order.
std::vector<long> integers_in(std::string_view s) {
  std::vector<long> out;
  for (std::size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      long v = 0;
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])) && v < 1000000) v = v * 10 + (s[j++] - '0');
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      out.push_back(v);
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

double dcg_weight(std::size_t rank0) { return 1.0 / std::log2(static_cast<double>(rank0) + 2.0); }

}  // namespace

std::string behaviours_text(const data::Dataset& ds, const data::User& u, std::size_t max_items) {
  std::vector<const data::Behaviour*> items;
  for (const auto& b : u.behaviours)
    if (b.split == data::Split::kHistory) items.push_back(&b);
  if (items.empty())
    for (const auto& b : u.behaviours) items.push_back(&b);
  std::size_t first = items.size() > max_items ? items.size() - max_items : 0;
  std::string out;
  for (std::size_t i = first; i < items.size(); ++i) {
    const auto& p = ds.product(items[i]->product);
    out += fmt::format("- {} [{}] rated {}: {}\n", p.title, interest_category(p), items[i]->review.rating.str(),
                       items[i]->review.title);
  }
  return out;
}

std::string product_judge_text(const data::Product& p) {
  std::string cats = p.categories.empty() ? p.main_category : fmt::format("{}", fmt::join(p.categories, " > "));
  return fmt::format("{} [{}] store: {}", p.title, cats, p.store.value_or("unknown"));
}

std::vector<double> EmbeddingJudge::scores(const std::string& profile, const std::vector<std::string>& candidates) const {
  std::vector<std::string> texts{profile};
  texts.insert(texts.end(), candidates.begin(), candidates.end());
  auto v = embedder_.embed(texts);
  std::vector<double> s;
  for (std::size_t i = 1; i < v.size(); ++i) s.push_back(embed::dot(v[0], v[i]));
  return s;
}

int EmbeddingJudge::pick_user(const std::string& profile, const std::vector<std::string>& candidates) {
  auto s = scores(profile, candidates);
  return static_cast<int>(std::max_element(s.begin(), s.end()) - s.begin());
}

std::vector<int> EmbeddingJudge::rank_products(const std::string& profile, const std::vector<std::string>& candidates) {
  auto s = scores(profile, candidates);
  std::vector<int> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s[static_cast<std::size_t>(a)] > s[static_cast<std::size_t>(b)]; });
  return order;
}

int LlmJudge::pick_user(const std::string& profile, const std::vector<std::string>& candidates) {
  std::string user = "Shopper profile:\n" + profile + "\nPurchase histories of " + std::to_string(candidates.size()) +
                     " shoppers:\n";
  for (std::size_t i = 0; i < candidates.size(); ++i) user += fmt::format("\nShopper {}:\n{}", i + 1, candidates[i]);
  user += "\nWhich shopper does the profile describe? Answer with that shopper's number only.";
  llm::ChatRequest req;
  req.model = model_name_;
  req.messages = {llm::Message::system("You match shopper profiles to purchase histories. You answer with a number "
                                       "only."),
                  llm::Message::user(std::move(user))};
  req.temperature = temperature_.value_or(0.0);
  req.seed = seed_;
  auto nums = integers_in(model_.chat(req).message.content);
  if (!nums.empty() && nums[0] >= 1 && static_cast<std::size_t>(nums[0]) <= candidates.size())
    return static_cast<int>(nums[0] - 1);
  ++unusable_;
  return -1;
}

std::vector<int> LlmJudge::rank_products(const std::string& profile, const std::vector<std::string>& candidates) {
  std::string user = "Shopper profile:\n" + profile + "\nProducts:\n";
  for (std::size_t i = 0; i < candidates.size(); ++i) user += fmt::format("{}. {}\n", i + 1, candidates[i]);
  user += fmt::format("\nRank all {} products from the one this shopper is most likely to buy to the least likely. "
                      "Answer with the product numbers in that order, separated by commas, and nothing else.",
                      candidates.size());
  llm::ChatRequest req;
  req.model = model_name_;
  req.messages = {llm::Message::system("You predict which products a shopper will buy from their profile. You "
                                       "answer with product numbers only."),
                  llm::Message::user(std::move(user))};
  req.temperature = temperature_.value_or(0.0);
  req.seed = seed_;
  std::vector<int> order;
  std::vector<bool> seen(candidates.size(), false);
  for (long n : integers_in(model_.chat(req).message.content)) {
    if (n < 1 || static_cast<std::size_t>(n) > candidates.size() || seen[static_cast<std::size_t>(n - 1)]) continue;
    seen[static_cast<std::size_t>(n - 1)] = true;
    order.push_back(static_cast<int>(n - 1));
  }
  if (order.empty()) ++unusable_;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (!seen[i]) order.push_back(static_cast<int>(i));
  return order;
}

ConsistencyReport evaluate_consistency(const data::Dataset& ds, ConsistencyJudge& judge, const ConsistencyOptions& o) {
  ConsistencyReport rep;
  rep.judge = judge.name();
  rep.k = o.k;
  std::vector<data::UserId> eligible;
  for (data::UserId u = 0; u < ds.users().size(); ++u)
    if (ds.user(u).has_profile && !ds.user(u).behaviours.empty()) eligible.push_back(u);
  if (eligible.size() < 1 + o.behaviour_negatives)
    throw DataError(fmt::format("the consistency tests need at least {} users with a profile and behaviours; the "
                                "dataset has {}",
                                1 + o.behaviour_negatives, eligible.size()));
  std::vector<data::UserId> evaluated = eligible;
  if (o.max_users > 0 && o.max_users < evaluated.size()) {
    Rng rng(derive_seed(o.seed, 0xC0));
    rng.shuffle(evaluated);
    evaluated.resize(o.max_users);
    std::sort(evaluated.begin(), evaluated.end());
  }
  std::vector<std::string> user_text(ds.users().size());
  for (data::UserId u : eligible) user_text[u] = behaviours_text(ds, ds.user(u), o.behaviours_shown);

  double hits = 0, top1_random = 0, ndcg = 0, recall = 0, ndcg_random = 0, recall_random = 0;
  for (data::UserId u : evaluated) {
    Rng rng(derive_seed(o.seed, 0xC1, u));
    std::string profile = profile_text(ds.user(u).profile);

    // Profile-behaviour: the true user among random others.
    std::vector<data::UserId> cands{u};
    while (cands.size() < 1 + o.behaviour_negatives) {
      data::UserId v = eligible[rng.below(eligible.size())];
      if (std::find(cands.begin(), cands.end(), v) == cands.end()) cands.push_back(v);
    }
    rng.shuffle(cands);
    std::vector<std::string> texts;
    for (data::UserId v : cands) texts.push_back(user_text[v]);
    int pick = judge.pick_user(profile, texts);
    hits += pick >= 0 && cands[static_cast<std::size_t>(pick)] == u;
    top1_random += 1.0 / static_cast<double>(cands.size());
    ++rep.users_behaviour;

    // Profile-product: some of the user's products among random catalogue products.
    std::vector<data::ProductId> own;
    std::unordered_set<data::ProductId> owned;
    for (const auto& b : ds.user(u).behaviours)
      if (owned.insert(b.product).second) own.push_back(b.product);
    rng.shuffle(own);
    std::size_t n_pos = std::min(o.product_positives, own.size());
    std::vector<std::pair<data::ProductId, bool>> items;
    for (std::size_t i = 0; i < n_pos; ++i) items.push_back({own[i], true});
    std::unordered_set<data::ProductId> taken(own.begin(), own.end());
    std::size_t available = ds.products().size() - owned.size();
    for (std::size_t tries = 0; items.size() < n_pos + std::min(o.product_negatives, available) && tries < 100000; ++tries) {
      auto p = static_cast<data::ProductId>(rng.below(ds.products().size()));
      if (taken.insert(p).second) items.push_back({p, false});
    }
    if (n_pos == 0 || items.size() == n_pos) continue;  // nothing to rank against
    rng.shuffle(items);
    texts.clear();
    for (const auto& [p, pos] : items) texts.push_back(product_judge_text(ds.product(p)));
    auto order = judge.rank_products(profile, texts);
    std::size_t kk = std::min(o.k, items.size());
    double dcg = 0, idcg = 0, found = 0, weights = 0;
    for (std::size_t i = 0; i < kk && i < order.size(); ++i)
      if (items[static_cast<std::size_t>(order[i])].second) {
        dcg += dcg_weight(i);
        ++found;
      }
    for (std::size_t i = 0; i < std::min(n_pos, kk); ++i) idcg += dcg_weight(i);
    for (std::size_t i = 0; i < kk; ++i) weights += dcg_weight(i);
    double share = static_cast<double>(n_pos) / static_cast<double>(items.size());
    ndcg += dcg / idcg;
    recall += found / static_cast<double>(n_pos);
    ndcg_random += share * weights / idcg;
    recall_random += static_cast<double>(kk) / static_cast<double>(items.size());
    ++rep.users_product;
  }
  if (rep.users_behaviour) {
    rep.top1_accuracy = hits / static_cast<double>(rep.users_behaviour);
    rep.top1_random = top1_random / static_cast<double>(rep.users_behaviour);
  }
  if (rep.users_product) {
    double n = static_cast<double>(rep.users_product);
    rep.ndcg = ndcg / n;
    rep.recall = recall / n;
    rep.ndcg_random = ndcg_random / n;
    rep.recall_random = recall_random / n;
  }
  rep.unusable_replies = judge.unusable_replies();
  return rep;
}

std::string format_consistency(const ConsistencyReport& r) {
  std::string out = fmt::format("Judge: {}\n", r.judge);
  out += fmt::format("{:<36} {:>8} {:>8} {:>7}\n", "", "score", "random", "users");
  out += fmt::format("{:<36} {:>8.3f} {:>8.3f} {:>7}\n", "Profile-behaviour: top-1 accuracy", r.top1_accuracy,
                     r.top1_random, r.users_behaviour);
  out += fmt::format("{:<36} {:>8.3f} {:>8.3f} {:>7}\n", fmt::format("Profile-product: NDCG@{}", r.k), r.ndcg,
                     r.ndcg_random, r.users_product);
  out += fmt::format("{:<36} {:>8.3f} {:>8.3f} {:>7}\n", fmt::format("Profile-product: Recall@{}", r.k), r.recall,
                     r.recall_random, r.users_product);
  if (r.unusable_replies) out += fmt::format("{} judge replies could not be read (scored as misses)\n", r.unusable_replies);
  return out;
}

std::string consistency_json(const ConsistencyReport& r) {
  nlohmann::ordered_json j;
  j["judge"] = r.judge;
  j["profile_behaviour"] = {{"users", r.users_behaviour}, {"top1_accuracy", r.top1_accuracy}, {"random", r.top1_random}};
  j["profile_product"] = {{"users", r.users_product}, {"k", r.k},
                          {"ndcg", r.ndcg}, {"recall", r.recall},
                          {"ndcg_random", r.ndcg_random}, {"recall_random", r.recall_random}};
  j["unusable_replies"] = r.unusable_replies;
  return j.dump(2);
}

}  // namespace pwab::construct
