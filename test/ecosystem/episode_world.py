"""What the engine tests of test/ecosystem/ share: a scratch folder, the one `pwab serve` of python/tests/world.py
(mini synthetic dataset, hashing embedder), and answers whose rewards are known to be above 0 — found by asking
`/v1/reward`, since a client never sees a task's target."""

import json
import os
import tempfile

from tests import world

_state = {}

REVIEW = "Great quality, works well and looks nice. Would buy again."


def scratch(name):
    """A fresh folder in the run's scratch space (run.sh's $PWAB_ECOSYSTEM_SCRATCH, else a temporary one)."""
    root = os.environ.get("PWAB_ECOSYSTEM_SCRATCH") or _state.setdefault("tmp", tempfile.mkdtemp(prefix="pwab-eco-"))
    return tempfile.mkdtemp(prefix=name + "-", dir=root)


def server():
    return world.server()


def client():
    return server().client()


def sessions():
    """Open episodes on the server: every test must leave it where it found it."""
    return client().health()["sessions"]


def hermes(name, arguments, newlines=True):
    """A Hermes tool call as a model writes it (Qwen2.5's template puts the JSON on its own line)."""
    body = json.dumps({"name": name, "arguments": arguments})
    return f"<tool_call>\n{body}\n</tool_call>" if newlines else f"<tool_call>{body}</tool_call>"


def good_search(partial=True):
    """(task, query, reward): a train search task whose own instruction, used as the query, scores above 0; with
    `partial`, one scoring strictly between 0 and 1 when there is one, else the first of the train split."""
    key = ("good", partial)
    if key not in _state:
        tasks = client().tasks("train", 0, 40)["tasks"]
        items = [{"task": t["task"], "function": "search_product_by_query", "parameter": t["instruction"]}
                 for t in tasks]
        scored = [(item, answer) for item, answer in zip(items, client().rewards(items)) if answer["reward"] > 0]
        assert scored, "no search task among the first 40 scores its instruction above 0"
        if partial:
            scored.sort(key=lambda pair: pair[1]["reward"] >= 1.0)
        item, answer = scored[0]
        _state[key] = (item["task"], item["parameter"], answer["reward"])
    return _state[key]


def review_task():
    """(task, reward): a train review task, and the reward of REVIEW for it (a similarity, neither 0 nor 1)."""
    if "review" not in _state:
        items = [{"task": f"train/{i}", "function": "add_product_review", "parameter": REVIEW} for i in range(40)]
        scored = [(item, answer) for item, answer in zip(items, client().rewards(items))
                  if answer["function_acc"] == 1.0]
        assert scored, "no review task among the first 40 train tasks"
        _state["review"] = (scored[0][0]["task"], scored[0][1]["reward"])
    return _state["review"]
