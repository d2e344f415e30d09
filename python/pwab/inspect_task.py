"""PersonalWAB as an Inspect AI task (docs/inspect.md): `inspect eval pwab/personalwab -T data=DATA --model M`.

The environment and the scorer are pwab's own: every sample is one episode of `pwab serve` (its tools are the
episode's steps, its observations the tool messages), and its score is the episode's score as `pwab serve` gives
it at the end (result accuracy "res_acc" and function accuracy "func_acc", the numbers `pwab score` reports for the
same records). The multi-turn user is pwab's scripted user, the server's own LLM user, or an Inspect model role
("user"): then the server's LLM user simulator (its prompts, its turn rules) asks that role's model for each
reply, through a loopback bridge this module serves in the evaluation's process.

Inspect finds the task through the package's `inspect_ai` entry point (python/pyproject.toml); the module imports
inspect_ai, so pwab's own `import pwab` never loads it.
"""

import asyncio
import atexit
import concurrent.futures
import contextvars
import json
import os
import secrets
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser,
                              GenerateConfig, get_model)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParams

from .client import Client
from .launch import launch

TASK_TYPES = ("search", "recommend", "review")
USERS = ("scripted", "llm", "model", "none")
MAX_BAD_CALLS = 3  # tool calls in a row whose arguments are not JSON before the episode is stopped

SYSTEM_PROMPT = (
    "You are a shopping assistant on an online store, working for the user whose request follows. Use the tools "
    "to serve the request: find products by a query, recommend products from the user's history, or write the "
    "review the user would write. Call one tool at a time. {track_rule}"
)
TRACK_RULES = {
    "single": "The request is complete as given: answer it with a single call of the fitting tool.",
    "multi": "You may talk to the user with the respond tool to learn more, try a tool again after the user's "
             "feedback, and call stop when the user is served.",
}


def _as_list(value):
    """A -T argument as a list: None, a list, or one comma-separated text."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def _task_types(data, split):
    """The type of every task of `split` in a dataset directory (user_instructions.json, docs/data.md)."""
    path = os.path.join(data, "user_instructions.json")
    try:
        with open(path, encoding="utf-8") as f:
            tasks = json.load(f)[split]
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"cannot read the task types of split {split!r} from {path}: {e}") from e
    return {f"{split}/{i}": t.get("type") for i, t in enumerate(tasks)}


class UserBridge:
    """An OpenAI-compatible /v1/chat/completions on loopback that answers with an Inspect model: the LLM user
    simulator of `pwab serve --user-base-url` talks to it, and it asks the model of the Inspect role for the reply.

    The model call runs on the evaluation's event loop (the loop a solver ran on, with that solver's context, so
    Inspect's transcript and usage accounting see it); the request thread waits for it."""

    def __init__(self, role="user"):
        self.role = role
        self.key = secrets.token_hex(16)
        self.model = None
        self.loop = None
        self.context = None
        self.calls = 0
        bridge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: Inspect's log is the record
                pass

            def do_POST(self):
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    return self._answer(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                if self.headers.get("Authorization") != f"Bearer {bridge.key}":
                    return self._answer(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                    status, answer = 200, bridge.complete(body)
                except Exception as e:  # noqa: BLE001 - the simulator sees a server error, pwab records the episode as errored
                    status, answer = 500, {"error": {"message": f"{type(e).__name__}: {e}", "type": "server_error"}}
                self._answer(status, answer)

            def _answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def attach(self):
        """Called from a solver: binds the role's model, the running loop and the solver's context."""
        if self.model is None:
            self.model = get_model(role=self.role, required=True)
        self.loop = asyncio.get_running_loop()
        self.context = contextvars.copy_context()

    def complete(self, body):
        if self.loop is None:
            raise RuntimeError("no evaluation is running")
        messages = []
        for m in body.get("messages", []):
            role, content = m.get("role"), m.get("content") or ""
            if isinstance(content, list):
                content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
            kind = {"system": ChatMessageSystem, "developer": ChatMessageSystem, "user": ChatMessageUser,
                    "assistant": ChatMessageAssistant}.get(role)
            if kind is None:
                raise ValueError(f"the user simulator sent a message of role {role!r}")
            messages.append(kind(content=content))
        config = GenerateConfig(temperature=body.get("temperature"), max_tokens=body.get("max_tokens"),
                                seed=body.get("seed"))
        output = self._run(self.model.generate(messages, config=config))
        self.calls += 1
        usage = output.usage
        return {
            "id": f"chatcmpl-bridge-{self.calls}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": output.completion}}],
            "usage": {"prompt_tokens": usage.input_tokens if usage else 0,
                      "completion_tokens": usage.output_tokens if usage else 0,
                      "total_tokens": usage.total_tokens if usage else 0},
        }

    def _run(self, coro):
        done = concurrent.futures.Future()

        def start():
            job = self.loop.create_task(coro, context=self.context.copy())

            def finish(t):
                if t.cancelled():
                    done.cancel()
                elif t.exception() is not None:
                    done.set_exception(t.exception())
                else:
                    done.set_result(t.result())

            job.add_done_callback(finish)

        self.loop.call_soon_threadsafe(start)
        return done.result(timeout=600)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _tool_infos(schemas):
    """Inspect's ToolInfo of each OpenAI tool schema the episode offers."""
    out = []
    for s in schemas:
        f = s.get("function", s)
        params = f.get("parameters") or {"type": "object", "properties": {}}
        out.append(ToolInfo(name=f["name"], description=f.get("description", ""),
                            parameters=ToolParams.model_validate(params)))
    return out


