// src/construct/construct.h: the construct area's front door (docs/decisions.md, code practices §5): building a
// PersonalWAB dataset from Amazon Reviews 2023 raw dumps (`pwab build`) and scoring how well its profiles fit
// (`pwab data consistency`).
//
//   construct::BuildOptions o;  o.review_files = {...};  o.meta_files = {...};
//   construct::BuildReport r = construct::build_dataset(o, "out/");      // offline, or o.model = an LLM
//   construct::EmbeddingJudge judge(embedder);
//   auto c = construct::evaluate_consistency(data::load_dataset("out/"), judge, {});
//
// docs/construction.md describes the pipeline, every rule and the figures of a real-sample build.
#pragma once
#include "construct/build.h"
#include "construct/consistency.h"
#include "construct/instructions.h"
#include "construct/profile.h"
#include "construct/raw_reader.h"
#include "construct/raw_records.h"
#include "construct/user_sampler.h"
