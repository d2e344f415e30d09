"""A Gymnasium-style environment over `pwab serve`: one episode of one task per reset().

Observations are text (what the agent sees: the user's message, a tool's output). An action is one tool call as
JSON text, {"name": "search_product_by_query", "arguments": {"query": "..."}}, or the same as a dict; "respond"
({"content": ...}) talks to the user in the multi-turn track, and "stop" ends the episode. The reward is 0 until
the episode ends and then the task's result accuracy (the benchmark's Res Acc for this task: the rank-based score
of a search or recommendation, the review's similarity), so an episode's return is its score. At the end the
episode's record and score are in `info`.

When the `gymnasium` package can be imported, Env is a `gymnasium.Env` with Text observation and action spaces;
otherwise a plain class with the same methods.
"""

import json

from .client import Client

try:  # optional: the Gymnasium base class and spaces
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - depends on the machine
    _gym = None
    _spaces = None

MAX_TEXT = 1 << 20  # the server's own cap on a request body
# Every character a tool output or a message may hold (Text spaces check membership character by character).
_CHARSET = "".join(chr(c) for c in range(32, 0x3000)) + "\n\t\r"

_Base = _gym.Env if _gym is not None else object


class Env(_Base):
    """One task at a time from `pwab serve`. `server`: a Client or the server's URL. `task`, `track`, `user_sim`,
    `max_steps`, `history`, `trial`: the defaults of every reset (`options` may override any of them, e.g.
    reset(options={"task": "test/17"})). Without a task, reset() walks the split's tasks in order."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, server, task=None, track="single", user_sim=None, max_steps=None, history=True, trial=None,
                 split="test", token=None, render_mode=None):
        self.client = server if isinstance(server, Client) else Client(server, token=token)
        self.defaults = {"task": task, "track": track, "user_sim": user_sim, "max_steps": max_steps,
                         "history": history, "trial": trial}
        self.split = split
        self.render_mode = render_mode
        self.episode_id = None
        self.last_observation = ""
        self._next_task = 0
        self._finished = False
        if _spaces is not None:
            self.observation_space = _spaces.Text(max_length=MAX_TEXT, min_length=0, charset=_CHARSET)
            self.action_space = _spaces.Text(max_length=MAX_TEXT, min_length=2, charset=_CHARSET)

    def reset(self, seed=None, options=None):
        """Starts an episode (ending an unfinished one first). `seed` seeds the user simulator. Returns
        (observation, info) with info = {"episode_id", "task", "track", "tools", "history", "max_steps"}."""
        if _gym is not None:
            super().reset(seed=seed)
        self._drop_open_episode()
        settings = dict(self.defaults)
        settings.update(options or {})
        if settings["task"] is None:
            settings["task"] = self._task_in_order()
        started = self.client.start(settings["task"], track=settings["track"], user_sim=settings["user_sim"],
                                    max_steps=settings["max_steps"], seed=seed, history=settings["history"],
                                    trial=settings["trial"])
        self.episode_id = started["episode_id"]
        self._finished = False
        self.last_observation = started["observation"]
        info = {key: started.get(key) for key in ("episode_id", "task", "track", "tools", "history", "max_steps",
                                                  "user_sim", "seed", "trial")}
        return self.last_observation, info

    def step(self, action):
        """One tool call. Returns (observation, reward, terminated, truncated, info): terminated when the episode
        ended by its own rules (a single-turn task function, stop), truncated at the step cap; at either, the
        reward is the task's score and info holds "record" and "score"."""
        if self.episode_id is None or self._finished:
            raise RuntimeError("call reset() first: no episode is open")
        name, arguments = parse_action(action)
        answer = self.client.step(self.episode_id, name, arguments)
        self.last_observation = answer["observation"]
        info = {key: answer.get(key) for key in ("reward", "done", "scored", "steps", "max_steps", "finished",
                                                 "ending")}
        reward, terminated, truncated = 0.0, False, False
        if answer.get("finished"):
            ended = self.client.end(self.episode_id)
            self._finished = True
            self.episode_id = None
            info["record"] = ended["record"]
            info["score"] = ended["score"]
            reward = float(ended["score"]["r"])
            truncated = answer.get("ending") == "step_cap"
            terminated = not truncated
        return self.last_observation, reward, terminated, truncated, info

    def render(self):
        return self.last_observation

    def close(self):
        """Ends an unfinished episode (it is then recorded as the client's end, when the server records)."""
        self._drop_open_episode()

    def _drop_open_episode(self):
        if self.episode_id is not None:
            try:
                self.client.end(self.episode_id)
            except Exception:  # noqa: BLE001 - an expired episode is already gone
                pass
            self.episode_id = None

    def _task_in_order(self):
        page = self.client.tasks(self.split, self._next_task, 1)
        if not page["tasks"]:
            self._next_task = 0
            page = self.client.tasks(self.split, 0, 1)
        self._next_task += 1
        return page["tasks"][0]["task"]


def parse_action(action):
    """(name, arguments) of an action given as a dict, a JSON text, or an OpenAI tool call
    ({"type": "function", "function": {"name", "arguments"}}). Raises ValueError for anything else."""
    if isinstance(action, (str, bytes)):
        try:
            action = json.loads(action)
        except ValueError as e:
            raise ValueError(f"an action is JSON like {{\"name\": ..., \"arguments\": {{...}}}}; got {action[:80]!r}") from e
    if isinstance(action, dict) and isinstance(action.get("function"), dict):
        action = action["function"]
    if not isinstance(action, dict) or not isinstance(action.get("name"), str) or not action["name"]:
        raise ValueError(f"an action needs a non-empty string \"name\"; got {action!r}"[:200])
    arguments = action.get("arguments", {})
    if arguments is None:
        arguments = {}
    return action["name"], arguments
