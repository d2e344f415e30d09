// pwab: one binary, many subcommands; everything lives in the library (src/cli/cli.h).
#include <string>
#include <vector>

#include "cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return pwab::cli::run(args);
}
