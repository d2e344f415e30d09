#include "data/loader.h"
#include "data/json_text.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>
#include <unordered_set>

#include "core/error.h"
#include "core/sys.h"

namespace pwab::data {
namespace fs = std::filesystem;
namespace dom = simdjson::dom;

// ---------------------------------------------------------------------------------------------------------
// Finding the files
// ---------------------------------------------------------------------------------------------------------
namespace {

// Parts named `<stem>_part_<N>.json`, sorted by N; or the single `<stem>.json`.
std::vector<fs::path> find_parts(const fs::path& dir, const std::string& stem) {
  std::vector<std::pair<long, fs::path>> parts;
  const std::regex part_re(stem + R"(_part_(\d+)\.json)");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, part_re)) parts.emplace_back(std::stol(m[1].str()), entry.path());
  }
  std::sort(parts.begin(), parts.end());
  fs::path single = dir / (stem + ".json");
  bool has_single = fs::exists(single);
  if (!parts.empty() && has_single)
    throw DataError(dir.string() + ": both " + stem + ".json and " + stem +
                    "_part_*.json are present; keep one layout");
  if (has_single) return {single};
  std::vector<fs::path> out;
  for (auto& [n, p] : parts) out.push_back(p);
  return out;
}

}  // namespace

DatasetFiles find_dataset_files(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw DataError(dir.string() + ": not a directory");
  DatasetFiles f;
  f.products = find_parts(dir, "all_products");
  f.history = find_parts(dir, "user_history");
  f.instructions = dir / "user_instructions.json";
  f.profiles = dir / "user_profiles.json";
  std::vector<std::string> missing;
  if (f.products.empty()) missing.push_back("all_products.json (or all_products_part_*.json)");
  if (f.history.empty()) missing.push_back("user_history.json (or user_history_part_*.json)");
  if (!fs::exists(f.instructions)) missing.push_back("user_instructions.json");
  if (!fs::exists(f.profiles)) missing.push_back("user_profiles.json");
  if (!missing.empty()) {
    std::string msg = dir.string() + ": not a PersonalWAB dataset directory; missing ";
    for (std::size_t i = 0; i < missing.size(); ++i) msg += (i ? ", " : "") + missing[i];
    throw DataError(msg);
  }
  if (fs::exists(dir / "item_ids.json")) f.item_ids = dir / "item_ids.json";
  return f;
}

// ---------------------------------------------------------------------------------------------------------
// Reading fields with located errors
// ---------------------------------------------------------------------------------------------------------
namespace {

std::string quote_key(std::string_view k) {
  std::string out = "[\"";
  out += k;
  out += "\"]";
  return out;
}

// Location of the record being read: the file, and what the record label and the JSON path of the record's root
// are made of. The two strings are built only when a problem is reported (most records have none).
struct Where {
  std::string_view file;
  Diagnostics* diag;
  //! With a noun ("product", "user", "item"): record `noun "key"`, root `$["key"]`; without: record `key`,
  //! root `$.key` (the splits of user_instructions.json).
  const char* noun = nullptr;
  std::string_view key;
  //! Appended as `[i]` to the root, and to the record when there is no noun (`test[3]`, `$["A1..."][3]`).
  std::optional<std::size_t> index;

