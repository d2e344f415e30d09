// src/rec/weights.h: SASRec weights as plain float32 arrays by state_dict name (internal to src/rec, no torch).
//
// What serving needs to get from a checkpoint to FastSasrec without libtorch: reading an original PersonalWAB
// `.pth` (a torch.save zip) and pwab's own checkpoint into named arrays, the tensor names and shapes the model
// expects, and the checks (missing tensor, wrong shape) with their error texts. sasrec.h applies the same
// checks to torch tensors on top of these.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rec/fast_sasrec.h"
#include "rec/recommender.h"

namespace pwab::rec {

//! Named float32 tensors, row-major, by their original state_dict names ("item_emb.weight", ...).
using WeightMap = std::map<std::string, WeightArray>;

//! Expected (name, shape) of every tensor of the model.
std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(int64_t item_rows, const ModelShape& shape);

//! "[41, 50]".
std::string shape_text(const std::vector<int64_t>& shape);

//! The shape of the tensor called `name`, or nothing when there is none: lets the checks below run on weights
//! held in any form (WeightMap here, torch tensors in sasrec.cpp).
using ShapeLookup = std::function<std::optional<std::vector<int64_t>>(const std::string& name)>;

//! Derives item rows and the shape from a state_dict's tensor shapes (heads are not stored: 2, as the
//! original). Throws pwab::Error prefixed by `what` for a missing or inconsistent embedding table.
std::pair<int64_t, ModelShape> infer_dimensions(const ShapeLookup& shape_of, const std::string& what);
std::pair<int64_t, ModelShape> infer_dimensions(const WeightMap& weights, const std::string& what);

//! Checks that every tensor of expected_tensors() is there with its shape; throws pwab::Error prefixed by
//! `what` naming the first missing ("tensor 'X' is missing") or misshapen one. Extra tensors are ignored.
void check_tensors(const ShapeLookup& shape_of, int64_t item_rows, const ModelShape& shape, const std::string& what);
void check_tensors(const WeightMap& weights, int64_t item_rows, const ModelShape& shape, const std::string& what);

//! Reads an original PersonalWAB checkpoint, a state_dict saved by torch.save (zip format), as float32: every
//! tensor's strided view of its storage, converted from float32/64, float16, bfloat16 or an integer type.
//! Throws pwab::Error naming the file for what is not a readable torch.save zip (truncated, compressed, no
//! data.pkl, a missing storage record, a view beyond its storage).
WeightMap read_torch_save_weights(const std::filesystem::path& path);

}  // namespace pwab::rec
