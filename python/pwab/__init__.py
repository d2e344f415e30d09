"""pwab for Python: the PersonalWAB benchmark served by the C++ `pwab` (docs/python.md).

    import pwab
    with pwab.launch(data="runs/mini") as server:      # starts `pwab serve`
        env = pwab.Env(server.url, track="single")
        obs, info = env.reset(options={"task": "test/0"})
        obs, reward, terminated, truncated, info = env.step(
            {"name": "search_product_by_query", "arguments": {"query": "usb cable"}})
"""

from .agent_server import AgentServer, serve_agent
from .client import Client
from .env import Env, parse_action
from .errors import (BadRequest, BudgetReached, Conflict, Forbidden, NotFound, PwabError, ServerError, TooLarge,
                     TooManySessions, Unauthorized, Unprocessable, Unreachable)
from .launch import Server, find_binary, launch
from .runs import Run, read_run, task_score

__version__ = "0.1.0"
__all__ = ["AgentServer", "BadRequest", "BudgetReached", "Client", "Conflict", "Env", "Forbidden", "NotFound",
           "PwabError", "Run", "Server", "ServerError", "TooLarge", "TooManySessions", "Unauthorized", "Unprocessable",
           "Unreachable", "find_binary", "launch", "load_environment", "parse_action", "read_run", "serve_agent",
           "task_score"]


def load_environment(**kwargs):
    """The verifiers environment of pwab, so that `vf-eval pwab -a '{"url": ...}'` finds it by the package's name
    (pwab.rl.verifiers_adapter.load_environment; verifiers is imported only here)."""
    from .rl.verifiers_adapter import load_environment as load

    return load(**kwargs)
