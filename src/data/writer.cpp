#include "data/writer.h"

#include <algorithm>

#include "core/json_writer.h"
#include "core/sys.h"

namespace pwab::data {
namespace fs = std::filesystem;

std::string product_json(const Product& p) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("main_category").value(p.main_category);
  w.key("title").value(p.title);
  w.key("average_rating").value(p.average_rating);
  w.key("rating_number").value(p.rating_number);
  w.key("features").string_array(p.features);
  w.key("description").string_array(p.description);
  w.key("price").value(p.price);
  w.key("store");
  if (p.store) w.value(*p.store); else w.null();
  w.key("categories").string_array(p.categories);
  w.key("details").raw(p.details_json);
  w.key("parent_asin").value(p.parent_asin);
  w.end_object();
  return out;
}

namespace {

void write_review(JsonWriter& w, const Review& r) {
  w.begin_object();
  w.key("rating").value(r.rating);
  w.key("title").value(r.title);
  w.key("text").value(r.text);
  w.key("parent_asin").value(r.parent_asin);
  w.key("timestamp").value(r.timestamp);
  w.end_object();
}

std::string part_name(const std::string& stem, int part, int parts) {
  return parts <= 1 ? stem + ".json" : stem + "_part_" + std::to_string(part + 1) + ".json";
}

// Splits [0, n) into `parts` contiguous ranges of near-equal size.
std::pair<std::size_t, std::size_t> part_range(std::size_t n, int part, int parts) {
  std::size_t p = static_cast<std::size_t>(std::max(parts, 1));
  return {n * static_cast<std::size_t>(part) / p, n * static_cast<std::size_t>(part + 1) / p};
}

}  // namespace

void write_dataset(const Dataset& ds, const fs::path& dir, const WriteOptions& options) {
  fs::create_directories(dir);
  // Files of an earlier dataset in another part layout would make the directory ambiguous to the loader.
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if ((name.starts_with("all_products") || name.starts_with("user_history")) && name.ends_with(".json"))
      fs::remove(entry.path());
  }
  // Each product's JSON is made once: history and tasks embed the full record again.
  std::vector<std::string> products(ds.products().size());
  for (std::size_t i = 0; i < products.size(); ++i) products[i] = product_json(ds.products()[i]);

  int n_product_parts = std::max(1, options.product_parts);
  for (int part = 0; part < n_product_parts; ++part) {
    auto [lo, hi] = part_range(products.size(), part, n_product_parts);
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    for (std::size_t i = lo; i < hi; ++i) w.key(ds.products()[i].parent_asin).raw(products[i]);
    w.end_object();
    write_file_atomic(dir / part_name("all_products", part, n_product_parts), out);
  }

  int n_history_parts = std::max(1, options.history_parts);
  std::vector<UserId> with_history;
  for (UserId u = 0; u < ds.users().size(); ++u)
    if (!ds.user(u).behaviours.empty()) with_history.push_back(u);
  for (int part = 0; part < n_history_parts; ++part) {
    auto [lo, hi] = part_range(with_history.size(), part, n_history_parts);
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    for (std::size_t i = lo; i < hi; ++i) {
      const User& u = ds.user(with_history[i]);
      w.key(u.id).begin_array();
      for (const auto& b : u.behaviours) {
        w.begin_object();
        w.key("product_info").raw(products[b.product]);
        w.key("review");
        write_review(w, b.review);
        w.key("split").value(to_string(b.split));
        w.end_object();
      }
      w.end_array();
    }
    w.end_object();
    write_file_atomic(dir / part_name("user_history", part, n_history_parts), out);
  }

  {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    for (const auto& u : ds.users()) {
      if (!u.has_profile) continue;
      w.key(u.id).begin_object().key("user_profile").begin_object();
      for (const auto& [k, v] : u.profile.fields) w.key(k).value(v);
      w.end_object().end_object();
    }
    w.end_object();
    write_file_atomic(dir / "user_profiles.json", out);
  }

  {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    for (Split split : {Split::kTrain, Split::kTest}) {
      w.key(to_string(split)).begin_array();
      for (const auto& t : ds.tasks(split)) {
        w.begin_object();
        w.key("user_id").value(ds.user(t.user).id);
        w.key("task").value(t.instruction);
        w.key("type").value(to_string(t.type));
        w.key("timestamp").value(t.timestamp);
        w.key("target").begin_object();
        w.key("product_info").raw(products[t.target_product]);
        w.key("review");
        write_review(w, t.target_review);
        w.end_object();
        w.end_object();
      }
      w.end_array();
    }
    w.end_object();
    write_file_atomic(dir / "user_instructions.json", out);
  }

  if (options.item_ids && !ds.item_ids().empty()) {
    std::string out;
    JsonWriter w(out);
    w.begin_object();
    for (const auto& [asin, id] : ds.item_ids()) w.key(asin).value(id);
    w.end_object();
    write_file_atomic(dir / "item_ids.json", out);
  }
}

}  // namespace pwab::data
