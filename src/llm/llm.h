// src/llm/llm.h: the llm area's front door (docs/decisions.md, code practices §5): chat models behind one interface,
// the OpenAI-compatible client, the record/replay cache, the cost ledger and the OpenAI embedder.
//
//   auto endpoint = std::make_shared<llm::Endpoint>(llm::resolve_endpoint(flags, env));
//   auto http = std::make_shared<llm::HttpChatModel>(endpoint);
//   auto cache = std::make_shared<llm::ResponseCache>(cache_dir);
//   llm::CachedChatModel model(http, cache, llm::CacheMode::kRecord);
//   llm::Ledger ledger(llm::PriceTable::builtin(), budget_usd);
//   llm::MeteredChatModel agent_model(model, ledger, llm::Role::kAgent, "test/17");   // one per episode
//   llm::ChatResponse r = agent_model.chat(request);
//
// docs/llm.md describes the options, the retries, the cache format, replay, the ledger and the price table.
#pragma once
#include "llm/chat.h"
#include "llm/endpoint.h"
#include "llm/http_chat_model.h"
#include "llm/ledger.h"
#include "llm/openai_embedder.h"
#include "llm/response_cache.h"
