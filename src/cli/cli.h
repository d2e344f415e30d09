// src/cli/cli.h: the `pwab` command line as a library, so tests can run subcommands in-process.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pwab::cli {

//! Exit codes shared by every subcommand.
enum ExitCode : int { kOk = 0, kFailed = 1, kUsage = 2 };

//! The whole `pwab` command line, every subcommand registered (what run() parses; tests walk its flags).
std::unique_ptr<CLI::App> make_app();

//! Runs `pwab` with argv-style arguments (args[0] is the program name); returns the exit code.
//! Errors are printed to stderr as one line; output goes to stdout.
int run(const std::vector<std::string>& args);

// Each cmd_<name>.cpp registers its subcommands on the app.
void add_data_commands(CLI::App& app);
void add_version_command(CLI::App& app);
void add_search_commands(CLI::App& app);
void add_rec_commands(CLI::App& app);
void add_run_commands(CLI::App& app);
void add_report_command(CLI::App& app);
//! `pwab submit prepare|verify` (cmd_submit.cpp).
void add_submit_commands(CLI::App& app);
//! `pwab build` and `pwab data consistency` (after add_data_commands: it extends `data`).
void add_build_commands(CLI::App& app);
void add_puma_commands(CLI::App& app);
//! `pwab lm generate|score`: inspect a model (cmd_lm.cpp).
void add_lm_commands(CLI::App& app);
void add_serve_command(CLI::App& app);
//! `pwab mcp`: the environment as an MCP server on stdio (cmd_mcp.cpp).
void add_mcp_command(CLI::App& app);

}  // namespace pwab::cli
