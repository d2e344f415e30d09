"""A Gymnasium-style environment over `pwab serve`: one episode of one task per reset().

Observations are text (what the agent sees: the user's message, a tool's output). An action is one tool call as
JSON text, {"name": "search_product_by_query", "arguments": {"query": "..."}}, or the same as a dict; "respond"
({"content": ...}) talks to the user in the multi-turn track, and "stop" ends the episode. The reward is 0 until
the episode ends and then the task's result accuracy (the benchmark's Res Acc for this task: the rank-based score
of a search or recommendation, the review's similarity), so an episode's return is its score. At the end the
episode's record and score are in `info`.

When the `gymnasium` package can be imported, Env is a `gymnasium.Env` with Text observation and action spaces,
registered with Gymnasium as "pwab/PersonalWAB-v0" (single-turn) and "pwab/PersonalWAB-multi-v0" (multi-turn),
so that gymnasium.make("pwab/PersonalWAB-v0", server=URL) works once pwab is imported, and
gymnasium.make("pwab.env:pwab/PersonalWAB-v0", server=URL) without importing it first (docs/python.md).
Otherwise a plain class with the same methods.
"""

import json
import random

from .client import Client

try:  # optional: the Gymnasium base class and spaces
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - depends on the machine
    _gym = None
    _spaces = None

MAX_TEXT = 1 << 20  # the server's own cap on a request body
# The longest action the action space holds (and samples): one tool call is a short JSON text, and a sample of
# this space (gymnasium's env checker steps with one) stays cheap to draw and to send.
MAX_ACTION = 1 << 14
GYM_IDS = {"pwab/PersonalWAB-v0": "single", "pwab/PersonalWAB-multi-v0": "multi"}
# Every character a tool output or a message may hold (Text spaces check membership character by character).
_CHARSET = "".join(chr(c) for c in range(32, 0x3000)) + "\n\t\r"

_Base = _gym.Env if _gym is not None else object


class Env(_Base):
    """One task at a time from `pwab serve`. `server`: a Client or the server's URL. `task`, `track`, `user_sim`,
    `max_steps`, `history`, `trial`: the defaults of every reset (`options` may override any of them, e.g.
    reset(options={"task": "test/17"})). Without a task, reset() walks the split's tasks in order, and
    reset(seed=N) picks one of them with the seeded generator (so that a seeded reset is reproducible, as
    Gymnasium asks of an environment)."""

    # render() returns the last observation as text; Gymnasium asks every environment that renders for a frame
    # rate, which for text only paces a viewer that replays frames.
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

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
        self._seed_base = None  # the last reset seed: from then on resets draw from the seeded generator
        self._rng, self._rng_seed = None, None
        if _spaces is not None:
            self.observation_space = _spaces.Text(max_length=MAX_TEXT, min_length=0, charset=_CHARSET)
            self.action_space = _spaces.Text(max_length=MAX_ACTION, min_length=2, charset=_CHARSET)

    def reset(self, seed=None, options=None):
        """Starts an episode (ending an unfinished one first). `seed` seeds the user simulator. Returns
        (observation, info) with info = {"episode_id", "task", "track", "tools", "history", "max_steps"}."""
        if _gym is not None:
            super().reset(seed=seed)
        self._drop_open_episode()
        settings = dict(self.defaults)
        settings.update(options or {})
        if seed is not None:
            self._seed_base = seed
        # Once seeded, every later reset draws from the seeded generator (its task when none is given, and the
        # user simulator's seed), so that a run of resets after reset(seed=N) repeats exactly, as Gymnasium's
        # env checker asks; never seeded, tasks come in order and the server picks the user's seed.
        drawn = self._seed_base is not None
        if settings["task"] is None:
            settings["task"] = self._task_drawn(self._seed_base) if drawn else self._task_in_order()
        user_seed = seed
        if user_seed is None and drawn:
            user_seed = self._draw(1 << 31)
        started = self.client.start(settings["task"], track=settings["track"], user_sim=settings["user_sim"],
                                    max_steps=settings["max_steps"], seed=user_seed, history=settings["history"],
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
        try:
            name, arguments = parse_action(action)
        except ValueError as e:
            # The policy wrote something that is no tool call: it is told so, as the observation, and the episode
            # goes on (nothing reaches the server; info["invalid_action"] says why). An RL policy learns from it.
            self.last_observation = f"Invalid action: {e}"
            return self.last_observation, 0.0, False, False, {"invalid_action": str(e)}
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

    def _draw(self, n):
        """An integer in [0, n) from Gymnasium's generator (seeded by super().reset(seed)), or, without
        Gymnasium, from a generator of this class seeded the same way."""
        rng = getattr(self, "np_random", None) if _gym is not None else None
        if rng is not None and hasattr(rng, "integers"):
            return int(rng.integers(n))
        if self._rng is None or self._rng_seed != self._seed_base:
            self._rng, self._rng_seed = random.Random(self._seed_base), self._seed_base
        return self._rng.randrange(n)

    def _task_drawn(self, seed):
        total = self.client.tasks(self.split, 0, 1)["total"]
        if total == 0:
            raise ValueError(f"split {self.split!r} has no tasks")
        return self.client.tasks(self.split, self._draw(total), 1)["tasks"][0]["task"]

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


def register_gymnasium():
    """Registers GYM_IDS with Gymnasium (done when this module is imported with gymnasium importable; again is a
    no-op). Returns the ids."""
    import gymnasium

    for env_id, track in GYM_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point="pwab.env:Env", kwargs={"track": track})
    return list(GYM_IDS)


if _gym is not None and hasattr(_gym, "register"):  # (a stand-in module without a registry is left alone)
    register_gymnasium()
