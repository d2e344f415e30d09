"""pwab for RL training engines: adapters that let TRL, verl, verifiers and OpenRLHF take episodes and rewards from
a running `pwab serve` (docs/rl-engines.md). Standard library only; each engine's own packages are imported by
the adapter that needs them, when it is used.

    pwab.rl.dataset            training rows (chat prompt + task key) from GET /v1/tasks; also a command
    pwab.rl.trl_adapter        TRL GRPOTrainer: pwab_reward (reward_funcs) and PwabEnv (environment_factory)
    pwab.rl.verl_adapter       verl: compute_score (custom_reward_function) and PwabTool (tool agent loop)
    pwab.rl.verifiers_adapter  verifiers: load_environment (single-turn rewards or multi-turn episodes)
    pwab.rl.verifiers_v1       verifiers 0.4's v1 API: Taskset, Env and Harness (`vf-eval pwab_verifiers`)
    pwab.rl.openrlhf_agent     OpenRLHF: the --train.agent_func_path file (AgentExecutor over pwab episodes)
    pwab.rl.parse              parse_action_text: a model's text as an action, read as /v1/reward reads it

The server: configure(url=...) in the training script, or PWAB_URL in the environment of every process that
trains (pwab.rl.config).

>>> import pwab.rl
>>> pwab.rl.parse_action_text("search_product_by_query\\nblue enamel kettle")
('search_product_by_query', {'query': 'blue enamel kettle'})
"""

from pwab.rl.config import configure
from pwab.rl.parse import completion_text, parse_action_text


def __getattr__(name):
    # pwab.rl.dataset is also a command (python3 -m pwab.rl.dataset): imported on first use only, so that running
    # it does not find it already imported by the package.
    if name in ("render_history", "task_rows"):
        from pwab.rl import dataset
        return getattr(dataset, name)
    raise AttributeError(f"module 'pwab.rl' has no attribute {name!r}")

__all__ = ["completion_text", "configure", "parse_action_text", "render_history", "task_rows"]
