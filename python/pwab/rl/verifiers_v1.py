"""pwab as a verifiers v1 environment (the API of verifiers 0.4; docs/rl-engines.md, section verifiers).

verifiers 0.4 loads an environment by a plugin id: it imports the top-level module of that name and takes the
Taskset, Env and Harness subclasses its `__all__` exports. That module is `pwab_verifiers` (beside the package
`pwab`, which must not import verifiers), re-exporting the classes defined here, so

    vf-eval pwab_verifiers --env.taskset.url http://127.0.0.1:8765 --env.taskset.limit 8 \\
        --model MODEL --client.base-url http://127.0.0.1:8000/v1 --client.api-key-var OPENAI_API_KEY --no-push

evaluates a model on pwab's tasks, with pwab's own scores as the rewards. It imports verifiers at the top: only
verifiers' loader (or a user who has verifiers) imports it; `pwab` and `pwab.rl` never do.

- PwabTaskset yields one PwabTask per pwab task (GET /v1/tasks): the chat prompt of pwab.rl.dataset, the task
  key as the task's key.
- PwabEnv plays a task in one of two modes (`--env.taskset.mode`):
  * "single" (default): the model answers once; the answer is scored by POST /v1/reward (reward pwab_reward =
    result accuracy; metric pwab_function_acc). A structured tool call is read as its Hermes text.
  * "episode": a pwab episode (POST /reset, /step) per rollout. Each model reply is one action (a Hermes
    `<tool_call>` or pwab's text format, read by pwab.rl.parse_action_text; in the multi-turn track plain text
    is a message to the user); the server's observation is the next user turn; the server says when the episode
    is done, and its score is the reward. An episode the model did not finish (the seat's max_turns) is ended
    and scored as it stands.
- PwabHarness is the policy's program: one chat completion per turn, by a standard-library script run on this
  machine. verifiers' own chat harnesses (`null`, `bash`) build a `uv` environment from PyPI at run time and
  stream; this one runs offline and against servers that do not stream (`pwab lm serve`). Another harness can
  be pinned with --env.agent.harness.id (it must not need tools: pwab's environment reads the reply's text or
  tool calls itself).

Errors are errors: a pwab server that cannot be reached, an unknown task, or a refused step fails the rollout
(verifiers records the error on the trace and the episode is not ok; its reward is not 0 but absent).
"""

import asyncio
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Literal

import verifiers.v1 as vf

from pwab.errors import PwabError
from pwab.rl import config as rl_config
from pwab.rl.dataset import task_rows
from pwab.rl.parse import completion_text, parse_action_text

MODES = ("single", "episode")
PLUGIN_ID = "pwab_verifiers"  # the module verifiers' loader imports (python/pwab_verifiers.py)


class PwabTasksetConfig(vf.TasksetConfig):
    """Which pwab tasks load, and how they are played (`--env.taskset.*`)."""

    url: str | None = None
    """The `pwab serve` to play against (else PWAB_URL)."""
    token_var: str = "PWAB_TOKEN"
    """The environment variable that holds the server's bearer token, if it asks for one. (A name, as verifiers'
    --client.api-key-var: configs and traces are written to disk, the token must not be.)"""
    split: str = "test"
    limit: int | None = None
    """The first `limit` tasks of `split` from `offset` on (all of them by default)."""
    offset: int = 0
    tasks: list[str] = []
    """Explicit task keys ("test/3"); when given, split/limit/offset are not used."""
    history_items: int = 10
    """The user's last purchases shown in each prompt."""
    mode: Literal["single", "episode"] = "single"
    track: Literal["single", "multi"] | None = None
    """The episode's track (mode "episode"): "multi" (a simulated user answers) or "single"."""
    user_sim: str | None = None
    max_steps: int | None = None


class PwabData(vf.TaskData):
    task: str
    """pwab's task key, e.g. "test/3"."""
    user_id: str = ""
    mode: Literal["single", "episode"] = "single"
    track: str = "single"
    user_sim: str | None = None
    max_steps: int | None = None
    url: str
    token_var: str = "PWAB_TOKEN"


