#include "data/render.h"

#include "core/py_format.h"

namespace pwab::data {

std::string product_fields_block(const Product& p) {
  std::string out;
  out.reserve(512 + p.title.size() + p.details_json.size());
  out += "- Title: " + p.title + "\n";
  out += "- Parent Asin: " + p.parent_asin + "\n";
  out += "- Average Rating: " + p.average_rating.str() + "\n";
  out += "- Rating Number: " + p.rating_number.str() + "\n";
  out += "- Price: " + p.price.str() + "\n";
  out += "- Store: " + (p.store ? *p.store : std::string("None")) + "\n";
  out += "- Features: " + py::list_repr(p.features) + "\n";
  out += "- Description: " + py::list_repr(p.description) + "\n";
  out += "- Details: " + py::json_dumps(p.details_json) + "\n";
  out += "- Category: " + p.main_category;
  return out;
}

}  // namespace pwab::data
