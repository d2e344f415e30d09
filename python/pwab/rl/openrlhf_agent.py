"""OpenRLHF's agent function file for pwab: `--train.agent_func_path /path/to/pwab/rl/openrlhf_agent.py` (OpenRLHF
0.11; before 0.10.2 the flag was `--agent_func_path`).

Contract read and tested: OpenRLHF 0.11.2 (openrlhf/utils/agent.py, openrlhf/trainer/ray/vllm_engine.py;
docs/rl-engines.md). OpenRLHF loads this file by its path and builds `AgentExecutor()`, a MultiTurnAgentExecutor
over `AgentInstance`, one instance per prompt: reset({"observation": prompt, "label": task key}) starts the
episode of the task (the rows' label, --data.label_key label), and each step({"action_text", ...}) reads the
model's text as an action (pwab.rl.parse_action_text, the reward endpoint's reading) and plays it. The step's
reward (a torch tensor) is 0 until the episode is done, then its score, so an episode's return is its score.
Errors are errors: a server that cannot be reached, an unknown task or a refused step raises out of reset() or
step(), and MultiTurnAgentExecutor.execute lets it through, so the rollout fails instead of scoring 0.

Settings come from the environment of the rollout workers (set them where Ray starts them, e.g.
`ray job submit --runtime-env-json '{"env_vars": {"PWAB_URL": "http://10.0.0.5:8765"}}'`): PWAB_URL,
PWAB_TOKEN, PWAB_TRACK (single), PWAB_USER_SIM, PWAB_MAX_STEPS, and PWAB_FEEDBACK_TEMPLATE, how an observation
is written into the token stream before the model's next turn ({observation} is replaced; the default closes
nothing and opens a ChatML user turn then an assistant turn, for chat models whose turns end with <|im_end|>).
Or write a file of your own: `AgentExecutor = pwab.rl.openrlhf_agent.executor_class(url=..., track="multi")`.

The classes are built when first asked for (importing this module needs neither openrlhf nor torch):

>>> import asyncio
>>> from pwab.rl.openrlhf_agent import PwabAgent
>>> agent = PwabAgent(url=URL, rewards=float)            # rewards=float: plain numbers instead of tensors
>>> asyncio.run(agent.reset({"observation": "<prompt>", "label": "train/0"}))["observation"]
'<prompt>'
>>> result = asyncio.run(agent.step({"observation_text": "<prompt>", "label": "train/0", "sampling_params": None,
...     "action_text": '<tool_call>{"name": "add_product_review", "arguments": {"review": "Nice."}}</tool_call>'}))
>>> result["done"], result["rewards"], result["environment_feedback"]
(True, 0.0, '')
"""

import asyncio
import os
import weakref

from pwab.rl import config as rl_config
from pwab.rl.parse import parse_action_text

DEFAULT_FEEDBACK_TEMPLATE = "\n<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"


