"""verl on pwab: a custom reward function (compute_score) and a tool class for verl's tool agent loop.

Contract read and tested: verl 0.9.1 (verl-project/verl): verl/experimental/reward_loop/reward_manager/naive.py
(the reward loop, the only reward path of verl 0.9's trainer), verl/tools/base_tool.py, verl/tools/tool_registry.py,
verl/experimental/agent_loop/tool_agent_loop.py (docs/rl-engines.md). The tool needs verl 0.7 or later: before
0.7 `execute()` got no agent_data, so the calls of one trajectory could not be told apart from another's. Importing
this module imports nothing from verl; the tool class subclasses verl's BaseTool when verl is importable, at first
use.

compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) scores one response (the
completion text) for the task key in ground_truth with POST /v1/reward and returns {"score", "function_acc",
"result_acc"} (the same keys every time, as verl's reward loop needs). compute_score_batch is the plural form, for
the `batch` manager of verl's legacy reward workers (verl.workers.reward_manager), which verl 0.9 still ships but
its trainer no longer uses. compute_episode_score is for tool-agent runs on the reward loop: the sum of the tools'
rewards (the episode's score once it has finished), from extra_info["tool_rewards"], which only the reward loop
passes; anywhere else it raises rather than score 0.

PwabTool (class_name: pwab.rl.verl_adapter.PwabTool in the tool YAML) plays one pwab episode per trajectory:
verl calls create, execute and release once per tool call, so the episode is kept per trajectory under
agent_data.request_id, started at the trajectory's first call with the task from create_kwargs, and ended when
it finishes (the server's rules) or, unfinished, after `idle_s` seconds without a call. verl turns an exception
in a tool into a message to the model with reward 0, so PwabTool also writes each failure (server unreachable,
unknown task, an HTTP refusal) into agent_data.extra_fields["pwab_errors"], and compute_episode_score raises on it.

    python3 -m pwab.rl.verl_adapter --url http://127.0.0.1:8765 [--track single|multi] > pwab_tools.yaml

prints the tool YAML with every tool's schema.

>>> from pwab.rl.verl_adapter import compute_score
>>> compute_score(data_source="pwab", solution_str="add_product_review\\nGreat.", ground_truth="train/0",
...               extra_info={"index": 0}, url=URL)
{'score': 0.0, 'function_acc': 0.0, 'result_acc': 0.0}
>>> import asyncio, types
>>> from pwab.rl.verl_adapter import tool_class
>>> tool = tool_class()(config={"type": "native", "name": "search_product_by_query", "url": URL}, tool_schema=None)
>>> async def one_call():                                  # what ToolAgentLoop._call_tool does
...     instance_id, _ = await tool.create(create_kwargs={"task": "train/0"})
...     response, reward, metrics = await tool.execute(instance_id, {"query": "kettle"},
...         agent_data=types.SimpleNamespace(request_id="trajectory-1", tools_kwargs={}, extra_fields={}))
...     await tool.release(instance_id)
...     return response.text.startswith("['Product 0"), metrics["done"]
>>> asyncio.run(one_call())
(True, True)
"""

import argparse
import asyncio
import json
import sys
import threading
import time
import uuid
from collections import OrderedDict

from pwab.rl import config as rl_config

RESPOND_SCHEMA = {"type": "function", "function": {
    "name": "respond",
    "description": ("Says something to the user, such as a question about what they want, and returns the "
                    "user's answer."),
    "parameters": {"type": "object", "properties": {"content": {"type": "string",
                                                                "description": "The message to the user."}},
                   "required": ["content"]}}}


