#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "core/version.h"

namespace pwab::cli {

std::unique_ptr<CLI::App> make_app() {
  auto owned = std::make_unique<CLI::App>("pwab: the PersonalWAB benchmark and the PUMA agent framework, in C++");
  CLI::App& app = *owned;
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pwab ") + kVersion);  // the project version, from CMake
  add_data_commands(app);
  add_build_commands(app);
  add_search_commands(app);
  add_rec_commands(app);
  add_run_commands(app);
  add_report_command(app);
  add_submit_commands(app);
  add_puma_commands(app);
  add_lm_commands(app);
  add_serve_command(app);
  add_mcp_command(app);
  add_version_command(app);
  return owned;
}

int run(const std::vector<std::string>& args) {
  std::unique_ptr<CLI::App> owned = make_app();
  CLI::App& app = *owned;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kOk : kUsage;
  } catch (const UsageError& e) {
    std::cerr << "pwab: " << e.what() << "\n";
    return kUsage;
  } catch (const Error& e) {
    std::cerr << "pwab: " << e.what() << "\n";
    return kFailed;
  } catch (const std::exception& e) {
    std::cerr << "pwab: unexpected error: " << e.what() << "\n";
    return kFailed;
  }
  return kOk;
}

}  // namespace pwab::cli