  std::string record() const {
    std::string r;
    if (noun) {
      r = noun;
      r += " \"";
      r += key;
      r += '"';
    } else {
      r = key;
      if (index) r += "[" + std::to_string(*index) + "]";
    }
    return r;
  }
  std::string root() const {
    std::string r = noun ? "$" + quote_key(key) : "$." + std::string(key);
    if (index) r += "[" + std::to_string(*index) + "]";
    return r;
  }
  void error(std::string_view check, std::string_view sub, std::string message) const {
    diag->error(std::string(check), std::string(file), record(), root() + std::string(sub), std::move(message));
  }
  void warning(std::string_view check, std::string_view sub, std::string message) const {
    diag->warning(std::string(check), std::string(file), record(), root() + std::string(sub), std::move(message));
  }
  void wrong_type(std::string_view sub, const char* expected, dom::element got) const {
    error("schema", sub, std::string("expected ") + expected + ", got " + json_type_name(got.type()) + " " + json_preview(got));
  }
};

enum class Need { kRequired, kOptional };

std::string sub_key(std::string_view prefix, std::string_view key) {
  std::string s(prefix);
  bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (plain) {
    s += '.';
    s += key;
  } else {
    s += quote_key(key);
  }
  return s;
}

// The fields of one JSON object, walked once. simdjson's object[key] walks the object from its start on every
// call, so reading a record of k fields cost about k*k/2 key comparisons and tape walks; here a lookup compares
// string_views. The first field with the key wins, as with object[key].
class Fields {
 public:
  //! `walk` false for an object read for one key only: each lookup then asks simdjson.
  explicit Fields(dom::object o, bool walk = true) : obj_(o), overflow_(!walk) {
    if (!walk) return;
    for (auto [k, v] : o) {
      if (n_ == kMax) {
        overflow_ = true;
        break;
      }
      keys_[n_] = k;
      values_[n_] = v;
      ++n_;
    }
  }
  bool get(std::string_view key, dom::element& out) const {
    for (std::size_t i = 0; i < n_; ++i)
      if (keys_[i] == key) {
        out = values_[i];
        return true;
      }
    return overflow_ && obj_[key].get(out) == simdjson::SUCCESS;
  }

 private:
  static constexpr std::size_t kMax = 24;
  dom::object obj_;
  std::array<std::string_view, kMax> keys_;
  std::array<dom::element, kMax> values_;
  std::size_t n_ = 0;
  bool overflow_ = false;
};

// Looks up `key`; reports a missing required field. Returns false if absent.
bool lookup(const Fields& o, std::string_view key, Need need, const Where& w, std::string_view prefix,
            dom::element& out) {
  if (o.get(key, out)) return true;
  if (need == Need::kRequired) w.error("schema", prefix, "missing required field \"" + std::string(key) + "\"");
  return false;
}

bool read_string(const Fields& o, std::string_view key, Need need, const Where& w, std::string_view prefix,
                 std::string& out, bool null_ok = false) {
  dom::element e;
  if (!lookup(o, key, need, w, prefix, e)) return need == Need::kOptional;
  if (e.is_string()) {
    out = std::string(e.get_string().value_unsafe());
    return true;
  }
  if (null_ok && e.is_null()) return true;
  w.wrong_type(sub_key(prefix, key), "a string", e);
  return false;
}

bool read_int(const Fields& o, std::string_view key, const Where& w, std::string_view prefix, int64_t& out) {
  dom::element e;
  if (!lookup(o, key, Need::kRequired, w, prefix, e)) return false;
  if (e.is_int64()) {
    out = e.get_int64().value_unsafe();
    return true;
  }
  if (e.is_double()) {  // tolerate 1700000000000.0, never 17.5
    double d = e.get_double().value_unsafe();
    if (d == static_cast<double>(static_cast<int64_t>(d))) {
      out = static_cast<int64_t>(d);
      return true;
    }
  }
  w.wrong_type(sub_key(prefix, key), "an integer", e);
  return false;
}

// A JSON scalar kept with its Python type. `allow_str` for fields whose type varies (price).
bool read_scalar(const Fields& o, std::string_view key, Need need, const Where& w, std::string_view prefix,
                 py::Scalar& out, bool allow_str) {
  dom::element e;
  if (!lookup(o, key, need, w, prefix, e)) return need == Need::kOptional;
  switch (e.type()) {
    case dom::element_type::INT64: out = py::Scalar::of_int(e.get_int64().value_unsafe()); return true;
    case dom::element_type::UINT64:
      out = py::Scalar::of_int(static_cast<int64_t>(e.get_uint64().value_unsafe()));
      return true;
    case dom::element_type::DOUBLE: out = py::Scalar::of_float(e.get_double().value_unsafe()); return true;
    case dom::element_type::NULL_VALUE: out = py::Scalar::none(); return true;
    case dom::element_type::STRING:
      if (allow_str) {
        out = py::Scalar::of_str(std::string(e.get_string().value_unsafe()));
        return true;
      }
      break;
    default: break;
  }
  w.wrong_type(sub_key(prefix, key), allow_str ? "a number, a string or null" : "a number or null", e);
  return false;
}

// A list of strings; null or missing gives an empty list, a lone string becomes a one-element list.
bool read_string_list(const Fields& o, std::string_view key, const Where& w, std::string_view prefix,
                      std::vector<std::string>& out) {
  dom::element e;
  if (!lookup(o, key, Need::kOptional, w, prefix, e) || e.is_null()) return true;
  if (e.is_string()) {
    out.emplace_back(e.get_string().value_unsafe());
    return true;
  }
  dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) {
    w.wrong_type(sub_key(prefix, key), "a list of strings", e);
    return false;
  }
  out.reserve(arr.size());
  std::size_t i = 0;
  for (dom::element item : arr) {
    if (item.is_string()) {
      out.emplace_back(item.get_string().value_unsafe());
    } else if (item.is_number()) {  // seen in scraped meta: keep its text rather than reject the product
      out.push_back(simdjson::minify(item));
    } else {
      w.wrong_type(sub_key(prefix, key) + "[" + std::to_string(i) + "]", "a string", item);
      return false;
    }
    ++i;
  }
  return true;
}

