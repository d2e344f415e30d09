"""pwab's DPO beside TRL's DPOTrainer, on the same model, preference pairs and settings (issue 39, item 2).

One run does both sides on the mini synthetic dataset:

  pwab   `pwab puma dpo --base-model BASE` with the tiny preset: one SFT epoch on the first --tasks train tasks,
         4 sampled candidates per task, scored into preference pairs, then one DPO epoch (all weights, sigmoid
         loss, beta 0.1, AdamW as Hugging Face's defaults, lr 5e-4, linear schedule with 5% warm-up, clip 1.0,
         4 pairs a batch). The figure is the DPO step: its reference pass (log-probabilities of the SFT model,
         computed once before the loop) plus the loop (the dpo step's train.json: reference_seconds, seconds).
  TRL    DPOTrainer from the same SFT model on the very pairs pwab trained on (its dpo/score/pairs.jsonl), with the
         same loss, beta, optimiser, schedule, clip, batch and epoch, fp32, twice: with TRL's default (the
         reference model's forward at every step) and with precompute_ref_log_probs (one pass before the loop, as
         pwab). The figure is trainer.train() plus, with precompute_ref_log_probs, that pass: TRL 1.x runs it in
         DPOTrainer's constructor (_precompute_ref_logps), outside train(), so it is timed there and added, as
         pwab's reference pass is added to its loop. Both parts are printed.

Before timing it checks that both train the same thing: the SFT model's log-probability of the first pairs'
chosen and rejected answers (pwab's cached reference against transformers' forward), the trainable parameter
counts; after training it prints both sides' mean loss and reward accuracy. Threads are pinned the same on both
sides and printed with the figures.

Run with the core environment's interpreter (docs/ecosystem.md):

  PYTHONPATH=test/ecosystem /opt/pwab/ecosystem/core/bin/python bench/ecosystem/trl_dpo_speed.py \\
      --pwab build/pytorch/pwab --work /tmp/trl-dpo [--tasks 120] [--threads 2] [--json OUT]
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import Setup, options, read_jsonl, run  # noqa: E402

# The tiny preset's DPO settings (src/puma/presets.cpp) that both sides use.
# MAX_LENGTH: long enough that no row is cut on either side (pwab keeps the end of a cut prompt, TRL its start).
LR, WARMUP, CLIP, BATCH, BETA, MAX_LENGTH = 5e-4, 0.05, 1.0, 4, 0.1, 2048


def sequence_logprob(model, tokenizer, prompt, answer):
    """log p(answer + EOS | BOS + prompt) under `model`: what DPO compares with the reference."""
    import torch
    p = tokenizer(prompt)["input_ids"]
    full = p + tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([full])).logits[0, :-1].float(), dim=-1)
    picked = logp.gather(1, torch.tensor(full[1:])[:, None])[:, 0][len(p) - 1:]
    return picked.sum().item()


def trl_dpo(sft_model, tokenizer, pairs, work, precompute):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import DPOConfig, DPOTrainer

    class TimedDPOTrainer(DPOTrainer):
        """Times the reference pass wherever TRL runs it; only the time spent before train() is added below."""
        reference_seconds = 0.0

        def _precompute_ref_logps(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return super()._precompute_ref_logps(*args, **kwargs)
            finally:
                type(self).reference_seconds += time.perf_counter() - start

    if precompute and not hasattr(DPOTrainer, "_precompute_ref_logps"):
        sys.exit("this TRL has no DPOTrainer._precompute_ref_logps: its reference pass cannot be timed apart")
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_pretrained(sft_model, dtype=torch.float32)
    warmup_steps = int(WARMUP * ((len(pairs) + BATCH - 1) // BATCH))
    args = DPOConfig(output_dir=os.path.join(work, "trl-out"), per_device_train_batch_size=BATCH,
                     num_train_epochs=1, learning_rate=LR, lr_scheduler_type="linear", warmup_steps=warmup_steps,
                     max_grad_norm=CLIP, weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
                     beta=BETA, loss_type=["sigmoid"], max_length=None, precompute_ref_log_probs=precompute,
                     logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=1,
                     dataloader_num_workers=0, disable_tqdm=True, bf16=False, fp16=False,
                     activation_checkpointing=False)
    trainer = TimedDPOTrainer(model=model, args=args, processing_class=tokenizer,
                              train_dataset=Dataset.from_list([{k: p[k] for k in ("prompt", "chosen", "rejected")}
                                                               for p in pairs]))
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    before_train = TimedDPOTrainer.reference_seconds
    start = time.perf_counter()
    result = trainer.train()
    loop_seconds = time.perf_counter() - start
    seconds = loop_seconds + before_train
    logged = [e for e in trainer.state.log_history if "loss" in e]
    accuracy = [e["rewards/accuracies"] for e in logged if "rewards/accuracies" in e]
    return {"precompute_ref_log_probs": precompute, "bf16": args.bf16,
            "activation_checkpointing": args.activation_checkpointing, "trainable": trainable,
            "steps": result.global_step, "reference_seconds": before_train, "loop_seconds": loop_seconds,
            "seconds": seconds, "steps_per_s": result.global_step / seconds,
            "first_loss": logged[0]["loss"], "mean_loss": sum(e["loss"] for e in logged) / len(logged),
            "mean_accuracy": sum(accuracy) / len(accuracy) if accuracy else None}


def main():
    ap = options(__doc__)
    ap.add_argument("--tasks", type=int, default=120)
    setup = Setup(ap)
    a, pwab, work = setup.args, setup.pwab, setup.work
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    data, base = setup.mini_dataset(), setup.base_model("tiny")

    # pwab: the pipeline up to DPO. SFT, sampling and scoring are left in place between runs; the dpo step is run
    # afresh each time (its marker, work folder and model removed), so its reference pass is computed, not read.
    pipeline = os.path.join(work, f"pwab-{a.tasks}")
    dpo = os.path.join(pipeline, "dpo")
    run(["rm", "-rf", os.path.join(dpo, ".done"), os.path.join(dpo, "work"), os.path.join(dpo, "model"),
         os.path.join(dpo, "train.json")])
    run([pwab, "puma", "dpo", "--data", data, "--out", pipeline, "--base-model", base, "--embedder", "hashing",
         "--train-limit", a.tasks, "--test-limit", 2, "--sft-epochs", 1, "--holdout", 0, "--dpo-eval-tasks", 0,
         "--dpo-epochs", 1, "--dpo-batch", BATCH, "--dpo-lr", LR, "--beta", BETA, "--dpo-max-length", MAX_LENGTH],
        env=dict(os.environ))
    with open(os.path.join(dpo, "train.json")) as f:
        mine = json.load(f)
    pairs = read_jsonl(os.path.join(dpo, "score", "pairs.jsonl"))
    with open(os.path.join(dpo, "work", "reference_logprobs.json")) as f:
        reference = json.load(f)
    sft_model = os.path.join(pipeline, "sft", "model")

    # The same computation: the SFT model's log-probabilities of the first pairs, pwab's against transformers'.
    tokenizer = AutoTokenizer.from_pretrained(sft_model, add_bos_token=True)
    model = AutoModelForCausalLM.from_pretrained(sft_model, dtype=torch.float32).eval()
    checked = []
    for i, p in enumerate(pairs[:4]):
        for side in ("chosen", "rejected"):
            checked.append({"pair": i, "side": side, "pwab": reference[side][i],
                            "transformers": sequence_logprob(model, tokenizer, p["prompt"], p[side])})
    worst = max(abs(c["pwab"] - c["transformers"]) for c in checked)

    trl = [trl_dpo(sft_model, tokenizer, pairs, work, precompute) for precompute in (False, True)]
    pwab_seconds = mine["seconds"] + mine.get("reference_seconds", 0.0)
    out = {"pairs": len(pairs), "parameters": sum(p.numel() for p in model.parameters()),
           "torch": torch.__version__, "reference_logprobs": checked, "reference_largest_difference": worst,
           "pwab": {"steps": mine["steps"], "loop_seconds": mine["seconds"],
                    "reference_seconds": mine.get("reference_seconds", 0.0), "seconds": pwab_seconds,
                    "steps_per_s": mine["steps"] / pwab_seconds, "mean_loss": mine["train_loss"],
                    "truncated_rows": mine["truncated_rows"]},
           "trl": trl}
    for t in trl:
        t["pwab_over_trl"] = out["pwab"]["steps_per_s"] / t["steps_per_s"]
    setup.report(out)

if __name__ == "__main__":
    main()
