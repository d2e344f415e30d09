// test/support/missing_tool.h: what a test does when a tool it needs (chromium, Node.js, python3) is missing.
#pragma once
#include <gtest/gtest.h>

namespace pwab::test {

//! True under CI (the environment variable CI set and not "false" or "0", as .ci/run runs): there every tool a
//! test needs has been installed by scripts/install-deps.sh, so a missing one is a failure, not a skip.
bool under_ci();

}  // namespace pwab::test

//! Skips the current test because a tool it needs is missing (`reason` says which), except under CI, where the
//! same condition fails the test so that a green CI always means the test ran.
#define PWAB_SKIP_MISSING_TOOL(reason)                                                                   \
  do {                                                                                                    \
    if (::pwab::test::under_ci())                                                                         \
      FAIL() << (reason) << " (a failure under CI: scripts/install-deps.sh installs it)";                 \
    else                                                                                                  \
      GTEST_SKIP() << (reason);                                                                           \
  } while (0)
