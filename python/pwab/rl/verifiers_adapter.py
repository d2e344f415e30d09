"""verifiers on pwab: `load_environment`, the entry point verifiers' loaders call (docs/rl-engines.md).

verifiers 0.4 ships only its v1 API (verifiers.v1: Taskset, Env, Harness); there load_environment returns
pwab.rl.verifiers_v1's environment, and `vf-eval pwab_verifiers ...` runs it. verifiers 0.3 also ships the
v0 API (verifiers.legacy, reached as `import verifiers as vf`: SingleTurnEnv, MultiTurnEnv, Rubric), which this
module serves when it is there; it is tested with verifiers 0.3.1 (test/ecosystem/test_verifiers_v0.py). verifiers
and datasets are imported inside load_environment only.

With the v0 API, load_environment(url=..., ...) returns
- by default a single-turn environment (a vf.SingleTurnEnv): one answer per task, scored by POST /v1/reward as
  soon as the model has answered (reward = result accuracy, with function accuracy as a metric of weight 0). A
  score that cannot be had (server unreachable, unknown task) is a vf.Error: verifiers marks the rollout errored
  (state["error"]); the reward is never a silent 0;
- with multi_turn=True an episode environment (a vf.MultiTurnEnv): each assistant turn is one action on a pwab
  episode (a native tool call, or text read by pwab.rl.parse_action_text; in the multi-turn track plain text is
  a message to the user), the server's observation is the next user (or tool) message, the server decides when
  the episode ends, and the reward is the episode's score. An episode still open when the rollout stops is ended
  by a cleanup handler.

The task key is each row's `answer` (and info["pwab_task"]; verifiers 0.3 reserves info["task"] for a serialized
task payload). `vf-eval pwab -a '{"url": "http://127.0.0.1:8765"}'`
(verifiers 0.3's v0 vf-eval) finds this through pwab.load_environment.

>>> import asyncio
>>> from pwab.rl.verifiers_adapter import reward_functions
>>> reward, function_acc = reward_functions(URL)
>>> state = {}
>>> completion = [{"role": "assistant", "content": "add_product_review\\nLovely."}]
>>> asyncio.run(reward(completion=completion, answer="train/0", state=state)), \\
...     asyncio.run(function_acc(completion=completion, answer="train/0", state=state))
(0.0, 0.0)
"""

import asyncio

from pwab.rl import config as rl_config
from pwab.rl.dataset import task_rows
from pwab.rl.parse import completion_text, parse_action_text, _field
from pwab.rl.verl_adapter import tool_schemas
from pwab.errors import PwabError


