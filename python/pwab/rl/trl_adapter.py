"""TRL's GRPOTrainer on pwab: a reward function for single-turn answers and an environment_factory class.

Contract read and tested: TRL 1.16.0 (trl/trainer/grpo_trainer.py, trl/experimental/async_grpo; docs/rl-engines.md,
test/ecosystem/test_trl.py). Nothing here imports TRL.

`pwab_reward` (a PwabReward) is a plain reward function: TRL calls it with keyword arguments (prompts,
completions, completion_ids, trainer_state, log_extra, log_metric, and every dataset column but the prompt, so
`task` from pwab.rl.dataset rows) and gets one float per completion, all scored by one batched POST /v1/reward.
Completions may be strings or chat message lists (then the first assistant message, its structured tool calls
included, is read).

`PwabEnv` is an environment class: TRL builds it with no arguments (the server comes from PWAB_URL or
configure()), calls reset(**row) before each rollout and offers its public methods to the model as tools; each
tool steps the episode and returns the observation text. `get_reward()` is the episode's score (TRL >= 1.8 adds it
as a reward function by itself; older TRL would offer it to the model as a tool, so there PwabEnv hides it and the
reward comes from `environment_rewards`). `PwabMultiTurnEnv` plays the multi-turn track, with `respond`.

>>> from pwab.rl import configure
>>> from pwab.rl.trl_adapter import PwabEnv, pwab_reward
>>> configure(url=URL)
>>> good = '<tool_call>{"name": "search_product_by_query", "arguments": {"query": "kettle"}}</tool_call>'
>>> rewards = pwab_reward(prompts=["p", "p"], completions=[good, "add_product_review\\nNice."],
...                       completion_ids=[[1], [2]], trainer_state=None, task=["train/0", "train/0"])
>>> len(rewards), rewards[1]        # train/0 is a search task: a review scores 0
(2, 0.0)
>>> env = PwabEnv()
>>> observation = env.reset(task="train/0", prompt=[{"role": "user", "content": "..."}])
>>> observation.startswith("\\n\\nUSER ")
True
>>> products = env.search_product_by_query(query="kettle")
>>> env.get_reward() == rewards[0]  # the same answer scores the same in an episode
True
"""

import math
import sys
import warnings
import weakref

from pwab.rl import config
from pwab.rl.parse import completion_text
from pwab.rl.dataset import render_history
from pwab.errors import NotFound

GET_REWARD_MIN_TRL = (1, 8)
"""The first TRL release that reads an environment's get_reward() as a reward (1.7 lists it among the tools)."""


class PwabReward:
    """A TRL reward function scoring single-turn answers with POST /v1/reward. `url`/`token`: the server (else
    configure() or PWAB_URL); `field`: "reward" (= "result_acc") or "function_acc"; `task_column`: the dataset
    column holding task keys (falls back to "label" and "ground_truth"). Picklable (AsyncGRPOTrainer)."""

    def __init__(self, url=None, token=None, field="reward", task_column="task", name="pwab_reward"):
        if field not in ("reward", "result_acc", "function_acc"):
            raise ValueError(f"field is 'reward', 'result_acc' or 'function_acc', not {field!r}")
        self.url, self.token, self.field, self.task_column = url, token, field, task_column
        self.__name__ = name  # what TRL logs the reward under

    def __getstate__(self):
        # A pickled copy runs in another process (AsyncGRPOTrainer's spawned rollout worker), where configure() was
        # never called: it takes the server this process would use along with it.
        state = dict(self.__dict__)
        state["url"], state["token"] = config.setting("url", self.url), config.setting("token", self.token)
        return state

    def __call__(self, prompts=None, completions=None, completion_ids=None, trainer_state=None, **kwargs):
        if completions is None:
            raise TypeError("pwab_reward: TRL passes completions=[...]; none were given")
        tasks = None
        for column in (self.task_column, "task", "label", "ground_truth"):
            if kwargs.get(column) is not None:
                tasks = kwargs[column]
                break
        if tasks is None:
            raise KeyError(f"pwab_reward: no task keys: the dataset needs a {self.task_column!r} column of task keys "
                           f"such as 'train/17' (python3 -m pwab.rl.dataset writes it); got columns {sorted(kwargs)}")
        if len(tasks) != len(completions):
            raise ValueError(f"pwab_reward: {len(completions)} completions but {len(tasks)} task keys")
        items = [{"task": str(task), "completion": completion_text(c)} for task, c in zip(tasks, completions)]
        answers = config.client(self.url, self.token).rewards(items)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and answers:
            log_metric("pwab/function_acc", sum(a["function_acc"] for a in answers) / len(answers))
            log_metric("pwab/result_acc", sum(a["result_acc"] for a in answers) / len(answers))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra("pwab_function", [a["function"] for a in answers])
        return [float(a[self.field]) for a in answers]