bool read_product(dom::element e, const Where& w, std::string_view prefix, Product& p) {
  dom::object obj;
  if (e.get_object().get(obj) != simdjson::SUCCESS) {
    w.wrong_type(prefix, "a product object", e);
    return false;
  }
  const Fields o(obj);
  bool ok = read_string(o, "parent_asin", Need::kRequired, w, prefix, p.parent_asin);
  if (ok && p.parent_asin.empty()) {
    w.error("schema", sub_key(prefix, "parent_asin"), "parent_asin is empty");
    ok = false;
  }
  ok &= read_string(o, "main_category", Need::kOptional, w, prefix, p.main_category, /*null_ok=*/true);
  ok &= read_string(o, "title", Need::kOptional, w, prefix, p.title, /*null_ok=*/true);
  ok &= read_scalar(o, "average_rating", Need::kOptional, w, prefix, p.average_rating, false);
  ok &= read_scalar(o, "rating_number", Need::kOptional, w, prefix, p.rating_number, false);
  ok &= read_string_list(o, "features", w, prefix, p.features);
  ok &= read_string_list(o, "description", w, prefix, p.description);
  ok &= read_scalar(o, "price", Need::kOptional, w, prefix, p.price, /*allow_str=*/true);
  std::string store;
  dom::element se;
  if (o.get("store", se) && !se.is_null()) {
    if (read_string(o, "store", Need::kOptional, w, prefix, store)) p.store = std::move(store);
    else ok = false;
  }
  ok &= read_string_list(o, "categories", w, prefix, p.categories);
  dom::element de;
  if (o.get("details", de)) {
    if (de.is_object() || de.is_string()) {
      p.details_json = simdjson::minify(de);
    } else if (de.is_null()) {
      p.details_json = "{}";
    } else {
      w.wrong_type(sub_key(prefix, "details"), "an object or a string", de);
      ok = false;
    }
  }
  return ok;
}

bool read_review(dom::element e, const Where& w, std::string_view prefix, Review& r) {
  dom::object obj;
  if (e.get_object().get(obj) != simdjson::SUCCESS) {
    w.wrong_type(prefix, "a review object", e);
    return false;
  }
  const Fields o(obj);
  bool ok = read_scalar(o, "rating", Need::kRequired, w, prefix, r.rating, false);
  if (ok && r.rating.is_none()) {
    w.error("schema", sub_key(prefix, "rating"), "rating is null");
    ok = false;
  }
  ok &= read_string(o, "title", Need::kOptional, w, prefix, r.title, /*null_ok=*/true);
  ok &= read_string(o, "text", Need::kRequired, w, prefix, r.text);
  ok &= read_string(o, "parent_asin", Need::kRequired, w, prefix, r.parent_asin);
  ok &= read_int(o, "timestamp", w, prefix, r.timestamp);
  return ok;
}

// ---------------------------------------------------------------------------------------------------------
// One file → raw records (product references still as ASIN strings)
// ---------------------------------------------------------------------------------------------------------

struct RawBehaviour {
  std::string asin;
  Behaviour behaviour;  // product id filled in later
  std::size_t position;
};
struct RawHistory {
  std::string user_id;
  std::vector<RawBehaviour> behaviours;
};
struct RawTask {
  std::string user_id;
  std::string target_asin;
  Task task;
};

