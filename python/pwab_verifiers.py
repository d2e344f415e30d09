"""pwab's plugin for verifiers 0.4 (the v1 API), by the id verifiers' loader imports: `vf-eval pwab_verifiers ...`
(or `pwab-verifiers`). verifiers takes a plugin id as the name of a top-level module whose `__all__` exports the
Taskset, Env and Harness classes; the classes live in pwab.rl.verifiers_v1 (docs/rl-engines.md, section verifiers).
The package `pwab` itself stays free of verifiers: `from pwab import *` must work without it."""

from pwab.rl.verifiers_v1 import PwabEnv, PwabHarness, PwabTaskset

__all__ = ["PwabEnv", "PwabHarness", "PwabTaskset"]