def load_environment(url=None, token=None, split="train", limit=None, offset=0, history_items=10,
                     eval_split="test", eval_limit=None, multi_turn=False, track=None, user_sim=None,
                     max_steps=None, native_tools=False, **kwargs):
    """The pwab environment for verifiers. `url`/`token`: the server (else PWAB_URL); `split`, `limit`,
    `offset`: the training tasks; `eval_split`, `eval_limit`: the evaluation tasks (eval_split=None: none);
    `history_items`: purchases shown in each prompt. `multi_turn`: play episodes (track `track`, "multi" by
    default, with `user_sim` and `max_steps`); `native_tools`: offer the tools as tool definitions instead of
    asking for Hermes-style calls in text. Other kwargs go to the environment's constructor (e.g. system_prompt,
    max_turns; a single-turn environment is one turn whatever max_turns says).

    With verifiers >= 0.4 (no v0 API) this returns pwab.rl.verifiers_v1's environment instead (a vf.Env): the
    same settings, `tasks`/`mode` besides, `max_turns` for the policy's seat; eval_split, eval_limit and
    native_tools have no v1 meaning there and are refused with what to use instead."""
    import verifiers as vf
    if not hasattr(vf, "MultiTurnEnv"):  # verifiers >= 0.4: the v1 API only
        from pwab.rl import verifiers_v1
        v1 = dict(url=url, token=token, split=split, limit=limit, offset=offset, history_items=history_items,
                  track=track, user_sim=user_sim, max_steps=max_steps)
        if multi_turn:
            v1["multi_turn"] = True
        if eval_split not in ("test", None) or eval_limit is not None:
            v1.update(eval_split=eval_split, eval_limit=eval_limit)  # refused there, with what to use instead
        if native_tools:
            v1["native_tools"] = native_tools
        return verifiers_v1.load_environment(**{k: v for k, v in v1.items() if v is not None}, **kwargs)
    from datasets import Dataset

    client = rl_config.client(url, token)
    episode = rl_config.episode_settings(track or ("multi" if multi_turn else None), user_sim, max_steps)
    prompt_track = episode["track"] if multi_turn else "single"

    def rows(which, count):
        return Dataset.from_list([{"prompt": row["prompt"], "answer": row["task"],
                                   "info": {"pwab_task": row["task"], "user_id": row["extra_info"]["user_id"]}}
                                  for row in task_rows(client, which, count, offset if which == split else 0,
                                                       history_items, prompt_track)])

    arguments = {"dataset": rows(split, limit)}
    if eval_split:
        arguments["eval_dataset"] = rows(eval_split, eval_limit)
    arguments.update(kwargs)
    if not multi_turn:
        # A single-turn environment is one turn whatever max_turns says (SingleTurnEnv sets it itself).
        arguments.pop("max_turns", None)
        reward, function_acc = reward_functions(client)
        arguments["rubric"] = vf.Rubric(funcs=[reward, function_acc], weights=[1.0, 0.0])
        return single_turn_env_class(vf)(client=client, **arguments)

    reward, function_acc = episode_reward_functions()
    arguments["rubric"] = vf.Rubric(funcs=[reward, function_acc], weights=[1.0, 0.0])
    if native_tools:
        names = {"search_product_by_query", "get_recommendations_by_history", "add_product_review", "stop"}
        if episode["track"] == "multi":
            names.add("respond")
        arguments["tool_defs"] = [{"name": s["function"]["name"], "description": s["function"]["description"],
                                   "parameters": s["function"]["parameters"]}
                                  for s in tool_schemas(client) if s["function"]["name"] in names]
    return episode_env_class(vf)(client=client, episode=episode, **arguments)


def reward_functions(server=None, token=None):
    """(pwab_reward, pwab_function_acc): single-rollout reward functions as verifiers' Rubric calls them (named
    arguments completion, answer, state), scoring the completion with POST /v1/reward once per rollout."""
    client = server if hasattr(server, "rewards") else rl_config.client(server, token)

    async def scored(completion, answer, state):
        cache = state.setdefault("pwab", {}) if isinstance(state, dict) else {}
        if "reward_answer" not in cache:
            cache["reward_answer"] = await asyncio.to_thread(client.reward, str(answer),
                                                             completion=completion_text(completion))
        return cache["reward_answer"]

    async def pwab_reward(completion, answer, state) -> float:
        return float((await scored(completion, answer, state))["reward"])

    async def pwab_function_acc(completion, answer, state) -> float:
        return float((await scored(completion, answer, state))["function_acc"])

    return pwab_reward, pwab_function_acc


def episode_reward_functions():
    """(pwab_episode_reward, pwab_episode_function_acc): the score the episode environment kept in the state."""

    def ended(state):
        pwab = state.get("pwab") or {}
        if not pwab.get("done"):
            raise RuntimeError(f"pwab: the episode of {pwab.get('task')!r} has no score (it did not end)")
        return pwab

    async def pwab_episode_reward(state) -> float:
        return float(ended(state)["reward"])

    async def pwab_episode_function_acc(state) -> float:
        return float((ended(state)["score"] or {}).get("function_acc", 0.0))

    return pwab_episode_reward, pwab_episode_function_acc


def single_turn_env_class(vf):
    """The single-turn environment class on this verifiers module: vf.SingleTurnEnv that scores the answer with
    /v1/reward as soon as the model gave it, so that a failed score is a vf.Error of the rollout (verifiers' Rubric
    would turn an exception of a reward function into reward 0)."""
    key = ("single", id(vf))
    if key in _CLASSES:
        return _CLASSES[key]

    class PwabSingleTurnEnv(vf.SingleTurnEnv):
        def __init__(self, client, **kwargs):
            super().__init__(**kwargs)
            self.pwab_client = client

        async def add_model_response(self, state, prompt_messages, response):
            await super().add_model_response(state, prompt_messages, response)
            task = state.get("answer") or (state.get("info") or {}).get("pwab_task")
            completion = state.get("completion")
            if not completion:
                completion = [m for m in (state.get("trajectory") or [{}])[-1].get("completion") or []]
            try:
                answer = await asyncio.to_thread(self.pwab_client.reward, str(task),
                                                 completion=completion_text(completion))
            except PwabError as e:
                raise vf.Error(f"pwab: /v1/reward refused the answer to {task!r}: {e}") from e
            state.setdefault("pwab", {})["reward_answer"] = answer

    _CLASSES[key] = PwabSingleTurnEnv
    return PwabSingleTurnEnv