async def _call(fn, *args, **kwargs):
    # pwab's client is blocking (urllib): a worker thread keeps the event loop free for other samples and for the
    # user bridge, whose model call runs on this loop while the server waits for it.
    return await asyncio.to_thread(fn, *args, **kwargs)


@solver
def pwab_agent(server, track="single", user_sim=None, max_steps=None, history=True, seed=0, system_prompt=None,
               bridge=None):
    """Plays each sample's task as one `pwab serve` episode with the evaluated model: the episode's tools offered
    to the model, each tool call sent as a step, its observation returned as the tool's message. A reply with no
    tool call is a `respond` to the user in the multi-turn track (the user's answer comes back as a user message)
    and ends the episode (`stop`) in the single-turn track. The episode's record and score go to the sample's
    metadata under "pwab", for pwab_scorer."""
    prompt = (system_prompt or SYSTEM_PROMPT).format(track_rule=TRACK_RULES[track])

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        client = Client(server() if callable(server) else server)
        if bridge is not None:
            bridge.attach()
        task_id = state.metadata["task"]
        started = await _call(client.start, task_id, track=track, user_sim=user_sim, max_steps=max_steps,
                              seed=seed, history=history, trial=state.epoch - 1)
        episode = started["episode_id"]
        tools = _tool_infos(started["tools"])
        names = {t.name for t in tools}
        if track == "multi" and "respond" not in names:
            # `respond` is an action of the multi-turn track (docs/serve.md): offered as a tool, so that a model
            # can talk to the user explicitly as well as by a reply without tool calls.
            tools.append(ToolInfo(name="respond", description="Sends a message to the user and returns the "
                                  "user's answer.", parameters=ToolParams.model_validate(
                                      {"type": "object", "properties": {"content": {
                                          "type": "string", "description": "The message to the user."}},
                                       "required": ["content"]})))
            names.add("respond")
        state.messages = [ChatMessageSystem(content=prompt), ChatMessageUser(content=started["observation"])]
        model = get_model()
        finished = False
        bad_calls = 0
        while not finished:
            output = await model.generate(state.messages, tools=tools)
            state.output = output
            state.messages.append(output.message)
            calls = output.message.tool_calls or []
            if not calls:
                if track == "multi" and "respond" in names:
                    answer = await _call(client.step, episode, "respond", {"content": output.completion})
                    state.messages.append(ChatMessageUser(content=answer["observation"]))
                else:
                    answer = await _call(client.step, episode, "stop", {})
                finished = bool(answer.get("finished"))
                continue
            for call in calls:
                if call.parse_error is not None:
                    # Arguments that are no JSON object never reach the server: the model is told, as Inspect's
                    # own tool loop tells it, and after MAX_BAD_CALLS such replies in a row the episode is stopped
                    # (the model's failure, scored as such; pwab's own agents re-ask the same way, docs/llm.md).
                    bad_calls += 1
                    state.messages.append(ChatMessageTool(content=f"Error: the arguments are not valid JSON "
                                                                  f"({call.parse_error}). Call the tool again.",
                                                          tool_call_id=call.id, function=call.function))
                    if bad_calls >= MAX_BAD_CALLS:
                        answer = await _call(client.step, episode, "stop", {})
                        finished = bool(answer.get("finished"))
                        break
                    continue
                bad_calls = 0
                answer = await _call(client.step, episode, call.function, call.arguments)
                state.messages.append(ChatMessageTool(content=answer["observation"], tool_call_id=call.id,
                                                      function=call.function))
                if answer.get("finished"):
                    finished = True
                    break
        ended = await _call(client.end, episode)
        state.metadata["pwab"] = {"episode_id": episode, "record": ended["record"], "score": ended["score"]}
        state.completed = True
        return state

    return solve


@scorer(metrics={"res_acc": [mean(), stderr()], "func_acc": [mean()]})
def pwab_scorer():
    """The episode's score as pwab gave it when the episode ended: result accuracy (the benchmark's main number)
    and function accuracy. A sample that has no episode score raises: an unscored episode is never a 0."""

    async def score(state: TaskState, target: Target) -> Score:
        played = state.metadata.get("pwab")
        if not played:
            raise RuntimeError(f"task {state.metadata.get('task')}: no pwab episode was played for this sample")
        s = played["score"]
        record = played["record"]
        return Score(value={"res_acc": float(s["r"]), "func_acc": float(s["f"])},
                     answer=json.dumps(record.get("actions", [])[-1:])[:2000] if record.get("actions") else None,
                     metadata={"task": record.get("task"), "trial": record.get("trial"),
                               "ending": record.get("ending"), "steps": record.get("steps"),
                               "episode_id": played["episode_id"]})

    return score