enum class FileKind { kProducts, kHistory, kInstructions, kProfiles, kItemIds };

struct ParsedFile {
  FileKind kind;
  std::string name;
  Diagnostics diag;
  std::vector<Product> products;
  std::vector<RawHistory> history;
  std::vector<RawTask> tasks;
  std::vector<std::pair<std::string, Profile>> profiles;
  std::vector<std::pair<std::string, int64_t>> item_ids;
};

FileKind kind_of(std::string_view name) {
  if (name.starts_with("all_products")) return FileKind::kProducts;
  if (name.starts_with("user_history")) return FileKind::kHistory;
  if (name.starts_with("user_instructions")) return FileKind::kInstructions;
  if (name.starts_with("user_profiles")) return FileKind::kProfiles;
  return FileKind::kItemIds;
}

bool root_object(dom::element root, ParsedFile& out, dom::object& obj, const char* what) {
  if (root.get_object().get(obj) == simdjson::SUCCESS) return true;
  out.diag.error("schema", out.name, "", "$", std::string("expected the top level to be an object (") + what +
                                                   "), got " + json_type_name(root.type()));
  return false;
}

void parse_products(dom::element root, ParsedFile& out) {
  dom::object obj;
  if (!root_object(root, out, obj, "parent_asin -> product")) return;
  out.products.reserve(obj.size());
  Where w{out.name, &out.diag, "product", {}, {}};
  for (auto [key, value] : obj) {
    w.key = key;
    Product p;
    if (!read_product(value, w, "", p)) continue;
    if (p.parent_asin != key) {
      w.error("schema", ".parent_asin",
              "parent_asin \"" + p.parent_asin + "\" differs from its key \"" + std::string(key) + "\"");
      continue;
    }
    out.products.push_back(std::move(p));
  }
}

void parse_history(dom::element root, ParsedFile& out) {
  dom::object obj;
  if (!root_object(root, out, obj, "user_id -> list of behaviours")) return;
  out.history.reserve(obj.size());
  Where w{out.name, &out.diag, "user", {}, {}};
  for (auto [key, value] : obj) {
    w.key = key;
    w.index.reset();
    RawHistory h;
    h.user_id = std::string(key);
    dom::array arr;
    if (value.get_array().get(arr) != simdjson::SUCCESS) {
      w.wrong_type("", "a list of behaviours", value);
      continue;
    }
    h.behaviours.reserve(arr.size());
    std::size_t i = 0;
    for (dom::element item : arr) {
      w.index = i;
      std::size_t position = i++;
      dom::object item_obj;
      if (item.get_object().get(item_obj) != simdjson::SUCCESS) {
        w.wrong_type("", "a behaviour object", item);
        continue;
      }
      const Fields io(item_obj);
      RawBehaviour rb;
      rb.position = position;
      dom::element pe, re;
      bool ok = lookup(io, "product_info", Need::kRequired, w, "", pe);
      ok &= lookup(io, "review", Need::kRequired, w, "", re);
      if (!ok) continue;
      // The catalogue holds the product; here only its key is needed (and must be a string).
      dom::object po;
      if (pe.get_object().get(po) != simdjson::SUCCESS) {
        w.wrong_type(".product_info", "a product object", pe);
        continue;
      }
      if (!read_string(Fields(po, /*walk=*/false), "parent_asin", Need::kRequired, w, ".product_info", rb.asin)) continue;
      if (!read_review(re, w, ".review", rb.behaviour.review)) continue;
      std::string split;
      if (!read_string(io, "split", Need::kRequired, w, "", split)) continue;
      auto s = parse_split(split);
      if (!s) {
        w.error("schema", ".split", "split must be \"history\", \"train\" or \"test\", got \"" + split + "\"");
        continue;
      }
      rb.behaviour.split = *s;
      if (rb.behaviour.review.parent_asin != rb.asin)
        w.warning("review-asin", ".review.parent_asin",
                  "review is for \"" + rb.behaviour.review.parent_asin + "\" but product_info is \"" + rb.asin + "\"");
      h.behaviours.push_back(std::move(rb));
    }
    out.history.push_back(std::move(h));
  }
}

