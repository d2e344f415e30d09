// The shared flags' table (src/cli/options.h) against every flag `pwab` registers.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "cli/cli.h"
#include "cli/options.h"

namespace pwab::cli {
namespace {

//! Every long flag of every (sub)command: name → {help text → the commands that register it with that text}.
using Registrations = std::map<std::string, std::map<std::string, std::set<std::string>>>;

Registrations registrations() {
  std::unique_ptr<CLI::App> app = make_app();
  Registrations out;
  std::function<void(CLI::App&, const std::string&)> walk = [&](CLI::App& cmd, const std::string& path) {
    for (const CLI::Option* opt : cmd.get_options())
      for (const std::string& name : opt->get_lnames()) out["--" + name][opt->get_description()].insert(path);
    for (CLI::App* sub : cmd.get_subcommands({})) walk(*sub, path + " " + sub->get_name());
  };
  walk(*app, "pwab");
  return out;
}

TEST(Options, AFlagRegisteredTwiceHasOneHelpTextPerMeaning) {
  std::map<std::string, std::set<std::string>> table;  // name → the table's help texts (one per meaning)
  for (const SharedFlag& f : shared_flags()) table[std::string(f.name)].insert(std::string(f.help));
  const Registrations all = registrations();
  ASSERT_GT(all.size(), 50u);  // the walk reached the subcommands
  for (const auto& [name, helps] : all) {
    if (auto it = table.find(name); it != table.end()) {
      // A shared flag: every registration carries one of the table's texts, never a text of its own.
      for (const auto& [help, commands] : helps)
        EXPECT_TRUE(it->second.count(help)) << name << " in " << *commands.begin() << " has its own help text \""
                                            << help << "\"; register it with add_shared_option (cli/options.h)";
    } else {
      // Any other flag registered in several commands says the same thing in all of them (else it belongs in
      // the table, one row per meaning).
      EXPECT_EQ(helps.size(), 1u) << name << " is registered with " << helps.size()
                                  << " help texts; add it to the table in src/cli/options.cpp";
    }
  }
}

TEST(Options, EveryRowOfTheTableIsRegistered) {
  const Registrations all = registrations();
  for (const SharedFlag& f : shared_flags()) {
    auto it = all.find(std::string(f.name));
    ASSERT_NE(it, all.end()) << f.name << " is in the table but no command registers it";
    EXPECT_TRUE(it->second.count(std::string(f.help)))
        << f.name << " (" << f.meaning << ") is in the table but no command registers that meaning";
  }
}

TEST(Options, TheTableHasOneRowPerNameAndMeaning) {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const SharedFlag& f : shared_flags()) {
    EXPECT_TRUE(seen.insert({f.name, f.meaning}).second) << f.name << " (" << f.meaning << ") twice";
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
  EXPECT_THROW(shared_help("--no-such-flag"), std::logic_error);
}

}  // namespace
}  // namespace pwab::cli