# --- rewards ------------------------------------------------------------------------------------------------------

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's custom reward function: the benchmark's reward of `solution_str` (the response) for the task key
    `ground_truth`. `url`/`token` may come as reward_kwargs in the config; other kwargs are ignored."""
    answer = rl_config.client(kwargs.get("url"), kwargs.get("token")).reward(
        str(_task_of(ground_truth, extra_info)), completion=solution_str or "")
    return _score(answer)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    """compute_score for the `batch` manager of verl's legacy reward workers (reward_model.reward_manager=batch,
    verl.workers.reward_manager.BatchRewardManager): lists in, a list of dicts out, one request. verl 0.9's
    reward loop has no batch manager; there, use compute_score."""
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    items = [{"task": str(_task_of(g, e)), "completion": s or ""}
             for s, g, e in zip(solution_strs, ground_truths, extra_infos)]
    answers = rl_config.client(kwargs.get("url"), kwargs.get("token")).rewards(items)
    return [_score(a) for a in answers]


def compute_episode_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """For tool-agent runs with PwabTool: the episode's score, the sum of the tool rewards verl collected
    (extra_info["tool_rewards"]: 0 for every call but the one that finished the episode); 0.0 when the model
    called no tool. Unlike compute_score it needs no request: the episode was scored as it was played.

    verl's reward loop (verl 0.9's only reward path) passes the agent loop's tool_rewards in extra_info; the
    legacy reward workers do not, so there this raises instead of scoring every sample 0. It also raises when a
    tool call of the trajectory failed on pwab's side (extra_info["pwab_errors"], written by PwabTool): verl itself
    only shows the model the error and counts the call as reward 0."""
    info = extra_info if isinstance(extra_info, dict) else {}
    errors = info.get("pwab_errors")
    if errors is not None and len(errors):
        raise RuntimeError(f"pwab compute_episode_score: {len(errors)} tool call(s) of this trajectory failed on "
                           f"pwab's side, so it has no score; the first: {errors[0]}")
    if "tool_rewards" not in info:
        raise ValueError("pwab compute_episode_score: extra_info has no 'tool_rewards'. It is the reward for tool "
                         "agent runs (PwabTool) on verl's reward loop (verl >= 0.7), which passes the agent loop's "
                         "tool rewards; for single-turn responses use compute_score")
    rewards = info["tool_rewards"]
    return float(sum(float(r) for r in rewards)) if rewards is not None and len(rewards) else 0.0


def _task_of(ground_truth, extra_info):
    if ground_truth:
        return ground_truth
    if isinstance(extra_info, dict) and extra_info.get("task"):
        return extra_info["task"]
    raise ValueError("pwab compute_score: no task key: rows need reward_model.ground_truth = 'train/17' "
                     "(python3 -m pwab.rl.dataset writes it)")


def _score(answer):
    return {"score": float(answer["reward"]), "function_acc": float(answer["function_acc"]),
            "result_acc": float(answer["result_acc"])}


# --- the tool -----------------------------------------------------------------------------------------------------

class _Trajectory:
    __slots__ = ("lock", "episode_id", "finished", "reward", "score", "last_used", "note")

    def __init__(self):
        self.lock = threading.Lock()
        self.episode_id = None
        self.finished = False
        self.reward = 0.0
        self.score = None
        self.last_used = time.monotonic()
        self.note = ""


class _Trajectories:
    """The episodes of this process's trajectories, shared by the PwabTool instances (one per tool name)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries = OrderedDict()

    def get(self, key, create=True):
        with self._lock:
            entry = self._entries.get(key)
            if entry is None and create:
                entry = self._entries[key] = _Trajectory()
            if entry is not None:
                entry.last_used = time.monotonic()
                self._entries.move_to_end(key)
            return entry

    def pop(self, key):
        with self._lock:
            return self._entries.pop(key, None)

    def expire(self, idle_s):
        """Marks episodes idle for idle_s as over and returns (client, episode id) pairs to end; forgets entries
        idle for 4 * idle_s."""
        now, ending = time.monotonic(), []
        with self._lock:
            for key in list(self._entries):
                entry = self._entries[key]
                if now - entry.last_used < idle_s:
                    break  # ordered by last use
                if now - entry.last_used >= 4 * idle_s:
                    del self._entries[key]
                if entry.episode_id is not None and not entry.lock.locked():
                    ending.append((key[0], entry.episode_id))
                    entry.episode_id, entry.finished = None, True
                    entry.note = f"ended after {idle_s:g} s without a tool call"
        return ending

    def __len__(self):
        return len(self._entries)


_TRAJECTORIES = _Trajectories()


