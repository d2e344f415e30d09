#include "construct/raw_records.h"

#include "data/json_text.h"

#include <simdjson.h>

#include <cmath>

namespace pwab::construct {
namespace dom = simdjson::dom;

namespace {

// A JSON number as Python holds it; nullopt for other types.
std::optional<py::Scalar> number_of(dom::element e) {
  switch (e.type()) {
    case dom::element_type::INT64: return py::Scalar::of_int(int64_t(e));
    case dom::element_type::UINT64: {
      uint64_t v = uint64_t(e);
      if (v <= static_cast<uint64_t>(INT64_MAX)) return py::Scalar::of_int(static_cast<int64_t>(v));
      return py::Scalar::of_float(static_cast<double>(v));
    }
    case dom::element_type::DOUBLE: return py::Scalar::of_float(double(e));
    default: return std::nullopt;
  }
}

// An optional string field: missing or null → "", a string → itself, anything else → dropped with a problem.
void optional_string(dom::object o, std::string_view key, std::string& out, std::vector<LineProblem>& fp) {
  dom::element e;
  if (o[key].get(e)) return;
  if (e.is_null()) return;
  std::string_view s;
  if (!e.get(s)) {
    out.assign(s);
    return;
  }
  fp.push_back({std::string(key) + " is not a string", "got " + std::string(data::json_type_name(e.type())) + " " + data::json_preview(e, 60)});
}

// A list of strings: a list (numbers kept as their text), a lone string, null/missing → empty.
void string_list(dom::object o, std::string_view key, std::vector<std::string>& out, std::vector<LineProblem>& fp) {
  dom::element e;
  if (o[key].get(e) || e.is_null()) return;
  std::string_view s;
  if (!e.get(s)) {
    out.emplace_back(s);
    return;
  }
  dom::array a;
  if (e.get(a)) {
    fp.push_back({std::string(key) + " is not a list", "got " + std::string(data::json_type_name(e.type())) + " " + data::json_preview(e, 60)});
    return;
  }
  bool bad = false;
  for (dom::element item : a) {
    if (!item.get(s)) {
      out.emplace_back(s);
    } else if (item.is_number()) {
      out.push_back(simdjson::minify(item));
    } else {
      bad = true;
    }
  }
  if (bad) fp.push_back({std::string(key) + " has non-string items", "the items were dropped"});
}

}  // namespace

struct RawParser::Impl {
  dom::parser parser;
  dom::element doc;                  // the document last parsed
  const char* last_ptr = nullptr;
  std::size_t last_len = 0;