void parse_instructions(dom::element root, ParsedFile& out) {
  dom::object obj;
  if (!root_object(root, out, obj, "{\"train\": [...], \"test\": [...]}")) return;
  Where w{out.name, &out.diag, nullptr, {}, {}};
  for (auto [key, value] : obj) {
    w.key = key;
    w.index.reset();
    auto split = parse_split(key);
    if (!split || *split == Split::kHistory) {
      out.diag.warning("schema", out.name, "", "$" + quote_key(key),
                       "unknown split \"" + std::string(key) + "\" ignored (expected \"train\" and \"test\")");
      continue;
    }
    dom::array arr;
    if (value.get_array().get(arr) != simdjson::SUCCESS) {
      w.wrong_type("", "a list of tasks", value);
      continue;
    }
    std::size_t i = 0;
    for (dom::element item : arr) {
      w.index = i;
      ++i;
      dom::object task_obj;
      if (item.get_object().get(task_obj) != simdjson::SUCCESS) {
        w.wrong_type("", "a task object", item);
        continue;
      }
      const Fields o(task_obj);
      RawTask rt;
      rt.task.split = *split;
      rt.task.index = static_cast<uint32_t>(i - 1);  // position in the file, for messages
      bool ok = read_string(o, "user_id", Need::kRequired, w, "", rt.user_id);
      ok &= read_string(o, "task", Need::kRequired, w, "", rt.task.instruction);
      if (ok && rt.task.instruction.empty()) {
        w.error("schema", ".task", "the instruction is empty");
        ok = false;
      }
      std::string type;
      if (read_string(o, "type", Need::kRequired, w, "", type)) {
        auto t = parse_task_type(type);
        if (t) {
          rt.task.type = *t;
        } else {
          w.error("schema", ".type", "type must be \"search\", \"recommend\" or \"review\", got \"" + type + "\"");
          ok = false;
        }
      } else {
        ok = false;
      }
      ok &= read_int(o, "timestamp", w, "", rt.task.timestamp);
      dom::element te;
      if (lookup(o, "target", Need::kRequired, w, "", te)) {
        dom::object target_obj;
        if (te.get_object().get(target_obj) != simdjson::SUCCESS) {
          w.wrong_type(".target", "an object", te);
          ok = false;
        } else {
          const Fields to(target_obj);
          dom::element pe, re;
          if (lookup(to, "product_info", Need::kRequired, w, ".target", pe)) {
            dom::object po;
            if (pe.get_object().get(po) == simdjson::SUCCESS)
              ok &= read_string(Fields(po, /*walk=*/false), "parent_asin", Need::kRequired, w, ".target.product_info",
                                rt.target_asin);
            else {
              w.wrong_type(".target.product_info", "a product object", pe);
              ok = false;
            }
          } else {
            ok = false;
          }
          if (lookup(to, "review", Need::kRequired, w, ".target", re))
            ok &= read_review(re, w, ".target.review", rt.task.target_review);
          else
            ok = false;
        }
      } else {
        ok = false;
      }
      if (ok) out.tasks.push_back(std::move(rt));
    }
  }
}

void parse_profiles(dom::element root, ParsedFile& out) {
  dom::object obj;
  if (!root_object(root, out, obj, "user_id -> {\"user_profile\": {...}}")) return;
  out.profiles.reserve(obj.size());
  Where w{out.name, &out.diag, "user", {}, {}};
  for (auto [key, value] : obj) {
    w.key = key;
    dom::object outer, fields;
    dom::element pe;
    if (value.get_object().get(outer) != simdjson::SUCCESS) {
      w.wrong_type("", "an object with \"user_profile\"", value);
      continue;
    }
    if (!lookup(Fields(outer, /*walk=*/false), "user_profile", Need::kRequired, w, "", pe)) continue;
    if (pe.get_object().get(fields) != simdjson::SUCCESS) {
      w.wrong_type(".user_profile", "an object of string fields", pe);
      continue;
    }
    Profile p;
    bool ok = true;
    for (auto [fk, fv] : fields) {
      if (fv.is_string()) {
        p.fields.emplace_back(std::string(fk), std::string(fv.get_string().value_unsafe()));
      } else if (fv.is_null()) {
        p.fields.emplace_back(std::string(fk), std::string());
      } else {
        w.wrong_type(sub_key(".user_profile", fk), "a string", fv);
        ok = false;
      }
    }
    if (!ok) continue;
    for (auto name : kProfileFields)
      if (p.get(name).empty())
        w.warning("profile-field", ".user_profile", "profile field \"" + std::string(name) + "\" is missing or empty");
    out.profiles.emplace_back(std::string(key), std::move(p));
  }
}