def _client(url, token_var):
    return rl_config.client(url, os.environ.get(token_var) or None)


class PwabTask(vf.Task[PwabData, vf.State, vf.TaskConfig]):
    """One pwab task. Its rewards come from the server: /v1/reward of the answer (mode "single"), or the score of
    the episode PwabEnv played (mode "episode")."""

    @property
    def key(self):
        return self.data.task

    @vf.stop
    def pwab_one_answer(self, trace: vf.Trace) -> bool:
        """Mode "single" scores the first answer: no second model call, whatever the seat's harness (a chat loop
        would answer a tool call it cannot run and ask again)."""
        return self.data.mode == "single" and trace.num_turns >= 1

    @vf.reward
    async def pwab_reward(self, trace) -> float:
        return float((await self._scored(trace))["result_acc"])

    @vf.metric
    async def pwab_function_acc(self, trace) -> float:
        return float((await self._scored(trace))["function_acc"])

    async def _scored(self, trace):
        # Both signals read one score: the reward call (or the episode's end) happens once per trace.
        found = trace.info.get("pwab_score")
        if found is not None:
            return found
        if self.data.mode == "episode":
            # The env records the score when the episode ends; none means it never ended (an error earlier).
            raise RuntimeError(f"pwab: the episode of {self.data.task!r} has no score (it did not end)")
        answers = trace.assistant_messages
        if not answers:
            raise RuntimeError(f"pwab: no answer to score for {self.data.task!r}")
        text = completion_text(answers[0])
        try:
            client = _client(self.data.url, self.data.token_var)
            answer = await asyncio.to_thread(client.reward, self.data.task, completion=text)
        except PwabError as e:
            raise RuntimeError(f"pwab: /v1/reward refused the answer to {self.data.task!r}: {e}") from e
        score = {"result_acc": float(answer["reward"]), "function_acc": float(answer["function_acc"])}
        trace.info["pwab_score"] = score
        return score


class PwabTaskset(vf.Taskset[PwabTask, PwabTasksetConfig]):
    """pwab's tasks, read from the server when the taskset is iterated."""

    def load(self) -> Iterator[PwabTask]:
        config = self.config
        if config.mode not in MODES:
            raise ValueError(f"pwab: mode must be one of {MODES}, not {config.mode!r}")
        client = _client(config.url, config.token_var)
        episode = rl_config.episode_settings(config.track or ("multi" if config.mode == "episode" else None),
                                             config.user_sim, config.max_steps)
        prompt_track = episode["track"] if config.mode == "episode" else "single"
        if config.tasks:
            rows = []
            for key in config.tasks:
                split, _, index = key.rpartition("/")
                if not split or not index.isdigit():
                    raise ValueError(f"pwab: a task key is SPLIT/INDEX (e.g. test/3), not {key!r}")
                found = task_rows(client, split, 1, int(index), config.history_items, prompt_track)
                if not found or found[0]["task"] != key:
                    raise ValueError(f"pwab: unknown task {key!r} (the server has no such task)")
                rows += found
        else:
            rows = task_rows(client, config.split, config.limit, config.offset, config.history_items, prompt_track)
            if not rows:
                raise ValueError(f"pwab: split {config.split!r} has no tasks from offset {config.offset} on")
        for row in rows:
            system, user = row["prompt"]
            yield PwabTask(PwabData(id=row["task"], name=row["task"], system_prompt=system["content"],
                                    prompt=user["content"], task=row["task"],
                                    user_id=row["extra_info"]["user_id"], mode=config.mode,
                                    track=episode["track"], user_sim=episode["user_sim"],
                                    max_steps=episode["max_steps"], url=client.url, token_var=config.token_var),
                           config.task)


