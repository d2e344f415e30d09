// src/construct/instructions.h: the natural-language instruction of a search, recommend or review task.
//
// Following paper §3.2.2: a search instruction is specific (the kind of product and some distinguishing
// attributes: brand, category, features), a recommend instruction is short and vague (an interest, a need),
// and a review instruction carries the user's real opinions from the true review; the profile shapes length,
// tone and detail. `offline_instruction` does this with templates chosen and filled by seeded randomness and
// the profile; `instruction_prompt` asks an LLM (pwab's own prompt wording). Neither includes the product's
// ASIN; the templates name a product by a shortened title (product_phrase), never a long title whole.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "data/types.h"
#include "llm/chat.h"

namespace pwab::construct {

//! What an instruction is generated from.
struct InstructionInput {
  data::TaskType type = data::TaskType::kSearch;
  const data::Profile* profile = nullptr;
  const data::Product* product = nullptr;  //!< the target product
  const data::Review* review = nullptr;    //!< the user's true review of it
};

//! A short name of the product as a person would say it: the first segment of the title (before ',', '|',
//! '(' , '[' or " - "), without a leading store name, at most 7 words.
std::string product_phrase(const data::Product& p);

//! A template instruction; the same input and seed give the same text.
std::string offline_instruction(const InstructionInput& in, uint64_t seed);

//! The chat request that asks a model for the instruction (reply: the instruction text only).
llm::ChatRequest instruction_prompt(const InstructionInput& in, const std::string& model,
                                    std::optional<double> temperature);

//! The instruction in a model reply: trimmed, without surrounding quotes or a leading "Instruction:" label;
//! "" when nothing usable is left.
std::string clean_instruction_reply(std::string_view reply);

}  // namespace pwab::construct