  // Parses a line into an object, or fills `problem`.
  bool object(std::string_view line, dom::object& obj, LineProblem& problem) {
    auto err = parser.parse(line.data(), line.size(), /*realloc_if_needed=*/false).get(doc);
    if (err) {
      problem = {"invalid JSON", simdjson::error_message(err)};
      return false;
    }
    if (doc.get(obj)) {
      problem = {"not a JSON object", "the line is " + std::string(data::json_type_name(doc.type()))};
      return false;
    }
    return true;
  }
};

RawParser::RawParser() : impl_(std::make_unique<Impl>()) {}
RawParser::~RawParser() = default;

bool RawParser::review(std::string_view line, bool with_text, RawReview& out, LineProblem& problem,
                       std::vector<LineProblem>& fp) {
  impl_->last_ptr = nullptr;
  dom::object o;
  if (!impl_->object(line, o, problem)) return false;
  dom::element e;
  std::string_view s;

  if (o["user_id"].get(e) || e.is_null()) {
    problem = {"missing user_id", ""};
    return false;
  }
  if (e.get(s) || s.empty()) {
    problem = {"user_id is not a non-empty string", "got " + data::json_preview(e, 60)};
    return false;
  }
  out.user_id.assign(s);

  bool have_asin = false;
  for (std::string_view key : {"parent_asin", "asin"}) {
    if (o[key].get(e) || e.is_null()) continue;
    if (e.get(s) || s.empty()) {
      problem = {std::string(key) + " is not a non-empty string", "got " + data::json_preview(e, 60)};
      return false;
    }
    out.parent_asin.assign(s);
    have_asin = true;
    break;
  }
  if (!have_asin) {
    problem = {"missing parent_asin", ""};
    return false;
  }

  if (o["rating"].get(e) || e.is_null()) {
    problem = {"missing rating", ""};
    return false;
  }
  auto rating = number_of(e);
  if (!rating) {
    problem = {"rating is not a number", "got " + std::string(data::json_type_name(e.type())) + " " + data::json_preview(e, 60)};
    return false;
  }
  if (!(rating->f >= 1.0 && rating->f <= 5.0)) {
    problem = {"rating out of range 1-5", "got " + data::json_preview(e, 60)};
    return false;
  }
  out.rating = *rating;

  if (o["timestamp"].get(e) || e.is_null()) {
    problem = {"missing timestamp", ""};
    return false;
  }
  switch (e.type()) {
    case dom::element_type::INT64: out.timestamp = int64_t(e); break;
    case dom::element_type::UINT64:
      if (uint64_t(e) > static_cast<uint64_t>(INT64_MAX)) {
        problem = {"timestamp out of range", "got " + data::json_preview(e, 60)};
        return false;
      }
      out.timestamp = static_cast<int64_t>(uint64_t(e));
      break;
    case dom::element_type::DOUBLE: {
      double d = double(e);
      if (!(std::floor(d) == d && std::fabs(d) < 9.0e15)) {
        problem = {"timestamp is not an integer", "got " + data::json_preview(e, 60)};
        return false;
      }
      out.timestamp = static_cast<int64_t>(d);
      break;
    }
    default:
      problem = {"timestamp is not an integer", "got " + std::string(data::json_type_name(e.type())) + " " + data::json_preview(e, 60)};
      return false;
  }
  if (out.timestamp < 0) {
    problem = {"timestamp is negative", "got " + data::json_preview(e, 60)};
    return false;
  }

  out.title.clear();
  out.text.clear();
  if (with_text) {
    optional_string(o, "title", out.title, fp);
    optional_string(o, "text", out.text, fp);
  }
  return true;
}

bool RawParser::meta_key(std::string_view line, std::string& parent_asin, LineProblem& problem) {
  impl_->last_ptr = nullptr;
  dom::object o;
  if (!impl_->object(line, o, problem)) return false;
  dom::element e;
  std::string_view s;
  if (o["parent_asin"].get(e) || e.is_null()) {
    problem = {"missing parent_asin", ""};
    return false;
  }
  if (e.get(s) || s.empty()) {
    problem = {"parent_asin is not a non-empty string", "got " + data::json_preview(e, 60)};
    return false;
  }
  parent_asin.assign(s);
  impl_->last_ptr = line.data();
  impl_->last_len = line.size();
  return true;
}

bool RawParser::meta(std::string_view line, data::Product& p, LineProblem& problem, std::vector<LineProblem>& fp) {
  std::string asin;
  if (!(impl_->last_ptr == line.data() && impl_->last_len == line.size())) {
    if (!meta_key(line, asin, problem)) return false;
  }
  dom::object o;
  if (impl_->doc.get(o)) return false;  // meta_key has checked that it is an object
  impl_->last_ptr = nullptr;
  p = data::Product{};
  dom::element e;
  std::string_view s;
  if (!o["parent_asin"].get(e) && !e.get(s)) p.parent_asin.assign(s);
  optional_string(o, "main_category", p.main_category, fp);
  optional_string(o, "title", p.title, fp);
  for (std::string_view key : {"average_rating", "rating_number"}) {
    py::Scalar& out = key == "average_rating" ? p.average_rating : p.rating_number;
    if (o[key].get(e) || e.is_null()) continue;
    if (auto n = number_of(e)) out = *n;
    else fp.push_back({std::string(key) + " is not a number", "got " + data::json_preview(e, 60)});
  }
  string_list(o, "features", p.features, fp);
  string_list(o, "description", p.description, fp);
  string_list(o, "categories", p.categories, fp);
  if (!o["price"].get(e) && !e.is_null()) {
    if (auto n = number_of(e)) p.price = *n;
    else if (!e.get(s)) p.price = py::Scalar::of_str(std::string(s));
    else fp.push_back({"price is not a number or string", "got " + data::json_preview(e, 60)});
  }
  if (!o["store"].get(e) && !e.is_null()) {
    if (!e.get(s)) p.store = std::string(s);
    else fp.push_back({"store is not a string", "got " + data::json_preview(e, 60)});
  }
  if (!o["details"].get(e) && !e.is_null()) {
    if (e.is_object() || e.is_string()) p.details_json = simdjson::minify(e);
    else fp.push_back({"details is not an object", "got " + data::json_preview(e, 60)});
  }
  return true;
}

}  // namespace pwab::construct
