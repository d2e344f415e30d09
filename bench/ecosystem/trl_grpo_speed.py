"""One GRPO iteration, with its sampling, in pwab and in TRL's GRPOTrainer (issue 39, item 2).

Both sides start from the same SFT model (pwab's tiny preset, one SFT epoch from a random LLaMA written with
transformers: test/ecosystem/tiny_models.py) and run single-turn GRPO on PUMA's parameter prompts of the mini
dataset's train tasks, rewarded by pwab's reward (the task's result accuracy of the generated parameter):

  pwab   `pwab puma rl`: per iteration B tasks × G completions sampled with the KV cache, scored in process, GRPO
         advantages, one optimizer step over all of them (all weights, AdamW, lr 2e-4, clip ε 0.2, KL β 0.05 to
         the SFT model, per-sequence mean). Tied groups are kept and the function prompt is not sampled, so that
         both sides do the same work. Its figure: the run's seconds less its evaluations, over its iterations
         (rl/train.json).
  TRL    GRPOTrainer on the same prompts with the same B, G, completion budget, temperature, top-k (whole
         vocabulary), loss (per-sequence mean: loss_type "grpo"), advantages (scaled by the group's spread), β, ε,
         optimiser and lr; its reward calls the same scorer through `pwab serve`'s POST /v1/reward (one request a
         step). Its figure: the median step after the first (each step generates, scores and updates).

Both rewards are the same function: `pwab puma rl` scores a parameter in process with score_parameter
(src/puma/scoring.cpp), and /v1/reward with {"task", "function", "parameter"} calls the same function
(docs/rl-engines.md). As a sanity check the script prints /v1/reward's scores of the first SFT targets (the tasks'
true parameters), and each side's mean completion length with the figures. Threads are pinned the same on both
sides.

Run with the core environment's interpreter (docs/ecosystem.md):

  PYTHONPATH=python:test/ecosystem /opt/pwab/ecosystem/core/bin/python bench/ecosystem/trl_grpo_speed.py \\
      --pwab build/pytorch/pwab --work /tmp/trl-grpo [--tasks 48] [--iterations 3] [--threads 2] [--json OUT]
"""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import Setup, options, read_jsonl, run  # noqa: E402

# The tiny preset's RL settings (src/puma/presets.cpp) that both sides use.
B, G, LR, KL, CLIP, NEW_TOKENS, TEMPERATURE = 16, 4, 2e-4, 0.05, 0.2, 48, 1.0
FUNCTION = {"search": "search_product_by_query", "recommend": "get_recommendations_by_history",
            "review": "add_product_review"}