class _Served:
    """A `pwab serve` the task launched, started when the first sample needs it and stopped at exit."""

    def __init__(self, args):
        self.args = args
        self.server = None
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            if self.server is None:
                # The bridge's key reaches the server through its environment (never its command line).
                os.environ.update(self.args.get("env") or {})
                self.server = launch(self.args["data"], out=self.args.get("out"), args=self.args.get("extra", []))
                atexit.register(self.server.stop)
            return self.server.url


@task
def personalwab(data=None, server=None, track="single", split="test", task_types=None, tasks=None, user=None,
                max_steps=None, history=True, seed=0, out=None, serve_args=None, system_prompt=None):
    """PersonalWAB (docs/inspect.md).

    Args:
      data: a pwab dataset directory: the task starts `pwab serve --data DATA --out OUT` itself (the binary
        from PWAB_BINARY or PATH).
      server: or the URL of a running `pwab serve` (then `out`, `serve_args` and user=model do not apply).
      track: "single" or "multi".
      split: the task split ("test", "train").
      task_types: "search", "recommend", "review", or several, comma-separated (needs `data`).
      tasks: task ids ("test/3,test/17") to play instead of the whole split.
      user: the multi-turn user: "scripted" (pwab's, the default), "llm" (the server's own LLM user), or "model"
        (an Inspect model role named "user": `--model-role user=PROVIDER/MODEL`).
      max_steps, history, seed: as for an episode of `pwab serve` (docs/serve.md).
      out: the run directory the launched server records the episodes in (default: a new temporary one, printed
        in the sample metadata); `pwab score OUT/<track>` scores it.
      serve_args: more `pwab serve` flags, e.g. "--embedder hashing".
      system_prompt: the agent's system prompt ("{track_rule}" is replaced by the track's rule).
    """
    if track not in ("single", "multi"):
        raise ValueError(f"track must be 'single' or 'multi', not {track!r}")
    if (data is None) == (server is None):
        raise ValueError("give exactly one of data=DATASET_DIR (the task starts pwab serve) or server=URL")
    user = user or ("scripted" if track == "multi" else "none")
    if user not in USERS:
        raise ValueError(f"user must be one of {', '.join(USERS)}, not {user!r}")
    if track == "single" and user != "none":
        raise ValueError("the single-turn track has no user simulator: leave user unset")
    types = _as_list(task_types)
    if types:
        unknown = [t for t in types if t not in TASK_TYPES]
        if unknown:
            raise ValueError(f"unknown task types {unknown}: use {', '.join(TASK_TYPES)}")
        if data is None:
            raise ValueError("task_types needs data=DATASET_DIR (pwab serve does not tell clients a task's type)")

    bridge = None
    if data is not None:
        extra = (serve_args.split() if isinstance(serve_args, str) else list(serve_args or []))
        if out is None:
            out = tempfile.mkdtemp(prefix="pwab-inspect-")
        env = None
        if user == "model":
            bridge = UserBridge("user")
            atexit.register(bridge.close)
            env = {"PWAB_INSPECT_USER_KEY": bridge.key}
            extra += ["--user-model", "inspect-user-role", "--user-base-url", bridge.url,
                      "--user-api-key-env", "PWAB_INSPECT_USER_KEY"]
        served = _Served({"data": data, "out": out, "extra": extra, "env": env})
        url = served
    else:
        if user == "model":
            raise ValueError("user=model needs data=DATASET_DIR: the task must start pwab serve with its bridge")
        url = server

    listing = Client(url() if callable(url) else url)
    wanted = _as_list(tasks)
    if wanted is None:
        wanted = [t["task"] for t in listing.iter_tasks(split)]
    if types:
        kinds = _task_types(data, split)
        wanted = [t for t in wanted if kinds.get(t) in types]
    if not wanted:
        raise ValueError(f"no tasks to play (split {split!r}, types {types}, tasks {tasks!r})")
    instructions = {t["task"]: t["instruction"] for t in listing.iter_tasks(split)} if tasks is None else {}
    samples = [Sample(id=t, input=instructions.get(t, t), metadata={"task": t, "track": track, "out": out})
               for t in wanted]
    user_sim = {"none": None, "scripted": "scripted", "llm": "llm", "model": "llm"}[user]
    return Task(
        dataset=MemoryDataset(samples, name=f"personalwab-{split}-{track}"),
        solver=pwab_agent(url, track=track, user_sim=user_sim, max_steps=max_steps, history=history, seed=seed,
                          system_prompt=system_prompt, bridge=bridge),
        scorer=pwab_scorer(),
        metadata={"pwab_out": out, "track": track, "split": split},
    )
