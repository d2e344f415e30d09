// The model flags of `pwab run` → endpoints, record/replay cache, ledger.
#include "cli/llm_setup.h"
#include "cli/options.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/torch_models.h"

namespace pwab::cli {
namespace {

std::string env_or_empty(const std::string& name) {
  if (name.empty()) return {};
  const char* v = std::getenv(name.c_str());
  return v ? std::string(v) : std::string();
}

//! One endpoint from a base-URL flag and the name of the variable holding its key.
std::shared_ptr<const llm::Endpoint> make_endpoint(const LlmFlags& f, const std::string& base_url_flag,
                                                   const std::string& key_env) {
  llm::EndpointConfig defaults;
  defaults.timeout_s = f.timeout_s;
  defaults.max_in_flight = f.max_in_flight;
  defaults.retry.max_attempts = f.max_attempts;
  defaults.retry.base_delay_s = f.retry_delay_s;
  defaults.log = [](const std::string& line) { std::cerr << "pwab: " << line << "\n"; };
  llm::EndpointFlags flags{base_url_flag, ""};
  llm::EndpointEnv env{env_or_empty("OPENAI_BASE_URL"), env_or_empty(key_env)};
  llm::EndpointConfig config = llm::resolve_endpoint(flags, env, defaults);
  if (!f.replay) llm::check_endpoint_usable(config);
  return std::make_shared<const llm::Endpoint>(std::move(config));
}

std::shared_ptr<llm::ChatModel> with_cache(std::shared_ptr<llm::ChatModel> model,
                                           const std::shared_ptr<llm::ResponseCache>& cache, bool replay) {
  if (!cache) return model;
  return std::make_shared<llm::CachedChatModel>(std::move(model), cache,
                                                replay ? llm::CacheMode::kReplay : llm::CacheMode::kRecord);
}

}  // namespace

void add_llm_flags(CLI::App& cmd, LlmFlags& f) {
  add_shared_option(cmd, "--model", f.model, "endpoint");
  cmd.add_option("--local-model", f.local_model,
                 "Serve the agent's raw-text completions from this local PUMA model directory (pwab puma train's "
                 "sft/model or dpo/model) instead of an endpoint");
  cmd.add_option("--local-adapter", f.local_adapter,
                 "A PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors) loaded on top of "
                 "--local-model, e.g. a base model plus an adapter trained with PEFT or TRL");
  cmd.add_option("--base-url", f.base_url, "The agent's endpoint (default: $OPENAI_BASE_URL, else OpenAI)");
  cmd.add_option("--api-key-env", f.api_key_env, "Variable holding the agent endpoint's API key")->capture_default_str();
  cmd.add_option("--user-model", f.user_model, "The LLM user simulator's model (default: --model)");
  cmd.add_option("--user-base-url", f.user_base_url, "The user simulator's endpoint (default: the agent's)");
  cmd.add_option("--user-api-key-env", f.user_api_key_env, "Variable holding its key (default: --api-key-env)");
  add_shared_option(cmd, "--temperature", f.temperature, "agent");
  cmd.add_option("--llm-seed", f.llm_seed, "Seed sent with every model request");
  cmd.add_option("--llm-cache", f.cache_dir, "Record every model request and response in DIR (SQLite)");
  cmd.add_flag("--replay", f.replay, "Answer every model request from --llm-cache; a miss stops the run");
  cmd.add_option("--budget-usd", f.budget_usd, "Stop starting tasks once the run's model cost reaches this")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--prices", f.prices_file, "Price table JSON (default: the built-in table, docs/llm.md)");
  cmd.add_option("--max-in-flight", f.max_in_flight, "Model requests in flight per endpoint")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--llm-timeout", f.timeout_s, "Seconds per model request attempt")->capture_default_str();
  cmd.add_option("--llm-retries", f.max_attempts, "HTTP attempts per model request (429/5xx/timeouts are retried)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd.add_option("--llm-retry-delay", f.retry_delay_s, "First retry delay in seconds (then doubling, jittered)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
}

LlmSetup make_llm_setup(const LlmFlags& f, bool need_agent, bool need_user) {
  LlmSetup s;
  s.ledger = std::make_unique<llm::Ledger>(
      f.prices_file.empty() ? llm::PriceTable::builtin() : llm::PriceTable::load(f.prices_file), f.budget_usd);
  s.budget_usd = f.budget_usd;
  if (f.replay && f.cache_dir.empty()) throw UsageError("--replay needs --llm-cache DIR (the recorded run's cache)");
  if (!f.local_adapter.empty() && f.local_model.empty())
    throw UsageError("--local-adapter needs --local-model DIR (the base model the adapter was trained on)");
  bool use_agent = need_agent && !f.model.empty();
  s.user_model_name = f.user_model.empty() ? f.model : f.user_model;
  if (need_user && s.user_model_name.empty())
    throw UsageError("--user-sim llm needs a model: --user-model NAME (or --model NAME)");
  if (!use_agent && !need_user) return s;

  std::shared_ptr<llm::ResponseCache> cache;
  if (!f.cache_dir.empty()) cache = std::make_shared<llm::ResponseCache>(f.cache_dir, /*must_exist=*/f.replay);

  nlohmann::json config = nlohmann::json::object();
  std::shared_ptr<const llm::Endpoint> agent_endpoint;
  if (use_agent) {
    if (!f.local_model.empty()) {
      // A local PUMA model answers the agent's raw-text completions in-process (no server, no key).
      models::LocalChatModel local =
          models::torch_models().open_local_chat_model(f.local_model, f.local_adapter, f.model);
      s.agent_model = with_cache(std::move(local.model), cache, f.replay);
      config["local_model"] = local.description;
    } else {
      agent_endpoint = make_endpoint(f, f.base_url, f.api_key_env);
      s.agent_model = with_cache(std::make_shared<llm::HttpChatModel>(agent_endpoint), cache, f.replay);
    }
    s.agent_model_name = f.model;
    s.agent_temperature = f.temperature.value_or(0.0);
    s.llm_seed = f.llm_seed;
    config["model"] = f.model;
    config["temperature"] = f.temperature.value_or(0.0);
    if (f.llm_seed) config["seed"] = *f.llm_seed;
  }
  if (need_user) {
    bool same_endpoint = f.user_base_url.empty() && f.user_api_key_env.empty() && agent_endpoint;
    auto endpoint = same_endpoint ? agent_endpoint
                                  : make_endpoint(f, f.user_base_url.empty() ? f.base_url : f.user_base_url,
                                                  f.user_api_key_env.empty() ? f.api_key_env : f.user_api_key_env);
    s.user_model = with_cache(std::make_shared<llm::HttpChatModel>(endpoint), cache, f.replay);
    config["user_model"] = s.user_model_name;
  }
  if (f.budget_usd) {
    for (const auto& name : {s.agent_model_name, need_user ? s.user_model_name : std::string()})
      if (!name.empty() && !s.ledger->prices().find(name))
        throw UsageError("--budget-usd needs a price for model '" + name + "' (add it to a --prices file)");
  }
  s.config_json = config.dump();
  return s;
}

std::unique_ptr<embed::Embedder> make_openai_embedder(const LlmFlags& f, const std::string& model,
                                                      llm::Ledger* ledger) {
  if (model.empty()) throw UsageError("--embedder openai:MODEL needs a model name");
  if (f.replay && f.cache_dir.empty()) throw UsageError("--replay needs --llm-cache DIR (the recorded run's cache)");
  std::shared_ptr<llm::ResponseCache> cache;
  if (!f.cache_dir.empty()) cache = std::make_shared<llm::ResponseCache>(f.cache_dir, f.replay);
  llm::OpenAIEmbedderOptions options;
  options.model = model;
  return std::make_unique<llm::OpenAIEmbedder>(make_endpoint(f, f.base_url, f.api_key_env), options, cache,
                                               f.replay ? llm::CacheMode::kReplay : llm::CacheMode::kRecord, ledger);
}

}  // namespace pwab::cli
