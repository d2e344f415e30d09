// src/search/documents.h: helpers shared by the corpus writer and the index builder (internal to search/).
#pragma once
#include <vector>

#include "data/dataset.h"

namespace pwab::search {

//! The catalogue in parent_asin order: the order documents are numbered in, so that Xapian's and Lucene's
//! tie-break by document number is the tie-break by asin.
std::vector<const data::Product*> products_by_asin(const data::Dataset& ds);

}  // namespace pwab::search