def episode_env_class(vf):
    """The episode environment class on this verifiers module (built on demand: vf.MultiTurnEnv is its base)."""
    cached = _CLASSES.get(id(vf))
    if cached is not None:
        return cached

    def message(kind, **fields):
        cls = getattr(vf, kind, None)
        return cls(**fields) if cls is not None else dict(role="tool" if kind == "ToolMessage" else "user", **fields)

    class PwabEpisodeEnv(vf.MultiTurnEnv):
        """A pwab episode per rollout: each assistant turn is one action, the server's observation the reply."""

        def __init__(self, client, episode, **kwargs):
            super().__init__(**kwargs)
            self.pwab_client = client
            self.pwab_episode = dict(episode)

        async def setup_state(self, state, **kwargs):
            task = state.get("answer") or (state.get("info") or {}).get("pwab_task")
            try:
                started = await asyncio.to_thread(self.pwab_client.env_reset, task=task, history=False,
                                                  **self.pwab_episode)
            except PwabError as e:
                raise vf.Error(f"pwab: the episode of {task!r} did not start: {e}") from e
            state["pwab"] = {"episode_id": started["observation"]["episode_id"], "task": task, "done": False,
                             "reward": 0.0, "score": None}
            return state

        async def env_response(self, messages, state, **kwargs):
            pwab = state["pwab"]
            last = messages[-1]
            calls = _field(last, "tool_calls") or []
            if calls:
                call = _field(calls[0], "function") or calls[0]
                name, arguments = _field(call, "name"), _field(call, "arguments")
            else:
                fallback = "respond" if self.pwab_episode["track"] == "multi" else None
                name, arguments = parse_action_text(completion_text(last), fallback=fallback)
            try:
                answer = await asyncio.to_thread(self.pwab_client.env_step, pwab["episode_id"],
                                                 {"name": name, "arguments": {} if arguments is None else arguments})
            except PwabError as e:
                raise vf.Error(f"pwab: step {name!r} of {pwab['task']!r} refused: {e}") from e
            observation = answer["observation"]
            if calls:
                reply = [message("ToolMessage", tool_call_id=_field(calls[0], "id") or "", content=observation["text"])]
                reply += [message("ToolMessage", tool_call_id=_field(c, "id") or "",
                                  content="Not run: one action per turn.") for c in calls[1:]]
            else:
                reply = [message("UserMessage", content=observation["text"])]
            if answer["done"]:
                pwab.update(episode_id=None, done=True, reward=float(answer["reward"] or 0.0),
                            score=observation.get("score"))
                state["final_env_response"] = reply
            return reply

        @vf.cleanup
        async def end_pwab_episode(self, state):
            """Ends an episode still open when the rollout stopped (max turns, length); scores its attempts."""
            pwab = state.get("pwab") or {}
            if pwab.get("episode_id"):
                episode_id, pwab["episode_id"] = pwab["episode_id"], None
                try:
                    ended = await asyncio.to_thread(self.pwab_client.end, episode_id)
                except PwabError as e:
                    # No score: the rollout is errored (verifiers' state["error"]), not scored 0.
                    if state.get("error") is None:
                        state["error"] = vf.Error(f"pwab: the episode of {pwab.get('task')!r} could not be ended: {e}")
                    return
                score = ended.get("score") or {}
                pwab.update(done=True, reward=float(score.get("r", 0.0)),
                            score={"function_acc": score.get("f", 0.0), "result_acc": score.get("r", 0.0)})

    _CLASSES[id(vf)] = PwabEpisodeEnv
    return PwabEpisodeEnv


_CLASSES = {}