void parse_item_ids(dom::element root, ParsedFile& out) {
  dom::object obj;
  if (!root_object(root, out, obj, "parent_asin -> item id")) return;
  out.item_ids.reserve(obj.size());
  Where w{out.name, &out.diag, "item", {}, {}};
  for (auto [key, value] : obj) {
    if (!value.is_int64() || value.get_int64().value_unsafe() <= 0) {
      w.key = key;
      w.wrong_type("", "a positive integer (0 is SASRec's padding id)", value);
      continue;
    }
    out.item_ids.emplace_back(std::string(key), value.get_int64().value_unsafe());
  }
}

// Where a simdjson syntax error is: simdjson only gives a code, so the slow path re-parses with nlohmann.
std::string locate_syntax_error(std::string_view json) {
  try {
    auto parsed = nlohmann::json::parse(json.begin(), json.end());
    (void)parsed;
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    auto pos = what.find("at line");
    return pos == std::string::npos ? what : what.substr(pos);
  } catch (...) {
  }
  return {};
}

void parse_json_text(std::string_view name, simdjson::padded_string_view text, dom::parser& parser,
                     ParsedFile& out) {
  dom::element root;
  auto err = parser.parse(text).get(root);
  if (err) {
    std::string where = locate_syntax_error(std::string_view(text.data(), text.size()));
    out.diag.error("json", out.name, "", "",
                   std::string("invalid JSON: ") + simdjson::error_message(err) + (where.empty() ? "" : " (" + where + ")"));
    return;
  }
  switch (out.kind) {
    case FileKind::kProducts: parse_products(root, out); break;
    case FileKind::kHistory: parse_history(root, out); break;
    case FileKind::kInstructions: parse_instructions(root, out); break;
    case FileKind::kProfiles: parse_profiles(root, out); break;
    case FileKind::kItemIds: parse_item_ids(root, out); break;
  }
}

// A file mapped read-only with at least SIMDJSON_PADDING readable (zero) bytes after its end: simdjson parses
// the page cache in place, with no copy into a fresh buffer and no page faults on one (reading into a
// padded_string was a third of the loader's page faults). An anonymous mapping one page longer than the file is
// reserved first and the file mapped over its start, so the padding is there whatever the file's size.
class MappedFile {
 public:
  explicit MappedFile(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
      std::size_t size = static_cast<std::size_t>(st.st_size);
      std::size_t span = (size + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
      void* base = ::mmap(nullptr, span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (base != MAP_FAILED) {
        void* file = ::mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0);
        if (file == base) {
          data_ = static_cast<const char*>(base);
          size_ = size;
          span_ = span;
        } else {
          ::munmap(base, span);
        }
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), span_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool ok() const { return data_ != nullptr; }
  simdjson::padded_string_view view() const { return simdjson::padded_string_view(data_, size_, span_); }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0, span_ = 0;
};

void parse_file(const fs::path& path, dom::parser& parser, ParsedFile& out) {
  MappedFile mapped(path);
  if (mapped.ok()) {
    parse_json_text(out.name, mapped.view(), parser, out);
    return;
  }
  // Empty files, special files, no mmap: read as before (the same errors).
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path.string()).get(text) != simdjson::SUCCESS) {
    out.diag.error("io", out.name, "", "", "cannot read the file");
    return;
  }
  parse_json_text(out.name, text, parser, out);
}

// ---------------------------------------------------------------------------------------------------------
// Joining the parsed files into a Dataset
// ---------------------------------------------------------------------------------------------------------

