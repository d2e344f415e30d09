// src/cli/llm_setup.h: turning `pwab run`'s model flags into chat models, a response cache and a cost ledger.
//
// The only place that reads OPENAI_BASE_URL / OPENAI_API_KEY (docs/decisions.md, code practices §7: the environment is
// read by the front end, never by the libraries).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "llm/llm.h"
#include "assemble/benchmark.h"

namespace CLI {
class App;
}

namespace pwab::cli {

struct LlmFlags {
  std::string model;        //!< --model: the agent's model ("" = the run uses no agent LLM)
  std::string local_model;  //!< --local-model DIR: serve --model's completions from a local PUMA model directory
  std::string local_adapter;  //!< --local-adapter DIR: a PEFT LoRA adapter loaded on top of --local-model
  std::string base_url;     //!< --base-url (else OPENAI_BASE_URL, else api.openai.com)
  std::string api_key_env = "OPENAI_API_KEY";  //!< --api-key-env: the variable holding the agent endpoint's key
  std::string user_model;   //!< --user-model (default: --model)
  std::string user_base_url;  //!< --user-base-url (default: the agent's endpoint)
  std::string user_api_key_env;  //!< --user-api-key-env (default: --api-key-env)
  std::optional<double> temperature;  //!< --temperature for the agent (the original: 0.0)
  std::optional<int64_t> llm_seed;    //!< --llm-seed, sent as the request seed
  std::string cache_dir;    //!< --llm-cache DIR: record/replay cache
  bool replay = false;      //!< --replay: answer from the cache only
  std::optional<double> budget_usd;  //!< --budget-usd
  std::string prices_file;  //!< --prices FILE: price table (default: the built-in one)
  int max_in_flight = 8;    //!< --max-in-flight per endpoint
  double timeout_s = 120;   //!< --llm-timeout per request attempt
  int max_attempts = 6;     //!< --llm-retries: HTTP attempts per request, the first included
  double retry_delay_s = 1; //!< --llm-retry-delay: the first backoff (doubling, capped at 40 s, jittered)
};

//! Registers the flags above on `cmd`.
void add_llm_flags(CLI::App& cmd, LlmFlags& flags);

//! The models of one run, ready to use (assemble/benchmark.h). Members are null when not needed; the ledger is
//! always set (prices from --prices or built in).
using LlmSetup = assemble::RunModels;

//! Builds the endpoints, cache and ledger. `need_agent`: the agent uses --model; `need_user`: --user-sim llm.
//! UsageError for missing models, an endpoint without a key where one is required (unless replaying), a budget
//! with unpriced models, or --replay without --llm-cache.
LlmSetup make_llm_setup(const LlmFlags& flags, bool need_agent, bool need_user);

//! `--embedder openai:MODEL`: the /embeddings backend on the agent's endpoint, behind --llm-cache / --replay,
//! its usage booked in `ledger` under role "other".
std::unique_ptr<embed::Embedder> make_openai_embedder(const LlmFlags& flags, const std::string& model,
                                                      llm::Ledger* ledger);

}  // namespace pwab::cli
