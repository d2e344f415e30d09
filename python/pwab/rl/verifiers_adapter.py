"""verifiers (the legacy "v0" API that load_environment serves) on pwab.

Contract read: verifiers v0.3.0-62-ga60a606ec (verifiers/legacy/...; docs/rl-engines.md). verifiers and datasets
are imported inside load_environment only.

load_environment(url=..., ...) returns
- by default a vf.SingleTurnEnv: one answer per task, scored by POST /v1/reward (reward = result accuracy, with
  function accuracy as a metric of weight 0);
- with multi_turn=True an episode environment (a vf.MultiTurnEnv): each assistant turn is one action on a pwab
  episode (a native tool call, or text read by pwab.rl.parse_action_text; in the multi-turn track plain text is
  a message to the user), the server's observation is the next user (or tool) message, the server decides when
  the episode ends, and the reward is the episode's score. An episode still open when the rollout stops is ended
  by a cleanup handler.

The task key is each row's `answer` (and info["task"]). `vf-eval pwab -a '{"url": "http://127.0.0.1:8765"}'`
finds this through pwab.load_environment; `pwab.rl.verifiers_adapter` also works as the environment id.

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
    max_turns)."""
    import verifiers as vf
    from datasets import Dataset

    client = rl_config.client(url, token)
    episode = rl_config.episode_settings(track or ("multi" if multi_turn else None), user_sim, max_steps)
    prompt_track = episode["track"] if multi_turn else "single"

    def rows(which, count):
        return Dataset.from_list([{"prompt": row["prompt"], "answer": row["task"],
                                   "info": {"task": row["task"], "user_id": row["extra_info"]["user_id"]}}
                                  for row in task_rows(client, which, count, offset if which == split else 0,
                                                       history_items, prompt_track)])

    arguments = {"dataset": rows(split, limit)}
    if eval_split:
        arguments["eval_dataset"] = rows(eval_split, eval_limit)
    arguments.update(kwargs)
    if not multi_turn:
        reward, function_acc = reward_functions(client)
        arguments["rubric"] = vf.Rubric(funcs=[reward, function_acc], weights=[1.0, 0.0])
        return vf.SingleTurnEnv(**arguments)

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

    async def pwab_episode_reward(state) -> float:
        return float((state.get("pwab") or {}).get("reward", 0.0))

    async def pwab_episode_function_acc(state) -> float:
        return float(((state.get("pwab") or {}).get("score") or {}).get("function_acc", 0.0))

    return pwab_episode_reward, pwab_episode_function_acc


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
            task = state.get("answer") or (state.get("info") or {}).get("task")
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
                except PwabError:
                    return
                score = ended.get("score") or {}
                pwab.update(done=True, reward=float(score.get("r", 0.0)),
                            score={"function_acc": score.get("f", 0.0), "result_acc": score.get("r", 0.0)})

    _CLASSES[id(vf)] = PwabEpisodeEnv
    return PwabEpisodeEnv


_CLASSES = {}
