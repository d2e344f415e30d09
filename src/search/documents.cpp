// The search corpus: one document per product, and the catalogue fingerprint that keys the index cache.
#include <algorithm>
#include <ostream>

#include "core/hash.h"
#include "data/render.h"
#include "search/documents.h"
#include "search/search.h"

namespace pwab::search {

std::string document_text(const data::Product& product) { return data::product_fields_block(product); }

std::vector<const data::Product*> products_by_asin(const data::Dataset& ds) {
  std::vector<const data::Product*> order;
  order.reserve(ds.products().size());
  for (const auto& p : ds.products()) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const data::Product* a, const data::Product* b) { return a->parent_asin < b->parent_asin; });
  return order;
}

std::string catalogue_fingerprint(const data::Dataset& ds) {
  Hasher h;
  for (const data::Product* p : products_by_asin(ds)) {
    std::string text = document_text(*p);
    h.update_u64(p->parent_asin.size()).update(p->parent_asin);
    h.update_u64(text.size()).update(text);
  }
  return h.hex();
}

void write_documents_tsv(const data::Dataset& ds, std::ostream& out) {
  std::string line;
  for (const data::Product* p : products_by_asin(ds)) {
    line = p->parent_asin;
    line += '\t';
    for (char c : document_text(*p)) line += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    line += '\n';
    out << line;
  }
}

}  // namespace pwab::search