# The policy's program: one chat completion on the conversation it is given, then exit. verifiers relaunches it
# for every turn with the conversation so far (Harness.resume), and pwab's environment plays the tools itself, so
# a tool loop is not needed. Standard library only and not streamed: it runs with any Python 3, offline, and
# against servers that do not stream (`pwab lm serve`); verifiers' interception server sits between it and the
# model and applies the run's model and sampling settings.
PROGRAM = r"""
import argparse, json, os, sys, urllib.error, urllib.request

parser = argparse.ArgumentParser()
for name in ("--base-url", "--api-key", "--model"):
    parser.add_argument(name, required=True)
for name in ("--system-prompt", "--prompt", "--initial-messages-file"):
    parser.add_argument(name, default="")
args = parser.parse_args()
messages = [{"role": "system", "content": args.system_prompt}] if args.system_prompt else []
if args.initial_messages_file:
    with open(args.initial_messages_file) as f:
        messages += json.load(f)
    os.unlink(args.initial_messages_file)
elif args.prompt:
    messages.append({"role": "user", "content": args.prompt})
request = urllib.request.Request(
    args.base_url.rstrip("/") + "/chat/completions",
    data=json.dumps({"model": args.model, "messages": messages}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + args.api_key})
try:
    with urllib.request.urlopen(request, timeout=3600) as response:
        json.load(response)
except urllib.error.HTTPError as e:
    sys.stderr.write("model call failed: HTTP %d: %s\n" % (e.code, e.read().decode("utf-8", "replace")[:2000]))
    sys.exit(97)  # verifiers' exit code for a failed model transport (verifiers.v1.errors)
except OSError as e:
    sys.stderr.write("model call failed: %s\n" % e)
    sys.exit(97)
"""


class PwabHarnessConfig(vf.HarnessConfig):
    python: str | None = None
    """The interpreter that runs the policy's program (standard library only; None: the one running verifiers)."""


class PwabHarness(vf.Harness[PwabHarnessConfig]):
    """The policy's seat for pwab: one model call per turn, by a standard-library program run on this machine
    (no `uv` environment built from PyPI at run time, no streaming asked of the model server)."""

    APPENDS_SYSTEM_PROMPT = True  # the task's system prompt goes as a system message
    SUPPORTS_RESUME = True  # each turn relaunches the program on the conversation so far
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        from verifiers.v1.dialects.chat import message_to_wire

        system_prompt, prompt = self.resolve_prompt(data)
        source = PROGRAM.encode()
        path = f"{runtime.scripts_dir}/pwab-policy-{hashlib.sha256(source).hexdigest()[:16]}.py"
        await runtime.write(path, source)
        argv = [self.config.python or sys.executable, path, f"--base-url={endpoint}", f"--api-key={secret}",
                f"--model={ctx.model}"]
        if system_prompt:
            argv.append(f"--system-prompt={system_prompt}")
        if isinstance(prompt, str):
            argv.append(f"--prompt={prompt}")
        elif prompt is not None:
            messages = f"{runtime.scripts_dir}/pwab-messages-{trace.id}.json"
            await runtime.write(messages, json.dumps([message_to_wire(m) for m in prompt]).encode())
            argv.append(f"--initial-messages-file={messages}")
        return await runtime.run_program(argv, dict(self.config.resolved_env))


class PwabEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The policy's seat. It runs on this machine (subprocess runtime) by default: the chat loop executes no
    code, and pwab serve is usually on loopback."""


class PwabEnv(vf.Env[PwabEnvConfig]):
    """One pwab task per episode: a single answer, or a pwab episode stepped turn by turn."""

    async def run(self, task, agents):
        if task.data.mode != "episode":
            await agents.agent.run(task)
            return
        data = task.data
        client = _client(data.url, data.token_var)
        try:
            started = await asyncio.to_thread(client.env_reset, task=data.task, track=data.track, history=False,
                                              user_sim=data.user_sim, max_steps=data.max_steps)
        except PwabError as e:
            raise RuntimeError(f"pwab: the episode of {data.task!r} did not start: {e}") from e
        episode_id = started["observation"]["episode_id"]
        fallback = "respond" if data.track == "multi" else None
        try:
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    replies = [m for m in segment.messages if isinstance(m, vf.AssistantMessage)]
                    last = replies[-1] if replies else vf.AssistantMessage(content="")
                    if last.tool_calls:
                        name, arguments = parse_action_text(completion_text(last))
                    else:
                        name, arguments = parse_action_text(last.content or "", fallback=fallback)
                    try:
                        answer = await asyncio.to_thread(
                            client.env_step, episode_id, {"name": name, "arguments": arguments or {}})
                    except PwabError as e:
                        raise RuntimeError(f"pwab: step {name!r} of {data.task!r} refused: {e}") from e
                    if answer["done"]:
                        episode_id = None
                        score = answer["observation"].get("score") or {}
                        interaction.trace.info["pwab_score"] = {
                            "result_acc": float(answer["reward"] or 0.0),
                            "function_acc": float(score.get("function_acc", 0.0))}
                        break
                    segment = await interaction.turn(answer["observation"]["text"])
                if episode_id is not None:
                    # The seat's turn budget ran out first: end the episode and score its attempts as they stand.
                    ended = await asyncio.to_thread(client.end, episode_id)
                    episode_id = None
                    score = ended.get("score") or {}
                    interaction.trace.info["pwab_score"] = {"result_acc": float(score.get("r", 0.0)),
                                                            "function_acc": float(score.get("f", 0.0))}
        finally:
            if episode_id is not None:  # an error above: the episode must not stay open on the server
                try:
                    await asyncio.to_thread(client.end, episode_id)
                except PwabError:
                    pass


# load_environment's keywords of the v0 adapter that mean something else here, and what to use instead.
_V0_ONLY = {"eval_split": "vf-eval's --select options (or --env.taskset.split) choose the evaluated tasks",
            "eval_limit": "vf-eval's -n / --select.limit",
            "native_tools": "the v1 environment reads tool calls from the reply (Hermes text or tool_calls); it "
                            "offers no tool definitions",
            "system_prompt": "--env.taskset.system-prompt FILE"}


def load_environment(**settings):
    """A verifiers v1 environment of pwab (a PwabEnv). `settings`: PwabTasksetConfig's fields (url, token_var,
    split, limit, offset, tasks, history_items, mode, track, user_sim, max_steps); `token` is set as
    pwab.rl.configure(token=...) sets it; `multi_turn=True` is mode="episode"; `max_turns` and `agent` (a dict of
    vf.AgentConfig's fields) set the policy's seat."""
    for name, instead in _V0_ONLY.items():
        if name in settings:
            raise TypeError(f"pwab.load_environment: {name!r} is a keyword of the verifiers v0 adapter; with "
                            f"verifiers {vf_version()} (v1) use {instead}")
    token = settings.pop("token", None)
    if token:  # as pwab.rl.configure(token=...): PWAB_TOKEN of this process and those it starts
        rl_config.configure(token=token)
    agent = dict(settings.pop("agent", None) or {})
    if "max_turns" in settings:
        agent["max_turns"] = settings.pop("max_turns")
    if "multi_turn" in settings:
        settings["mode"] = "episode" if settings.pop("multi_turn") else "single"
    mode = settings.get("mode", "single")
    if mode not in MODES:
        raise ValueError(f"pwab: mode must be one of {MODES}, not {mode!r}")
    unknown = set(settings) - set(PwabTasksetConfig.model_fields)
    if unknown:
        raise TypeError(f"pwab.load_environment: unknown settings {sorted(unknown)}; known: "
                        f"{sorted(set(PwabTasksetConfig.model_fields) - {'id', 'task'})}, multi_turn, max_turns, "
                        "agent")
    env = {"taskset": {"id": PLUGIN_ID, **settings}}
    if agent:
        env["agent"] = agent
    return PwabEnv(vf.resolve_env_config(env))


def vf_version():
    import verifiers
    return verifiers.__version__


# verifiers' loader reads a plugin's classes from its module's __all__ (pwab_verifiers re-exports these).
__all__ = ["PwabEnv", "PwabHarness", "PwabTaskset"]