void add_products(Dataset& ds, std::vector<ParsedFile>& files, Diagnostics& diag) {
  // Python merges the parts with dict.update: a repeated key replaces the earlier record in its first place.
  // Keep that, but say so.
  std::size_t n = 0;
  for (const auto& f : files)
    if (f.kind == FileKind::kProducts) n += f.products.size();
  ds.reserve_products(n);
  for (auto& f : files) {
    if (f.kind != FileKind::kProducts) continue;
    for (auto& p : f.products) {
      if (auto id = ds.find_product(p.parent_asin)) {
        diag.warning("duplicate-key", f.name, "product \"" + p.parent_asin + "\"", "$" + quote_key(p.parent_asin),
                     "product appears more than once; the later record replaces the earlier one");
        ds.mutable_product(*id) = std::move(p);
      } else {
        ds.add_product(std::move(p));
      }
    }
    f.products.clear();
    f.products.shrink_to_fit();
  }
}

void add_users(Dataset& ds, std::vector<ParsedFile>& files, Diagnostics& diag) {
  // Users are the union of the profile keys (in file order) and the history keys.
  for (auto& f : files) {
    if (f.kind != FileKind::kProfiles) continue;
    for (auto& [id, profile] : f.profiles) {
      if (auto existing = ds.find_user(id)) {
        diag.warning("duplicate-key", f.name, "user \"" + id + "\"", "$" + quote_key(id),
                     "user appears more than once; the later profile replaces the earlier one");
        ds.mutable_user(*existing).profile = std::move(profile);
        continue;
      }
      User u;
      u.id = id;
      u.profile = std::move(profile);
      u.has_profile = true;
      ds.add_user(std::move(u));
    }
  }
  std::vector<bool> has_history(ds.users().size(), false);
  for (auto& f : files) {
    if (f.kind != FileKind::kHistory) continue;
    for (auto& h : f.history) {
      auto uid = ds.find_user(h.user_id);
      if (!uid) {
        diag.warning("user-without-profile", f.name, "user \"" + h.user_id + "\"", "$" + quote_key(h.user_id),
                     "user has a history but no profile in user_profiles.json");
        User u;
        u.id = h.user_id;
        uid = ds.add_user(std::move(u));
        has_history.push_back(false);
      }
      if (has_history[*uid])
        diag.warning("duplicate-key", f.name, "user \"" + h.user_id + "\"", "$" + quote_key(h.user_id),
                     "user's history appears more than once; the later list replaces the earlier one");
      has_history[*uid] = true;
      auto& behaviours = ds.mutable_user(*uid).behaviours;
      behaviours.clear();
      behaviours.reserve(h.behaviours.size());
      for (auto& rb : h.behaviours) {
        auto pid = ds.find_product(rb.asin);
        if (!pid) {
          diag.error("history-asin", f.name, "user \"" + h.user_id + "\"",
                     "$" + quote_key(h.user_id) + "[" + std::to_string(rb.position) + "].product_info.parent_asin",
                     "product \"" + rb.asin + "\" is not in the catalogue (all_products)");
          continue;
        }
        rb.behaviour.product = *pid;
        behaviours.push_back(std::move(rb.behaviour));
      }
    }
    f.history.clear();
    f.history.shrink_to_fit();
  }
  for (UserId u = 0; u < ds.users().size(); ++u)
    if (!has_history[u])
      diag.warning("user-without-history", "user_history", "user \"" + ds.user(u).id + "\"", "",
                   "user has a profile but no history");
}

void add_tasks(Dataset& ds, std::vector<ParsedFile>& files, Diagnostics& diag) {
  StringMap<std::string> seen_instructions;  // instruction -> where it was first seen
  for (auto& f : files) {
    if (f.kind != FileKind::kInstructions) continue;
    for (auto& rt : f.tasks) {
      std::string label = std::string(to_string(rt.task.split)) + "[" + std::to_string(rt.task.index) + "]";
      std::string root = "$." + label;
      bool ok = true;
      auto uid = ds.find_user(rt.user_id);
      if (!uid) {
        diag.error("task-user", f.name, label, root + ".user_id",
                   "user \"" + rt.user_id + "\" has neither a profile nor a history");
        ok = false;
      }
      auto pid = ds.find_product(rt.target_asin);
      if (!pid) {
        diag.error("task-target", f.name, label, root + ".target.product_info.parent_asin",
                   "target product \"" + rt.target_asin + "\" is not in the catalogue (all_products)");
        ok = false;
      }
      auto [it, fresh] = seen_instructions.emplace(rt.task.instruction, label);
      if (!fresh) {
        diag.error("instruction-unique", f.name, label, root + ".task",
                   "the same instruction text is already used by " + it->second +
                       " (instructions key PUMA's result files, so they must be unique across splits)");
      }
      if (!ok) continue;
      rt.task.user = *uid;
      rt.task.target_product = *pid;
      ds.add_task(std::move(rt.task));
    }
  }
}

