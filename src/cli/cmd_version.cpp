// `pwab version`: this build and the versions of the libraries it links (recorded in run manifests).
#include <CLI/CLI.hpp>
#include <boost/version.hpp>
#include <curl/curl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <xapian.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/error.h"
#include "core/version.h"
#include "models/torch_models.h"

namespace pwab::cli {

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the pwab version and the versions of its libraries");
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("--verbose,-v", *verbose, "Also measure the BLAS speed libtorch gets");
  cmd->callback([verbose] {
    std::cout << fmt::format("pwab {} ({}, {})\n", kVersion, kCompiler, kBuildType);
    // libtorch lives in the plugin (models/torch_models.h): loading it here is what tells its version.
    if (!models::torch_models_built()) {
      std::cout << "libtorch   (not built: PWAB_WITH_TORCH=OFF)\n";
    } else {
      try {
        const auto& torch = models::torch_models();
        std::cout << "libtorch   " << torch.describe() << "\n";
        if (*verbose) std::cout << fmt::format("  matmul 512x512: {:.1f} GFLOP/s\n", torch.matmul_gflops());
      } catch (const Error& e) {
        std::cout << "libtorch   (unavailable: " << e.what() << ")\n";
      }
    }
    std::cout << "xapian     " << Xapian::version_string() << "\n";
    std::cout << fmt::format("simdjson   {}.{}.{} ({})\n", int(simdjson::SIMDJSON_VERSION_MAJOR),
                             int(simdjson::SIMDJSON_VERSION_MINOR), int(simdjson::SIMDJSON_VERSION_REVISION),
                             simdjson::get_active_implementation()->name());
    std::cout << fmt::format("nlohmann   {}.{}.{}\n", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                             NLOHMANN_JSON_VERSION_PATCH);
    std::cout << "sqlite     " << sqlite3_libversion() << "\n";
    std::cout << "curl       " << curl_version() << "\n";
    std::cout << "httplib    " << CPPHTTPLIB_VERSION << "\n";
    std::cout << fmt::format("fmt        {}.{}.{}\n", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
    std::cout << "CLI11      " << CLI11_VERSION << "\n";
    std::cout << fmt::format("boost      {}.{}.{} (Beast, Asio)\n", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000,
                             BOOST_VERSION % 100);
    // Debian's fasttext.pc carries an empty Version field, so the build may not know it.
    const std::string_view fasttext = PWAB_FASTTEXT_VERSION;
    std::cout << "fasttext   " << (fasttext.empty() ? "(version not recorded by its pkg-config file)" : fasttext)
              << "\n";
  });
}

}  // namespace pwab::cli
