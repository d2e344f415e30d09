"""What pwab costs a TRL GRPO step (issue 37, item 7; docs/rl-engines.md, "TRL": what it costs).

Runs the same GRPOTrainer (tiny LLaMA from test/ecosystem/tiny_models.py, CPU) three ways on the mini synthetic
dataset and times each optimizer step and, inside it, the time spent in pwab:

  reward     reward_funcs=[pwab_reward]                 (one POST /v1/reward per step)
  python     reward_funcs=[a plain Python function]     (the baseline: same trainer, same rows, same steps)
  env        environment_factory=PwabEnv                (/reset, /step per tool call, /end per rollout)

The search reply (ten products) is longer than the completion budget, so TRL drops it after the call (its overlong
rule) and generates no second turn: the environment's server time is all counted, the model's reading of the
reply is not.

The model's generation is steered towards a search tool call (tiny_models.steering_bias), so the environment run
makes real tool calls.
Run with the core environment's interpreter:

  PWAB_BINARY=build/release/pwab PYTHONPATH=python:test/ecosystem \\
      /opt/pwab/ecosystem/core/bin/python bench/ecosystem/trl_grpo_share.py [--steps 6] [--batch 8] [--json OUT]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(SOURCE, "python"), os.path.join(SOURCE, "test", "ecosystem")]

import pwab  # noqa: E402
from pwab.rl import configure  # noqa: E402
from pwab.rl import dataset as rl_dataset  # noqa: E402
from pwab.rl import trl_adapter  # noqa: E402

import tiny_models  # noqa: E402

SPENT = {"pwab": 0.0}


def timed(function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT["pwab"] += time.perf_counter() - start
    return wrapper


class TimedReward(trl_adapter.PwabReward):
    __call__ = timed(trl_adapter.PwabReward.__call__)


class TimedEnv(trl_adapter.PwabEnv):
    """PwabEnv with the time of every server call counted (reset, tool steps, the end read by get_reward)."""
    reset = timed(trl_adapter.PwabEnv.reset)
    _act = timed(trl_adapter.PwabEnv._act)
    _finish_episode = timed(trl_adapter.PwabEnv._finish_episode)


def python_reward(completions=None, **kwargs):
    """The baseline: a plain Python reward (does the answer contain a tool call?)."""
    return [float("<tool_call>" in (c if isinstance(c, str) else c[0].get("content") or "")) for c in completions]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4, help="rollouts per step (per_device_train_batch_size)")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=192)
    parser.add_argument("--json", help="write the numbers here too")
    args = parser.parse_args()

    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    work = tempfile.mkdtemp(prefix="pwab-trl-bench-")
    binary = pwab.find_binary()
    data = os.path.join(work, "mini")
    import subprocess
    subprocess.run([binary, "data", "synth", "--out", data, "--scale", "mini", "--seed", "4"], check=True,
                   capture_output=True)
    subprocess.run([binary, "rec", "train", data, "--epochs", "1", "--eval-every", "0"], check=True,
                   capture_output=True)
    server = pwab.launch(data, args=["--embedder", "hashing"])
    try:
        configure(url=server.url)
        client = server.client()
        tasks = client.tasks("train", 0, 16)["tasks"]
        keys = [t["task"] for t in tasks]
        query = tasks[0]["instruction"]
        rows = [{"prompt": r["prompt"], "task": r["task"]}
                for r in rl_dataset.task_rows(server.url, "train", limit=len(keys), history_items=2)]
        env_rows = [{"prompt": r["prompt"], "task": r["task"]}
                    for r in rl_dataset.task_rows(server.url, "train", limit=len(keys), history_items=2,
                                                  instruction=False)]
        model_dir = os.path.join(work, "model")
        tiny_models.make_llama(model_dir, seed=1)
        tokenizer = tiny_models.retemplate(model_dir, qwen2_5_chat_template)
        target = "<tool_call>\n" + json.dumps({"name": "search_product_by_query", "arguments": {"query": query}}) + \
            "\n</tool_call>"
        steering = tiny_models.steering_bias(tokenizer, target, "<|im_start|>assistant\n")

        results = {}
        for mode in ("python", "reward", "env"):
            step_times, pwab_times = [], []

            class Clock(TrainerCallback):
                def on_step_begin(self, *a, **k):
                    self.start, SPENT["pwab"] = time.perf_counter(), 0.0

                def on_step_end(self, *a, **k):
                    step_times.append(time.perf_counter() - self.start)
                    pwab_times.append(SPENT["pwab"])

            config = GRPOConfig(output_dir=os.path.join(work, mode), max_steps=args.steps,
                                per_device_train_batch_size=args.batch, num_generations=args.generations,
                                max_completion_length=args.max_completion_length,
                                max_tool_calling_iterations=1, learning_rate=1e-4, logging_steps=1,
                                save_strategy="no", report_to="none", use_cpu=True, bf16=False, seed=0,
                                disable_tqdm=True, shuffle_dataset=False, generation_kwargs=steering)
            kwargs = dict(model=AutoModelForCausalLM.from_pretrained(model_dir),
                          processing_class=AutoTokenizer.from_pretrained(model_dir, padding_side="left"),
                          args=config, callbacks=[Clock()])
            if mode == "python":
                kwargs.update(reward_funcs=[python_reward], train_dataset=Dataset.from_list(rows))
            elif mode == "reward":
                kwargs.update(reward_funcs=[TimedReward()], train_dataset=Dataset.from_list(rows))
            else:
                kwargs.update(environment_factory=TimedEnv, train_dataset=Dataset.from_list(env_rows))
            GRPOTrainer(**kwargs).train()
            kept = slice(1, None) if len(step_times) > 2 else slice(None)  # the first step warms up
            step, spent = step_times[kept], pwab_times[kept]
            results[mode] = {"steps": len(step), "step_s_median": statistics.median(step),
                             "step_s_mean": statistics.mean(step), "pwab_s_mean": statistics.mean(spent),
                             "pwab_share": sum(spent) / sum(step),
                             "pwab_ms_per_rollout": 1000 * statistics.mean(spent) / args.batch}
        base = results["python"]["step_s_mean"]
        for mode in ("reward", "env"):
            results[mode]["overhead_vs_python_s"] = results[mode]["step_s_mean"] - base
            results[mode]["overhead_vs_python"] = results[mode]["step_s_mean"] / base - 1
        results["setup"] = {"trl": trl.__version__, "transformers": transformers.__version__,
                            "torch": torch.__version__, "cpus": os.cpu_count(), "batch": args.batch,
                            "generations": args.generations, "measured_steps": args.steps - 1,
                            "model": "tiny LLaMA (hidden 64, 2 layers), steered to write a search tool call"}
        print(json.dumps(results, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
