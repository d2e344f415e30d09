#include "data/validate.h"

#include <fmt/format.h>

#include <future>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/error.h"
#include "core/sys.h"
#include "core/text.h"
#include "data/loader.h"

namespace pwab::data {

std::string product_text(const Product& p) {
  std::string t = p.title + "\n" + p.main_category + "\n";
  for (const auto& f : p.features) t += f + "\n";
  for (const auto& d : p.description) t += d + "\n";
  t += p.price.str() + "\n" + p.store.value_or("None") + "\n";
  for (const auto& c : p.categories) t += c + "\n";
  t += p.details_json + "\n" + p.average_rating.str() + "\n" + p.rating_number.str();
  return t;
}

std::string behaviour_text(const Dataset& ds, const Behaviour& b) {
  const Product& p = ds.product(b.product);
  return p.title + "\n" + p.main_category + "\n" + p.store.value_or("None") + "\n" + p.price.str() + "\n" +
         b.review.rating.str() + "\n" + b.review.title + "\n" + b.review.text;
}

namespace {

// Token counts without building the texts: the fields of product_text and behaviour_text are joined by
// newlines, and a newline ends a word without being a token, so the count of a joined text is the sum of the
// counts of its fields (test/data/validate_test.cpp checks this against the texts themselves).
std::size_t tokens_of(std::string_view s) { return count_basic_tokens(s); }
std::size_t tokens_of_list(const std::vector<std::string>& list) {
  std::size_t n = 0;
  for (const auto& x : list) n += count_basic_tokens(x);
  return n;
}
std::size_t tokens_of_scalar(const py::Scalar& v) { return count_basic_tokens(v.str()); }
std::size_t tokens_of_store(const Product& p) { return p.store ? count_basic_tokens(*p.store) : 1; }  // "None"

// The product's share of behaviour_text: title, category, store, price.
std::size_t behaviour_product_tokens(const Product& p) {
  return tokens_of(p.title) + tokens_of(p.main_category) + tokens_of_store(p) + tokens_of_scalar(p.price);
}
// The review's share of behaviour_text: rating, title, text.
std::size_t behaviour_review_tokens(const Review& r) {
  return tokens_of_scalar(r.rating) + tokens_of(r.title) + tokens_of(r.text);
}

// Per-user sums both splits need, each behaviour counted once.
struct UserBehaviourTokens {
  std::size_t train_length = 0, train_tokens = 0;  // history + train behaviours
  std::size_t all_length = 0, all_tokens = 0;      // every behaviour (the test split's)
};

void finish_split(const Dataset& ds, Split split, const std::vector<UserBehaviourTokens>& per_user, SplitStats& s) {
  const auto& tasks = ds.tasks(split);
  s.n_instructions = tasks.size();
  std::vector<bool> has_task(ds.users().size(), false);
  std::array<std::size_t, 3> tokens_by_type{};
  std::size_t tokens = 0;
  for (const auto& t : tasks) {
    has_task[t.user] = true;
    std::size_t n = count_basic_tokens(t.instruction);
    tokens += n;
    ++s.n_by_type[static_cast<int>(t.type)];
    tokens_by_type[static_cast<int>(t.type)] += n;
  }
  if (!tasks.empty()) s.avg_instruction_tokens = static_cast<double>(tokens) / static_cast<double>(tasks.size());
  for (int k = 0; k < 3; ++k)
    if (s.n_by_type[k]) s.avg_tokens_by_type[k] = static_cast<double>(tokens_by_type[k]) / static_cast<double>(s.n_by_type[k]);

  std::size_t length = 0, behaviour_tokens = 0;
  for (UserId u = 0; u < ds.users().size(); ++u) {
    if (!has_task[u]) continue;
    ++s.n_users;
    const auto& c = per_user[u];
    length += split == Split::kTrain ? c.train_length : c.all_length;
    behaviour_tokens += split == Split::kTrain ? c.train_tokens : c.all_tokens;
  }
  if (s.n_users) {
    s.avg_behaviour_length = static_cast<double>(length) / static_cast<double>(s.n_users);
    s.avg_behaviour_tokens = static_cast<double>(behaviour_tokens) / static_cast<double>(s.n_users);
  }
}

}  // namespace

DatasetStats compute_stats(const Dataset& ds) {
  DatasetStats s;
  s.n_users = ds.users().size();
  s.n_products = ds.products().size();
  s.n_item_ids = ds.item_ids().size();

  // Products: every field once; the title/category/store/price share is kept for the behaviours.
  std::vector<uint32_t> product_part(ds.products().size());
  std::size_t product_tokens = 0;
  for (std::size_t i = 0; i < ds.products().size(); ++i) {
    const Product& p = ds.product(static_cast<ProductId>(i));
    std::size_t part = behaviour_product_tokens(p);
    product_part[i] = static_cast<uint32_t>(part);
    product_tokens += part + tokens_of_list(p.features) + tokens_of_list(p.description) +
                      tokens_of_list(p.categories) + tokens_of(p.details_json) + tokens_of_scalar(p.average_rating) +
                      tokens_of_scalar(p.rating_number);
  }
  if (s.n_products) s.avg_product_tokens = static_cast<double>(product_tokens) / static_cast<double>(s.n_products);

  // Users with a task in some split get their behaviours counted, once for both splits.
  std::vector<bool> has_task(ds.users().size(), false);
  for (Split split : {Split::kTrain, Split::kTest})
    for (const auto& t : ds.tasks(split)) has_task[t.user] = true;
  std::vector<UserBehaviourTokens> per_user(ds.users().size());
  std::size_t profile_tokens = 0;
  std::vector<bool> bought(ds.products().size(), false);
  for (UserId id = 0; id < ds.users().size(); ++id) {
    const User& u = ds.user(id);
    if (u.has_profile) {
      ++s.n_profiles;
      for (const auto& [k, v] : u.profile.fields) profile_tokens += tokens_of(k) + 1 + tokens_of(v);  // "k: v"
    }
    s.n_behaviours += u.behaviours.size();
    for (const auto& b : u.behaviours) bought[b.product] = true;
    if (!has_task[id]) continue;
    auto& c = per_user[id];
    for (const auto& b : u.behaviours) {
      std::size_t n = product_part[b.product] + behaviour_review_tokens(b.review);
      ++c.all_length;
      c.all_tokens += n;
      if (b.split != Split::kTest) {
        ++c.train_length;
        c.train_tokens += n;
      }
    }
  }
  for (bool b : bought) s.n_products_in_behaviours += b;
  if (s.n_profiles) s.avg_profile_tokens = static_cast<double>(profile_tokens) / static_cast<double>(s.n_profiles);
  finish_split(ds, Split::kTrain, per_user, s.train);
  finish_split(ds, Split::kTest, per_user, s.test);
  return s;
}

void check_consistency(const Dataset& ds, Diagnostics& diag) {
  for (const auto& u : ds.users()) {
    std::string record = "user \"" + u.id + "\"";
    for (std::size_t i = 1; i < u.behaviours.size(); ++i) {
      const auto& prev = u.behaviours[i - 1];
      const auto& cur = u.behaviours[i];
      if (cur.review.timestamp < prev.review.timestamp)
        diag.warning("history-order", "user_history", record, fmt::format("$[\"{}\"][{}]", u.id, i),
                     fmt::format("behaviour at {} is earlier than the one before it ({}): histories should be in "
                                 "time order (PUMA's recommendation labels take the last items in stored order)",
                                 cur.review.timestamp, prev.review.timestamp));
      if (static_cast<int>(cur.split) < static_cast<int>(prev.split))
        diag.warning("split-order", "user_history", record, fmt::format("$[\"{}\"][{}].split", u.id, i),
                     fmt::format("a \"{}\" behaviour follows a \"{}\" one: the split should be chronological "
                                 "(history, then train, then test)",
                                 to_string(cur.split), to_string(prev.split)));
    }
  }
  for (Split split : {Split::kTrain, Split::kTest}) {
    for (const auto& t : ds.tasks(split)) {
      std::string record = fmt::format("{}[{}]", to_string(split), t.index);
      std::string root = "$." + record;
      if (t.target_review.timestamp != t.timestamp)
        diag.warning("task-timestamp", "user_instructions.json", record, root + ".timestamp",
                     fmt::format("task timestamp {} differs from its target review's {}", t.timestamp,
                                 t.target_review.timestamp));
      const auto& target_asin = ds.product(t.target_product).parent_asin;
      bool found = false, split_matches = false;
      for (const auto& b : ds.user(t.user).behaviours) {
        if (b.product == t.target_product && b.review.timestamp == t.timestamp) {
          found = true;
          split_matches = b.split == split;
          break;
        }
      }
      if (!found)
        diag.warning("task-target-history", "user_instructions.json", record, root + ".target",
                     fmt::format("the target behaviour ({} at {}) is not in the user's history", target_asin,
                                 t.timestamp));
      else if (!split_matches)
        diag.warning("task-target-history", "user_instructions.json", record, root + ".target",
                     fmt::format("the target behaviour ({}) is in the user's history under another split",
                                 target_asin));
    }
  }
  if (!ds.item_ids().empty()) {
    StringMap<bool> has_id;
    for (const auto& [asin, id] : ds.item_ids()) has_id.emplace(asin, true);
    std::size_t missing = 0;
    std::string example;
    for (const auto& p : ds.products())
      if (!has_id.contains(p.parent_asin) && missing++ == 0) example = p.parent_asin;
    if (missing)
      diag.warning("item-id", "item_ids.json", "", "",
                   fmt::format("{} catalogue products have no item id (e.g. \"{}\"); the recommender cannot take "
                               "or return them",
                               missing, example));
  }
}

ValidationReport validate_dataset(const std::filesystem::path& dir, unsigned threads, Dataset* keep) {
  ValidationReport r;
  r.dir = dir;
  Stopwatch clock;
  Dataset ds;
  try {
    LoadOptions opts;
    opts.threads = threads;
    ds = load_dataset(dir, r.diag, opts);
  } catch (const DataError& e) {
    r.diag.error("layout", "", "", "", e.what());
    return r;
  }
  r.load_seconds = clock.seconds();
  r.loaded = true;
  // Both only read the dataset; the statistics (a pass over every text) take the second core.
  auto stats = std::async(std::launch::async, [&ds] { return compute_stats(ds); });
  check_consistency(ds, r.diag);
  r.stats = stats.get();
  if (keep) *keep = std::move(ds);
  return r;
}

namespace {
std::string thousands(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}
std::string num(double v) { return v >= 100 ? thousands(static_cast<std::size_t>(v + 0.5)) : fmt::format("{:.1f}", v); }
}  // namespace

std::string format_report(const ValidationReport& r) {
  std::string out;
  if (r.loaded) {
    const auto& s = r.stats;
    auto row = [&](std::string_view group, std::string_view item, const std::string& train, const std::string& test) {
      out += fmt::format("{:<12} {:<26} {:>10} {:>10}\n", group, item, train, test);
    };
    out += fmt::format("Dataset {} (loaded in {:.2f} s)\n\n", r.dir.string(), r.load_seconds);
    row("", "", "Train", "Test");
    row("User", "# Users", thousands(s.train.n_users), thousands(s.test.n_users));
    row("", "# Avg. profile tokens", num(s.avg_profile_tokens), "");
    row("", "# Avg. behavior length", num(s.train.avg_behaviour_length), num(s.test.avg_behaviour_length));
    row("", "# Avg. behavior tokens", num(s.train.avg_behaviour_tokens), num(s.test.avg_behaviour_tokens));
    row("Instruction", "# Instructions", thousands(s.train.n_instructions), thousands(s.test.n_instructions));
    for (TaskType t : kAllTaskTypes) {
      int k = static_cast<int>(t);
      auto share = [&](const SplitStats& ss) {
        double pct = ss.n_instructions ? 100.0 * static_cast<double>(ss.n_by_type[k]) / static_cast<double>(ss.n_instructions) : 0;
        return fmt::format("{} ({:.0f}%)", thousands(ss.n_by_type[k]), pct);
      };
      row("", fmt::format("  {}", to_string(t)), share(s.train), share(s.test));
    }
    row("", "# Avg. tokens", num(s.train.avg_instruction_tokens), num(s.test.avg_instruction_tokens));
    for (TaskType t : kAllTaskTypes) {
      int k = static_cast<int>(t);
      row("", fmt::format("  {}", to_string(t)), num(s.train.avg_tokens_by_type[k]), num(s.test.avg_tokens_by_type[k]));
    }
    row("Product", "# Products", thousands(s.n_products), "");
    row("", "# Avg. tokens", num(s.avg_product_tokens), "");
    out += fmt::format("\n{} users ({} with a profile), {} behaviours, {} products bought, {} item ids\n", thousands(s.n_users),
                       thousands(s.n_profiles), thousands(s.n_behaviours), thousands(s.n_products_in_behaviours),
                       thousands(s.n_item_ids));
    out += "Tokens are basic tokens (words and punctuation marks; docs/data.md).\n";
  }
  out += fmt::format("\nChecks: {} errors, {} warnings\n", r.diag.n_errors(), r.diag.n_warnings());
  for (Severity sev : {Severity::kError, Severity::kWarning})
    for (const auto& [check, n] : r.diag.counts(sev))
      out += fmt::format("  {:<8} {:<22} {}\n", sev == Severity::kError ? "error" : "warning", check, n);
  if (!r.diag.kept().empty()) {
    out += "\nFirst problems of each kind:\n";
    for (const auto& d : r.diag.kept()) out += "  " + d.to_string() + "\n";
  }
  return out;
}

std::string format_report_json(const ValidationReport& r) {
  nlohmann::ordered_json j;
  j["dataset"] = r.dir.string();
  j["loaded"] = r.loaded;
  if (r.loaded) {
    const auto& s = r.stats;
    j["load_seconds"] = r.load_seconds;
    j["users"] = s.n_users;
    j["profiles"] = s.n_profiles;
    j["behaviours"] = s.n_behaviours;
    j["products"] = s.n_products;
    j["products_in_behaviours"] = s.n_products_in_behaviours;
    j["item_ids"] = s.n_item_ids;
    j["avg_profile_tokens"] = s.avg_profile_tokens;
    j["avg_product_tokens"] = s.avg_product_tokens;
    for (auto [name, ss] : {std::pair{"train", &s.train}, std::pair{"test", &s.test}}) {
      auto& o = j[name];
      o["users"] = ss->n_users;
      o["avg_behaviour_length"] = ss->avg_behaviour_length;
      o["avg_behaviour_tokens"] = ss->avg_behaviour_tokens;
      o["instructions"] = ss->n_instructions;
      o["avg_instruction_tokens"] = ss->avg_instruction_tokens;
      for (TaskType t : kAllTaskTypes) {
        int k = static_cast<int>(t);
        o["by_type"][std::string(to_string(t))] = {{"instructions", ss->n_by_type[k]},
                                                   {"avg_tokens", ss->avg_tokens_by_type[k]}};
      }
    }
  }
  j["errors"] = r.diag.n_errors();
  j["warnings"] = r.diag.n_warnings();
  for (Severity sev : {Severity::kError, Severity::kWarning})
    for (const auto& [check, n] : r.diag.counts(sev))
      j[sev == Severity::kError ? "error_counts" : "warning_counts"][check] = n;
  auto& problems = j["problems"] = nlohmann::json::array();
  for (const auto& d : r.diag.kept()) problems.push_back(d.to_string());
  return j.dump(2);
}

}  // namespace pwab::data