class PwabToolCore:
    """The pwab side of PwabTool, without verl. `config` (the YAML's config: mapping): `type` ("native", verl's),
    `name` (the tool, when the YAML gives no tool_schema), `url`/`token` (else PWAB_URL, configure()), `track`,
    `user_sim`, `max_steps` (of new episodes), `idle_s` (300: an unfinished episode untouched this long is ended)."""

    def __init__(self, config, tool_schema=None):
        self.config = dict(config or {})
        self.client = rl_config.client(self.config.get("url"), self.config.get("token"))
        self.episode = rl_config.episode_settings(self.config.get("track"), self.config.get("user_sim"),
                                                  self.config.get("max_steps"))
        self.idle_s = float(self.config.get("idle_s", 300))
        self._created = {}
        self.tool_schema = tool_schema or self.get_openai_tool_schema()
        self.name = self.tool_schema.function.name

    def get_openai_tool_schema(self):
        """The schema of config["name"], as the server describes the tool."""
        name = self.config.get("name")
        if not name:
            raise ValueError("PwabTool: give a tool_schema in the tool YAML, or config.name (one of "
                             "search_product_by_query, get_recommendations_by_history, add_product_review, "
                             "get_product_details_by_asin, respond, stop)")
        for schema in tool_schemas(self.client, with_respond=True):
            if schema["function"]["name"] == name:
                return _schema_object(schema)
        raise ValueError(f"PwabTool: the server has no tool {name!r}")

    async def create(self, instance_id=None, **kwargs):
        """One tool call begins: keeps its create_kwargs (the task) until execute."""
        create_kwargs = kwargs.get("create_kwargs", kwargs) or {}
        instance_id = instance_id or str(uuid.uuid4())
        self._created[instance_id] = dict(create_kwargs)
        return instance_id, _tool_response(None)

    async def execute(self, instance_id, parameters, **kwargs):
        """Steps the trajectory's episode with this tool and `parameters`; returns (response, reward, metrics), the
        reward 0 until the step that finishes the episode, then the episode's score. A failure is raised (verl
        shows it to the model) and also noted in agent_data.extra_fields["pwab_errors"] for the reward."""
        agent_data = kwargs.get("agent_data")
        key = getattr(agent_data, "request_id", None)
        if not key:
            raise RuntimeError("PwabTool needs verl >= 0.7: execute() got no agent_data.request_id, so this call "
                               "cannot be tied to its trajectory (each call would be an episode of its own)")
        task = _task_for(self._created.get(instance_id), agent_data)
        try:
            text, reward, metrics = await asyncio.to_thread(self._step, key, task, parameters)
        except Exception as error:
            extra = getattr(agent_data, "extra_fields", None)
            if isinstance(extra, dict):
                extra.setdefault("pwab_errors", []).append(f"{self.name}: {type(error).__name__}: {error}")
            raise
        return _tool_response(text), reward, metrics

    async def release(self, instance_id, **kwargs):
        """The call is over (the trajectory's episode goes on)."""
        self._created.pop(instance_id, None)

    def _step(self, key, task, parameters):
        for client_url, episode_id in _TRAJECTORIES.expire(self.idle_s):
            _end_quietly(rl_config.client(client_url, self.client.token), episode_id)
        entry = _TRAJECTORIES.get((self.client.url, key))
        with entry.lock:
            entry.last_used = time.monotonic()
            if entry.finished:
                return (f"The episode is over ({entry.note}); no tool changes anything now.", 0.0,
                        {"done": True, "steps": 0})
            if entry.episode_id is None:
                if not task:
                    raise ValueError("PwabTool: no task for this trajectory: rows need extra_info.tools_kwargs."
                                     f"{self.name}.create_kwargs.task (python3 -m pwab.rl.dataset --verl-tools)")
                started = self.client.env_reset(task=task, history=False, **self.episode)
                entry.episode_id = started["observation"]["episode_id"]
            answer = self.client.env_step(entry.episode_id, {"name": self.name, "arguments": parameters})
            observation = answer["observation"]
            reward = float(answer["reward"] or 0.0)
            if answer["done"]:
                entry.episode_id, entry.finished, entry.reward = None, True, reward
                entry.score = observation.get("score")
                entry.note = f"it ended by {observation.get('ending', 'its rules')}"
            return observation["text"], reward, {"done": bool(answer["done"]), "steps": observation.get("steps", 0)}