def main():
    ap = options(__doc__)
    ap.add_argument("--tasks", type=int, default=48)
    ap.add_argument("--iterations", type=int, default=3)
    setup = Setup(ap)
    a, pwab_bin, work = setup.args, setup.pwab, setup.work
    import torch
    data, base = setup.mini_dataset(), setup.base_model("tiny")

    # pwab: the pipeline up to RL; SFT is kept between runs, the rl step is run afresh.
    pipeline = os.path.join(work, f"pwab-{a.tasks}")
    run(["rm", "-rf", os.path.join(pipeline, "rl")])
    run([pwab_bin, "puma", "rl", "--data", data, "--out", pipeline, "--base-model", base, "--embedder", "hashing",
         "--train-limit", a.tasks, "--test-limit", 2, "--sft-epochs", 1, "--holdout", 0, "--align", "rl",
         "--rl-iterations", a.iterations, "--rl-tasks", B, "--rl-group", G, "--rl-lr", LR, "--rl-kl", KL,
         "--rl-clip", CLIP, "--rl-temperature", TEMPERATURE, "--rl-top-k", 0, "--rl-max-new-tokens", NEW_TOKENS,
         "--rl-minibatches", 1, "--rl-inner-epochs", 1, "--rl-lora", "false", "--rl-skip-tied", "false",
         "--rl-function", "false", "--rl-loss-norm", "sequence", "--rl-algo", "grpo", "--rl-warmup", 0,
         "--rl-eval-every", 0], env=dict(os.environ))
    with open(os.path.join(pipeline, "rl", "train.json")) as f:
        mine = json.load(f)
    pwab_iteration = (mine["seconds"] - mine.get("eval_seconds", 0.0)) / mine["iterations"]
    sft_model = os.path.join(pipeline, "sft", "model")
    examples = read_jsonl(os.path.join(pipeline, "data", "param_train.jsonl"))

    import pwab
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    server = pwab.launch(data, args=["--embedder", "hashing"], binary=pwab_bin)
    try:
        client = server.client()
        rewards_seen = []

        def pwab_reward(completions, task, kind, **_):
            scored = client.rewards([{"task": t, "function": FUNCTION[k], "parameter": c}
                                     for c, t, k in zip(completions, task, kind)])
            values = [s["reward"] for s in scored]
            rewards_seen.extend(values)
            return values

        # The same scorer: the SFT targets (the true parameters) score as pwab's in-process scorer scores them.
        truth = client.rewards([{"task": e["task"], "function": FUNCTION[e["type"]], "parameter": e["target"]}
                                for e in examples[:8]])

        rows = [{"prompt": e["prompt"], "task": e["task"], "kind": e["type"]} for e in examples]
        tokenizer = AutoTokenizer.from_pretrained(sft_model, add_bos_token=True, padding_side="left")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        step_seconds = []

        class Clock(TrainerCallback):
            def on_step_begin(self, *args, **kwargs):
                self.start = time.perf_counter()

            def on_step_end(self, *args, **kwargs):
                step_seconds.append(time.perf_counter() - self.start)

        config = GRPOConfig(output_dir=os.path.join(work, "trl-out"), max_steps=a.iterations + 1,
                            per_device_train_batch_size=B * G, num_generations=G,
                            max_completion_length=NEW_TOKENS, temperature=TEMPERATURE, top_k=0, top_p=1.0,
                            learning_rate=LR, lr_scheduler_type="constant", warmup_steps=0, beta=KL, epsilon=CLIP,
                            loss_type="grpo", scale_rewards="group", num_iterations=1, max_grad_norm=1.0,
                            weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
                            logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=1,
                            bf16=False, fp16=False, activation_checkpointing=False, disable_tqdm=True,
                            shuffle_dataset=False, dataloader_num_workers=0)
        trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(sft_model, dtype=torch.float32),
                              reward_funcs=[pwab_reward], args=config, train_dataset=Dataset.from_list(rows),
                              processing_class=tokenizer, callbacks=[Clock()])
        trainer.train()
        logged = [e for e in trainer.state.log_history if "reward" in e]
        trl_step = statistics.median(step_seconds[1:]) if len(step_seconds) > 1 else step_seconds[0]
        out = {
            "B": B, "G": G, "new_tokens": NEW_TOKENS, "torch": torch.__version__,
            "reward_check": {"targets_scored": [t["reward"] for t in truth]},
            "pwab": {"iterations": mine["iterations"], "seconds_per_iteration": pwab_iteration,
                     "sample_seconds": mine["sample_seconds"] / mine["iterations"],
                     "update_seconds": mine["update_seconds"] / mine["iterations"],
                     "completions": mine["completions"],
                     "mean_completion_tokens": mine["train_tokens"] / max(1, mine["completions"])},
            "trl": {"steps": len(step_seconds), "step_seconds": step_seconds, "seconds_per_iteration": trl_step,
                    "mean_reward": statistics.mean(e["reward"] for e in logged) if logged else None,
                    "mean_completion_tokens": statistics.mean(e["completions/mean_length"] for e in logged
                                                              if "completions/mean_length" in e) if logged else None},
        }
        out["pwab_over_trl"] = trl_step / pwab_iteration
        setup.report(out)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