class PwabAgent:
    """The agent instance's behaviour, without OpenRLHF's base class. `url`, `token`, `track`, `user_sim`,
    `max_steps`: else the PWAB_* variables; `feedback_template`: else PWAB_FEEDBACK_TEMPLATE, else ChatML;
    `rewards`: turns a float into what OpenRLHF needs (a torch tensor by default)."""

    def __init__(self, url=None, token=None, track=None, user_sim=None, max_steps=None, feedback_template=None,
                 rewards=None):
        self.client = rl_config.client(url, token)
        self.episode = rl_config.episode_settings(track, user_sim, max_steps)
        self.feedback_template = (feedback_template or os.environ.get("PWAB_FEEDBACK_TEMPLATE")
                                  or DEFAULT_FEEDBACK_TEMPLATE)
        self.to_reward = rewards or _tensor
        self.episode_id = None
        self.total = 0.0
        self._finisher = None

    async def reset(self, states, **kwargs):
        """Starts the episode of states["label"] (a task key); the observation stays the prompt, which already
        holds the request."""
        task = states.get("label")
        if not task:
            raise ValueError("pwab agent: the label must be a task key such as 'train/17': pass --data.label_key "
                             "label with rows from python3 -m pwab.rl.dataset")
        started = await asyncio.to_thread(self.client.env_reset, task=str(task), history=False, **self.episode)
        self.episode_id = started["observation"]["episode_id"]
        # An instance dropped before its episode finished (the token budget ran out) ends it on the way out.
        self._finisher = weakref.finalize(self, _end_quietly, self.client, self.episode_id)
        self._finisher.atexit = False
        self.total = 0.0
        return {"observation": states["observation"]}

    async def step(self, states, **kwargs):
        """One action from states["action_text"]; returns rewards, scores, environment_feedback, done,
        sampling_params and extra_logs as MultiTurnAgentExecutor reads them."""
        if self.episode_id is None:
            raise RuntimeError("pwab agent: step() before reset(), or after the episode ended")
        fallback = "respond" if self.episode["track"] == "multi" else None
        name, arguments = parse_action_text(states.get("action_text") or "", fallback=fallback)
        answer = await asyncio.to_thread(self.client.env_step, self.episode_id,
                                         {"name": name, "arguments": arguments})
        observation = answer["observation"]
        if answer.get("reward") is None:  # every step is scored (0 until done); a missing reward is no 0
            raise RuntimeError(f"pwab agent: the server's step answer has no reward: {answer!r}")
        reward = float(answer["reward"])
        done = bool(answer["done"])
        self.total += reward
        step_reward = observation.get("step_reward") or {}
        logs = {"pwab_function_acc": float(step_reward.get("function_acc", 0.0)),
                "pwab_result_acc": float(step_reward.get("result_acc", 0.0))}
        if done:
            self._finisher.detach()
            self.episode_id = None
            score = observation.get("score") or {}
            logs = {"pwab_function_acc": float(score.get("function_acc", 0.0)),
                    "pwab_result_acc": float(score.get("result_acc", 0.0))}
        feedback = "" if done else self.feedback_template.replace("{observation}", observation["text"])
        return {"rewards": self.to_reward(reward), "scores": self.total, "environment_feedback": feedback,
                "done": done, "sampling_params": states.get("sampling_params"), "extra_logs": logs}


def agent_instance_class(**settings):
    """An AgentInstance class (PwabAgent on OpenRLHF's AgentInstanceBase) whose instances use `settings`."""
    from openrlhf.utils.agent import AgentInstanceBase

    def __init__(self, *args, **kwargs):
        PwabAgent.__init__(self, **settings)

    return type("AgentInstance", (PwabAgent, AgentInstanceBase), {"__init__": __init__, "__module__": __name__})


def executor_class(**settings):
    """An AgentExecutor class (OpenRLHF's MultiTurnAgentExecutor over agent_instance_class(**settings)), built
    with no arguments as OpenRLHF builds it."""
    from openrlhf.utils.agent import MultiTurnAgentExecutor

    instance_class = agent_instance_class(**settings)

    def __init__(self):
        MultiTurnAgentExecutor.__init__(self, instance_class)

    return type("AgentExecutor", (MultiTurnAgentExecutor,), {"__init__": __init__, "__module__": __name__,
                                                             "instance_class": instance_class})


def __getattr__(name):  # PEP 562: OpenRLHF's `agent_module.AgentExecutor` builds the classes on first use
    if name in ("AgentExecutor", "AgentInstance"):
        if "AgentExecutor" not in globals():
            executor = executor_class()
            globals()["AgentExecutor"] = executor
            globals()["AgentInstance"] = executor.instance_class
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _tensor(value):
    import torch

    return torch.tensor(value, dtype=torch.float32)


def _end_quietly(client, episode_id):
    try:
        client.end(episode_id)
    except Exception:  # noqa: BLE001 - already gone
        pass