def tool_class():
    """PwabTool: PwabToolCore on verl's BaseTool when verl is importable (else PwabToolCore alone, which has the
    same methods and returns objects with the attributes verl reads)."""
    cached = globals().get("_tool_class")
    if cached is None:
        try:
            from verl.tools.base_tool import BaseTool
        except ImportError:
            cached = PwabToolCore
        else:
            cached = type("PwabTool", (PwabToolCore, BaseTool), {"__module__": __name__,
                                                                  "__doc__": PwabToolCore.__doc__})
        globals()["_tool_class"] = cached
    return cached


def __getattr__(name):  # PEP 562: `pwab.rl.verl_adapter.PwabTool` builds the class when verl asks for it
    if name == "PwabTool":
        return tool_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def tool_schemas(client, with_respond=True):
    """The OpenAI schemas of every pwab tool (from GET /v1/info), `respond` included, each with complete
    parameters (type, properties, required), as verl's schema model requires."""
    schemas = [json.loads(json.dumps(t)) for t in client.info()["tools"]]
    if with_respond:
        schemas.append(json.loads(json.dumps(RESPOND_SCHEMA)))
    for schema in schemas:
        parameters = schema["function"].setdefault("parameters", {})
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        parameters.setdefault("required", [])
    return schemas


def tool_yaml(client, track="single"):
    """The tool config YAML for verl (actor_rollout_ref.rollout.multi_turn.tool_config_path): the task tools and
    stop, plus respond in the multi-turn track. JSON flow mappings, which YAML reads as they are."""
    names = ["search_product_by_query", "get_recommendations_by_history", "add_product_review", "stop"]
    if track == "multi":
        names.insert(3, "respond")
    by_name = {s["function"]["name"]: s for s in tool_schemas(client)}
    lines = ["# pwab tools for verl's tool agent loop (python3 -m pwab.rl.verl_adapter)", "tools:"]
    for name in names:
        settings = {"type": "native", "url": client.url, "track": track}
        lines += ["  - class_name: pwab.rl.verl_adapter.PwabTool", f"    config: {json.dumps(settings)}",
                  f"    tool_schema: {json.dumps(by_name[name])}"]
    return "\n".join(lines) + "\n"


def _task_for(created, agent_data):
    if created and (created.get("task") or created.get("ground_truth")):
        return created.get("task") or created.get("ground_truth")
    for kwargs in (getattr(agent_data, "tools_kwargs", None) or {}).values():
        task = ((kwargs or {}).get("create_kwargs") or {}).get("task")
        if task:
            return task
    return None


def _end_quietly(client, episode_id):
    try:
        client.end(episode_id)
    except Exception:  # noqa: BLE001 - already gone
        pass


class _Response:
    """What verl reads of a ToolResponse (used when verl is not importable)."""

    def __init__(self, text=None):
        self.text, self.image, self.video = text, None, None

    def is_empty(self):
        return not self.text


def _tool_response(text):
    try:
        from verl.tools.schemas import ToolResponse
    except ImportError:
        return _Response(text)
    return ToolResponse(text=text)


class _Namespace:
    def __init__(self, data):
        self._data = data
        for key, value in data.items():
            setattr(self, key, _Namespace(value) if isinstance(value, dict) else value)

    def model_dump(self, **kwargs):
        return json.loads(json.dumps(self._data))


def _schema_object(schema):
    try:
        from verl.tools.schemas import OpenAIFunctionToolSchema
    except ImportError:
        return _Namespace(schema)
    return OpenAIFunctionToolSchema.model_validate(schema)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m pwab.rl.verl_adapter",
                                     description="Print verl's tool config YAML for a running `pwab serve`.")
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", default=None)
    parser.add_argument("--track", default="single", choices=["single", "multi"])
    args = parser.parse_args(argv)
    sys.stdout.write(tool_yaml(rl_config.client(args.url, args.token), args.track))
    return 0


if __name__ == "__main__":
    sys.exit(main())
