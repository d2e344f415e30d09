// libFuzzer target: MCP JSON-RPC messages, as `pwab mcp` reads them on stdio (one per line) and /mcp receives them.
// Each line goes to one McpServer session in turn; "$EP" in a line stands for the id of the last episode started,
// so the fuzzer reaches the tools that act on an episode. Every message must get a JSON reply or none, never an
// exception or a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/episode_service.h"
#include "serve/mcp.h"
#include "serve_world.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto service = pwab::fuzz::fresh_service();
  pwab::serve::McpServer server(*service, "fuzz");
  pwab::serve::McpSession session;
  std::string last_episode = "ep_none";
  int n = 0;
  for (std::string_view line : pwab::fuzz::lines_of(input)) {
    if (++n > 64) break;
    std::string message(line);
    for (std::size_t at; (at = message.find("$EP")) != std::string::npos;) message.replace(at, 3, last_episode);
    std::string reply = server.handle_text(message, session);
    if (reply.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
    if (j.is_discarded()) std::abort();  // a reply is always JSON
    // Remember an episode a tools/call started (its structured result names it).
    if (j.is_object() && j.contains("result") && j["result"].is_object()) {
      const auto& r = j["result"];
      if (r.contains("structuredContent") && r["structuredContent"].is_object() &&
          r["structuredContent"].contains("episode_id") && r["structuredContent"]["episode_id"].is_string())
        last_episode = r["structuredContent"]["episode_id"].get<std::string>();
    }
  }
  return 0;
}