pwab_reward = PwabReward()
"""The reward function with the configured server: GRPOTrainer(reward_funcs=[pwab_reward], ...)."""

pwab_function_acc = PwabReward(field="function_acc", name="pwab_function_acc")
"""1.0 when the answer calls the task's own tool: a shaping term (give it a small reward weight)."""


class PwabEnv:
    """One pwab episode per rollout, for GRPOTrainer(environment_factory=PwabEnv). The class attributes are the
    settings of its episodes (subclass to change them; None: configure() or the PWAB_* variables, then the
    server's default). The model's tools are the methods below; after the episode has finished a tool raises,
    which TRL shows the model as an error. get_reward() ends an unfinished episode and returns its score."""

    track = "single"
    user_sim = None
    max_steps = None
    history_items = 10  # the history shown by reset() when the row names no task (TRL's placeholder dataset)

    lost_episodes = 0
    """Episodes of this process the server had dropped (idle expiry) before their score was read: their rollouts
    get no reward (None, which TRL ignores) rather than a 0, and each is warned about."""

    def __init__(self):
        self._client = config.client()
        if get_reward_is_a_tool():
            # TRL < 1.8 offers every public method but reset() to the model as a tool, get_reward too, and never
            # calls it as a reward. Hide it from TRL's inspection of this instance; the reward then comes from
            # reward_funcs=[environment_rewards].
            self.get_reward = None
            _warn_old_trl()
        self._episode = None
        self._finisher = None
        self._reward = 0.0
        self._score = None
        self._task = None
        self._trial = None

    def reset(self, **kwargs) -> str:
        """Starts the episode of the row's task (its `task`, `label` or `ground_truth` column; a random train task
        when the row has none) and returns the user's first message, to be appended to the prompt."""
        self._finish_episode()
        task = next((kwargs[c] for c in ("task", "label", "ground_truth") if kwargs.get(c)), None)
        settings = config.episode_settings(self.track, self.user_sim, self.max_steps)
        answer = self._client.env_reset(task=task, history=task is None, **settings)
        observation = answer["observation"]
        self._open(observation["episode_id"])
        self._task, self._trial, self._reward, self._score = observation["task"], observation.get("trial"), 0.0, None
        if task is None:  # no dataset row: the observation is the whole prompt
            history = render_history(observation.get("history") or [], self.history_items)
            return "\n\n".join(part for part in (history, observation["text"]) if part)
        return "\n\n" + observation["text"]

    def get_reward(self) -> float:
        """The episode's score (result accuracy); an unfinished episode is ended first (its score: the attempts
        made so far). None when the server had already dropped the episode (see lost_episodes)."""
        return self._finish_episode()

    @property
    def score(self):
        """{"function_acc", "result_acc"} of the finished episode, else None."""
        return self._score

    @property
    def task(self):
        """The task key of the current episode."""
        return self._task

    @property
    def trial(self):
        """The current episode's trial: with `pwab serve --out`, each rollout of a task is recorded as a trial of its
        own (the /reset route's "next"), and its record is (task, trial) in the run directory."""
        return self._trial

    # --- the model's tools ------------------------------------------------------------------------------------------

    def search_product_by_query(self, query: str) -> str:
        """
        Searches the product catalogue with a text query and returns the 10 best-matching products.

        Args:
            query: The words to search for, e.g. 'wireless earbuds' or 'dark roast coffee'.

        Returns:
            The matching products with their details.
        """
        return self._act("search_product_by_query", {"query": query})

    def get_recommendations_by_history(self, product_sequence: list[str]) -> str:
        """
        Recommends 10 products that are likely to come next after a sequence of products the user had.

        Args:
            product_sequence: Parent ASINs of the products to base the recommendations on, oldest first.

        Returns:
            The recommended products with their details.
        """
        return self._act("get_recommendations_by_history", {"product_sequence": list(product_sequence)})

    def add_product_review(self, review: str) -> str:
        """
        Posts a review for the product on the user's behalf.

        Args:
            review: The full text of the review, in the user's own voice.

        Returns:
            The store's confirmation.
        """
        return self._act("add_product_review", {"review": review})

    def stop(self) -> str:
        """
        Ends the task when nothing else needs to be done.

        Returns:
            The end of the episode.
        """
        return self._act("stop", {})

    # --- the episode ------------------------------------------------------------------------------------------------

    def _act(self, name, arguments):
        if self._episode is None:
            raise RuntimeError("the episode is over: no more tool calls (answer the user or end your turn)")
        answer = self._client.env_step(self._episode, {"name": name, "arguments": arguments})
        observation = answer["observation"]
        if answer["done"]:
            self._close(float(answer["reward"] or 0.0), observation.get("score"))
        return observation["text"]

    def _open(self, episode_id):
        self._episode = episode_id
        # Should the instance be dropped with its episode open, end it then (else the server drops it when idle).
        self._finisher = weakref.finalize(self, _end_quietly, self._client, episode_id)
        self._finisher.atexit = False

    def _close(self, reward, score):
        if self._finisher is not None:
            self._finisher.detach()
        self._episode, self._finisher = None, None
        self._reward = None if reward is None or math.isnan(reward) else reward
        self._score = score

    def _finish_episode(self):
        """Ends an open episode (its score: the attempts made so far) and returns the episode's reward. An
        unreachable server or any other refusal raises: an outage must not look like a policy scoring 0."""
        if self._episode is not None:
            episode = self._episode
            try:
                ended = self._client.end(episode)
            except NotFound as e:  # dropped by the server (idle expiry): its score is gone, so no reward
                self._close(None, None)
                PwabEnv.lost_episodes += 1
                warnings.warn(f"pwab: episode {episode} of task {self._task} had expired on the server before its "
                              f"score was read ({e}); its rollout gets no reward. Raise `pwab serve --idle-timeout`.",
                              RuntimeWarning, stacklevel=3)
                return None
            score = ended.get("score") or {}
            self._close(float(score.get("r", 0.0)),
                        {"function_acc": score.get("f", 0.0), "result_acc": score.get("r", 0.0)})
        return self._reward


class PwabMultiTurnEnv(PwabEnv):
    """PwabEnv in the multi-turn track: the user answers `respond`, and the episode goes on until `stop` or the
    step cap; its score is that of its best attempt with the task's tool."""

    track = "multi"

    def respond(self, content: str) -> str:
        """
        Says something to the user, such as a question about what they want, and returns the user's answer.

        Args:
            content: The message to the user.

        Returns:
            The user's answer.
        """
        return self._act("respond", {"content": content})


def environment_rewards(environments=None, **kwargs):
    """A reward function reading each rollout's episode score from TRL's `environments=` (pwab environments; None
    for others). TRL already adds PwabEnv.get_reward by itself; use this one instead when the reward should carry a
    weight: subclass with `get_reward = None` (then TRL does not add it) and pass reward_funcs=[environment_rewards]
    with GRPOConfig(reward_weights=[...])."""
    if environments is None:
        raise TypeError("environment_rewards reads environments=[...], which TRL passes only with environment_factory")
    return [env._finish_episode() if isinstance(env, PwabEnv) else None for env in environments]


def get_reward_is_a_tool():
    """True when the TRL this process has imported predates 1.8, which would offer get_reward() to the model as a
    tool (TRL is not imported here: without it, False)."""
    trl = sys.modules.get("trl")
    version = getattr(trl, "__version__", None)
    if not version:
        return False
    numbers = []
    for part in str(version).split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers) < GET_REWARD_MIN_TRL


_warned_old_trl = []


def _warn_old_trl():
    if not _warned_old_trl:
        _warned_old_trl.append(True)
        warnings.warn(f"pwab: TRL {sys.modules['trl'].__version__} does not read PwabEnv.get_reward as a reward (TRL "
                      f">= 1.8 does) and would offer it to the model as a tool; it is hidden, so pass "
                      f"reward_funcs=[pwab.rl.trl_adapter.environment_rewards] for the episodes' scores.",
                      RuntimeWarning, stacklevel=3)


def _end_quietly(client, episode_id):
    try:
        client.end(episode_id)
    except Exception:  # noqa: BLE001 - gone already
        pass
