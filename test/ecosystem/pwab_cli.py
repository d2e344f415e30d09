"""The pwab binary CTest names (PWAB_BINARY), run as a user runs it: what the ecosystem tests that drive the CLI
share."""

import os
import subprocess
import unittest


def binary():
    path = os.environ.get("PWAB_BINARY", "")
    if not path or not os.access(path, os.X_OK):
        raise unittest.SkipTest("PWAB_BINARY is not set to a pwab executable (CTest sets it)")
    return path


def pwab(*args, timeout=600):
    """`pwab ARGS...`'s standard output; a failure raises with the end of its standard error."""
    done = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"pwab {' '.join(map(str, args))} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout
