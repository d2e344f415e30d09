// `pwab mcp`: the benchmark environment as an MCP server on stdin/stdout, for MCP clients that start their server
// themselves (Claude Desktop, IDEs). Same service, flags (less the network ones) and records as `pwab serve`;
// docs/mcp.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <ext/stdio_filebuf.h>
#include <iostream>

#include "cli/cli.h"
#include "cli/serve_setup.h"
#include "core/error.h"
#include "core/version.h"
#include "serve/mcp.h"

namespace pwab::cli {
namespace {

//! The protocol's own copy of stdout; fd 1 itself then points at stderr, so that nothing but JSON-RPC reaches
//! the client, whatever a library prints while the server loads or runs.
int take_stdout_for_protocol() {
  std::cout.flush();
  std::fflush(stdout);
  int protocol_fd = dup(STDOUT_FILENO);
  if (protocol_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw Error("pwab mcp: cannot set up stdout");
  return protocol_fd;
}

void serve_stdio(const ServiceArgs& a) {
  const int protocol_fd = take_stdout_for_protocol();
  auto served_env = open_served_environment(a);
  assemble::ServedEnvironment& served = *served_env;
  serve::McpServer server(served.service(), kVersion);
  std::cerr << fmt::format("pwab: MCP server on stdio for {} ({} test / {} train tasks){}\n", a.data,
                           served.dataset().tasks(data::Split::kTest).size(),
                           served.dataset().tasks(data::Split::kTrain).size(),
                           a.out.empty() ? "" : "; records in " + a.out + "/{single,multi}");
  __gnu_cxx::stdio_filebuf<char> protocol_buf(protocol_fd, std::ios::out);
  std::ostream protocol(&protocol_buf);
  serve::serve_mcp_stdio(server, std::cin, protocol);
  std::cerr << fmt::format("pwab: end of input; {} episodes were still open\n", served.service().n_sessions());
}

}  // namespace

void add_mcp_command(CLI::App& app) {
  auto a = std::make_shared<ServiceArgs>();
  auto* cmd = app.add_subcommand(
      "mcp", "Serve the environment as an MCP server on stdin/stdout (for Claude Desktop and other MCP clients)");
  add_service_flags(*cmd, *a);
  cmd->callback([a] { serve_stdio(*a); });
}

}  // namespace pwab::cli
