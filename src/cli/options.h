// src/cli/options.h: the flags several commands share, in one table, each with one help text and one list of
// values (llama.cpp's common/arg is the model). A command registers a shared flag by name; the value's type,
// default and range checks stay with the command, which owns the variable. test/cli/options_test.cpp fails when a
// flag is registered by hand with a help text of its own.
#pragma once

#include <CLI/CLI.hpp>

#include <span>
#include <string>
#include <string_view>

namespace pwab::cli {

//! One row of the table. Where a name means different things in different commands (`--out` is a run directory
//! for `pwab run` and an HTML file for `pwab report`), each meaning is its own row.
struct SharedFlag {
  std::string_view name;     //!< "--data"
  std::string_view meaning;  //!< "" where the name means one thing; otherwise a short key ("run", "html", ...)
  std::string_view help;
};

//! The table, one row per (name, meaning).
std::span<const SharedFlag> shared_flags();

//! The help of (name, meaning); std::logic_error for a pair not in the table (a mistake in pwab's own code).
std::string shared_help(std::string_view name, std::string_view meaning = "");

//! Registers shared option `name` (with `meaning`) on `cmd`, bound to `target`.
template <class T>
CLI::Option* add_shared_option(CLI::App& cmd, std::string_view name, T& target, std::string_view meaning = "") {
  return cmd.add_option(std::string(name), target, shared_help(name, meaning));
}

//! Registers shared flag `name` (a switch, with `meaning`) on `cmd`, bound to `target`.
inline CLI::Option* add_shared_flag(CLI::App& cmd, std::string_view name, bool& target,
                                    std::string_view meaning = "") {
  return cmd.add_flag(std::string(name), target, shared_help(name, meaning));
}

}  // namespace pwab::cli