void add_item_ids(Dataset& ds, std::vector<ParsedFile>& files, Diagnostics& diag) {
  for (auto& f : files) {
    if (f.kind != FileKind::kItemIds) continue;
    std::unordered_set<int64_t> ids;
    for (const auto& [asin, id] : f.item_ids) {
      if (!ids.insert(id).second)
        diag.error("item-id", f.name, "item \"" + asin + "\"", "$" + quote_key(asin),
                   "item id " + std::to_string(id) + " is used by more than one product");
      if (!ds.find_product(asin))
        diag.warning("item-id", f.name, "item \"" + asin + "\"", "$" + quote_key(asin),
                     "item is not in the catalogue; the recommender can never return it");
    }
    ds.set_item_ids(std::move(f.item_ids));
  }
}

}  // namespace

Dataset load_dataset(const fs::path& dir, Diagnostics& diag, const LoadOptions& options) {
  DatasetFiles found = find_dataset_files(dir);
  std::vector<fs::path> paths = found.products;
  paths.insert(paths.end(), found.history.begin(), found.history.end());
  paths.push_back(found.profiles);
  paths.push_back(found.instructions);
  if (found.item_ids) paths.push_back(*found.item_ids);

  std::vector<ParsedFile> parsed(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    parsed[i].name = paths[i].filename().string();
    parsed[i].kind = kind_of(parsed[i].name);
  }
  // Largest files first, so the two workers finish together.
  std::vector<std::size_t> order(paths.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<std::uintmax_t> sizes(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) sizes[i] = fs::file_size(paths[i]);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return sizes[a] > sizes[b]; });

  unsigned n_threads = options.threads ? options.threads : hardware_threads();
  n_threads = std::max(1u, std::min<unsigned>(n_threads, static_cast<unsigned>(paths.size())));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    dom::parser parser;  // one per thread; its buffers are reused across files
    for (std::size_t k; (k = next.fetch_add(1)) < order.size();) parse_file(paths[order[k]], parser, parsed[order[k]]);
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();

  // Diagnostics in file order, so reports are the same whatever the thread timing.
  for (auto& f : parsed) diag.merge(std::move(f.diag));

  Dataset ds;
  ds.set_source(dir);
  add_products(ds, parsed, diag);
  add_users(ds, parsed, diag);
  add_tasks(ds, parsed, diag);
  add_item_ids(ds, parsed, diag);
  return ds;
}

Dataset load_dataset(const fs::path& dir, const LoadOptions& options) {
  Diagnostics diag;
  Dataset ds = load_dataset(dir, diag, options);
  if (diag.has_errors()) {
    std::string msg = diag.first_error();
    if (diag.n_errors() > 1)
      msg += " (and " + std::to_string(diag.n_errors() - 1) + " more errors; run `pwab data validate " +
             dir.string() + "` for the list)";
    throw DataError(msg);
  }
  return ds;
}

void parse_dataset_file_for_test(std::string_view file_name, std::string_view json, Diagnostics& diag) {
  ParsedFile out;
  out.name = std::string(file_name);
  out.kind = kind_of(file_name);
  dom::parser parser;
  simdjson::padded_string text(json);
  parse_json_text(file_name, text, parser, out);
  diag.merge(std::move(out.diag));
}

const char* json_type_name(dom::element_type t) {
  switch (t) {
    case dom::element_type::ARRAY: return "an array";
    case dom::element_type::OBJECT: return "an object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64: return "an integer";
    case dom::element_type::DOUBLE: return "a float";
    case dom::element_type::STRING: return "a string";
    case dom::element_type::BOOL: return "a boolean";
    case dom::element_type::NULL_VALUE: return "null";
  }
  return "?";
}

std::string json_preview(dom::element e, std::size_t max_chars) {
  std::string text = simdjson::minify(e);
  if (text.size() > max_chars) text = text.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return text;
}

}  // namespace pwab::data
